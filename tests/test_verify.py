"""verify_entry: a manifest entry's reflected fields proven against its blob.

Each reflected field tampered with, one at a time, must be named with both
values; the untampered entries of the committed manifests must pass.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from genspirv.errors import GenspirvError, ManifestMismatchError
from genspirv.manifest import load_manifest
from genspirv.reflect.verify import Mismatch, check_entry, verify_entry

REPO = Path(__file__).resolve().parent.parent
MANIFESTS = [REPO / "manifests" / "shaders.json", REPO / "tests" / "shaders_rt" / "manifests" / "shaders.json"]


def _entries():
    for path in MANIFESTS:
        manifest = load_manifest(path)
        for entry in manifest.shaders:
            yield entry, manifest.read_blob(entry)


@pytest.mark.parametrize("entry, blob", list(_entries()), ids=lambda x: getattr(x, "name", ""))
def test_committed_entries_pass(entry, blob):
    assert verify_entry(entry.info, blob) == []
    check_entry(entry.name, entry.info, blob)


@pytest.fixture(scope="module")
def attention():
    manifest = load_manifest(MANIFESTS[0])
    entry = manifest.entry("attention")
    return entry.info, manifest.read_blob(entry)


def _binding(info, i, **changes):
    bindings = list(info.bindings)
    bindings[i] = dataclasses.replace(bindings[i], **changes)
    return dataclasses.replace(info, bindings=tuple(bindings))


def _push(info, i, **changes):
    members = list(info.push_constants)
    members[i] = dataclasses.replace(members[i], **changes)
    return dataclasses.replace(info, push_constants=tuple(members))


def _spec(info, i, **changes):
    specs = list(info.spec_constants)
    specs[i] = dataclasses.replace(specs[i], **changes)
    return dataclasses.replace(info, spec_constants=tuple(specs))


# (tampered info, the field named, the manifest value, the blob value); attention's
# bindings: Q K V read, Out write; spec constants: unnamed 128, BLOCK_SIZE 128, MAX_CTX 1024;
# push constants: n_head, n_kv_head, head_dim, n_kv, kv_stride (uint), scale (float).
CASES = {
    "entry_point": (lambda i: dataclasses.replace(i, entry_point="mian"),
                    "entry_point", "mian", ["main"]),
    "local_size": (lambda i: dataclasses.replace(i, local_size=(64, 1, 1)),
                   "local_size", (64, 1, 1), (128, 1, 1)),
    "local_size_spec_ids": (lambda i: dataclasses.replace(i, local_size_spec_ids=(None, None, None)),
                            "local_size_spec_ids", (None, None, None), (0, None, None)),
    "access": (lambda i: _binding(i, 3, access="read_write"),
               "bindings[set=0,binding=3].access", "read_write", "write"),
    "accessed": (lambda i: _binding(i, 0, accessed=False),
                 "bindings[set=0,binding=0].accessed", False, True),
    "written": (lambda i: _binding(i, 3, written=False),
                "bindings[set=0,binding=3].written", False, True),
    "min_size": (lambda i: _binding(i, 1, min_size=16),
                 "bindings[set=0,binding=1].min_size", 16, 0),
    "array_stride": (lambda i: _binding(i, 2, array_stride=8),
                     "bindings[set=0,binding=2].array_stride", 8, 4),
    "count": (lambda i: _binding(i, 2, count=2), "bindings[set=0,binding=2].count", 2, 1),
    "type": (lambda i: _binding(i, 2, type="uniform_buffer"),
             "bindings[set=0,binding=2].type", "uniform_buffer", "storage_buffer"),
    "name": (lambda i: _binding(i, 2, name="W"), "bindings[set=0,binding=2].name", "W", "V"),
    "binding number": (lambda i: _binding(i, 2, binding=7), "bindings",
                       ["set=0,binding=0", "set=0,binding=1", "set=0,binding=7", "set=0,binding=3"],
                       ["set=0,binding=0", "set=0,binding=1", "set=0,binding=2", "set=0,binding=3"]),
    "a binding dropped": (lambda i: dataclasses.replace(i, bindings=i.bindings[:3]), "binding_count",
                          3, 4),
    "spec default": (lambda i: _spec(i, 2, default=2048),
                     "spec_constants[id=1,name='MAX_CTX'].default", 2048, 1024),
    "spec type": (lambda i: _spec(i, 1, type="int32"),
                  "spec_constants[id=0,name='BLOCK_SIZE'].type", "int32", "uint32"),
    "spec dropped": (lambda i: dataclasses.replace(i, spec_constants=i.spec_constants[1:]),
                     "spec_constants", ["id=0,name='BLOCK_SIZE'", "id=1,name='MAX_CTX'"],
                     ["id=0,name=''", "id=0,name='BLOCK_SIZE'", "id=1,name='MAX_CTX'"]),
    "push_constant_size": (lambda i: dataclasses.replace(i, push_constant_size=16),
                           "push_constant_size", 16, 24),
    "push member offset": (lambda i: _push(i, 3, offset=16), "push_constants[n_kv].offset", 16, 12),
    "push member type": (lambda i: _push(i, 5, type="uint32"), "push_constants[scale].type",
                         "uint32", "float32"),
    "push member size": (lambda i: _push(i, 0, size=8), "push_constants[n_head].size", 8, 4),
    "push member vector": (lambda i: _push(i, 0, vector=2), "push_constants[n_head].vector", 2, 1),
    "push member array": (lambda i: _push(i, 0, array=(2,)), "push_constants[n_head].array",
                          (2,), ()),
    "push members swapped": (lambda i: dataclasses.replace(i, push_constants=(
        dataclasses.replace(i.push_constants[1], offset=0),
        dataclasses.replace(i.push_constants[0], offset=4)) + i.push_constants[2:]),
        "push_constants",
        ["n_kv_head", "n_head", "head_dim", "n_kv", "kv_stride", "scale"],
        ["n_head", "n_kv_head", "head_dim", "n_kv", "kv_stride", "scale"]),
    "push member renamed": (lambda i: _push(i, 5, name="alpha"), "push_constants",
                            ["n_head", "n_kv_head", "head_dim", "n_kv", "kv_stride", "alpha"],
                            ["n_head", "n_kv_head", "head_dim", "n_kv", "kv_stride", "scale"]),
    "shared_memory": (lambda i: dataclasses.replace(i, shared_memory=512),
                      "shared_memory", 512, 4608),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_tampered_field_is_named_with_both_values(attention, case):
    info, blob = attention
    tamper, field, manifest_value, blob_value = CASES[case]
    mismatches = verify_entry(tamper(info), blob)
    assert Mismatch(field, manifest_value, blob_value) in mismatches, mismatches
    with pytest.raises(ManifestMismatchError) as raised:
        check_entry("attention", tamper(info), blob)
    text = str(raised.value)
    assert text.startswith("kernel attention: ") and field in text
    assert f"manifest says {manifest_value!r}, the blob {blob_value!r}" in text
    assert isinstance(raised.value, GenspirvError)


def test_masks_follow_a_tampered_access(attention):
    # Marking the written binding read-only changes the masks too: all three are named.
    info, blob = attention
    fields = {m.field for m in verify_entry(_binding(info, 3, access="read"), blob)}
    assert fields == {"bindings[set=0,binding=3].access", "writable_mask", "readable_mask"}


def test_an_equal_value_of_another_type_is_a_difference(attention):
    # 128.0 == 128 in Python; a manifest saying 128.0 for a uint32 is still wrong.
    info, blob = attention
    tampered = _spec(info, 1, default=128.0)
    assert tampered.spec_constants[1].default == info.spec_constants[1].default
    assert verify_entry(tampered, blob) == [
        Mismatch("spec_constants[id=0,name='BLOCK_SIZE'].default", 128.0, 128)]


def test_a_nested_push_member_is_named_by_its_path():
    from corpus import tools
    from genspirv.reflect import reflect
    blob = tools.compile_glsl(tools.CORPUS / "push.comp")
    info = reflect(blob)
    inners = next(i for i, m in enumerate(info.push_constants) if m.name == "inners")
    inner = info.push_constants[inners]
    w = dataclasses.replace(inner.members[1], offset=8)
    tampered = _push(info, inners, members=(inner.members[0], w, inner.members[2]))
    assert verify_entry(tampered, blob) == [
        Mismatch("push_constants[inners].members[w].offset", 8, 12)]
    rm = next(i for i, m in enumerate(info.push_constants) if m.row_major)
    assert verify_entry(_push(info, rm, row_major=False), blob) == [
        Mismatch("push_constants[rm].row_major", False, True)]
