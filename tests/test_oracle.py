"""genspirv's reflection agrees with ``spirv-cross --reflect`` on every blob.

The blobs: everything committed under spirv/ and tests/shaders_rt/spirv/
(whatever is there when the tests run), and the edge-case corpus in tests/corpus/ (GLSL compiled with the pinned
glslangValidator, SPIR-V assembly with the pinned spirv-as).  Compared: set,
binding, descriptor type, access (readonly / writeonly), array size, min_size
(spirv-cross's ``block_size``) and array_stride (the ``array_stride`` of a last
member with a runtime array), every spec constant (several may share an id:
id, name, type, default), workgroup size and its spec ids, for every entry point; the
push-constant size against one computed from spirv-cross's member offsets,
array and matrix strides; and every push-constant member (name, offset, size,
scalar type, vector and matrix shape, row-major, array lengths and strides, a
struct's members) of the entry point spirv-cross reflects (its first); the
capabilities and extensions against the ``OpCapability`` / ``OpExtension``
lines spirv-dis prints.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import tools
from genspirv.reflect import reflect, reflect_module

REPO = Path(__file__).resolve().parent.parent
COMMITTED = sorted((REPO / "spirv").glob("*.spv")) + sorted((REPO / "tests" / "shaders_rt" / "spirv").glob("*.spv"))


def _check_all_entry_points(blob: bytes, what: str) -> None:
    cross = tools.cross_reflect(blob)
    infos = reflect_module(blob)
    assert [i.entry_point for i in infos] == [e["name"] for e in cross["entryPoints"]
                                               if e["mode"] == "comp"], what
    for info in infos:
        tools.assert_agrees(info, cross, info.entry_point, f"{what}:{info.entry_point}")
        assert info.push_constant_size == tools.cross_push_constant_size(cross), what
    assert tools.push_members_of(infos[0]) == tools.cross_push_members(cross), what
    caps, exts = tools.dis_capabilities(blob)
    assert all((i.capabilities, i.extensions) == (caps, exts) for i in infos), what
    assert reflect(blob) == infos[0]


@pytest.mark.skipif(not COMMITTED, reason="no blobs committed under spirv/ yet")
@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_committed_blob_agrees_with_spirv_cross(path):
    _check_all_entry_points(path.read_bytes(), path.name)


@pytest.mark.parametrize("path", tools.corpus_files(), ids=lambda p: p.name)
def test_corpus_agrees_with_spirv_cross(path):
    _check_all_entry_points(tools.corpus_blob(path), path.name)


@pytest.mark.parametrize("env", ["vulkan1.0", "vulkan1.3"])
@pytest.mark.parametrize("name", ["access.comp", "usage.comp", "spec.comp"])
def test_other_target_envs_agree_with_spirv_cross(name, env):
    # vulkan1.0 gives SPIR-V 1.0: storage buffers as Uniform + BufferBlock.
    blob = tools.compile_glsl(tools.CORPUS / name, env)
    _check_all_entry_points(blob, f"{name}@{env}")


def test_spec_defaults_agree_with_spirv_dis():
    # spirv-cross prints no default for 8/16/64-bit spec constants; spirv-dis prints them all.
    for path in tools.corpus_files():
        blob = tools.corpus_blob(path)
        printed = tools.dis_spec_defaults(blob)
        info = reflect(blob)
        assert [(s.id, s.name) for s in info.spec_constants] == [p[:2] for p in printed], path.name
        for spec, (_, _, literal) in zip(info.spec_constants, printed):
            if isinstance(literal, bool):
                assert spec.default is literal, (path.name, spec)
            elif spec.type.startswith("float"):
                text = literal
                expected = float.fromhex(text) if "0x" in text else float(text)
                assert spec.default == expected, (path.name, spec)
            else:
                assert spec.default == int(literal), (path.name, spec)


def test_committed_manifest_matches_reflection():
    manifest_path = REPO / "manifests" / "shaders.json"
    if not manifest_path.exists():
        pytest.skip("no manifest committed yet")
    from genspirv.manifest import load_manifest
    manifest = load_manifest(manifest_path)
    assert manifest.shaders
    for entry in manifest.shaders:
        blob = manifest.read_blob(entry)
        assert reflect(blob, entry.info.entry_point) == entry.info, entry.name


def test_the_comparison_catches_a_wrong_reflection():
    # Positive control: each compared field, once wrong, makes the comparison fail.
    import dataclasses
    blob = tools.compile_glsl(tools.CORPUS / "spec.comp")
    cross = tools.cross_reflect(blob)
    info = reflect(blob)
    tools.assert_agrees(info, cross)
    b0 = info.bindings[0]
    wrong = [
        dataclasses.replace(info, bindings=(dataclasses.replace(b0, access="read"),)),
        dataclasses.replace(info, bindings=(dataclasses.replace(b0, count=2),)),
        dataclasses.replace(info, bindings=(dataclasses.replace(b0, binding=1),)),
        dataclasses.replace(info, bindings=(dataclasses.replace(b0, min_size=b0.min_size + 4),)),
        dataclasses.replace(info, bindings=(dataclasses.replace(b0, array_stride=8),)),
        dataclasses.replace(info, local_size=(1, 3, 1)),
        dataclasses.replace(info, local_size_spec_ids=(None, None, 12)),
        dataclasses.replace(info, spec_constants=info.spec_constants[1:]),
        dataclasses.replace(info, spec_constants=info.spec_constants[:1] * 2
                            + info.spec_constants[1:]),                     # listed twice
        dataclasses.replace(info, spec_constants=info.spec_constants[:2] + (dataclasses.replace(
            info.spec_constants[2], default=-8),) + info.spec_constants[3:]),     # I32: -7
    ]
    for bad in wrong:
        with pytest.raises(AssertionError):
            tools.assert_agrees(bad, cross)


def test_push_members_agree_with_spirv_cross_on_every_shape():
    """The push corpus holds every member shape: the oracle must have compared them all."""
    seen = set()

    def walk(members):
        for m in members:
            seen.add(("struct" if m["type"] == "struct" else "scalar", bool(m["array"]),
                      len(m["array"]), m["vector"] > 1, m["columns"] > 1, m["row_major"]))
            seen.add(("type", m["type"]))
            walk(m["members"])

    for name in ("push.comp", "push_types.comp", "push_layouts.spvasm"):
        blob = tools.corpus_blob(tools.CORPUS / name)
        members = tools.cross_push_members(tools.cross_reflect(blob))
        assert tools.push_members_of(reflect(blob)) == members, name
        walk(members)
    for shape in [("scalar", False, 0, False, False, False), ("scalar", True, 2, False, False, False),
                  ("scalar", False, 0, True, True, True), ("scalar", True, 1, True, True, True),
                  ("struct", True, 2, False, False, False), ("struct", False, 0, False, False, False),
                  *[("type", t) for t in ("int8", "uint8", "int16", "uint16", "int32", "uint32",
                                          "int64", "uint64", "float16", "float32", "float64")]]:
        assert shape in seen, shape


def test_the_push_comparison_catches_a_wrong_member():
    # Positive control: each member field, once wrong, breaks the comparison.
    import dataclasses
    blob = tools.compile_glsl(tools.CORPUS / "push.comp")
    cross = tools.cross_reflect(blob)
    info = reflect(blob)
    assert tools.push_members_of(info) == tools.cross_push_members(cross)
    members = info.push_constants
    inner = next(m for m in members if m.type == "struct")
    rm = next(m for m in members if m.row_major)
    changes = [dict(name="m"), dict(offset=members[0].offset + 4), dict(size=8), dict(type="int32"),
               dict(vector=2), dict(columns=2), dict(array=(1,)), dict(array_stride=4),
               dict(matrix_stride=4)]
    for change in changes:
        bad = (dataclasses.replace(members[0], **change),) + members[1:]
        assert tools.push_members_of(dataclasses.replace(info, push_constants=bad)) \
            != tools.cross_push_members(cross), change
    for member, change in [(rm, dict(row_major=False)),
                           (inner, dict(members=inner.members[:-1]))]:
        bad = tuple(dataclasses.replace(m, **change) if m is member else m for m in members)
        assert tools.push_members_of(dataclasses.replace(info, push_constants=bad)) \
            != tools.cross_push_members(cross), change


def test_the_capability_comparison_has_something_to_compare():
    # The corpus declares extensions and more than Shader, so a reflection that dropped or
    # invented a name would disagree with spirv-dis above.
    seen = [tools.dis_capabilities(tools.corpus_blob(p)) for p in tools.corpus_files()]
    assert any(exts for _, exts in seen) and any(len(caps) > 1 for caps, _ in seen)
