"""Shared fixtures.

``tiny_project(files=None, pyproject=..., extra=None)`` writes a small genspirv project
(two sources, one include, three variants by default) into a fresh temp
folder and returns its root. ``genspirv(*args, env=...)`` runs the CLI
in-process and returns ``Result(code, out, err)``. ``snapshot(root)`` maps
every file outside ``.genspirv/`` to its (bytes, mtime_ns). ``built_tiny`` is
a fresh copy of the default tiny project, already built (cheaper than a build).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from genspirv.cli import main

try:
    from hypothesis import settings as _hypothesis_settings
    from hypothesis.configuration import set_hypothesis_home_dir
except ImportError:         # the property tests skip themselves without it
    pass
else:
    # Hypothesis writes .hypothesis/ (its example database and caches) into the
    # current folder, the checkout: keep no database, and the caches in a temp folder.
    set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "genspirv-hypothesis"))
    _hypothesis_settings.register_profile("genspirv", database=None)
    _hypothesis_settings.load_profile("genspirv")

@pytest.fixture(autouse=True)
def _no_logging_after_a_build(monkeypatch):
    """A build logs the stat() of each output it wrote once it is no longer racy, 50 ms later
    (``commit.log_written``); the hundreds of builds here would each wait for it. Off here,
    a written output is hashed by the next build instead, as it would be without the wait;
    ``logs_after_a_build`` turns it back on (tests/test_rebuild.py tests it)."""
    monkeypatch.setattr("genspirv.buildsys.builder.log_written", lambda stats, written: None)


@pytest.fixture
def logs_after_a_build(monkeypatch):
    from genspirv.buildsys import commit
    monkeypatch.setattr("genspirv.buildsys.builder.log_written", commit.log_written)


TINY_PYPROJECT = """\
[project]
name = "tiny"
version = "0"

[tool.genspirv]
glslang = "13.1.1"

[tool.genspirv.shaders."add.comp"]
matrix = { TYPE = { f32 = "float", i32 = "int" } }
"""

TINY_FILES = {
    "glsl/include/common.glsl": """\
        #define ONE 1
        uint gid() { return gl_GlobalInvocationID.x; }
        """,
    "glsl/add.comp": """\
        #version 450
        #extension GL_GOOGLE_include_directive : require
        #include "common.glsl"
        layout(local_size_x = 64) in;
        layout(std430, binding = 0) readonly buffer ABuf { TYPE data[]; } A;
        layout(std430, binding = 1) readonly buffer BBuf { TYPE data[]; } B;
        layout(std430, binding = 2) writeonly buffer CBuf { TYPE data[]; } C;
        layout(push_constant) uniform Push { uint n; } pc;
        void main() {
            uint i = gid();
            if (i < pc.n) C.data[i] = A.data[i] + B.data[i];
        }
        """,
    "glsl/neg.comp": """\
        #version 450
        layout(local_size_x = 32) in;
        layout(std430, binding = 0) buffer XBuf { float data[]; } X;
        void main() { X.data[gl_GlobalInvocationID.x] = -X.data[gl_GlobalInvocationID.x]; }
        """,
}
TINY_VARIANTS = ("add_f32", "add_i32", "neg")


@pytest.fixture
def tiny_project(tmp_path_factory):
    """Factory: tiny_project(files=None, pyproject=TINY_PYPROJECT, extra=None) -> root Path.

    ``files`` replaces the default sources, ``extra`` adds to them.
    """

    def make(files: dict[str, str] | None = None, pyproject: str | None = TINY_PYPROJECT,
             extra: dict[str, str] | None = None) -> Path:
        root = tmp_path_factory.mktemp("proj")
        for rel, text in {**(TINY_FILES if files is None else files), **(extra or {})}.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        if pyproject is not None:
            (root / "pyproject.toml").write_text(pyproject)
        return root

    return make


@pytest.fixture(scope="session")
def _built_tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("built-tiny")
    for rel, text in TINY_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (root / "pyproject.toml").write_text(TINY_PYPROJECT)
    from genspirv.buildsys.builder import build
    from genspirv.project.config import load_config
    build(load_config(root))
    return root


@pytest.fixture
def built_tiny(_built_tiny, tmp_path):
    """A fresh copy of the default tiny project, already built (its build state included).

    The state holds only root-relative paths, so the copy's next build is a no-op.
    """
    root = tmp_path / "built"
    shutil.copytree(_built_tiny, root)
    return root


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def genspirv(monkeypatch):
    """Run the CLI in-process: genspirv("build", "--root", str(root), env={...}) -> Result."""

    def run(*args: str, env: dict[str, str] | None = None) -> Result:
        out, err = io.StringIO(), io.StringIO()
        with monkeypatch.context() as m, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            for key, value in (env or {}).items():
                m.setenv(key, value)
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:      # argparse usage errors
                code = exc.code if isinstance(exc.code, int) else 2
        return Result(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture
def snapshot():
    """snapshot(root) -> {path: (bytes, mtime_ns)} of every file outside .genspirv/."""
    return _snapshot


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".genspirv/"):
            files[rel] = (path.read_bytes(), os.stat(path).st_mtime_ns)
    return files


@pytest.fixture(scope="module")
def dev():
    """A Device with the kernel library genspirv ships (skips where no Vulkan device opens).

    Test files that need another device (validation, a test manifest) define their own."""
    runtime = pytest.importorskip("genspirv.runtime")
    try:
        d = runtime.Device()
    except Exception as exc:  # no Vulkan device on this machine
        pytest.skip(f"no Vulkan device: {exc}")
    yield d
    d.close()


@pytest.fixture
def fake_genspirv(genspirv, monkeypatch):
    """``genspirv`` (the CLI in-process) with builds and checks compiling through the fake compiler
    (tests/fake_compiler.py) unless a test hands them another; returns the run function."""
    import genspirv.buildsys.builder as build_mod
    from fake_compiler import FakeCompiler

    real = build_mod.compilers_for
    monkeypatch.setattr(build_mod, "compilers_for",
                        lambda config, compiler=None, **kw: real(config, compiler or FakeCompiler(), **kw))
    return genspirv
