"""Build benchmark: genspirv build (cold, no-op) and check against plain glslang.

Copies this repo's shaders and config into a temp folder, then alternates, for
``--runs`` rounds:

- ``genspirv build`` from scratch (cold), then again (no-op), then ``genspirv check``,
  each as ``python -m genspirv --root T <cmd> -q --jobs J`` (a fresh process, as a user runs it);
- the baseline: glslangValidator run directly on every variant, ``xargs -P J``
  over the same sources, defines and flags (the same binary genspirv uses).

Prints a markdown table of medians and ratios to the baseline, and the exact
commands. Usage: ``python ci/bench_build.py [--runs 5] [--jobs 2]``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from genspirv.build import include_dirs  # noqa: E402
from genspirv.config import load_config  # noqa: E402
from genspirv.toolchain import find_glslang  # noqa: E402


def timed(cmd: str, cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, shell=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"bench: `{cmd}` failed ({proc.returncode}):\n{proc.stderr.decode()}")
    return elapsed


def glslang_lines(project: Path, out: Path) -> list[str]:
    """One shell command per variant: what genspirv runs, minus depfile, spirv-val and reflection."""
    config = load_config(project)
    compiler = find_glslang(config.glslang)
    lines = []
    for v in config.variants:
        args = [str(compiler.tool.path), "-V", "--target-env", config.target_env,
                *(f"-I{d}" for d in include_dirs(config)), *(f"-D{k}={val}" for k, val in v.defines),
                *config.flags, "-o", str(out / f"{v.name}.spv"), v.source]
        lines.append(" ".join(shlex.quote(a) for a in args))
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="genspirv-bench-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        shutil.copy(REPO / "pyproject.toml", project)
        shutil.copytree(REPO / "glsl", project / "glsl")
        out = Path(tmp) / "plain"
        out.mkdir()
        config = load_config(project)
        lib = find_glslang(config.glslang).tool.lib_dir
        cmd_file = Path(tmp) / "glslang-commands.txt"
        cmd_file.write_text("\n".join(glslang_lines(project, out)) + "\n")

        env = dict(os.environ, PYTHONPATH=str(REPO))
        plain_env = dict(env)
        if lib is not None:
            plain_env["LD_LIBRARY_PATH"] = str(lib)
        gs = f"{shlex.quote(sys.executable)} -m genspirv --root {shlex.quote(str(project))}"
        commands = {
            "genspirv build (cold)": f"rm -rf spirv manifests .genspirv && {gs} build -q --jobs {args.jobs}",
            "genspirv build (no-op)": f"{gs} build -q --jobs {args.jobs}",
            "genspirv check": f"{gs} check -q --jobs {args.jobs}",
            "glslangValidator, xargs -P": f"xargs -P {args.jobs} -I CMD sh -c CMD >/dev/null < {cmd_file}",
        }
        times: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.runs):
            for name, cmd in commands.items():   # in this order: no-op follows cold
                times[name].append(timed(cmd, project, plain_env if name.startswith("glslang") else env))

    base = statistics.median(times["glslangValidator, xargs -P"])
    n = len(config.variants)
    print(f"{n} variants, {args.runs} runs each, {args.jobs} jobs, {os.cpu_count()} CPUs; "
          f"medians in seconds, ratio to plain glslangValidator\n")
    print("| what | median (s) | min | max | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med:.3f} | {min(ts):.3f} | {max(ts):.3f} | {med / base:.2f} |")
    print("\ncommands (T = temp copy of the repo's pyproject.toml and glsl/):")
    for name, cmd in commands.items():
        print(f"- {name}: `{cmd.replace(str(project), 'T').replace(tmp, '$TMP')}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
