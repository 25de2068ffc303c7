"""Fault-injection helpers for the reliability tests.

Takes a temporary folder and gives: a small genspirv project in it
(``write_project``), fake ``glslangValidator`` programs that crash, hang,
lie about their version or write nothing (``fake_glslang``), a snapshot of
every committed output (``committed_files``), and a way to run the CLI as a
user does (``run_cli``) with the checks every refusal must pass
(``assert_refusal``: the exit code, the words the message must name, no
traceback, no stray temp file).
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterable, Mapping, Optional

REPO_ROOT = Path(__file__).resolve().parents[2]

# -- a small project -----------------------------------------------------------

# SALT is the knob the interrupt and concurrency tests turn: every variant
# includes it, so changing it changes every blob and the manifest.
COMMON_GLSL = """\
// shared helpers of the test project
#ifndef COMMON_GLSL
#define COMMON_GLSL
#define SALT {salt}
uint gid() {{ return gl_GlobalInvocationID.x; }}
#endif
"""

ADD_COMP = """\
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A {{ TYPE a[]; }};
layout(set = 0, binding = 1) readonly buffer B {{ TYPE b[]; }};
layout(set = 0, binding = 2) writeonly buffer C {{ TYPE c[]; }};
layout(push_constant) uniform P {{ uint n; }} p;
void main() {{
    uint i = gid();
    if (i < p.n) c[i] = a[i] + b[i] + TYPE(SALT);
}}
"""

SCALE_COMP = """\
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const float FACTOR = 2.0;
layout(set = 0, binding = 0) buffer X {{ float x[]; }};
layout(push_constant) uniform P {{ uint n; float bias; }} p;
void main() {{
    uint i = gid();
    if (i < p.n) x[i] = x[i] * FACTOR + p.bias + float(SALT);
}}
"""

SHADER_TABLE = """\
[tool.genspirv.shaders."add.comp"]
matrix = { TYPE = { f32 = "float", i32 = "int", u32 = "uint" } }

[tool.genspirv.shaders."scale.comp"]
matrix = { WG = ["64", "128", "256"] }
"""

# The variants SHADER_TABLE expands to, in manifest order.
VARIANTS = ("add_f32", "add_i32", "add_u32", "scale_128", "scale_256", "scale_64")


def pyproject_text(shader_table: str = SHADER_TABLE, extra: str = "",
                   glslang: str = "13.1.1") -> str:
    return textwrap.dedent(f"""\
        [project]
        name = "reliability-fixture"
        version = "0"

        [tool.genspirv]
        glsl_dir = "glsl"
        spirv_dir = "spirv"
        manifest = "manifests/shaders.json"
        target_env = "vulkan1.2"
        glslang = "{glslang}"
        flags = []
        """) + extra + "\n" + shader_table


def write_project(root: Path, *, salt: str = "1", shader_table: str = SHADER_TABLE,
                  extra_config: str = "", sources: Optional[Mapping[str, str]] = None,
                  glslang: str = "13.1.1") -> Path:
    """A small genspirv project under ``root``: two sources, six variants, one include."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject_text(shader_table, extra_config, glslang))
    glsl = root / "glsl"
    (glsl / "include").mkdir(parents=True, exist_ok=True)
    if sources is None:
        sources = {"add.comp": ADD_COMP.format(), "scale.comp": SCALE_COMP.format()}
    for rel, text in sources.items():
        path = glsl / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    set_salt(root, salt)
    return root


def set_salt(root: Path, salt: str) -> None:
    (root / "glsl" / "include" / "common.glsl").write_text(COMMON_GLSL.format(salt=salt))


# -- fake compilers ------------------------------------------------------------

# Every fake answers the version probe like glslang 13.1.1 (unless told to lie),
# so the fault is met where the test wants it: at compile time.
_FAKE_HEAD = """\
#!/bin/sh
# fake glslangValidator for genspirv's reliability tests: {mode}
for arg in "$@"; do
    case "$arg" in
        --version|-v)
            echo "Glslang Version: 11:{version}"
            echo "ESSL Version: OpenGL ES GLSL 3.20 glslang Khronos. {version}"
            echo "GLSL Version: 4.60 glslang Khronos. {version}"
            exit 0;;
    esac
done
out=""
dep=""
prev=""
for arg in "$@"; do
    [ "$prev" = "-o" ] && out="$arg"
    [ "$prev" = "--depfile" ] && dep="$arg"
    prev="$arg"
done
"""

_FAKE_BODY = {
    # a compiler that dies of a segmentation fault
    "segv": 'kill -SEGV $$\nexit 99\n',
    # a compiler that never returns; exec so the build's timeout kills the sleeper itself
    "hang": 'exec sleep 300\n',
    # glslang 12 style: says nothing, exits 0, writes no output
    "no_output": 'exit 0\n',
    # writes bytes that are not SPIR-V and exits 0
    "garbage": 'printf "this is not spir-v" > "$out"\n'
               '[ -n "$dep" ] && echo "$out: " > "$dep"\nexit 0\n',
    # lies about nothing but its version (set by version=)
    "wrong_version": 'exit 0\n',
}

FAKE_MODES = tuple(_FAKE_BODY)


def fake_glslang(folder: Path, mode: str, version: str = "13.1.1") -> Path:
    """Write an executable fake ``glslangValidator`` into ``folder`` and return its path."""
    if mode == "wrong_version" and version == "13.1.1":
        version = "12.3.1"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "glslangValidator"
    path.write_text(_FAKE_HEAD.format(mode=mode, version=version) + _FAKE_BODY[mode])
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def logging_glslang(folder: Path, log: Path) -> Path:
    """A ``glslangValidator`` that appends each command line to ``log``, then runs the real one."""
    from genspirv.toolchain.tools import find_tool
    real = find_tool("glslangValidator")
    lib = f'LD_LIBRARY_PATH="{real.lib_dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" ' if real.lib_dir else ""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "glslangValidator"
    path.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\n{lib}exec "{real.path}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# -- running the CLI -----------------------------------------------------------


def cli_env(extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    if extra:
        env.update(extra)
    return env


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "genspirv", *args]


def run_cli(args: Iterable[str], root: Path, *, env: Optional[Mapping[str, str]] = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m genspirv ARGS --root ROOT`` as a user runs it, output captured."""
    args = list(args)
    if "--root" not in args and args and args[0] in ("build", "check", "list", "lint"):
        args += ["--root", str(root)]
    return subprocess.run(cli_command(*args), cwd=root, env=cli_env(env), capture_output=True,
                          text=True, timeout=timeout)


def assert_refusal(proc: subprocess.CompletedProcess, exit_code: int, *needles: str) -> str:
    """A clean refusal: ``exit_code``, every needle in stderr, no traceback. Returns stderr."""
    detail = f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == exit_code, detail
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, detail
    assert proc.stderr.strip(), "a refusal must say why on stderr\n" + detail
    for needle in needles:
        assert needle in proc.stderr, f"stderr should name {needle!r}\n" + detail
    return proc.stderr


# -- what a build commits ------------------------------------------------------

OUTPUT_DIRS = ("spirv", "manifests")


def committed_files(root: Path) -> dict[str, bytes]:
    """Every file under the project's output folders, by posix path relative to ``root``."""
    files = {}
    for top in OUTPUT_DIRS:
        base = root / top
        if not base.exists():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_file():
                files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def stray_files(root: Path) -> list[str]:
    """Output-folder files that are neither a blob, the manifest, nor a generated file.

    Temp files of an atomic write that a build failed to clean up show here.
    """
    stray = []
    for rel in committed_files(root):
        name = rel.rsplit("/", 1)[-1]
        if rel.startswith("spirv/") and name.endswith(".spv") and not name.startswith("."):
            continue
        if rel == "manifests/shaders.json":
            continue
        if rel.startswith("manifests/") and not name.startswith(".") and "tmp" not in name:
            continue
        stray.append(rel)
    return stray


def vulkan_present() -> bool:
    """A Vulkan device opens here (runtime tests skip, rather than fail, without one)."""
    from genspirv.runtime import Device
    try:
        with Device() as dev:
            return dev.properties is not None
    except Exception:
        return False


def default_sigint() -> None:
    """``preexec_fn`` for a build a test interrupts: SIGINT back to its default in the child, so
    Python turns it into KeyboardInterrupt even when the suite itself was started with SIGINT
    ignored (a background job of a non-interactive shell passes SIG_IGN down)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# -- builds stopped while their compilers hang ---------------------------------------------------

# A glslangValidator that answers --version, then logs its pid and sleeps: a compile that never ends.
HANGING_GLSLANG = """\
#!/bin/sh
for arg in "$@"; do
    case "$arg" in --version) echo "Glslang Version: 11:13.1.1"; exit 0;; esac
done
echo $$ >> "{pids}"
exec sleep 300
"""


def start_hanging_build(root: Path, tmp: Path, jobs: int = 2) -> tuple[subprocess.Popen, list[int], Path]:
    """``genspirv build --jobs N`` of ``root`` with HANGING_GLSLANG as its compiler, once ``jobs``
    compiles hang: the build's process, the hanging compilers' pids, and the file they log to."""
    import time
    pids = tmp / "pids"
    fake = tmp / "bin" / "glslangValidator"
    fake.parent.mkdir()
    fake.write_text(HANGING_GLSLANG.format(pids=pids))
    fake.chmod(0o755)
    proc = subprocess.Popen([sys.executable, "-m", "genspirv", "build", "--jobs", str(jobs), "--root", str(root)],
                            preexec_fn=default_sigint, cwd=root,
                            env=cli_env({"GENSPIRV_GLSLANG": str(fake), "GENSPIRV_COMPILER_TIMEOUT": "120"}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(pids.read_text().split() if pids.exists() else ()) < jobs:
        time.sleep(0.05)
    return proc, [int(p) for p in pids.read_text().split()] if pids.exists() else [], pids


def alive(pid: int) -> bool:
    """The process runs (a zombie, exited but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children_running(pid: int, module: str) -> list[int]:
    """The processes whose parent is ``pid`` and whose command line names ``module``."""
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat_file.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat_file.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid and module.encode() in command:
            found.append(int(stat_file.parent.name))
    return found
