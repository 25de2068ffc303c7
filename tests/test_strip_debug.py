"""``-g0``: blobs without debug information, byte for byte glslang's, with every name in the manifest.

A backend whose script compiles with ``glslangValidator -g0`` commits blobs
without OpName, OpMemberName and OpSource. genspirv takes ``-g0`` in
``flags`` (at any level): the variant is compiled with its names, optimised,
validated and reflected, then stripped by ``spirv-opt --strip-debug``. The
tests hold: the committed blob is glslang's ``-g0`` blob (also behind
``spirv-opt -O``); the manifest's reflection is the one the named blob gives
(binding, spec constant and push-constant member names); the content key
covers the choice; ``-g`` and its siblings (absolute paths) are still refused,
with the right reason; the runtime proves a stripped blob's entry with the
names taken from the manifest, and still refuses a hand edit of anything else.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from genspirv.errors import ConfigError, ManifestMismatchError
from genspirv.manifest import load_manifest
from genspirv.project.config import load_config
from genspirv.reflect import reflect
from genspirv.reflect.verify import check_entry

SCALE = """#version 450
layout(local_size_x = 64) in;
layout(constant_id = 1) const uint N_ELEMS = 1024;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { float alpha; uint n; } p;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n && i < N_ELEMS) y[i] = p.alpha * x[i]; }
"""


def _tool(name: str):
    from genspirv.errors import GenspirvError
    from genspirv.toolchain.tools import find_tool
    try:
        return find_tool(name)
    except GenspirvError:
        return None


GLSLANG, SPIRV_OPT = _tool("glslangValidator"), _tool("spirv-opt")
needs_tools = pytest.mark.skipif(GLSLANG is None or SPIRV_OPT is None, reason="needs glslangValidator and spirv-opt")


def _project(root: Path, flags: str, table: str = "") -> Path:
    (root / "glsl").mkdir(parents=True, exist_ok=True)
    (root / "glsl" / "scale.comp").write_text(SCALE)
    (root / "pyproject.toml").write_text(f"[tool.genspirv]\nflags = {flags}\n{table}")
    return root


def _build(root: Path, *args: str) -> int:
    from genspirv.cli import main
    return main(["--root", str(root), *args])


# -- the configuration ------------------------------------------------------------


@pytest.mark.parametrize("where", [
    'flags = ["-g0"]\n',
    '[tool.genspirv.shaders."a.comp"]\nflags = ["-g0"]\n',
    '[tool.genspirv.shaders."a.comp"]\nvariants = [ { name = "a", flags = ["-g0"] } ]\n',
])
def test_g0_is_taken_at_every_level(tmp_path, where):
    (tmp_path / "glsl").mkdir()
    (tmp_path / "glsl" / "a.comp").write_text(SCALE)
    (tmp_path / "pyproject.toml").write_text("[tool.genspirv]\n" + where)
    (v,) = load_config(tmp_path).variants
    assert v.strip_debug and "-g0" in v.flags and v.compiler_flags == ()


@pytest.mark.parametrize("flag", ["-g", "-gV", "-gVS"])
def test_debug_info_with_paths_is_still_refused_for_the_right_reason(tmp_path, flag):
    _project(tmp_path, f'["{flag}"]')
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path)
    text = str(exc.value)
    assert text.startswith("tool.genspirv.flags[0]") and "absolute source path" in text and "-g0" in text
    assert "set by genspirv itself" not in text


def test_flags_genspirv_sets_itself_are_still_refused_as_such(tmp_path):
    _project(tmp_path, '["-o"]')
    with pytest.raises(ConfigError, match=r"tool.genspirv.flags\[0\]: '-o' is set by genspirv itself"):
        load_config(tmp_path)


# -- the build --------------------------------------------------------------------


def _glslang_g0(root: Path, out: Path, *extra: str) -> bytes:
    subprocess.run([str(GLSLANG.path), "-V", "--target-env", "vulkan1.2", *extra, "-o", str(out),
                    "glsl/scale.comp"], cwd=root, check=True, capture_output=True, env=GLSLANG.env())
    return out.read_bytes()


@pytest.mark.slow
@needs_tools
@pytest.mark.parametrize("optimize", [False, True])
def test_a_g0_blob_is_glslangs_g0_blob_and_its_manifest_keeps_every_name(tmp_path, optimize):
    table = "optimize = true\n" if optimize else ""
    named = _project(tmp_path / "named", "[]", table)
    stripped = _project(tmp_path / "stripped", '["-g0"]', table)
    assert _build(named, "build", "-q") == 0 and _build(stripped, "build", "-q") == 0
    blob = (stripped / "spirv" / "scale.spv").read_bytes()
    reference = _glslang_g0(stripped, tmp_path / "ref.spv", "-g0")
    if optimize:
        from genspirv.toolchain.spirv_tools import OPTIMIZE_ARGS
        subprocess.run([str(SPIRV_OPT.path), *OPTIMIZE_ARGS, "--target-env=vulkan1.2", str(tmp_path / "ref.spv"),
                        "-o", str(tmp_path / "ref.spv")], check=True, capture_output=True, env=SPIRV_OPT.env())
        reference = (tmp_path / "ref.spv").read_bytes()
    assert blob == reference
    assert len(blob) < len((named / "spirv" / "scale.spv").read_bytes())
    # The blob itself has no names left; the manifest has every one, as the named build's.
    bare = reflect(blob)
    assert {b.name for b in bare.bindings} == {""} and {m.name for m in bare.push_constants} == {""}
    a, b = (load_manifest(p / "manifests" / "shaders.json").entry("scale").info for p in (named, stripped))
    assert a == b
    assert [m.name for m in b.push_constants] == ["alpha", "n"] and [x.name for x in b.bindings] == ["X", "Y"]
    assert [s.name for s in b.spec_constants] == ["N_ELEMS"]
    assert _build(stripped, "check", "-q") == 0


@pytest.mark.slow
@needs_tools
def test_the_content_key_covers_g0(tmp_path, capsys):
    root = _project(tmp_path, "[]")
    assert _build(root, "build", "-q") == 0
    named = (root / "spirv" / "scale.spv").read_bytes()
    (root / "pyproject.toml").write_text('[tool.genspirv]\nflags = ["-g0"]\n')
    assert _build(root, "build") == 0
    assert "1 compiled" in capsys.readouterr().out
    assert (root / "spirv" / "scale.spv").read_bytes() != named
    assert _build(root, "check", "-q") == 0


@needs_tools
def test_the_manifest_says_a_blob_is_stripped(tmp_path):
    root = _project(tmp_path, '["-g0"]')
    assert _build(root, "build", "-q") == 0
    entry = json.loads((root / "manifests" / "shaders.json").read_text())["shaders"][0]
    assert entry["stripped"] is True


@needs_tools
def test_a_stripped_variant_from_the_cache_keeps_its_names(tmp_path):
    root = _project(tmp_path, '["-g0"]')
    assert _build(root, "build", "-q") == 0
    (root / "pyproject.toml").write_text("[tool.genspirv]\nflags = []\n")
    assert _build(root, "build", "-q") == 0
    (root / "pyproject.toml").write_text('[tool.genspirv]\nflags = ["-g0"]\n')
    assert _build(root, "build", "-q") == 0          # from the cache
    info = load_manifest(root / "manifests" / "shaders.json").entry("scale").info
    assert [x.name for x in info.bindings] == ["X", "Y"]


def test_a_manifest_without_g0_is_the_bytes_it_always_was():
    """The repository's own manifest (no -g0) carries no ``stripped`` field: its bytes stand."""
    text = (Path(__file__).resolve().parent.parent / "manifests" / "shaders.json").read_text()
    assert '"stripped"' not in text


# -- the runtime's proof -------------------------------------------------------------


@needs_tools
def test_the_runtime_proves_a_stripped_blob_with_the_manifests_names(tmp_path):
    import dataclasses
    root = _project(tmp_path, "[]")
    named = _glslang_g0(root, tmp_path / "n.spv")
    stripped = _glslang_g0(root, tmp_path / "s.spv", "-g0")
    info = reflect(named)
    check_entry("scale", info, named)                      # a named blob proves its names
    with pytest.raises(ManifestMismatchError, match="name"):
        check_entry("scale", info, stripped)                # ... which a stripped one lacks
    check_entry("scale", info, stripped, names=False)       # the entry says stripped: names not asked
    # Negative control: everything but the names is still proven.
    edited = dataclasses.replace(info, local_size=(32, 1, 1))
    with pytest.raises(ManifestMismatchError, match="local_size"):
        check_entry("scale", edited, stripped, names=False)
    writable = dataclasses.replace(info, bindings=(dataclasses.replace(info.bindings[0], access="read_write"),
                                                   *info.bindings[1:]))
    with pytest.raises(ManifestMismatchError, match="access"):
        check_entry("scale", writable, stripped, names=False)


def test_trust_asks_for_names_only_where_the_entry_is_not_stripped(monkeypatch):
    from genspirv.manifest import ManifestEntry
    from genspirv.reflect import ShaderInfo
    from genspirv.runtime import trust
    seen = []
    monkeypatch.setattr(trust.reflect_verify, "check_entry", lambda k, i, b, names=True: seen.append(names))
    info = ShaderInfo("main", (1, 1, 1), (None,) * 3, (), (), 0)
    for stripped in (False, True):
        trust.verify_kernel(ManifestEntry("k", "s.comp", (), "k.spv", f"{int(stripped)}" * 64, 20, info,
                                          stripped=stripped), b"")
    assert seen == [True, False]
