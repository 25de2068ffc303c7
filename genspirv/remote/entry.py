"""The remote cache's entry format: what one HTTP object holds, how it is signed and checked.

Takes an ``Entry`` (and the secret, when one is set) and gives the bytes stored
at ``<url>/<key[:2]>/<key[2:]>``; takes fetched bytes, the key and kind they
were fetched as and the secret, and gives the ``Entry`` back or an
``EntryError`` saying in a few words why they do not verify. Pure: no I/O.

Two kinds of entry (docs/GUIDE.md, "Sharing compiles across machines"):

- a **blob** entry, stored under the variant's content key: the compiled blob,
  its sha256, and the files it was compiled from (the ``deps`` the build
  records with every blob);
- an **index** entry, stored under ``index_key(source_key)`` (a key over the
  variant's source, defines and toolchain, but not its includes): the content
  key of the last blob stored for it and that blob's ``deps``. A machine that
  has never built a variant does not know which headers it includes, so
  cannot compute its content key; the index tells it which files to hash.

Bytes of an entry::

    MAGIC                 b"genspirv-remote-entry/1\\n"
    header                one line of JSON, sorted keys, then b"\\n": kind, key,
                          deps, size, sha256, signed, for an index content_key, and
                          compiler when the blob was built by another compiler than
                          the default (the manifest names it)
    payload               ``size`` bytes: the blob (none in an index entry)
    mac                   32 bytes when signed: HMAC-SHA256(secret, all bytes above)

The header carries the key, so a signed entry copied under another key does
not verify; the length is exact, so a truncated or padded entry does not
either. Encoding is deterministic: two builds storing one key write the same
bytes.

Nothing in an entry is trusted for being signed (the secret may be empty or
leaked; docs/SECURITY.md): the header is read within MAX_HEADER_BYTES, a
nesting too deep for the JSON reader is unreadable, not a crash, and every
``deps`` path must be one the manifest's own ``depends`` may hold (relative,
normalised posix, no ``..``, no control character, at most MAX_DEP_CHARS), so
no ``../``, absolute or device path ever reaches the build's hashing. What a
path names on disk is the cache's to check (``genspirv.remote.cache``).
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Optional

from ..errors import GenspirvError, ManifestError
from ..manifest import check_relative_path
from ..settings import control_character

MAGIC = b"genspirv-remote-entry/1\n"
MAC_BYTES = 32
MAX_HEADER_BYTES = 1 << 20      # a header lists file names: a megabyte is far past any real one
MAX_DEPS = 4096                 # files one variant may read; more is junk, not a shader
MAX_DEP_CHARS = 4096            # one path's length (PATH_MAX): longer is junk
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")     # a compiler name, e.g. slang-glslang
_INDEX_PREFIX = b"genspirv-remote-index/1\0"


class EntryKind(enum.Enum):
    BLOB = "blob"
    INDEX = "index"


class EntryError(GenspirvError):
    """Fetched bytes that are not a valid entry for the key asked; the text says why."""


@dataclass(frozen=True)
class Entry:
    kind: EntryKind
    key: str                        # where it is stored
    deps: tuple[str, ...]           # files the blob was compiled from, relative to the root
    blob: bytes = b""               # BLOB only
    content_key: Optional[str] = None   # INDEX only: the key of the blob entry it points at
    compiler: Optional[str] = None      # the compiler that built the blob, when not the default


def index_key(source_key: str) -> str:
    """Where a variant's index entry lives: apart from every content key (a variant with no
    include has a content key equal to its source key, and its blob entry lives there)."""
    return hashlib.sha256(_INDEX_PREFIX + source_key.encode("ascii")).hexdigest()


def encode(entry: Entry, secret: Optional[str] = None) -> bytes:
    """The bytes to store for ``entry``; signed when a secret is given."""
    header = {"kind": entry.kind.value, "key": entry.key, "deps": list(entry.deps),
              "size": len(entry.blob), "sha256": hashlib.sha256(entry.blob).hexdigest(),
              "signed": bool(secret)}
    if entry.kind is EntryKind.INDEX:
        header["content_key"] = entry.content_key
    if entry.compiler is not None:
        header["compiler"] = entry.compiler
    body = MAGIC + json.dumps(header, sort_keys=True, separators=(",", ":")).encode() + b"\n" + entry.blob
    return body + _mac(secret, body) if secret else body


def decode(data: bytes, key: str, kind: EntryKind, secret: Optional[str] = None) -> Entry:
    """The entry ``data`` holds, if it is a whole ``kind`` entry for ``key`` (and, with a
    secret, signed with it); else EntryError with the reason."""
    if not data.startswith(MAGIC):
        raise EntryError("not a genspirv entry")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER_BYTES)
    if end < 0:
        raise EntryError("truncated header")
    try:
        header = json.loads(data[len(MAGIC):end])
    except (ValueError, RecursionError):        # RecursionError: nested past what the reader follows
        raise EntryError("unreadable header") from None
    fields = _check_header(header)
    if fields["kind"] != kind.value:
        raise EntryError(f"a {fields['kind']} entry where a {kind.value} entry belongs")
    if fields["key"] != key:
        raise EntryError("stored under another key")
    signed = fields["signed"]
    expected = end + 1 + fields["size"] + (MAC_BYTES if signed else 0)
    if len(data) != expected:
        raise EntryError("truncated" if len(data) < expected else "trailing bytes")
    if secret:         # under a secret the signature speaks first: nothing unsigned is read further
        if not signed:
            raise EntryError("not signed, and GENSPIRV_REMOTE_CACHE_SECRET is set")
        if not hmac.compare_digest(_mac(secret, data[:-MAC_BYTES]), data[-MAC_BYTES:]):
            raise EntryError("bad signature (signed with another secret, or altered)")
    blob = data[end + 1:end + 1 + fields["size"]]
    if hashlib.sha256(blob).hexdigest() != fields["sha256"]:
        raise EntryError("sha256 does not match its blob")
    return Entry(EntryKind(fields["kind"]), fields["key"], tuple(fields["deps"]), blob,
                 fields.get("content_key"), fields.get("compiler"))


def _mac(secret: str, body: bytes) -> bytes:
    return hmac.new(secret.encode("utf-8"), body, hashlib.sha256).digest()


def _check_deps(deps: list) -> None:
    """Each path must be one a manifest's ``depends`` may hold; EntryError naming the first that is not."""
    for i, dep in enumerate(deps):
        where = f"header field 'deps' #{i}"
        if not isinstance(dep, str) or not dep or len(dep) > MAX_DEP_CHARS:
            raise EntryError(f"{where} is not a file name")
        bad = control_character(dep)
        if bad is not None:
            raise EntryError(f"{where} holds the control character {bad}")
        try:
            check_relative_path(dep, where)
        except ManifestError as exc:
            raise EntryError(f"{exc}: an entry names only files inside the project") from None


def _check_header(header: object) -> dict:
    """The header's fields, each of the type the format says; EntryError naming the first bad one."""
    if not isinstance(header, dict):
        raise EntryError("unreadable header")
    checks = {
        "kind": lambda v: v in {k.value for k in EntryKind},
        "key": lambda v: isinstance(v, str) and bool(_HEX64.match(v)),
        "deps": lambda v: isinstance(v, list) and len(v) <= MAX_DEPS,
        "size": lambda v: type(v) is int and v >= 0,
        "sha256": lambda v: isinstance(v, str) and bool(_HEX64.match(v)),
        "signed": lambda v: isinstance(v, bool),
    }
    for name, ok in checks.items():
        if not ok(header.get(name)):
            raise EntryError(f"header field {name!r} missing or malformed")
    _check_deps(header["deps"])
    if "compiler" in header and not (isinstance(header["compiler"], str) and _NAME.match(header["compiler"])):
        raise EntryError("header field 'compiler' malformed")
    if header["kind"] == EntryKind.INDEX.value:
        content_key = header.get("content_key")
        if not (isinstance(content_key, str) and _HEX64.match(content_key)) or header["size"] != 0:
            raise EntryError("header field 'content_key' missing or malformed")
    return header
