"""The ``reflect`` suite: reflection time against blob size and blob count.

Takes synthetic compute shaders of growing size (``synthetic_shader``: many
bindings, many functions calling one another, spec and push constants — the
shapes reflection has to walk), compiled with the pinned glslang, and the
blobs this project commits. Gives raw runs of three arms per blob, in
alternating order: ``reflect`` (``genspirv.reflect.reflect`` in this process,
per call), ``spirv-cross`` (``spirv-cross <blob> --reflect``, one process per
blob) and ``cli`` (``python -m genspirv reflect <blob> --json``, one process,
the like-for-like of spirv-cross); then, for 10..N blobs, the total time of
``reflect`` over all of them against spirv-cross run once per blob.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Sequence

from .harness import (BenchError, BenchOptions, Progress, Recorder, genspirv_command, genspirv_env,
                      paired_order, require, run_command, snapshot_package, timed)

FUNCTION_COUNTS = (1, 8, 64, 512, 2048)
BLOB_COUNTS = (10, 100, 400)
MIN_SAMPLE_S = 0.05     # in-process calls repeat until one sample lasts this long


def synthetic_shader(functions: int, bindings: int) -> str:
    """GLSL with ``bindings`` readonly inputs, one read-write and one writeonly buffer,
    and ``functions`` functions in call chains of up to 8, all reachable from main."""
    lines = [
        "#version 450",
        "layout(local_size_x_id = 0) in;",
        "layout(constant_id = 1) const uint STRIDE = 3u;",
        "layout(constant_id = 2) const float BIAS = 0.25;",
        "layout(push_constant) uniform Push { uint n; float alpha; uvec2 window; } pc;",
    ]
    for b in range(bindings):
        lines.append(f"layout(set = 0, binding = {b}) readonly buffer In{b} {{ float data[]; }} in{b};")
    lines.append(f"layout(set = 0, binding = {bindings}) buffer Acc {{ float data[]; }} acc;")
    lines.append(f"layout(set = 0, binding = {bindings + 1}) writeonly buffer Out {{ float data[]; }} dst;")
    for k in range(functions):
        src = f"in{k % bindings}.data[(i + {k}u * STRIDE) % pc.n]"
        chained = f" + f{k - 1}(i)" if k % 8 else ""
        lines += [
            f"float f{k}(uint i) {{",
            f"    float x = {src} * pc.alpha + BIAS * {k + 1}.0;",
            f"    if (x > {k}.0) {{ acc.data[i] += x; }}",
            f"    return x * 0.5{chained};",
            "}",
        ]
    lines += ["void main() {", "    uint i = gl_GlobalInvocationID.x;", "    if (i >= pc.n) { return; }",
              "    float total = 0.0;"]
    lines += [f"    total += f{k}(i);" for k in range(functions) if k % 8 == 7 or k == functions - 1]
    lines += ["    dst.data[i] = total + acc.data[i];", "}", ""]
    return "\n".join(lines)


def bindings_for(functions: int) -> int:
    return max(2, min(functions, 64))


def find_compiler(root: Path):
    """The pinned glslang of the project at ``root``: the one its build uses."""
    toolchain = require("genspirv.toolchain", "the toolchain", "reflect")
    config = require("genspirv.config", "the config reader", "reflect")
    return toolchain.find_glslang(config.load_config(root).glslang)


def compile_synthetic(compiler, functions: int, workdir: Path) -> bytes:
    """A synthetic shader's blob (written to ``workdir/synthetic_<functions>.spv``)."""
    from ..toolchain import compile_glsl

    src = workdir / f"synthetic_{functions}.comp"
    src.write_text(synthetic_shader(functions, bindings_for(functions)), encoding="utf-8")
    out = compile_glsl(compiler, source=src.name, output=workdir / f"{src.stem}.spv",
                       depfile=workdir / f"{src.stem}.d", cwd=workdir,
                       target_env="vulkan1.2", defines={})
    return out.blob


def time_in_process(fn, blob: bytes) -> float:
    """Seconds per call, from as many calls as fill MIN_SAMPLE_S (after one warm-up call)."""
    fn(blob)
    calls, t0 = 0, time.perf_counter()
    while True:
        fn(blob)
        calls += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= MIN_SAMPLE_S:
            return elapsed / calls


def bench_reflect(blobs: Sequence[bytes]) -> dict:
    """Time ``reflect()`` over ``blobs`` once (after a warm-up pass): total and per blob.

    Returns {"blobs", "bytes", "seconds", "per_blob_s", "per_kib_s"}.
    """
    from ..reflect import reflect

    for b in blobs:
        reflect(b)
    t, _ = timed(lambda: [reflect(b) for b in blobs])
    size = sum(len(b) for b in blobs)
    return {"blobs": len(blobs), "bytes": size, "seconds": t,
            "per_blob_s": t / max(len(blobs), 1), "per_kib_s": t / max(size / 1024, 1e-9)}


def _spirv_cross() -> str:
    path = shutil.which("spirv-cross")
    if path is None:
        raise BenchError("bench reflect: needs spirv-cross beside genspirv (Debian: apt-get install spirv-cross)")
    return path


def bench_reflect_suite(opts: BenchOptions, rec: Recorder) -> None:
    reflect_mod = require("genspirv.reflect", "reflection", "reflect")
    cross = _spirv_cross()
    repeats = opts.repeat or 5
    counts = opts.sizes or BLOB_COUNTS
    committed = sorted((opts.root / "spirv").glob("*.spv"))
    if not committed:
        raise BenchError(f"bench reflect: no committed blobs under {opts.root / 'spirv'} for the count series")
    progress = Progress(len(FUNCTION_COUNTS) * repeats * 3 + len(counts) * repeats * 2, opts.quiet)
    scratch = Path(tempfile.mkdtemp(prefix="genspirv-bench-reflect-"))
    rec.notes.append("reflect = genspirv.reflect.reflect() in this process, per call; spirv-cross = "
                     "`spirv-cross BLOB --reflect`, a process per blob; cli = `python -m genspirv "
                     "reflect BLOB --json`, a process per blob (Python start-up included).")
    try:
        compiler = find_compiler(opts.root)
        code = snapshot_package(scratch)
        # Size series: one blob per function count.
        for functions in FUNCTION_COUNTS:
            blob = compile_synthetic(compiler, functions, scratch)
            info = reflect_mod.reflect(blob)
            expected = bindings_for(functions) + 2
            if len(info.bindings) != expected:
                raise BenchError(f"bench reflect: the {functions}-function shader reflects "
                                 f"{len(info.bindings)} bindings, not {expected}")
            path = scratch / f"synthetic_{functions}.spv"
            case = f"size {len(blob) / 1024:.1f} KiB ({functions} fn, {expected} bindings)"
            meta = {"functions": functions, "bytes": len(blob), "bindings": expected}
            rec.extra.setdefault("blobs", []).append({"case": case, **meta})
            for r in range(repeats):
                for arm in paired_order(r, ("reflect", "spirv-cross", "cli")):
                    progress.step(f"{case} {arm} (run {r + 1}/{repeats})")
                    if arm == "reflect":
                        t = time_in_process(reflect_mod.reflect, blob)
                    elif arm == "spirv-cross":
                        t, _ = timed(lambda: run_command([cross, str(path), "--reflect"],
                                                         what=f"spirv-cross on {path.name}"))
                    else:
                        t, _ = timed(lambda: run_command(genspirv_command("reflect", str(path), "--json"),
                                                         what=f"genspirv reflect {path.name}", env=genspirv_env(code)))
                    rec.add(case, arm, t, repeat=r, **meta)
            rec.per_unit(case, "reflect per KiB", "reflect", len(blob) / 1024, "s")
            rec.ratio(case, "reflect / spirv-cross", "reflect", "spirv-cross")
            rec.ratio(case, "cli / spirv-cross", "cli", "spirv-cross")
            rec.checkpoint()

        # Count series: the committed blobs, cycled to each count.
        for count in counts:
            paths = [committed[i % len(committed)] for i in range(count)]
            blobs = [p.read_bytes() for p in paths]
            case = f"count {count} blobs ({sum(map(len, blobs)) / 1024:.0f} KiB)"
            for r in range(repeats):
                for arm in paired_order(r, ("reflect", "spirv-cross")):
                    progress.step(f"{case} {arm} (run {r + 1}/{repeats})")
                    if arm == "reflect":
                        t = bench_reflect(blobs)["seconds"]
                    else:
                        t, _ = timed(lambda: [run_command([cross, str(p), "--reflect"],
                                                          what=f"spirv-cross on {p.name}") for p in paths])
                    rec.add(case, arm, t, repeat=r, blobs=count)
            rec.per_unit(case, "reflect per blob", "reflect", count, "s")
            rec.per_unit(case, "spirv-cross per blob", "spirv-cross", count, "s")
            rec.ratio(case, "reflect / spirv-cross", "reflect", "spirv-cross")
    finally:
        progress.close()
        shutil.rmtree(scratch, ignore_errors=True)
