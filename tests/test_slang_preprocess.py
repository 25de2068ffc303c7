"""slang-glslang's in-process preprocessing is ``glslangValidator -E``, byte for byte.

The worker preprocesses with the pinned glslang's library through its C interface
and its own include search (genspirv/toolchain/slang/pinned_glslang.py); the oracle is
the pinned glslangValidator's ``-E`` over the same source, defines and ``-I``
folders. Compared: the text (after each one's preamble echo), or on a refusal the
messages; over include layouts that exercise every rule of the search (local
folder first, up the include stack, ``-I`` in order, ``..``, a top-level source,
a missing and a ``<system>`` include) and over every variant of the feature corpus.
Skipped without the slangpy wheel.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.compiler_suite import corpus
from genspirv.toolchain.slang import library, slang_glslang
from genspirv.toolchain.slang.worker_job import WorkerJob
from genspirv.toolchain.slang.preprocess import (clean_messages, dependency_paths, preamble,
                                                 strip_preamble_echo)
from genspirv.errors import ToolchainError
from genspirv.toolchain.tools import INCLUDE_PREAMBLE

REPO = Path(__file__).resolve().parent.parent
SHADERS = REPO / "tests" / "slang_shaders"

try:
    library.find_library()
except ToolchainError as exc:
    pytestmark = pytest.mark.skip(reason=f"slang-glslang unavailable: {exc}")


@pytest.fixture(scope="module")
def slang():
    with slang_glslang.open_slang_glslang("13.1.1", jobs=1) as compiler:
        yield compiler


def _oracle(slang, root: Path, source: str, include_dirs, defines, flags=()):
    # glslangValidator -E runs without Vulkan rules: VULKAN, which the worker's preprocessor
    # defines itself, is given as a define.
    args = ["-E", "-P" + INCLUDE_PREAMBLE, *[f"-I{d}" for d in include_dirs], "-DVULKAN=100",
            *[f"-D{k}={v}" for k, v in sorted({**slang.predefined_macros(), **defines}.items())], *flags, source]
    proc = slang.preprocessor.tool.run(args, what="glslangValidator -E", cwd=root)
    if proc.returncode != 0:
        return False, clean_messages(proc.stderr.decode() + proc.stdout.decode(), source)
    text = proc.stdout.decode()
    assert text.endswith("\n")          # glslangValidator prints the text and a line break
    return True, strip_preamble_echo(text[:-1], source)


def _worker(slang, root: Path, source: str, include_dirs, defines, flags=()):
    job = WorkerJob((1, 6), source, root=str(root), include_dirs=tuple(include_dirs), include_preamble=True,
                    preamble=preamble(predefined=slang.predefined_macros(), defines=defines, flags=flags,
                                      include_preamble=True), compile=False)
    reply = slang.pool.compile(job, source)
    if not reply.preprocessed_ok:
        return False, clean_messages(reply.preprocess_messages, source)
    return True, reply.preprocessed.decode()


def _same(slang, root, source, include_dirs=(), defines=None, flags=()):
    defines = defines or {}
    theirs = _oracle(slang, root, source, include_dirs, defines, flags)
    mine = _worker(slang, root, source, include_dirs, defines, flags)
    assert mine == theirs
    return mine


def _write(root: Path, files: dict) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


MAIN = "#version 450\n#include \"{name}\"\nlayout(local_size_x = 1) in;\nvoid main() {{ float v = VALUE; }}\n"


def _header(value: str, include: str = "") -> str:
    line = f'#include "{include}"\n' if include else ""
    return f"{line}#ifndef VALUE\n#define VALUE {value}\n#endif\n"


LAYOUTS = {
    "local-first": ({"glsl/a.comp": MAIN.format(name="h.glsl"), "glsl/h.glsl": _header("1.0"),
                     "glsl/include/h.glsl": _header("2.0")}, ["glsl/include"]),
    "include-folder": ({"glsl/a.comp": MAIN.format(name="h.glsl"), "glsl/include/h.glsl": _header("2.0")},
                       ["glsl/include"]),
    "first-folder-first": ({"glsl/a.comp": MAIN.format(name="h.glsl"), "one/h.glsl": _header("1.0"),
                           "two/h.glsl": _header("2.0")}, ["one", "two"]),
    "up-the-stack": ({"glsl/a.comp": MAIN.format(name="sub/h.glsl"), "glsl/sub/h.glsl": _header("1.0", "g.glsl"),
                      "glsl/g.glsl": "float from_source_folder() { return 1.0; }\n"}, []),
    "header-folder-first": ({"glsl/a.comp": MAIN.format(name="sub/h.glsl"),
                             "glsl/sub/h.glsl": _header("1.0", "g.glsl"),
                             "glsl/sub/g.glsl": "float near() { return 1.0; }\n",
                             "glsl/g.glsl": "float far() { return 2.0; }\n"}, []),
    "dot-dot": ({"glsl/a.comp": MAIN.format(name="../shared/h.glsl"), "shared/h.glsl": _header("3.0")}, []),
    "top-level-source": ({"a.comp": MAIN.format(name="h.glsl"), "h.glsl": _header("4.0")}, []),
    "empty-header": ({"glsl/a.comp": MAIN.format(name="e.glsl").replace("VALUE", "1.0"), "glsl/e.glsl": ""}, []),
    "missing": ({"glsl/a.comp": MAIN.format(name="nowhere.glsl")}, ["glsl"]),
    "system-form": ({"glsl/a.comp": MAIN.format(name="h.glsl").replace('"h.glsl"', "<h.glsl>"),
                     "glsl/h.glsl": _header("1.0")}, ["glsl"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("layout", LAYOUTS)
def test_include_search_matches_glslangvalidator(slang, tmp_path, layout):
    files, include_dirs = LAYOUTS[layout]
    _write(tmp_path, files)
    source = next(name for name in files if name.endswith(".comp"))
    ok, text = _same(slang, tmp_path, source, include_dirs)
    assert ok == (layout not in ("missing", "system-form"))


@pytest.mark.slow
def test_defines_undefines_and_flags_match(slang, tmp_path):
    _write(tmp_path, {"a.comp": "#version 450\n#ifdef GONE\nint gone;\n#endif\nint x = A + B;\n"
                                "#ifdef BARE\nint bare = 1 BARE;\n#endif\nvoid main() {}\n"})
    ok, text = _same(slang, tmp_path, "a.comp", defines={"A": "1", "GONE": "1"},
                     flags=("-DB=2", "-DBARE", "-UGONE"))
    assert ok and "int x = 1 + 2;" in text and "gone" not in text and "int bare = 1;" in text


def test_the_worker_lists_every_include_even_an_empty_one(slang, tmp_path):
    files, include_dirs = LAYOUTS["empty-header"]
    _write(tmp_path, files)
    job = WorkerJob((1, 6), "glsl/a.comp", root=str(tmp_path), include_preamble=True,
                    preamble=preamble(predefined={}, defines={}, flags=(), include_preamble=True), compile=False)
    assert slang.pool.compile(job, "a").included == ("glsl/e.glsl",)
    assert dependency_paths(tmp_path, ["glsl/sub/../e.glsl", "glsl/e.glsl"]) == ("glsl/e.glsl",)


@pytest.mark.slow
@pytest.mark.parametrize("variant", corpus(), ids=lambda v: v.name)
def test_every_corpus_variant_matches_glslangvalidator(slang, variant):
    ok, _ = _same(slang, SHADERS, variant.source, ["glsl/include"], dict(variant.defines))
    assert ok


def test_a_difference_would_be_seen(slang, tmp_path):
    """Negative control: the comparison notices a one-define difference between the two sides."""
    _write(tmp_path, {"a.comp": "#version 450\nint x = A;\nvoid main() {}\n"})
    theirs = _oracle(slang, tmp_path, "a.comp", [], {"A": "1"})
    mine = _worker(slang, tmp_path, "a.comp", [], {"A": "2"})
    assert theirs != mine
