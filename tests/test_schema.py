"""The genspirv/1 JSON Schema: shipped in the package, used by load_manifest.

A valid manifest passes; each kind of bad manifest is refused with a
ManifestError that names the file and the JSON path of the bad field.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from genspirv.errors import GenspirvError, ManifestError
from genspirv.manifest import (Manifest, ManifestEntry, Toolchain, Unavailable, dumps, load_manifest,
                               manifest_from_dict, schema_errors)
from genspirv.reflect import (ACCESS_KINDS, DESCRIPTOR_TYPES, PUSH_TYPES, SPEC_TYPES, Binding,
                              PushMember, ShaderInfo, SpecConstant)

REPO = Path(__file__).resolve().parent.parent


def schema() -> dict:
    return json.loads(resources.files("genspirv").joinpath("schema/manifest.schema.json").read_text("utf-8"))


def sample_manifest() -> dict:
    info = ShaderInfo(
        entry_point="main", local_size=(256, 1, 1), local_size_spec_ids=(0, None, None),
        bindings=(Binding(0, 0, "A", "storage_buffer", 0, "read", True, False, 16, 4,
                          ("max", 16, ("mul", ("len", ("spec", 0, 256)), 4))),
                  Binding(0, 1, "B", "storage_buffer", 0, "read_write", True, True, 0, 8),
                  Binding(0, 2, "P", "uniform_buffer", 1, "read", True, False)),
        spec_constants=(SpecConstant(0, "WG", "uint32", 256), SpecConstant(1, "SCALE", "float32", 0.5),
                        SpecConstant(2, "FAST", "bool", True), SpecConstant(3, "BIAS", "int32", -3)),
        push_constant_size=112, shared_memory=1024,
        shared_memory_spec=("mul", ("len", ("spec", 0, 256)), 4),
        push_constant_size_spec=("add", 48, ("mul", ("len", ("op", 132, "uint32", (32, 32),
                                                             ("spec", 0, 256), 2)), 32)),
        capabilities=("Float16", "Shader"), extensions=("SPV_KHR_16bit_storage",),
        push_constants=(
            PushMember("n", 0, 4, "uint32"),
            PushMember("rot", 16, 32, "float32", vector=2, columns=3, matrix_stride=16, row_major=True),
            PushMember("lights", 48, 64, "struct", array=(2,), array_stride=32,
                       length_spec=("len", ("spec", 4, 2)), members=(
                PushMember("dir", 0, 12, "float32", vector=3),
                PushMember("ids", 16, 16, "int32", array=(2, 2), array_stride=8)))))
    entry = ManifestEntry(name="add_f32", source="glsl/add.comp", defines=(("TYPE", "float"),),
                          spirv="spirv/add_f32.spv", sha256="ab" * 32, size=1236, info=info,
                          inputs="cd" * 32, depends=("glsl/add.comp", "glsl/include/t.glsl"),
                          validated=False, optimized=True, stripped=True, target_env="vulkan1.3", compiler="slang-glslang",
                          meta_json='{"subgroup":32,"tile":[8,4]}')
    m = Manifest(Toolchain("13.1.1", "vulkan1.2", ("-Os",), spirv_opt="2025.5", slang_glslang="2026.12",
                           slangpy="0.43.1"), (entry,),
                 unavailable=(Unavailable("add_cm2", "glsl/add.comp", ("GL_NV_cooperative_matrix2",),
                                          "ef" * 32, ("glsl/add.comp",), "slang-glslang", '{"cm2":true}'),))
    return json.loads(dumps(m))


def refused(d, where="manifests/shaders.json") -> str:
    with pytest.raises(ManifestError) as exc:
        manifest_from_dict(d, where)
    return str(exc.value)


def test_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(schema())


def test_schema_enums_agree_with_reflection_constants():
    defs = schema()["$defs"]
    assert defs["binding"]["properties"]["type"]["enum"] == list(DESCRIPTOR_TYPES)
    assert defs["binding"]["properties"]["access"]["enum"] == list(ACCESS_KINDS)
    assert defs["spec_constant"]["properties"]["type"]["enum"] == list(SPEC_TYPES)
    assert defs["push_member"]["properties"]["type"]["enum"] == list(PUSH_TYPES)


def test_schema_requires_every_field_the_writer_emits():
    """The writer and the schema describe the same fields, no more, no fewer."""
    d = sample_manifest()
    s = schema()
    # Optional fields (provenance, per-variant facts, unavailable variants) are written only
    # when they say something; the sample has every one of them.
    assert set(s["required"]) <= set(d) == set(s["properties"])
    assert set(s["properties"]["toolchain"]["required"]) <= set(d["toolchain"]) == \
        set(s["properties"]["toolchain"]["properties"])
    shader = s["$defs"]["shader"]
    assert set(shader["required"]) <= set(d["shaders"][0]) == set(shader["properties"])
    unavailable = s["properties"]["unavailable"]["items"]
    assert set(unavailable["required"]) <= set(d["unavailable"][0]) == set(unavailable["properties"])
    binding = s["$defs"]["binding"]
    assert set(binding["required"]) <= set(d["shaders"][0]["bindings"][0]) == set(binding["properties"])
    spec = s["$defs"]["spec_constant"]
    assert set(spec["required"]) == set(d["shaders"][0]["spec_constants"][0]) == set(spec["properties"])
    push = s["$defs"]["push_member"]
    scalar, struct = d["shaders"][0]["push_constants"][0], d["shaders"][0]["push_constants"][2]
    assert set(push["required"]) == set(scalar) == set(push["properties"]) - {"members", "length_spec"}
    assert set(struct) == set(push["properties"])


def test_the_optional_build_facts_are_exactly_those_a_default_entry_leaves_out():
    """A fresh clone's no-op refuses a committed entry holding a fact the build would not write
    (``buildsys.render.committed_outputs``): OPTIONAL_FACTS must name every such field."""
    import dataclasses
    from genspirv.manifest import OPTIONAL_FACTS, build_facts
    full = manifest_from_dict(sample_manifest(), "m.json").shaders[0]
    bare = dataclasses.replace(full, inputs="", depends=(), validated=True, optimized=False, stripped=False,
                               target_env=None, compiler=None, meta_json="")
    always = set(build_facts(bare))
    assert always == {"name", "source", "defines", "spirv", "sha256", "size"}
    assert set(build_facts(full)) == always | set(OPTIONAL_FACTS)


def test_sample_manifest_is_valid():
    d = sample_manifest()
    assert schema_errors(d) == []
    m = manifest_from_dict(d, "x.json")
    assert m.shaders[0].name == "add_f32"


def test_push_members_round_trip():
    d = sample_manifest()
    entry = manifest_from_dict(d, "x.json").shaders[0]
    lights = entry.info.push_constants[2]
    assert (lights.type, lights.array, lights.members[1].array) == ("struct", (2,), (2, 2))
    assert json.loads(dumps(Manifest(Toolchain("13.1.1", "vulkan1.2"), (entry,))))["shaders"][0][
        "push_constants"] == d["shaders"][0]["push_constants"]


def test_empty_shader_list_is_valid():
    d = sample_manifest()
    d["shaders"] = []
    assert manifest_from_dict(d, "x.json").shaders == ()


def test_repo_manifest_is_valid():
    path = REPO / "manifests" / "shaders.json"
    if not path.exists():
        pytest.skip("this repo's manifest is not committed yet")
    data = json.loads(path.read_bytes())
    assert schema_errors(data) == []
    m = load_manifest(path)
    assert len(m.shaders) == len(data["shaders"]) > 0


def _set(d, path, value):
    target = d
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _delete(d, path):
    target = d
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]


S0 = ("shaders", 0)

# (what is wrong, how to make it wrong, the JSON path the error must name)
BAD = [
    ("wrong schema string", lambda d: _set(d, ("schema",), "genspirv/2"), "$.schema"),
    ("schema missing", lambda d: _delete(d, ("schema",)), "$"),
    ("extra top-level field", lambda d: _set(d, ("comment",), "hi"), "$"),
    ("toolchain missing", lambda d: _delete(d, ("toolchain",)), "$"),
    ("toolchain flags not a list", lambda d: _set(d, ("toolchain", "flags"), "-Os"), "$.toolchain.flags"),
    ("toolchain flag not a string", lambda d: _set(d, ("toolchain", "flags"), [1]), "$.toolchain.flags[0]"),
    ("extra toolchain field", lambda d: _set(d, ("toolchain", "spirv_val"), "x"), "$.toolchain"),
    ("unknown compiler", lambda d: _set(d, S0 + ("compiler",), "glslc"), "$.shaders[0].compiler"),
    ("default compiler written", lambda d: _set(d, S0 + ("compiler",), "glslang"), "$.shaders[0].compiler"),
    ("slang version empty", lambda d: _set(d, ("toolchain", "slang_glslang"), ""), "$.toolchain.slang_glslang"),
    ("shaders not a list", lambda d: _set(d, ("shaders",), {}), "$.shaders"),
    ("shader not an object", lambda d: _set(d, S0, "add_f32"), "$.shaders[0]"),
    ("missing sha256", lambda d: _delete(d, S0 + ("sha256",)), "$.shaders[0]"),
    ("missing bindings", lambda d: _delete(d, S0 + ("bindings",)), "$.shaders[0]"),
    ("missing push_constant_size", lambda d: _delete(d, S0 + ("push_constant_size",)), "$.shaders[0]"),
    ("extra shader field", lambda d: _set(d, S0 + ("pipeline",), 3), "$.shaders[0]"),
    ("sha256 too short", lambda d: _set(d, S0 + ("sha256",), "ab" * 31), "$.shaders[0].sha256"),
    ("sha256 upper case", lambda d: _set(d, S0 + ("sha256",), "AB" * 32), "$.shaders[0].sha256"),
    ("sha256 not hex", lambda d: _set(d, S0 + ("sha256",), "zz" * 32), "$.shaders[0].sha256"),
    ("sha256 trailing newline", lambda d: _set(d, S0 + ("sha256",), "ab" * 32 + "\n"), "$.shaders[0].sha256"),
    ("size a string", lambda d: _set(d, S0 + ("size",), "1236"), "$.shaders[0].size"),
    ("size a bool", lambda d: _set(d, S0 + ("size",), True), "$.shaders[0].size"),
    ("size not whole words", lambda d: _set(d, S0 + ("size",), 1235), "$.shaders[0].size"),
    ("size below the header", lambda d: _set(d, S0 + ("size",), 16), "$.shaders[0].size"),
    ("spirv path with ..", lambda d: _set(d, S0 + ("spirv",), "spirv/../../etc/x.spv"), "$.shaders[0].spirv"),
    ("spirv path leading ..", lambda d: _set(d, S0 + ("spirv",), "../x.spv"), "$.shaders[0].spirv"),
    ("spirv path absolute", lambda d: _set(d, S0 + ("spirv",), "/tmp/x.spv"), "$.shaders[0].spirv"),
    ("spirv path drive letter", lambda d: _set(d, S0 + ("spirv",), "C:/x.spv"), "$.shaders[0].spirv"),
    ("spirv path backslash", lambda d: _set(d, S0 + ("spirv",), "spirv\\x.spv"), "$.shaders[0].spirv"),
    ("spirv path empty", lambda d: _set(d, S0 + ("spirv",), ""), "$.shaders[0].spirv"),
    ("spirv path dot segment", lambda d: _set(d, S0 + ("spirv",), "./spirv/x.spv"), "$.shaders[0].spirv"),
    ("source path with ..", lambda d: _set(d, S0 + ("source",), "glsl/../../x.comp"), "$.shaders[0].source"),
    ("source path absolute", lambda d: _set(d, S0 + ("source",), "/glsl/x.comp"), "$.shaders[0].source"),
    ("name with a slash", lambda d: _set(d, S0 + ("name",), "a/b"), "$.shaders[0].name"),
    ("name with a dash", lambda d: _set(d, S0 + ("name",), "add-f32"), "$.shaders[0].name"),
    ("name empty", lambda d: _set(d, S0 + ("name",), ""), "$.shaders[0].name"),
    ("define value not a string", lambda d: _set(d, S0 + ("defines", "TYPE"), 1), "$.shaders[0].defines.TYPE"),
    ("local_size two items", lambda d: _set(d, S0 + ("local_size",), [1, 1]), "$.shaders[0].local_size"),
    ("local_size zero", lambda d: _set(d, S0 + ("local_size",), [0, 1, 1]), "$.shaders[0].local_size[0]"),
    ("local_size float", lambda d: _set(d, S0 + ("local_size",), [1.5, 1, 1]), "$.shaders[0].local_size[0]"),
    ("spec id string", lambda d: _set(d, S0 + ("local_size_spec_ids",), ["0", None, None]),
     "$.shaders[0].local_size_spec_ids[0]"),
    ("binding type unknown", lambda d: _set(d, S0 + ("bindings", 0, "type"), "ssbo"), "$.shaders[0].bindings[0].type"),
    ("binding access unknown", lambda d: _set(d, S0 + ("bindings", 1, "access"), "rw"),
     "$.shaders[0].bindings[1].access"),
    ("binding negative set", lambda d: _set(d, S0 + ("bindings", 0, "set"), -1), "$.shaders[0].bindings[0].set"),
    ("binding written not bool", lambda d: _set(d, S0 + ("bindings", 0, "written"), 0),
     "$.shaders[0].bindings[0].written"),
    ("binding missing name", lambda d: _delete(d, S0 + ("bindings", 2, "name")), "$.shaders[0].bindings[2]"),
    ("binding extra field", lambda d: _set(d, S0 + ("bindings", 0, "offset"), 0), "$.shaders[0].bindings[0]"),
    ("binding missing min_size", lambda d: _delete(d, S0 + ("bindings", 0, "min_size")),
     "$.shaders[0].bindings[0]"),
    ("binding min_size negative", lambda d: _set(d, S0 + ("bindings", 0, "min_size"), -4),
     "$.shaders[0].bindings[0].min_size"),
    ("binding array_stride a float", lambda d: _set(d, S0 + ("bindings", 1, "array_stride"), 4.5),
     "$.shaders[0].bindings[1].array_stride"),
    ("missing shared_memory", lambda d: _delete(d, S0 + ("shared_memory",)), "$.shaders[0]"),
    ("shared_memory negative", lambda d: _set(d, S0 + ("shared_memory",), -1),
     "$.shaders[0].shared_memory"),
    ("missing capabilities", lambda d: _delete(d, S0 + ("capabilities",)), "$.shaders[0]"),
    ("capability a number", lambda d: _set(d, S0 + ("capabilities", 0), 9),
     "$.shaders[0].capabilities[0]"),
    ("extension listed twice", lambda d: _set(d, S0 + ("extensions",), ["SPV_A", "SPV_A"]),
     "$.shaders[0].extensions"),
    ("mask negative", lambda d: _set(d, S0 + ("writable_mask",), -2), "$.shaders[0].writable_mask"),
    ("missing push_constants", lambda d: _delete(d, S0 + ("push_constants",)), "$.shaders[0]"),
    ("push_constants not a list", lambda d: _set(d, S0 + ("push_constants",), {}),
     "$.shaders[0].push_constants"),
    ("push member type unknown", lambda d: _set(d, S0 + ("push_constants", 0, "type"), "uint"),
     "$.shaders[0].push_constants[0].type"),
    ("push member offset a string", lambda d: _set(d, S0 + ("push_constants", 0, "offset"), "0"),
     "$.shaders[0].push_constants[0].offset"),
    ("push member size negative", lambda d: _set(d, S0 + ("push_constants", 0, "size"), -4),
     "$.shaders[0].push_constants[0].size"),
    ("push member vector 0", lambda d: _set(d, S0 + ("push_constants", 1, "vector"), 0),
     "$.shaders[0].push_constants[1].vector"),
    ("push member array of strings", lambda d: _set(d, S0 + ("push_constants", 0, "array"), ["2"]),
     "$.shaders[0].push_constants[0].array[0]"),
    ("push member array length 0", lambda d: _set(d, S0 + ("push_constants", 0, "array"), [0]),
     "$.shaders[0].push_constants[0].array[0]"),
    ("push member row_major an int", lambda d: _set(d, S0 + ("push_constants", 1, "row_major"), 1),
     "$.shaders[0].push_constants[1].row_major"),
    ("push member name missing", lambda d: _delete(d, S0 + ("push_constants", 0, "name")),
     "$.shaders[0].push_constants[0]"),
    ("push member extra field", lambda d: _set(d, S0 + ("push_constants", 0, "stride"), 4),
     "$.shaders[0].push_constants[0]"),
    ("push struct without members", lambda d: _delete(d, S0 + ("push_constants", 2, "members")),
     "$.shaders[0].push_constants[2]"),
    ("push scalar with members", lambda d: _set(d, S0 + ("push_constants", 0, "members"), []),
     "$.shaders[0].push_constants[0]"),
    ("nested push member type unknown",
     lambda d: _set(d, S0 + ("push_constants", 2, "members", 1, "type"), "ivec2"),
     "$.shaders[0].push_constants[2].members[1].type"),
    ("spec type unknown", lambda d: _set(d, S0 + ("spec_constants", 0, "type"), "u32"),
     "$.shaders[0].spec_constants[0].type"),
    ("spec default a string", lambda d: _set(d, S0 + ("spec_constants", 0, "default"), "256"),
     "$.shaders[0].spec_constants[0].default"),
    ("uint spec default negative", lambda d: _set(d, S0 + ("spec_constants", 0, "default"), -1),
     "$.shaders[0].spec_constants[0].default"),
    ("int spec default a float", lambda d: _set(d, S0 + ("spec_constants", 3, "default"), 1.5),
     "$.shaders[0].spec_constants[3].default"),
    ("bool spec default an int", lambda d: _set(d, S0 + ("spec_constants", 2, "default"), 1),
     "$.shaders[0].spec_constants[2].default"),
    ("float spec default a bool", lambda d: _set(d, S0 + ("spec_constants", 1, "default"), False),
     "$.shaders[0].spec_constants[1].default"),
]


@pytest.mark.parametrize("what,spoil,json_path", BAD, ids=[b[0] for b in BAD])
def test_invalid_manifest_is_refused_naming_file_and_json_path(what, spoil, json_path):
    d = sample_manifest()
    spoil(d)
    assert schema_errors(d), f"the schema accepted a manifest with {what}"
    message = refused(d)
    assert message.startswith("manifests/shaders.json: "), message
    assert f": {json_path}" in message, message
    if json_path.startswith("$.shaders[0]") and what not in ("shader not an object", "name with a slash", "name with a dash",
                                                              "name empty"):
        assert "'add_f32'" in message, message


def test_top_level_not_an_object():
    assert refused([1, 2]).startswith("manifests/shaders.json: $: ")


def test_path_error_explains_the_rule_not_the_regex():
    d = sample_manifest()
    d["shaders"][0]["spirv"] = "../x.spv"
    message = refused(d)
    assert "'../x.spv'" in message and "relative to the project root" in message
    assert "(?!" not in message


def test_of_several_errors_the_first_found_is_named_and_no_more_are_looked_for():
    # Counting them all walked every entry: 30,000 bad ones took 12 s to print one line
    # (tests/test_bounded_reads.py runs that manifest through every command).
    d = sample_manifest()
    d["shaders"][0]["sha256"] = "x"
    d["shaders"][0]["size"] = "big"
    message = refused(d)
    assert message.count("$.shaders[0]") == 1 and "more schema errors" not in message, message
    assert len(schema_errors(d)) == 2           # control: both are there to be found


def test_schema_error_is_a_genspirv_error_with_exit_code_1():
    d = sample_manifest()
    d["schema"] = "other"
    with pytest.raises(GenspirvError) as exc:
        manifest_from_dict(d, "m.json")
    assert exc.value.exit_code == 1


def test_load_manifest_validates_schema_and_names_the_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.genspirv]\n")
    (tmp_path / "manifests").mkdir()
    path = tmp_path / "manifests" / "shaders.json"
    d = sample_manifest()
    d["shaders"][0]["bindings"][0]["type"] = "texture"
    path.write_text(json.dumps(d))
    with pytest.raises(ManifestError) as exc:
        load_manifest(path, verify_blobs=False)
    assert str(path) in str(exc.value)
    assert "$.shaders[0].bindings[0].type" in str(exc.value)


def test_schema_ships_as_package_data():
    """The wheel's package-data globs cover the schema file and the templates."""
    import tomllib
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["genspirv"]
    pkg = REPO / "genspirv"
    shipped = {Path(p).relative_to(pkg).as_posix() for g in globs for p in pkg.glob(g)}
    assert "schema/manifest.schema.json" in shipped
    templates = {p.relative_to(pkg).as_posix() for p in (pkg / "templates").rglob("*.j2")}
    assert templates and templates <= shipped
    assert "jsonschema" in " ".join(data["project"]["dependencies"])



@pytest.mark.parametrize("what,spoil,expected", [
    ("type unknown", lambda m: m.update(type="uint"), "push constant #0 ('n'): unknown push constant type 'uint'"),
    ("offset missing", lambda m: m.pop("offset"), "push constant #0 ('n'): missing field 'offset'"),
    ("array of zero", lambda m: m.update(array=[0]), "push constant #0 ('n'): field 'array' must list positive integers"),
    ("row_major an int", lambda m: m.update(row_major=1), "push constant #0 ('n'): field 'row_major' has the wrong type"),
    ("scalar with members", lambda m: m.update(members=[]), "push constant #0 ('n'): a uint32 member has no 'members'"),
])
def test_push_members_are_checked_without_the_schema_too(what, spoil, expected):
    # The build reads a committed entry's reflection with info_from_dict alone (no schema
    # pass): a bad push member must still be one clear ManifestError naming shader and member.
    from genspirv.manifest import info_from_dict
    entry = sample_manifest()["shaders"][0]
    spoil(entry["push_constants"][0])
    with pytest.raises(ManifestError) as exc:
        info_from_dict(entry, "shader 'add_f32'")
    assert str(exc.value).startswith(f"shader 'add_f32', {expected}"), str(exc.value)


def test_a_field_missing_from_an_older_manifest_says_how_to_get_it():
    d = sample_manifest()
    del d["shaders"][0]["push_constants"]
    assert "'push_constants' is a required property; `genspirv build` writes every field" in refused(d)


# -- the manifest's indented JSON, written without json's pure-Python encoder ------------------

from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                     max_leaves=30)


@pytest.mark.slow
@given(_JSON, st.integers(min_value=0, max_value=3))
@hsettings(max_examples=400, deadline=None)
def test_indented_json_is_jsons_own_indent(value, depth):
    """The same text as ``json.dumps(indent=2, sort_keys=True, ensure_ascii=False)`` for any JSON
    data (non-ASCII, control characters, NaN and the infinities, empty containers), at any depth."""
    import json
    from genspirv.manifest import indented_json
    want = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).replace("\n", "\n" + "  " * depth)
    assert indented_json(value, depth) == want


def test_indented_json_differs_from_a_near_miss():
    """Negative control for the property above: the compact form (no indent) is not what it makes."""
    import json
    from genspirv.manifest import indented_json
    value = {"b": [1, {"a": "é"}], "a": []}
    assert indented_json(value) != json.dumps(value, sort_keys=True, ensure_ascii=False)
    assert indented_json(value) == json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
