"""The remote cache's entry format: whole, for its key and kind, signed with the secret — or refused."""

from __future__ import annotations

import hashlib
import json

import pytest

from genspirv.remote.entry import MAC_BYTES, MAGIC, Entry, EntryError, EntryKind, decode, encode, index_key

KEY = hashlib.sha256(b"a variant").hexdigest()
OTHER = hashlib.sha256(b"another variant").hexdigest()
BLOB = bytes(range(256)) * 4
DEPS = ("glsl/add.comp", "glsl/include/common.glsl")


def blob_entry(key: str = KEY, blob: bytes = BLOB) -> Entry:
    return Entry(EntryKind.BLOB, key, DEPS, blob)


@pytest.mark.parametrize("secret", [None, "s3cret"])
def test_round_trip(secret):
    data = encode(blob_entry(), secret)
    assert decode(data, KEY, EntryKind.BLOB, secret) == blob_entry()
    where = index_key(KEY)
    index = Entry(EntryKind.INDEX, where, DEPS, content_key=KEY)
    assert decode(encode(index, secret), where, EntryKind.INDEX, secret) == index


def test_encoding_is_deterministic():
    """Two builds storing one key write the same bytes, so a race between them is harmless."""
    assert encode(blob_entry(), "k") == encode(blob_entry(), "k")
    assert encode(blob_entry(), "k") != encode(blob_entry(), "other")


def test_a_signed_entry_is_readable_without_the_secret():
    assert decode(encode(blob_entry(), "s3cret"), KEY, EntryKind.BLOB).blob == BLOB


def _flip(data: bytes, i: int) -> bytes:
    return data[:i] + bytes([data[i] ^ 1]) + data[i + 1:]


@pytest.mark.parametrize("secret", [None, "s3cret"])
def test_every_single_bit_flip_is_refused(secret):
    """A flipped bit anywhere (magic, header, blob, signature) never gives an entry back."""
    data = encode(blob_entry(blob=BLOB[:64]), secret)
    assert decode(data, KEY, EntryKind.BLOB, secret).blob == BLOB[:64]     # control: untouched passes
    header_end = data.index(b"\n", len(MAGIC))
    for i in range(len(data)):
        flipped = _flip(data, i)
        try:
            got = decode(flipped, KEY, EntryKind.BLOB, secret)
        except EntryError:
            continue
        # Unsigned, a flip inside the header's JSON can leave an equivalent document
        # (e.g. a deps string's case): never the blob, and never under a secret.
        assert secret is None and i < header_end and got.blob == BLOB[:64], i


@pytest.mark.parametrize("cut", [1, MAC_BYTES, MAC_BYTES + 1, 500])
def test_truncated_entries_are_refused(cut):
    data = encode(blob_entry(), "s3cret")
    with pytest.raises(EntryError, match="truncated"):
        decode(data[:-cut], KEY, EntryKind.BLOB, "s3cret")
    with pytest.raises(EntryError, match="trailing"):
        decode(data + b"\0", KEY, EntryKind.BLOB, "s3cret")


def _forged(blob: bytes, key: str = KEY, signed: bool = False) -> bytes:
    """What anyone who can write the store can make without the secret: a consistent entry."""
    header = {"kind": "blob", "key": key, "deps": list(DEPS), "size": len(blob),
              "sha256": hashlib.sha256(blob).hexdigest(), "signed": signed}
    tail = b"\0" * MAC_BYTES if signed else b""
    return MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + blob + tail


def test_a_forged_entry_is_refused_only_under_a_secret():
    evil = b"\x03\x02\x23\x07" + b"\0" * 60
    # Negative control: with no secret the store is trusted, and a consistent forgery passes.
    assert decode(_forged(evil), KEY, EntryKind.BLOB).blob == evil
    with pytest.raises(EntryError, match="not signed"):
        decode(_forged(evil), KEY, EntryKind.BLOB, "s3cret")
    with pytest.raises(EntryError, match="bad signature"):
        decode(_forged(evil, signed=True), KEY, EntryKind.BLOB, "s3cret")


def test_a_signed_entry_moved_to_another_key_is_refused():
    with pytest.raises(EntryError, match="another key"):
        decode(encode(blob_entry(), "s3cret"), OTHER, EntryKind.BLOB, "s3cret")


def test_the_wrong_secret_is_refused():
    with pytest.raises(EntryError, match="bad signature"):
        decode(encode(blob_entry(), "theirs"), KEY, EntryKind.BLOB, "ours")


def test_a_blob_entry_is_no_index_and_back():
    with pytest.raises(EntryError, match="a blob entry where a index"):
        decode(encode(blob_entry()), KEY, EntryKind.INDEX)
    index = Entry(EntryKind.INDEX, KEY, DEPS, content_key=OTHER)
    with pytest.raises(EntryError, match="an? index entry where a blob"):
        decode(encode(index), KEY, EntryKind.BLOB)


@pytest.mark.parametrize("junk", [b"", b"<html>404</html>", MAGIC, MAGIC + b"{\n", MAGIC + b"[]\n",
                                  MAGIC + b'{"kind": "blob"}\n', b"\0" * 100, MAGIC + b"x" * 100])
def test_junk_is_refused(junk):
    with pytest.raises(EntryError):
        decode(junk, KEY, EntryKind.BLOB)


@pytest.mark.parametrize("field, value", [("key", "ABC"), ("deps", "glsl/add.comp"), ("deps", [1]),
                                          ("size", -1), ("size", True), ("sha256", None), ("signed", 1),
                                          ("deps", ["x"] * 5000)])
def test_malformed_header_fields_are_named(field, value):
    header = {"kind": "blob", "key": KEY, "deps": list(DEPS), "size": 0,
              "sha256": hashlib.sha256(b"").hexdigest(), "signed": False, field: value}
    with pytest.raises(EntryError, match=repr(field)):
        decode(MAGIC + json.dumps(header).encode() + b"\n", KEY, EntryKind.BLOB)


def test_index_keys_are_apart_from_content_keys():
    """A variant with no include has a content key equal to its source key: its index entry
    must not land on its blob entry."""
    assert index_key(KEY) != KEY and len(index_key(KEY)) == 64
    assert index_key(KEY) == index_key(KEY) and index_key(KEY) != index_key(OTHER)


# -- the compiler that built a blob --------------------------------------------


def test_the_compiler_that_built_a_blob_travels_signed_and_only_when_not_the_default():
    key = "ab" * 32
    plain = encode(Entry(EntryKind.BLOB, key, ("glsl/a.comp",), b"\x03\x02\x23\x07"), "s")
    named = encode(Entry(EntryKind.BLOB, key, ("glsl/a.comp",), b"\x03\x02\x23\x07", compiler="slang-glslang"), "s")
    assert b'"compiler"' not in plain                  # the default's entries keep their bytes
    assert decode(plain, key, EntryKind.BLOB, "s").compiler is None
    assert decode(named, key, EntryKind.BLOB, "s").compiler == "slang-glslang"
    # The name is under the signature: another name with the same blob does not verify.
    forged = named.replace(b'"compiler":"slang-glslang"', b'"compiler":"glslang-other"')
    with pytest.raises(EntryError, match="bad signature"):
        decode(forged, key, EntryKind.BLOB, "s")
    with pytest.raises(EntryError, match="'compiler' malformed"):
        decode(encode(Entry(EntryKind.BLOB, key, (), b"x", compiler="Bad Name!")), key, EntryKind.BLOB)
