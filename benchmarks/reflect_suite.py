"""The ``reflect`` suite: reflection time against blob size and blob count.

Takes synthetic compute shaders of growing size (``synthetic_shader``: many
bindings, many functions calling one another, spec and push constants — the
shapes reflection has to walk), compiled with the pinned glslang, and the
blobs this project commits. Gives raw runs of three arms per blob, in
alternating order: ``reflect`` (``genspirv.reflect.reflect`` in this process,
per call), ``spirv-cross`` (``spirv-cross <blob> --reflect``, one process per
blob) and ``cli`` (``python -m genspirv reflect <blob> --json``, one process,
the like-for-like of spirv-cross); then, for 10..N blobs, the total time of
``reflect`` over all of them against spirv-cross run once per blob; then the
chain series: modules of 250..16000 functions, each calling the next
(``chain_module``, assembled with ``spirv-as``), where ``reflect`` time per
KiB should stay flat as the call graph deepens.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Sequence

from genspirv.project import config
from genspirv.toolchain import tools as toolchain
from genspirv.reflect import reflect
from .harness import (BenchError, BenchOptions, BenchProgress, RunLog, genspirv_command, genspirv_env,
                      paired_order, run_command, snapshot_package, timed)

FUNCTION_COUNTS = (1, 8, 64, 512, 2048)
BLOB_COUNTS = (10, 100, 400)
CHAIN_LENGTHS = (250, 1000, 4000, 16000)
QUICK = {"functions": (1, 64), "counts": (10,), "chains": (250, 1000), "repeat": 2}
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


def find_pinned_glslang(root: Path):
    """The pinned glslang of the project at ``root``: the one its build uses."""
    return toolchain.find_glslang(config.load_config(root).glslang)


def compile_synthetic(compiler, functions: int, workdir: Path) -> bytes:
    """A synthetic shader's blob (written to ``workdir/synthetic_<functions>.spv``)."""
    from genspirv.toolchain.tools import compile_glsl

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
    for b in blobs:
        reflect(b)
    t, _ = timed(lambda: [reflect(b) for b in blobs])
    size = sum(len(b) for b in blobs)
    return {"blobs": len(blobs), "bytes": size, "seconds": t,
            "per_blob_s": t / max(len(blobs), 1), "per_kib_s": t / max(size / 1024, 1e-9)}


def chain_module(functions: int) -> str:
    """SPIR-V assembly: a chain of functions, each loading, storing and calling the next."""
    lines = ["OpCapability Shader", "OpMemoryModel Logical GLSL450",
             'OpEntryPoint GLCompute %f0 "main" %buf', "OpExecutionMode %f0 LocalSize 64 1 1",
             "OpDecorate %rta ArrayStride 4", "OpMemberDecorate %Buf 0 Offset 0",
             "OpDecorate %Buf Block", "OpDecorate %buf DescriptorSet 0",
             "OpDecorate %buf Binding 0", "%void = OpTypeVoid", "%fn = OpTypeFunction %void",
             "%uint = OpTypeInt 32 0", "%u0 = OpConstant %uint 0", "%u1 = OpConstant %uint 1",
             "%rta = OpTypeRuntimeArray %uint", "%Buf = OpTypeStruct %rta",
             "%pBuf = OpTypePointer StorageBuffer %Buf", "%pu = OpTypePointer StorageBuffer %uint",
             "%buf = OpVariable %pBuf StorageBuffer"]
    for i in range(functions):
        lines += [f"%f{i} = OpFunction %void None %fn", f"%l{i} = OpLabel",
                  f"%p{i} = OpAccessChain %pu %buf %u0 %u0", f"%v{i} = OpLoad %uint %p{i}",
                  f"%w{i} = OpIAdd %uint %v{i} %u1", f"OpStore %p{i} %w{i}"]
        if i + 1 < functions:
            lines.append(f"%c{i} = OpFunctionCall %void %f{i + 1}")
        lines += ["OpReturn", "OpFunctionEnd"]
    return "\n".join(lines) + "\n"


def assemble_chain(functions: int, workdir: Path) -> bytes:
    """``chain_module(functions)`` assembled with spirv-as (SPIRV-Tools' wheel, then PATH)."""
    from genspirv.errors import GenspirvError

    src, out = workdir / f"chain_{functions}.spvasm", workdir / f"chain_{functions}.spv"
    src.write_text(chain_module(functions), encoding="utf-8")
    try:
        proc = toolchain.find_tool("spirv-as").run([str(src), "-o", str(out)], what=f"spirv-as on {src.name}",
                                         timeout=300)
    except GenspirvError as exc:   # the toolchain's own error says what is missing or failed
        raise BenchError(f"bench reflect: the chain series: {exc}") from None
    if proc.returncode != 0:
        raise BenchError(f"bench reflect: spirv-as on {src.name}: exit {proc.returncode}: "
                         f"{proc.stderr.decode('utf-8', 'replace')[-500:]}")
    return out.read_bytes()


def _spirv_cross() -> str:
    path = shutil.which("spirv-cross")
    if path is None:
        raise BenchError("bench reflect: needs spirv-cross beside genspirv (Debian: apt-get install spirv-cross)")
    return path


def bench_reflect_suite(opts: BenchOptions, rec: RunLog) -> None:
    cross = _spirv_cross()
    repeats = opts.repeat or (QUICK["repeat"] if opts.quick else 5)
    counts = opts.sizes or (QUICK["counts"] if opts.quick else BLOB_COUNTS)
    functions_series = QUICK["functions"] if opts.quick else FUNCTION_COUNTS
    chains = QUICK["chains"] if opts.quick else CHAIN_LENGTHS
    committed = sorted((opts.root / "spirv").glob("*.spv"))
    if not committed:
        raise BenchError(f"bench reflect: no committed blobs under {opts.root / 'spirv'} for the count series")
    progress = BenchProgress(len(functions_series) * repeats * 3 + len(counts) * repeats * 2 + len(chains),
                             opts.quiet)
    scratch = Path(tempfile.mkdtemp(prefix="genspirv-bench-reflect-"))
    rec.notes.append("reflect = genspirv.reflect.reflect() in this process, per call; spirv-cross = "
                     "`spirv-cross BLOB --reflect`, a process per blob; cli = `python -m genspirv "
                     "reflect BLOB --json`, a process per blob (Python start-up included).")
    try:
        compiler = find_pinned_glslang(opts.root)
        code = snapshot_package(scratch)
        # Size series: one blob per function count.
        for functions in functions_series:
            blob = compile_synthetic(compiler, functions, scratch)
            info = reflect(blob)
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
                        t = time_in_process(reflect, blob)
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
            rec.checkpoint()

        # Chain series: reflect time against call-graph depth (one arm, in process).
        for functions in chains:
            progress.step(f"chain of {functions} functions")
            blob = assemble_chain(functions, scratch)
            case = f"chain {functions} fn ({len(blob) / 1024:.0f} KiB)"
            for r in range(repeats):
                rec.add(case, "reflect", time_in_process(reflect, blob), repeat=r,
                        functions=functions, bytes=len(blob))
            rec.per_unit(case, "reflect per KiB", "reflect", len(blob) / 1024, "s")
    finally:
        progress.close()
        shutil.rmtree(scratch, ignore_errors=True)
