"""genspirv's CMake package, driven by a real cmake on a tiny C++ consumer.

The consumer (written to a temp folder, its shaders in a subfolder, under a
path with a space) finds the package with ``-Dgenspirv_DIR=$(genspirv
cmake-dir)``, links the table ``genspirv_add_shaders`` makes, and prints what
the table holds for one module; the test compares that with the blob on disk.
With Ninja: a second build runs no genspirv step (ninja says so); a
comment-only edit of an included GLSL header runs genspirv and nothing after
it (the table's bytes did not change: no compile, no link); editing the
header's code reruns it, recompiles, relinks, and the program sees the new
blob; ``ctest`` runs ``genspirv check``, which fails once a blob is tampered
with. With Unix Makefiles: build, run, a no-op second build, and the same
comment-only edit recompiling nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from genspirv.emit import cmake as emit_cmake
from genspirv.emit.cmake import cmake_dir

REPO = Path(__file__).resolve().parent.parent
CMAKE = shutil.which("cmake")
needs_cmake = pytest.mark.skipif(CMAKE is None or shutil.which("c++") is None,
                                 reason="needs cmake and a C++ compiler (apt-get install cmake ninja-build)")

PYPROJECT = """\
[tool.genspirv]
glsl_dir = "glsl"
spirv_dir = "spirv"
manifest = "manifests/shaders.json"
generate = [ { target = "c", output = "gen/kernels" } ]
"""

COMMON = "const float SCALE = 2.0;\n"

SCALE = """\
#version 450
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; y[i] = SCALE * x[i]; }
"""

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.20)
project(consumer CXX)
find_package(genspirv CONFIG REQUIRED)
enable_testing()
genspirv_add_shaders(kernels ROOT "shader dir")
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE kernels)
"""

# Prints the module's words (hex, one line) and a hazard decision from the
# table's masks: proves both headers are on the include path.
MAIN = r"""
#include <cstdio>
#include "kernels.h"
#include "genspirv/hazards.h"

int main() {
    const genspirv_module *m = genspirv_find_module("scale");
    if (m == nullptr) return 1;
    for (size_t i = 0; i < m->word_count; i++) std::printf("%08x", (unsigned)m->words[i]);
    std::printf("\n");
    genspirv_interval reads[4], writes[4];
    genspirv_tracker t;
    genspirv_barrier b;
    genspirv_tracker_init(&t, GENSPIRV_POLICY_SMART, reads, 4, writes, 4);
    genspirv_range x = {1, 0, 256}, y = {2, 0, 256};
    genspirv_range first[2] = {x, y}, second[2] = {y, x};   /* the second reads what the first wrote */
    genspirv_tracker_access(&t, GENSPIRV_STAGE_COMPUTE, first, 2, m->readable_mask, m->writable_mask, &b);
    int d = genspirv_tracker_access(&t, GENSPIRV_STAGE_COMPUTE, second, 2, m->readable_mask, m->writable_mask, &b);
    std::printf("second dispatch: %s\n", d == GENSPIRV_BARRIER ? "barrier" : "none");
    return 0;
}
"""


def env() -> dict:
    e = dict(os.environ)
    # The build's genspirv must be this checkout's, in every subprocess cmake starts.
    e["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [e.get("PYTHONPATH")] if p])
    return e


def run(*args, cwd=None, ok=True) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env(), capture_output=True, text=True,
                          timeout=300)
    if ok:
        assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout}\n{proc.stderr}"
    return proc


def make_consumer(tmp: Path) -> Path:
    src = tmp / "consumer src"
    shaders = src / "shader dir"
    (shaders / "glsl" / "include").mkdir(parents=True)
    (shaders / "pyproject.toml").write_text(PYPROJECT)
    (shaders / "glsl" / "include" / "common.glsl").write_text(COMMON)
    (shaders / "glsl" / "scale.comp").write_text(SCALE)
    (src / "CMakeLists.txt").write_text(CMAKELISTS)
    (src / "main.cpp").write_text(MAIN)
    return src


def configure(src: Path, build: Path, generator: str) -> None:
    run(CMAKE, "-S", src, "-B", build, "-G", generator, f"-Dgenspirv_DIR={cmake_dir()}",
        f"-DGENSPIRV_PYTHON={sys.executable}")


def edges_run(ninja_log: str) -> list[str]:
    """What each edge ninja ran was: the first word of its description ("Building",
    "Linking"), or "genspirv build" for the genspirv step."""
    edges = []
    for line in ninja_log.splitlines():
        m = re.match(r"\[\d+/\d+\] (.*)", line)
        if m:
            edges.append("genspirv build" if m.group(1).startswith("genspirv build") else m.group(1).split()[0])
    return edges


def program_words(build: Path) -> str:
    out = run(build / "consumer").stdout.splitlines()
    assert out[1] == "second dispatch: barrier"
    return out[0]


def blob_words(src: Path) -> str:
    data = (src / "shader dir" / "spirv" / "scale.spv").read_bytes()
    return "".join(f"{w:08x}" for w in struct.unpack(f"<{len(data) // 4}I", data))


def test_cmake_dir_prints_the_package_folder():
    out = run(sys.executable, "-m", "genspirv", "cmake-dir").stdout.strip()
    assert Path(out) == cmake_dir()
    assert (Path(out) / "genspirvConfig.cmake").is_file()
    assert (Path(out) / "genspirvConfigVersion.cmake").is_file()


def test_cmakedir_option_prints_what_cmake_dir_prints(genspirv):
    """`genspirv --cmakedir`, pybind11's spelling, is `genspirv cmake-dir`; it takes no other command."""
    spelled = genspirv("--cmakedir")
    assert spelled.code == 0 and spelled == genspirv("cmake-dir") and Path(spelled.out.strip()) == cmake_dir()
    refused = genspirv("--cmakedir", "list")
    assert refused.code == 2 and "--cmakedir is `genspirv cmake-dir`" in refused.err


def test_package_version_is_the_python_package_version():
    import genspirv
    text = (cmake_dir() / "genspirvConfigVersion.cmake").read_text()
    assert f'set(PACKAGE_VERSION "{genspirv.__version__}")' in text


@pytest.mark.slow
@needs_cmake
@pytest.mark.skipif(shutil.which("ninja") is None, reason="needs ninja (apt-get install ninja-build)")
def test_ninja_consumer_builds_rebuilds_on_include_edit_and_checks(tmp_path):
    src = make_consumer(tmp_path)
    build = tmp_path / "build"
    configure(src, build, "Ninja")
    run(CMAKE, "--build", build)
    first = program_words(build)
    assert first == blob_words(src)

    # Nothing changed: ninja has no work, genspirv does not run, the manifest is untouched.
    manifest = src / "shader dir" / "manifests" / "shaders.json"
    stamp = manifest.stat().st_mtime_ns
    noop = run(CMAKE, "--build", build, "--", "-d", "explain")
    assert "no work to do" in noop.stdout, noop.stdout + noop.stderr
    assert "genspirv" not in noop.stdout + noop.stderr
    assert manifest.stat().st_mtime_ns == stamp

    # A comment-only edit of the included header: genspirv runs (the header is in its
    # depfile) and changes no byte of the table, so nothing after it runs (restat).
    common = src / "shader dir" / "glsl" / "include" / "common.glsl"
    common.write_text("// the scale factor\n" + COMMON)
    comment = run(CMAKE, "--build", build)
    assert edges_run(comment.stdout) == ["genspirv build"], comment.stdout
    assert program_words(build) == first

    # An included header changes the blob: the build reruns genspirv, recompiles and relinks
    # (the same parse that saw nothing above sees the compile here).
    common.write_text("const float SCALE = 3.0;\n")
    rebuild = run(CMAKE, "--build", build)
    edges = edges_run(rebuild.stdout)
    assert edges[0] == "genspirv build" and "Building" in edges and "Linking" in edges, rebuild.stdout
    second = program_words(build)
    assert second == blob_words(src) and second != first

    # ctest runs genspirv check: clean now, failing once a blob is tampered with.
    run("ctest", "--output-on-failure", cwd=build)
    blob = src / "shader dir" / "spirv" / "scale.spv"
    data = bytearray(blob.read_bytes())
    data[-8] ^= 0xFF
    blob.write_bytes(bytes(data))
    failed = run("ctest", "--output-on-failure", cwd=build, ok=False)
    assert failed.returncode != 0
    assert "kernels_genspirv_check" in failed.stdout and "differs" in failed.stdout


@pytest.mark.slow
@needs_cmake
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_makefiles_consumer_builds_in_source_and_noop_rebuilds(tmp_path):
    src = make_consumer(tmp_path)
    configure(src, src, "Unix Makefiles")            # in-source this time
    run(CMAKE, "--build", src)
    assert program_words(src) == blob_words(src)
    noop = run(CMAKE, "--build", src)
    assert not re.search(r"genspirv build \(", noop.stdout), noop.stdout
    common = src / "shader dir" / "glsl" / "include" / "common.glsl"
    # Comment only: genspirv runs, the table's copies keep their timestamps, make compiles nothing.
    common.write_text("// the scale factor\n" + COMMON)
    comment = run(CMAKE, "--build", src)
    assert re.search(r"genspirv build \(", comment.stdout), comment.stdout
    assert not re.search(r"Building|Linking", comment.stdout), comment.stdout
    common.write_text("const float SCALE = 5.0;\n")
    rebuild = run(CMAKE, "--build", src)
    assert re.search(r"genspirv build \(", rebuild.stdout), rebuild.stdout
    assert re.search(r"Building C\S* object .*kernels\.c", rebuild.stdout), rebuild.stdout
    assert program_words(src) == blob_words(src)


@pytest.mark.slow
@needs_cmake
def test_configure_fails_clearly_when_python_lacks_genspirv(tmp_path):
    src = make_consumer(tmp_path)
    fake = tmp_path / "python-without-genspirv"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")   # -I: no PYTHONPATH, no site
    fake.chmod(0o755)
    proc = subprocess.run([CMAKE, "-S", str(src), "-B", str(tmp_path / "b"), f"-Dgenspirv_DIR={cmake_dir()}",
                           f"-DGENSPIRV_PYTHON={fake}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    message = " ".join(proc.stderr.split())     # CMake wraps the message
    assert f"GENSPIRV_PYTHON={fake} cannot import genspirv (ModuleNotFoundError: No module named 'genspirv')" \
        in message, proc.stderr
    assert ";(" not in message


@pytest.mark.slow
@needs_cmake
@pytest.mark.skipif(shutil.which("ninja") is None, reason="needs ninja (apt-get install ninja-build)")
def test_committed_table_builds_without_the_shader_compiler(tmp_path):
    """GENSPIRV_COMPILE_SHADERS=OFF: the committed table as it is, no genspirv step, no check test."""
    src = make_consumer(tmp_path)
    run(sys.executable, "-m", "genspirv", "--root", src / "shader dir", "build", "-q")
    before = {p: p.read_bytes() for p in (src / "shader dir").rglob("*") if p.is_file() and ".genspirv" not in p.parts}
    build = tmp_path / "build"
    run(CMAKE, "-S", src, "-B", build, "-G", "Ninja", f"-Dgenspirv_DIR={cmake_dir()}",
        f"-DGENSPIRV_PYTHON={sys.executable}", "-DGENSPIRV_COMPILE_SHADERS=OFF")
    log = run(CMAKE, "--build", build).stdout
    assert edges_run(log).count("genspirv build") == 0 and "Linking" in edges_run(log), log
    assert program_words(build) == blob_words(src)
    assert "No tests were found" in run("ctest", cwd=build, ok=False).stdout + run("ctest", cwd=build, ok=False).stderr
    after = {p: p.read_bytes() for p in (src / "shader dir").rglob("*") if p.is_file() and ".genspirv" not in p.parts}
    assert after == before


@pytest.mark.slow
@needs_cmake
def test_configure_error_names_unknown_arguments_with_spaces(tmp_path):
    """The usage error joins the unknown words with spaces, not CMake's list ';'."""
    src = make_consumer(tmp_path)
    cmakelists = src / "CMakeLists.txt"
    cmakelists.write_text(cmakelists.read_text().replace('ROOT "shader dir")', 'ROOT "shader dir" SOURCES a.comp)'))
    proc = run(CMAKE, "-S", src, "-B", tmp_path / "b", f"-Dgenspirv_DIR={cmake_dir()}",
               f"-DGENSPIRV_PYTHON={sys.executable}", ok=False)
    assert proc.returncode != 0
    assert "unknown arguments: SOURCES a.comp (usage:" in proc.stderr, proc.stderr
    assert "SOURCES;a.comp" not in proc.stderr
    cmakelists.write_text(CMAKELISTS.replace('ROOT "shader dir"', "ROOT"))
    proc = run(CMAKE, "-S", src, "-B", tmp_path / "c", f"-Dgenspirv_DIR={cmake_dir()}",
               f"-DGENSPIRV_PYTHON={sys.executable}", ok=False)
    assert proc.returncode != 0 and "ROOT needs a folder" in proc.stderr, proc.stderr


STOCK_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"

# A consumer of the vendored package: the committed table, hazards.h, and vulkan.h through genspirv::vulkan.
VENDORED_CMAKELISTS = """\
cmake_minimum_required(VERSION 3.20)
project(consumer CXX)
find_package(genspirv CONFIG REQUIRED)
genspirv_add_shaders(kernels ROOT "shader dir")
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE kernels genspirv::vulkan)
"""


def stock(*args, cwd=None, ok=True) -> subprocess.CompletedProcess:
    """``args`` as a new user's shell runs them: env -i with the system PATH (no genspirv importable)."""
    proc = subprocess.run(["env", "-i", f"PATH={STOCK_PATH}", f"HOME={os.environ.get('HOME', '/root')}",
                           *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)
    if ok:
        assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.mark.slow
@needs_cmake
@pytest.mark.skipif(shutil.which("ninja") is None, reason="needs ninja (apt-get install ninja-build)")
def test_a_vendored_copy_of_the_cmake_dir_alone_builds_the_committed_table(tmp_path):
    """The folder `genspirv cmake-dir` names, copied into a project, is the whole package: with
    -DGENSPIRV_COMPILE_SHADERS=OFF, under env -i (no genspirv anywhere), it builds a consumer of the
    committed table that includes genspirv/hazards.h and genspirv/vulkan.h."""
    src = make_consumer(tmp_path)
    run(sys.executable, "-m", "genspirv", "--root", src / "shader dir", "build", "-q")      # the committed table
    vendored = src / "third_party" / "genspirv"
    shutil.copytree(cmake_dir(), vendored)
    (src / "CMakeLists.txt").write_text(VENDORED_CMAKELISTS)
    (src / "main.cpp").write_text(MAIN.replace('#include "genspirv/hazards.h"',
                                               '#include "genspirv/hazards.h"\n#include "genspirv/vulkan.h"'))
    assert stock("python3", "-c", "import genspirv", cwd=tmp_path, ok=False).returncode != 0
    build = tmp_path / "build"
    stock(CMAKE, "-S", src, "-B", build, "-G", "Ninja", f"-Dgenspirv_DIR={vendored}", "-DGENSPIRV_COMPILE_SHADERS=OFF",
          cwd=tmp_path)
    log = stock(CMAKE, "--build", build).stdout
    assert "genspirv build" not in log and "Linking" in log, log
    assert program_words(build) == blob_words(src)


@pytest.mark.slow
@needs_cmake
@pytest.mark.skipif(not Path("/usr/include/vulkan/vulkan.h").is_file(), reason="needs the Vulkan headers")
def test_genspirv_vulkan_carries_the_vulkan_headers_include(tmp_path):
    """genspirv::vulkan puts the Vulkan headers on its user's include path: the project's
    Vulkan::Headers (find_package(Vulkan) after the package), else GENSPIRV_VULKAN_INCLUDE_DIR. The
    headers are copied to a folder of their own, so the compile line shows where they came from."""
    headers = tmp_path / "vulkan-sdk" / "include"
    for sub in ("vulkan", "vk_video"):
        if Path("/usr/include", sub).is_dir():
            shutil.copytree(Path("/usr/include", sub), headers / sub)
    src = make_consumer(tmp_path)
    run(sys.executable, "-m", "genspirv", "--root", src / "shader dir", "build", "-q")
    (src / "main.cpp").write_text(MAIN.replace('#include "genspirv/hazards.h"',
                                               '#include "genspirv/hazards.h"\n#include "genspirv/vulkan.h"'))

    def compile_line(cmakelists: str, *options: str) -> str:
        (src / "CMakeLists.txt").write_text(cmakelists)
        build = tmp_path / f"build-{len(list(tmp_path.glob('build-*')))}"
        run(CMAKE, "-S", src, "-B", build, f"-Dgenspirv_DIR={cmake_dir()}", "-DGENSPIRV_COMPILE_SHADERS=OFF",
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", *options)
        run(CMAKE, "--build", build)
        commands = __import__("json").loads((build / "compile_commands.json").read_text())
        return next(c["command"] for c in commands if c["file"].endswith("main.cpp"))

    with_target = VENDORED_CMAKELISTS.replace("genspirv_add_shaders", "find_package(Vulkan REQUIRED)\n"
                                              "genspirv_add_shaders")
    line = compile_line(with_target, f"-DVulkan_INCLUDE_DIR={headers}",
                        f"-DGENSPIRV_VULKAN_INCLUDE_DIR={tmp_path / 'elsewhere'}")
    assert str(headers) in line and "elsewhere" not in line, line          # Vulkan::Headers comes first
    line = compile_line(VENDORED_CMAKELISTS, f"-DGENSPIRV_VULKAN_INCLUDE_DIR={headers}")
    assert str(headers) in line, line
    # Control: a target that links only genspirv::hazards gets no Vulkan include.
    line = compile_line(VENDORED_CMAKELISTS.replace("genspirv::vulkan", "genspirv::hazards"),
                        f"-DGENSPIRV_VULKAN_INCLUDE_DIR={headers}")
    assert str(headers) not in line, line


def test_wheel_ships_the_cmake_package_and_the_header():
    try:
        import tomllib
    except ModuleNotFoundError:   # Python 3.10
        import tomli as tomllib
    from fnmatch import fnmatch
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["genspirv"]
    package = REPO / "genspirv"
    headers = emit_cmake.include_dir() / "genspirv"
    files = [*cmake_dir().glob("*.cmake"), headers / "hazards.h", headers / "vulkan.h",
             *(headers / "vulkan").glob("*.h")]
    assert len(files) == 9      # 2 cmake files, hazards.h, vulkan.h and its 5 parts
    for f in files:
        assert any(fnmatch(f.relative_to(package).as_posix(), p) for p in patterns), f


# -- the depfile ----------------------------------------------------------------


def test_make_escape():
    assert emit_cmake.make_escape("/a b/c#d$e") == "/a\\ b/c\\#d$$e"
    for bad in ("/a\nb", "/a\\b"):
        with pytest.raises(emit_cmake.OutputError, match="depfile"):
            emit_cmake.make_escape(bad)


def depfile_project(tmp: Path, generate: str = "", extra: str = "") -> Path:
    (tmp / "glsl" / "include").mkdir(parents=True)
    (tmp / "glsl" / "include" / "common.glsl").write_text(COMMON)
    (tmp / "glsl" / "scale.comp").write_text(SCALE)
    (tmp / "glsl" / "notes.txt").write_text("not a shader\n")
    (tmp / "pyproject.toml").write_text('[tool.genspirv]\nglsl_dir = "glsl"\n' + generate + extra)
    return tmp


def test_depfile_lists_sources_includes_folders_config_and_templates(tmp_path):
    from genspirv.project.config import load_config
    root = depfile_project(tmp_path, 'generate = [ { template = "t/x.j2", output = "x.h" } ]\n')
    (root / "t").mkdir()
    (root / "t" / "x.j2").write_text("{{ banner }}\n")
    config = load_config(root)
    # No manifest with `depends` yet: every file under glsl_dir counts.
    assert emit_cmake.depfile_inputs(config) == sorted([
        root / "glsl", root / "glsl" / "include", root / "glsl" / "include" / "common.glsl",
        root / "glsl" / "notes.txt", root / "glsl" / "scale.comp", root / "pyproject.toml", root / "t" / "x.j2"])
    # A manifest recording `depends` narrows the files to those.
    (root / "manifests").mkdir()
    (root / "manifests" / "shaders.json").write_text(
        '{"shaders": [{"name": "scale", "depends": ["glsl/scale.comp", "glsl/include/common.glsl"]}]}')
    assert root / "glsl" / "notes.txt" not in emit_cmake.depfile_inputs(config)
    assert root / "glsl" / "include" / "common.glsl" in emit_cmake.depfile_inputs(config)


def test_build_depfile_option_writes_make_syntax(tmp_path):
    from genspirv.cli import main
    from genspirv.project.config import load_config
    root = depfile_project(tmp_path / "with space")
    dep = tmp_path / "out" / "k.stamp.d"
    dep.parent.mkdir()                  # a depfile in a missing folder is refused (tests/test_cli.py)
    assert main(["--root", str(root), "build", "-q", "--depfile", str(dep)]) == 0
    text = dep.read_text()
    target, _, deps = text.partition(":")
    assert target == str(tmp_path / "out" / "k.stamp").replace(" ", "\\ ")
    words = [w.replace("\\ ", " ") for w in re.split(r"(?<!\\) ", deps.replace("\\\n", " ")) if w.strip()]
    assert [Path(w.strip()) for w in words] == emit_cmake.depfile_inputs(load_config(root))
    assert str(root / "glsl" / "include" / "common.glsl").replace(" ", "\\ ") in text
