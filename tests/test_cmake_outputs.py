"""genspirv's CMake package beyond the built-in C table: any template's outputs, and blobs = "files".

Real cmake, real compilers, small consumers in temp folders (paths with a
space):

- a header-only table from a project template (a backend's own shape:
  ``inline constexpr uint32_t kSpv_<name>[]`` words with a ``u`` suffix, blobs
  built with ``-g0``) becomes an INTERFACE library the program includes; a
  second build runs nothing, a comment-only GLSL edit runs genspirv alone;
- a llama.cpp-shaped template (a ``.cpp`` of ``blob_array``s and its header)
  becomes a static library;
- a ``blobs = "files"`` C table is compiled with what the compiler has, found
  by ``try_compile`` (the configure log names it): ``.incbin`` with gcc,
  ``#embed`` with a clang that has it, and arrays where
  ``-DGENSPIRV_BLOBS=arrays`` says the compiler has neither (the copy then holds
  the words as initialisers, the committed file none);
- with ``GENSPIRV_COMPILE_SHADERS=OFF`` the committed files-mode table compiles
  in place.

Each program compares what it links with the blob on disk.
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

from genspirv.emit.cmake import cmake_dir

from test_blob_files import EMBED_CLANG
from test_cmake import SCALE, COMMON, edges_run

REPO = Path(__file__).resolve().parent.parent
CMAKE, NINJA = shutil.which("cmake"), shutil.which("ninja")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CMAKE is None or NINJA is None or shutil.which("c++") is None,
                                 reason="needs cmake, ninja and a C++ compiler")]


def env(**extra) -> dict:
    e = dict(os.environ, **extra)
    e["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return e


def run(*args, cwd=None, ok=True, **extra) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env(**extra), capture_output=True, text=True,
                          timeout=300)
    if ok:
        assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout}\n{proc.stderr}"
    return proc


def consumer(tmp: Path, pyproject: str, templates: dict[str, str], main: str, languages: str = "CXX") -> Path:
    src = tmp / "consumer src"
    shaders = src / "shader dir"
    (shaders / "glsl" / "include").mkdir(parents=True)
    (shaders / "glsl" / "include" / "common.glsl").write_text(COMMON)
    (shaders / "glsl" / "scale.comp").write_text(SCALE)
    (shaders / "pyproject.toml").write_text('[tool.genspirv]\nglsl_dir = "glsl"\n' + pyproject)
    for rel, text in templates.items():
        (shaders / rel).parent.mkdir(parents=True, exist_ok=True)
        (shaders / rel).write_text(text)
    (src / "CMakeLists.txt").write_text(
        f"cmake_minimum_required(VERSION 3.20)\nproject(consumer {languages})\n"
        "find_package(genspirv CONFIG REQUIRED)\nenable_testing()\n"
        'genspirv_add_shaders(kernels ROOT "shader dir")\n'
        f"add_executable(consumer main.{'c' if languages == 'C' else 'cpp'})\n"
        "target_link_libraries(consumer PRIVATE kernels)\n")
    (src / f"main.{'c' if languages == 'C' else 'cpp'}").write_text(main)
    return src


def configure(src: Path, build: Path, *options: str, **extra) -> str:
    proc = run(CMAKE, "-S", src, "-B", build, "-G", "Ninja", f"-Dgenspirv_DIR={cmake_dir()}",
               f"-DGENSPIRV_PYTHON={sys.executable}", *options, **extra)
    return proc.stdout + proc.stderr


def blob_hex(src: Path) -> str:
    data = (src / "shader dir" / "spirv" / "scale.spv").read_bytes()
    return "".join(f"{w:08x}" for w in struct.unpack(f"<{len(data) // 4}I", data))


# -- a header-only table in a backend's own format ----------------------------------------

HEADER_ONLY = """\
// {{ banner }}
// {% for c in compilers %}{{ c.name }} {{ c.version }}{{ ", " if not loop.last }}{% endfor %}

#pragma once
#include <cstddef>
#include <cstdint>

{% for s in shaders %}
inline constexpr uint32_t kSpv_{{ s.ident }}[] = {
    {{ s.words | hex_words(8, "u") | join(",\\n    ") }}
};
{% endfor %}
"""

HEADER_ONLY_MAIN = r"""
#include <cstdio>
#include "kernels.hpp"

int main() {
    for (uint32_t w : kSpv_scale) std::printf("%08x", (unsigned)w);
    std::printf("\n%zu\n", sizeof kSpv_scale);
    return 0;
}
"""


def test_a_header_only_table_from_a_template_is_an_interface_library(tmp_path):
    src = consumer(tmp_path, 'flags = ["-g0"]\noptimize = true\n'
                   'generate = [ { template = "tools/kernels.hpp.j2", output = "src/kernels.hpp" } ]\n',
                   {"tools/kernels.hpp.j2": HEADER_ONLY}, HEADER_ONLY_MAIN)
    build = tmp_path / "build"
    configure(src, build)
    run(CMAKE, "--build", build)
    words, size = run(build / "consumer").stdout.split()
    assert words == blob_hex(src) and int(size) == len(words) // 2
    text = (src / "shader dir" / "src" / "kernels.hpp").read_text()
    assert "// glslang 13.1.1, spirv-opt " in text and re.search(r"0x07230203u,", text)
    # -g0: no OpName left in the blob the program holds ("main" is the entry point's only string).
    assert b"scale" not in (src / "shader dir" / "spirv" / "scale.spv").read_bytes()
    assert not list(build.rglob("libkernels.a"))          # nothing to compile: an INTERFACE library
    noop = run(CMAKE, "--build", build, "--", "-d", "explain")
    assert "no work to do" in noop.stdout, noop.stdout
    common = src / "shader dir" / "glsl" / "include" / "common.glsl"
    common.write_text("// a comment only\n" + COMMON)
    assert edges_run(run(CMAKE, "--build", build).stdout) == ["genspirv build"]
    common.write_text("const float SCALE = 3.0;\n")
    rebuild = run(CMAKE, "--build", build)
    assert "Building" in edges_run(rebuild.stdout), rebuild.stdout
    assert run(build / "consumer").stdout.split()[0] == blob_hex(src)
    run("ctest", "--output-on-failure", cwd=build)


# -- a template's sources ------------------------------------------------------------------

LLAMA_SOURCE = """\
// {{ banner }}
#include "ggml_shaders.hpp"
{% for s in shaders %}
{{ s | blob_array(s.ident ~ "_data") }}
const uint64_t {{ s.ident }}_len = {{ s.size }};
{% endfor %}
"""
LLAMA_HEADER = """\
#pragma once
#include <cstdint>
{% for s in shaders %}
extern const unsigned char {{ s.ident }}_data[{{ s.size }}];
extern const uint64_t {{ s.ident }}_len;
{% endfor %}
"""
LLAMA_MAIN = r"""
#include <cstdio>
#include <cstdint>
#include "ggml_shaders.hpp"

int main() {
    const uint32_t *w = reinterpret_cast<const uint32_t *>(scale_data);
    for (uint64_t i = 0; i < scale_len / 4; i++) std::printf("%08x", (unsigned)w[i]);
    std::printf("\n%d\n", (int)(reinterpret_cast<uintptr_t>(scale_data) % 4));
    return 0;
}
"""


@pytest.mark.parametrize("blobs", ["arrays", "files"])
def test_a_templates_sources_are_a_static_library(tmp_path, blobs):
    src = consumer(tmp_path, 'generate = [ { template = "tools/s.cpp.j2", output = "src/ggml_shaders.cpp", '
                   f'blobs = "{blobs}" }}, {{ template = "tools/s.hpp.j2", output = "src/ggml_shaders.hpp" }} ]\n',
                   {"tools/s.cpp.j2": LLAMA_SOURCE, "tools/s.hpp.j2": LLAMA_HEADER}, LLAMA_MAIN)
    build = tmp_path / "build"
    log = configure(src, build)
    assert ('blobs = "files" with the CXX compiler' in log) == (blobs == "files")
    run(CMAKE, "--build", build)
    words, misaligned = run(build / "consumer").stdout.split()
    assert words == blob_hex(src)
    if blobs == "files":
        assert misaligned == "0"
        assert "0x" not in (build / "genspirv" / "kernels" / "ggml_shaders.cpp").read_text()


# -- a blobs = "files" C table, by what the compiler has ----------------------------------

TABLE_MAIN = r"""
#include <stdint.h>
#include <stdio.h>
#include "kernels.h"

int main(void) {
    const genspirv_module *m = genspirv_find_module("scale");
    if (m == NULL) return 1;
    for (size_t i = 0; i < m->word_count; i++) printf("%08x", (unsigned)m->words[i]);
    printf("\n%d\n", (int)((uintptr_t)m->words % 4));
    return 0;
}
"""

FILES_TABLE = 'generate = [ { target = "c", output = "gen/kernels", blobs = "files" } ]\n'


@pytest.mark.parametrize("compiler,option,want", [
    pytest.param("gcc", "", "incbin", id="gcc"),
    pytest.param(EMBED_CLANG, "", "incbin", id="clang-embed",
                 marks=pytest.mark.skipif(EMBED_CLANG is None, reason="needs a clang with #embed")),
    pytest.param(EMBED_CLANG, "-DGENSPIRV_BLOBS=embed", "embed", id="clang-embed-asked",
                 marks=pytest.mark.skipif(EMBED_CLANG is None, reason="needs a clang with #embed")),
    pytest.param("gcc", "-DGENSPIRV_BLOBS=arrays", "arrays", id="neither"),
])
def test_a_files_table_is_built_with_what_the_compiler_has(tmp_path, compiler, option, want):
    src = consumer(tmp_path, FILES_TABLE, {}, TABLE_MAIN, languages="C")
    build = tmp_path / "build"
    log = configure(src, build, *([option] if option else []), CC=shutil.which(compiler))
    if not option:
        assert f'genspirv: blobs = "files" with the C compiler: {want}' in log, log
    run(CMAKE, "--build", build)
    words, misaligned = run(build / "consumer").stdout.split()
    assert words == blob_hex(src) and misaligned == "0"
    staged = (build / "genspirv" / "kernels" / "kernels.c").read_text()
    assert bool(re.search(r"0x[0-9a-f]{8}, 0x", staged)) == (want == "arrays")
    run("ctest", "--output-on-failure", cwd=build)


def test_a_committed_files_table_compiles_in_place_without_the_shader_compiler(tmp_path):
    src = consumer(tmp_path, FILES_TABLE, {}, TABLE_MAIN, languages="C")
    run(sys.executable, "-m", "genspirv", "--root", src / "shader dir", "build", "-q")
    assert not re.search(r"0x[0-9a-f]{8}, 0x", (src / "shader dir" / "gen" / "kernels.c").read_text())
    build = tmp_path / "build"
    configure(src, build, "-DGENSPIRV_COMPILE_SHADERS=OFF")
    log = run(CMAKE, "--build", build).stdout
    assert edges_run(log).count("genspirv build") == 0
    assert run(build / "consumer").stdout.split()[0] == blob_hex(src)
