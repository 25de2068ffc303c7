"""``genspirv build`` and ``check`` with slang-glslang, the slangpy wheel's newer glslang.

A project over tests/slang_shaders/ holds a variant per feature the pinned
glslang 13.1.1 lacks: cooperative matrix 2 (fp16, and 4-bit blocks decoded on
load; ``compiler = "slang-glslang"``, vulkan1.3), the integer dot product
(optional, built by the second compiler of the top-level chain, then
optimised by spirv-opt) and bfloat16
(``compiler = "slang-glslang"``); fp4, which neither compiler has (optional:
unavailable); and a plain shader the default compiler builds. Each blob passes
spirv-val for its target, its manifest entry is its reflection, as spirv-cross
reads it where spirv-cross parses it, and ``check`` rebuilds every one byte for
byte (a changed byte is caught: the negative control). The default compiler's
blob and entry are what a project without the second compiler gives. Without
the ``slang-glslang`` extra (the library made not found) the optional variants
are unavailable and the required ones fail, each saying how to install it
(and, known already, fold into one line). A generator's generated source and
header compile with it in a build and in check's temporary folder.
Skipped without the slangpy wheel; the tests that compile with it are marked
slow (a build starts workers and asks the compiler what it predefines: 2-4 s).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import pytest

from corpus import tools
from genspirv.toolchain.slang import library, slang_glslang
from genspirv.errors import ToolchainError
from genspirv.manifest import info_from_dict
from genspirv.reflect import reflect
from genspirv.toolchain.tools import find_tool

SHADERS = Path(__file__).resolve().parent / "slang_shaders"
HINT = f"compiler slang-glslang needs the slangpy wheel: {library.INSTALL_HINT}"

try:
    library.find_library()
except ToolchainError as exc:
    pytestmark = pytest.mark.skip(reason=f"slang-glslang unavailable: {exc}")

CONFIG = """\
[tool.genspirv]
compiler = ["glslang", "slang-glslang"]     # optional variants the pinned glslang cannot build

[tool.genspirv.shaders."copy_f32.comp"]
defines = { ACTIVATION = "relu" }

[tool.genspirv.shaders."matmul_cm2.comp"]
compiler = "slang-glslang"
target_env = "vulkan1.3"
variants = [ { name = "matmul_cm2_f16", defines = { A_F16 = "1", ACC_TYPE = "float" } },
             { name = "matmul_cm2_q4", defines = { A_Q4 = "1", ACC_TYPE = "float16_t" } } ]

[tool.genspirv.shaders."dot_i8.comp"]
optional = true
optimize = true                             # spirv-opt after slang-glslang, as after glslang

[tool.genspirv.shaders."scale_bf16.comp"]
compiler = "slang-glslang"

[tool.genspirv.shaders."scale_fp4.comp"]
optional = true
"""
SECOND = {"matmul_cm2_f16": "vulkan1.3", "matmul_cm2_q4": "vulkan1.3", "dot_i8": "vulkan1.2",
          "scale_bf16": "vulkan1.2"}
SOURCES = ("copy_f32", "matmul_cm2", "dot_i8", "scale_bf16", "scale_fp4")


def make_project(root: Path, config: str = CONFIG, sources=SOURCES) -> Path:
    shutil.copytree(SHADERS / "glsl" / "include", root / "glsl" / "include")
    for name in sources:
        shutil.copy(SHADERS / "glsl" / f"{name}.comp", root / "glsl" / f"{name}.comp")
    (root / "pyproject.toml").write_text(config)
    return root


def manifest(root: Path) -> dict:
    return json.loads((root / "manifests/shaders.json").read_text())


@pytest.fixture(scope="module")
def _built(tmp_path_factory):
    from genspirv.cli import main
    root = make_project(tmp_path_factory.mktemp("slang") / "project")
    assert main(["--root", str(root), "build", "-q"]) == 0
    return root


@pytest.fixture
def built(_built, tmp_path):
    root = tmp_path / "built"
    shutil.copytree(_built, root)
    return root


@pytest.mark.slow
def test_a_build_compiles_each_feature_with_the_second_compiler(tmp_path, genspirv):
    root = make_project(tmp_path / "p")
    result = genspirv("--root", root, "build", "-q")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "genspirv build: scale_fp4 unavailable: compiler slang-glslang lacks GL_EXT_float_e2m1",
        "genspirv build: 5 compiled (4 by slang-glslang), 0 up to date, 1 unavailable, 0 removed, 6 files written"]
    result = genspirv("--root", root, "build", "-q")
    assert result.out.splitlines()[-1] == \
        "genspirv build: 0 compiled, 5 up to date, 1 unavailable, 0 removed, 0 files written"


@pytest.mark.slow
def test_every_blob_validates_and_its_entry_is_its_reflection(built, tmp_path):
    doc = manifest(built)
    assert doc["toolchain"] == {"glslang": "13.1.1", "target_env": "vulkan1.2", "flags": [],
                                "slang_glslang": "2026.12", "slangpy": "0.43.1", "spirv_opt": "2025.5"}
    entries = {e["name"]: e for e in doc["shaders"]}
    assert {n: e.get("compiler") for n, e in entries.items()} == {**dict.fromkeys(SECOND, "slang-glslang"),
                                                                 "copy_f32": None}
    assert [n for n, e in entries.items() if e.get("optimized")] == ["dot_i8"]
    assert [(u["name"], u["missing"], u.get("compiler")) for u in doc["unavailable"]] == [
        ("scale_fp4", ["GL_EXT_float_e2m1"], "slang-glslang")]
    spirv_val = find_tool("spirv-val")
    for name, env in SECOND.items():
        blob = (built / entries[name]["spirv"]).read_bytes()
        checked = spirv_val.run(["--target-env", env, str(built / entries[name]["spirv"])], what="spirv-val")
        assert checked.returncode == 0, (checked.stdout + checked.stderr).decode()
        info = reflect(blob)
        assert info_from_dict(entries[name], name) == info
        try:
            cross = tools.cross_reflect(blob)
        except AssertionError as exc:
            # spirv-cross (Debian 12's) cannot parse cooperative matrix 2 tensor loads.
            assert "cm2" in name and "no block to insert opcode" in str(exc)
        else:
            tools.assert_agrees(info, cross, "main", name)
            assert info.push_constant_size == tools.cross_push_constant_size(cross)
    assert "dot_i8" in SECOND and "scale_bf16" in SECOND      # spirv-cross parses these two


@pytest.mark.slow
def test_check_rebuilds_every_blob_byte_for_byte_and_sees_a_changed_one(built, genspirv):
    result = genspirv("--root", built, "check")
    assert result.code == 0, result.err
    assert result.out.splitlines()[-1] == "genspirv check: 6 files up to date"     # after its progress lines
    blob = built / "spirv/scale_bf16.spv"
    data = bytearray(blob.read_bytes())
    data[-8] ^= 1
    blob.write_bytes(bytes(data))
    result = genspirv("--root", built, "check")
    assert result.code == 1 and "spirv/scale_bf16.spv (scale_bf16): differs from a fresh build" in result.err


@pytest.mark.slow
def test_the_default_compilers_blob_and_entry_are_as_without_the_second(built, tmp_path, genspirv):
    alone = make_project(tmp_path / "alone", '[tool.genspirv.shaders."copy_f32.comp"]\n'
                         'defines = { ACTIVATION = "relu" }\n', sources=("copy_f32",))
    assert genspirv("--root", alone, "build", "-q").code == 0
    assert (alone / "spirv/copy_f32.spv").read_bytes() == (built / "spirv/copy_f32.spv").read_bytes()
    entry = {e["name"]: e for e in manifest(built)["shaders"]}["copy_f32"]
    assert manifest(alone)["shaders"] == [entry]
    assert "slang_glslang" not in manifest(alone)["toolchain"]


@pytest.mark.slow
def test_explain_names_the_compiler_when_it_changes(built, genspirv):
    config = built / "pyproject.toml"
    config.write_text(config.read_text().replace('defines = { ACTIVATION = "relu" }',
                                                 'defines = { ACTIVATION = "relu" }\ncompiler = "slang-glslang"'))
    result = genspirv("--root", built, "build", "-q", "--explain")
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == (
        "explain: copy_f32: compile: compiler changed: glslang 13.1.1 -> "
        "slang-glslang 2026.12 (slangpy 0.43.1), preprocessed by glslang 13.1.1")
    assert result.out.splitlines()[-1].startswith("genspirv build: 1 compiled (1 by slang-glslang), 4 up to date")


@pytest.mark.slow
def test_coopmat2_below_spirv_1_6_fails_naming_the_target_env_even_when_optional(built, genspirv):
    """The second compiler builds it for another target: a mistake to fix, not a feature missing."""
    config = built / "pyproject.toml"
    config.write_text(config.read_text().replace('compiler = "slang-glslang"\ntarget_env = "vulkan1.3"',
                                                 'optional = true'))
    result = genspirv("--root", built, "build", "-q")
    assert result.code == 1
    assert "uses GL_NV_cooperative_matrix2, which slang-glslang builds only for a newer SPIR-V than vulkan1.2 " \
           'gives: set target_env = "vulkan1.3" for this variant' in result.err
    assert "(in 2 variants: matmul_cm2_f16, matmul_cm2_q4)" in result.err


# -- without the extra ------------------------------------------------------------------


@pytest.fixture
def not_installed(monkeypatch):
    """slangpy's library not found, as where `pip install 'genspirv[slang-glslang]'` was not run."""
    def find_library():
        raise ToolchainError(HINT)

    monkeypatch.setattr(slang_glslang, "find_library", find_library)


def test_without_the_extra_a_required_variant_fails_saying_how_to_install_it(tmp_path, not_installed, genspirv):
    root = make_project(tmp_path / "p")
    result = genspirv("--root", root, "build", "-q")
    assert result.code == 2
    assert result.err == ("genspirv: error: variants matmul_cm2_f16, matmul_cm2_q4, scale_bf16 (not optional) "
                          f"need compiler slang-glslang: {HINT}\n")
    assert not (root / "manifests").exists()
    result = genspirv("--root", root, "check")
    assert result.code == 2 and HINT in result.err


@pytest.mark.slow
def test_without_the_extra_optional_variants_are_listed_unavailable(tmp_path, not_installed, genspirv):
    root = make_project(tmp_path / "p", CONFIG.replace('compiler = "slang-glslang"\n',
                                                       'compiler = "slang-glslang"\noptional = true\n'))
    result = genspirv("--root", root, "build", "-q")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        f"genspirv build: dot_i8 unavailable: the pinned compiler lacks GL_EXT_integer_dot_product; {HINT}",
        f"genspirv build: matmul_cm2_f16 unavailable: {HINT}",
        f"genspirv build: matmul_cm2_q4 unavailable: {HINT}",
        f"genspirv build: scale_bf16 unavailable: {HINT}",
        f"genspirv build: scale_fp4 unavailable: the pinned compiler lacks GL_EXT_float_e2m1; {HINT}",
        "genspirv build: 1 compiled, 0 up to date, 5 unavailable, 0 removed, 2 files written"]
    doc = manifest(root)
    assert [e["name"] for e in doc["shaders"]] == ["copy_f32"] and "slang_glslang" not in doc["toolchain"]
    # Known already, they are one line on the next build (in full with -v); list names the compilers.
    result = genspirv("--root", root, "build", "-q")
    assert result.out.splitlines() == [
        "genspirv build: 5 unavailable: GL_EXT_integer_dot_product, slang-glslang (not installed), "
        "GL_EXT_float_e2m1; genspirv list --unavailable",
        "genspirv build: 0 compiled, 1 up to date, 5 unavailable, 0 removed, 0 files written"]
    result = genspirv("--root", root, "build", "-q", "-v")
    assert f"genspirv build: matmul_cm2_f16 unavailable: {HINT}" in result.out.splitlines()
    result = genspirv("--root", root, "list", "--unavailable")
    assert [line.split() for line in result.out.splitlines()] == [
        ["name", "lacks", "source", "compiler"],
        ["dot_i8", "GL_EXT_integer_dot_product", "glsl/dot_i8.comp", "glslang"],
        ["matmul_cm2_f16", "slang-glslang", "glsl/matmul_cm2.comp", "slang-glslang", "(not", "installed)"],
        ["matmul_cm2_q4", "slang-glslang", "glsl/matmul_cm2.comp", "slang-glslang", "(not", "installed)"],
        ["scale_bf16", "slang-glslang", "glsl/scale_bf16.comp", "slang-glslang", "(not", "installed)"],
        ["scale_fp4", "GL_EXT_float_e2m1", "glsl/scale_fp4.comp", "glslang"]]


# -- an interrupt ---------------------------------------------------------------------------


@pytest.mark.slow
def test_sigterm_kills_a_worker_in_the_middle_of_a_long_compile(tmp_path):
    """A compile that takes the library 10 s or more is under way in a worker when SIGTERM
    comes: the build exits 130 within seconds, the worker killed with the other tool
    processes rather than waited for (which took the whole compile before)."""
    import signal
    import subprocess
    import sys
    import time

    from faults import alive, children_running, cli_env
    root = make_project(tmp_path / "p", '[tool.genspirv]\ncompiler = "slang-glslang"\n', sources=())
    body = "\n".join(f"    x = x * 1.0001 + float({i});" for i in range(300000))
    (root / "glsl/slow.comp").write_text(f"#version 450\nlayout(local_size_x = 1) in;\nlayout(binding = 0) buffer B "
                                         f"{{ float v[]; }};\nvoid main() {{\n    float x = v[0];\n{body}\n"
                                         "    v[0] = x;\n}\n")
    probes = root / ".genspirv/slang-glslang.json"
    proc = subprocess.Popen([sys.executable, "-m", "genspirv", "build", "--root", str(root)], cwd=root,
                            env=cli_env({"GENSPIRV_COMPILER_MEMORY_MB": "4096"}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not probes.exists() and time.monotonic() < deadline:    # the probes, then the compile
            time.sleep(0.05)
        time.sleep(0.5)
        workers = children_running(proc.pid, "genspirv.toolchain.slang.workers")
        assert workers and all(alive(p) for p in workers) and proc.poll() is None
        stopped_at = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and time.monotonic() - stopped_at < 5, err
        assert err.startswith("genspirv: interrupted: 0 of 1 compiles finished"), err
        assert not any(alive(p) for p in workers), "a worker outlived the build"
    finally:
        proc.kill()
        proc.wait()
        for pid in workers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# -- a preamble ------------------------------------------------------------------------------

HEADER = """#version 450
#extension GL_EXT_bfloat16 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#define FLOAT bfloat16_t
"""
SCALE = """#include "helper.glsl"
layout(local_size_x = 64) in;
layout(binding = 0) writeonly buffer Y { FLOAT y[]; };
void main() {
    y[gl_GlobalInvocationID.x] = FLOAT(twice(1.5));
}
"""


@pytest.mark.slow
def test_a_preamble_goes_before_the_source_as_with_the_default_compiler(tmp_path, genspirv):
    """The blob is the hand-concatenated file's; includes resolve from the source's folder;
    each error names its own file and line; the preamble is in depends and in the key."""
    root = tmp_path / "p"
    for rel, text in {"glsl/headers/bf16.glsl": HEADER, "glsl/sub/scale.comp": SCALE,
                      "glsl/sub/helper.glsl": "float twice(float x) { return 2.0 * x; }\n",
                      "pyproject.toml": '[tool.genspirv]\ncompiler = "slang-glslang"\n'
                                        'preamble = "glsl/headers/bf16.glsl"\n'}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    result = genspirv("--root", root, "build", "-q")
    assert result.code == 0, result.err
    entry = manifest(root)["shaders"][0]
    assert entry["depends"] == ["glsl/sub/scale.comp", "glsl/headers/bf16.glsl", "glsl/sub/helper.glsl"]
    assert entry["compiler"] == "slang-glslang" and entry["bindings"][0]["access"] == "write"
    (root / "glsl/sub/by_hand.comp").write_text(HEADER + SCALE)
    with slang_glslang.open_slang_glslang("13.1.1", jobs=1) as slang:
        by_hand = slang.compile("glsl/sub/by_hand.comp", root=root).blob
    (root / "glsl/sub/by_hand.comp").unlink()
    assert (root / "spirv/scale.spv").read_bytes() == by_hand
    (root / "glsl/sub/scale.comp").write_text(SCALE.replace("twice(1.5)", "twice(oops)"))
    result = genspirv("--root", root, "build", "-q")
    assert result.code == 1 and "\nglsl/sub/scale.comp:5: error: 'oops' : undeclared identifier\n" in result.err
    (root / "glsl/sub/scale.comp").write_text(SCALE)
    (root / "glsl/headers/bf16.glsl").write_text(HEADER + "const float k = undeclared_thing;\n")
    result = genspirv("--root", root, "build", "-q")
    assert result.code == 1 and "\nglsl/headers/bf16.glsl:6: error: 'undeclared_thing' : undeclared identifier" \
        in result.err, result.err
    (root / "glsl/headers/bf16.glsl").write_text(HEADER + "// retuned\n")
    result = genspirv("--root", root, "build", "-q", "--explain")
    assert result.out.splitlines()[0] == "explain: scale: compile: glsl/headers/bf16.glsl changed"


# -- a generated source ----------------------------------------------------------------------

GENERATOR = '''\
from pathlib import Path

TEMPLATE = Path(__file__).parent / "templates/scale.comp.in"


def files():
    return [{"path": "bf16_types.glslh", "text": """\\
#extension GL_EXT_bfloat16 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#define FLOAT bfloat16_t
float twice(float x) { return 2.0 * x; }
"""}]


def variants():
    return [{"name": "gen_scale_bf16", "source": "scale.comp", "compiler": "slang-glslang",
             "source_text": TEMPLATE.read_text().replace("${TYPE}", "bf16"),
             "template": "templates/scale.comp.in", "meta": {"tile": 4}}]
'''
TEMPLATE = """#version 450
#include "${TYPE}_types.glslh"
layout(local_size_x = 64) in;
layout(binding = 0) writeonly buffer Y { FLOAT y[]; };
void main() {
    y[gl_GlobalInvocationID.x] = FLOAT(twice(1.5));
}
"""


@pytest.mark.slow
def test_a_generated_source_builds_with_the_second_compiler_and_check_reads_it_from_its_temporary_folder(
        tmp_path, genspirv):
    """The generated source and its generated header are found through the compile job (build:
    .genspirv/generated; check: its temporary folder) and named as .genspirv/generated/... in
    depends, messages and keys either way."""
    root = tmp_path / "p"
    (root / "templates").mkdir(parents=True)
    (root / "templates/scale.comp.in").write_text(TEMPLATE)
    (root / "gen.py").write_text(GENERATOR)
    (root / "pyproject.toml").write_text('[tool.genspirv]\ngenerator = "gen.py"\n')
    result = genspirv("--root", root, "build", "-q")
    assert result.code == 0, result.err
    assert result.out.splitlines()[-1].startswith("genspirv build: 1 compiled (1 by slang-glslang)")
    entry = manifest(root)["shaders"][0]
    assert entry["source"] == ".genspirv/generated/scale.comp" and entry["compiler"] == "slang-glslang"
    assert entry["meta"] == {"tile": 4} and entry["bindings"][0]["access"] == "write"
    assert entry["depends"][:2] == [".genspirv/generated/scale.comp", ".genspirv/generated/bf16_types.glslh"]
    assert {"gen.py", "templates/scale.comp.in"} <= set(entry["depends"])
    assert not any(d.startswith("/") for d in entry["depends"])

    # check on a copy without .genspirv/: the generated files exist only in check's temporary folder.
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".genspirv"))
    result = genspirv("--root", clone, "check")
    assert result.code == 0, result.err
    assert result.out.splitlines()[-1] == "genspirv check: 2 files up to date"
    assert not (clone / ".genspirv/generated").exists()

    # An error in the generated header names it as the build does, in build and in check alike.
    (clone / "gen.py").write_text(GENERATOR.replace("2.0 * x", "2.0 * oops"))
    for command in ("build", "check"):
        result = genspirv("--root", clone, command, "-q")
        assert result.code == 1, result.err
        assert "\n.genspirv/generated/bf16_types.glslh:5: error: 'oops' : undeclared identifier\n" in result.err, \
            result.err
        assert "genspirv-check" not in result.err and str(tmp_path) not in result.err, result.err
