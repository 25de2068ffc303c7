#!/usr/bin/env python3
"""Reflection speed: genspirv in process vs ``spirv-cross --reflect`` per blob, in one run.

    python ci/bench_reflect.py                 # the repo's spirv/*.spv, 7 rounds
    python ci/bench_reflect.py --scaling       # plus time vs module size (linearity)

``bench_reflect(blobs) -> dict`` and ``bench_scaling(sizes) -> list[dict]`` are the
functions a ``genspirv bench reflect`` command can call.  Each round reflects
every blob once; figures are medians over rounds, and the ratio compares
medians taken in the same run.  spirv-cross is timed per blob as a process (that
is how a build would call it), genspirv per blob in process (parse + reflect
every entry point).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Mapping

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from genspirv.reflect import reflect_module  # noqa: E402


def _time_genspirv(blobs: list[bytes]) -> float:
    t0 = time.perf_counter()
    for blob in blobs:
        reflect_module(blob)
    return time.perf_counter() - t0


def _time_spirv_cross(paths: list[Path], exe: str) -> float:
    t0 = time.perf_counter()
    for path in paths:
        subprocess.run([exe, str(path), "--reflect"], check=True, stdout=subprocess.DEVNULL,
                       timeout=60)
    return time.perf_counter() - t0


def bench_reflect(blobs: Mapping[str, bytes], rounds: int = 7) -> dict:
    """Median seconds per round, MB/s and the ratio, genspirv vs spirv-cross."""
    data = list(blobs.values())
    total = sum(len(b) for b in data)
    ours = [_time_genspirv(data) for _ in range(rounds)]
    result = {"blobs": len(data), "bytes": total, "rounds": rounds,
              "genspirv_median_s": statistics.median(ours),
              "genspirv_mb_s": total / statistics.median(ours) / 1e6}
    exe = shutil.which("spirv-cross")
    if exe is None:
        return result
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, blob in blobs.items():
            path = Path(tmp) / f"{name}.spv"
            path.write_bytes(blob)
            paths.append(path)
        theirs = [_time_spirv_cross(paths, exe) for _ in range(rounds)]
    result.update({"spirv_cross_median_s": statistics.median(theirs),
                   "spirv_cross_mb_s": total / statistics.median(theirs) / 1e6,
                   "speedup_vs_spirv_cross": statistics.median(theirs) / statistics.median(ours)})
    return result


def _chain_module(functions: int) -> str:
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


def bench_scaling(sizes=(250, 1000, 4000, 16000), rounds: int = 5) -> list[dict]:
    """Reflection time per module size: microseconds per KiB should stay flat."""
    exe = shutil.which("spirv-as")
    if exe is None:
        raise SystemExit("bench_scaling needs spirv-as")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            src, spv = Path(tmp) / f"c{n}.spvasm", Path(tmp) / f"c{n}.spv"
            src.write_text(_chain_module(n))
            subprocess.run([exe, str(src), "-o", str(spv)], check=True, timeout=120)
            blob = spv.read_bytes()
            times = [_time_genspirv([blob]) for _ in range(rounds)]
            median = statistics.median(times)
            out.append({"functions": n, "bytes": len(blob), "median_s": median,
                        "us_per_kib": median * 1e6 / (len(blob) / 1024)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("blobs", nargs="*", type=Path, help="blobs or folders (default: spirv/)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--scaling", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    blobs = {}
    for p in args.blobs or [ROOT / "spirv"]:
        for f in (sorted(p.glob("*.spv")) if p.is_dir() else [p]):
            blobs[f.stem] = f.read_bytes()
    if not blobs:
        print("bench_reflect: no blobs", file=sys.stderr)
        return 2
    report = {"reflect": bench_reflect(blobs, args.rounds)}
    if args.scaling:
        report["scaling"] = bench_scaling()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    r = report["reflect"]
    print(f"{r['blobs']} blobs, {r['bytes']} bytes, median of {r['rounds']} rounds")
    print(f"  genspirv in process : {r['genspirv_median_s'] * 1e3:8.2f} ms  "
          f"{r['genspirv_mb_s']:7.2f} MB/s")
    if "spirv_cross_median_s" in r:
        print(f"  spirv-cross --reflect: {r['spirv_cross_median_s'] * 1e3:8.2f} ms  "
              f"{r['spirv_cross_mb_s']:7.2f} MB/s")
        print(f"  ratio (spirv-cross / genspirv time): {r['speedup_vs_spirv_cross']:.1f}x")
    for s in report.get("scaling", []):
        print(f"  {s['functions']:6d} functions {s['bytes']:9d} bytes  "
              f"{s['median_s'] * 1e3:8.2f} ms  {s['us_per_kib']:6.1f} us/KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
