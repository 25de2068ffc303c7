"""The ``c-backend`` suite: host time per recorded dispatch of the C path beside the Python runtime.

Takes the worked C backend of this checkout (``examples/c-backend``: its
committed table and ``c_backend`` program), builds it with CMake in a
temporary folder (``GENSPIRV_COMPILE_SHADERS=OFF``: no shader compiler
needed), and gives, in one run, paired by repetition (ABBA):

- ``c``: ``c_backend --bench K``: microseconds of host time per dispatch while
  recording the example's graph through ``genspirv/vulkan.h`` (checks,
  tracker, descriptor-set cache, the ``vkCmd*`` calls), K samples per
  repetition, submission and waiting outside the timing;
- ``c, vkCmd calls left out``: ``c_backend --bench K --calls-left-out``: the
  same recording with the ``vkCmd*`` entry points doing nothing, so what is
  left is the header's and the program's own share (``c`` minus it: the
  driver's recording calls);
- ``python``: the same graph, replayed command for command from the program's
  ``--trace`` (same kernels, buffers, push constants, group counts) through
  ``genspirv.runtime.Device.dispatch`` on the same device, timed the same way.

Beside the host's time, the GPU time of each recorded graph (timestamps
around it, ``gpu per recorded graph``) of ``c`` and ``python``: the same
commands and barriers, so the same work for the device.

The trace and its replay are also how tests prove that the C path places
exactly the barriers the Python runtime places (``parse_trace``, ``replay``).
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .harness import BenchError, BenchOptions, BenchProgress, RunLog, genspirv_env, paired_order, run_command

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "c-backend"
GRAPH = {"n": 256, "layers": 50}           # 300 dispatches a sample
QUICK_GRAPH = {"n": 64, "layers": 10}
SAMPLES_PER_REPEAT = 5


# -- the trace -------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceCommand:
    kind: str                               # "upload" or "dispatch"
    kernel: Optional[str]
    groups: tuple[int, int, int]
    push: bytes
    views: tuple[tuple[str, int, int], ...]  # (buffer, offset, size)
    barrier: bool                           # the C path recorded a barrier before it


@dataclass(frozen=True)
class Trace:
    kernels: dict                           # name -> {spec constant: value}
    buffers: dict                           # name -> bytes
    commands: tuple[TraceCommand, ...]


_DISPATCH = re.compile(r"dispatch (\S+) (\d+) (\d+) (\d+) push=([0-9a-f]*) views=(\S+) barrier=([01])$")
_UPLOAD = re.compile(r"upload (\S+) (\d+) barrier=([01])$")


def parse_trace(text: str) -> Trace:
    """The kernels, buffers and commands ``c_backend --trace`` printed."""
    kernels, buffers, commands = {}, {}, []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "kernel":
            kernels[words[1]] = {k: int(v) for k, v in (w.split("=", 1) for w in words[2:])}
        elif words[0] == "buffer":
            buffers[words[1]] = int(words[2])
        elif m := _UPLOAD.match(line):
            commands.append(TraceCommand("upload", None, (1, 1, 1), b"", ((m[1], 0, int(m[2])),), m[3] == "1"))
        elif m := _DISPATCH.match(line):
            push = b"".join(struct.pack("<I", int(m[5][i:i + 8], 16)) for i in range(0, len(m[5]), 8))
            views = tuple((b, int(o), int(s)) for b, o, s in (v.split(":") for v in m[6].split(",")))
            commands.append(TraceCommand("dispatch", m[1], (int(m[2]), int(m[3]), int(m[4])), push, views,
                                         m[7] == "1"))
    if not commands:
        raise BenchError("c_backend --trace printed no commands")
    return Trace(kernels, buffers, tuple(commands))


class Replay:
    """A trace's kernels and buffers made on a ``Device``, to run its commands there."""

    def __init__(self, dev, trace: Trace):
        import numpy as np

        self.dev, self.trace = dev, trace
        self.kernels = {name: dev.kernel(name, spec=spec or None) for name, spec in trace.kernels.items()}
        self.buffers = {name: dev.buffer(size, name=name) for name, size in trace.buffers.items()}
        self._zeros = {size: np.zeros(size, np.uint8) for size in set(trace.buffers.values())}
        # The graph's dispatches, resolved once: what the timed loop runs.
        self.dispatches = [(self.kernels[c.kernel], [self._view(v) for v in c.views], c.groups, c.push)
                           for c in trace.commands if c.kind == "dispatch"]

    def _view(self, v):
        name, offset, size = v
        buf = self.buffers[name]
        return buf if offset == 0 and size == self.trace.buffers[name] else buf.view(offset, size)

    def run(self) -> list[bool]:
        """Every command in order; whether the runtime recorded a barrier before each."""
        placed = []
        for c in self.trace.commands:
            before = self.dev.stats["barriers"]
            if c.kind == "upload":
                (name, _, size), = c.views
                self.dev.upload(self.buffers[name], self._zeros[size])
            else:
                self.dev.dispatch(self.kernels[c.kernel], [self._view(v) for v in c.views],
                                  groups=c.groups, push=c.push)
            placed.append(self.dev.stats["barriers"] != before)
        return placed

    def record_us_per_dispatch(self) -> tuple[float, float]:
        """Host microseconds per dispatch recording the graph's dispatches (submitting and waiting
        untimed), and the GPU nanoseconds the recorded graph took (timestamps around it, as the
        C program's ``bench_gpu``)."""
        dispatch = self.dev.dispatch
        with self.dev.gpu_timer() as timer:
            t0 = time.perf_counter()
            for k, views, groups, push in self.dispatches:
                dispatch(k, views, groups=groups, push=push)
            elapsed = time.perf_counter() - t0
        self.dev.synchronize()
        return elapsed * 1e6 / len(self.dispatches), timer.ns


def replay(dev, trace: Trace) -> list[bool]:
    """Run the trace's commands on ``dev``; whether a barrier went before each."""
    return Replay(dev, trace).run()


# -- building and running the program ------------------------------------------------------


def build_example(work: Path, example: Path = EXAMPLE) -> Path:
    """Copy the example into ``work`` and build it with CMake; the ``c_backend`` program."""
    from genspirv.emit.cmake import cmake_dir

    if not (example / "CMakeLists.txt").is_file():
        raise BenchError(f"bench c-backend: {example} is missing (the suite needs a checkout of genspirv)")
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BenchError("bench c-backend: needs cmake and a C compiler (Debian: apt-get install cmake "
                         "ninja-build gcc libvulkan-dev)")
    source = work / "c-backend"
    shutil.copytree(example, source, ignore=shutil.ignore_patterns(".genspirv", "build*"))
    generator = ["-G", "Ninja"] if shutil.which("ninja") else ["-G", "Unix Makefiles"]
    env = genspirv_env()
    # The committed blobs and table as they are (tests keep them current): no shader compiler needed.
    run_command([cmake, "-S", str(source), "-B", str(work / "build"), *generator, "-DCMAKE_BUILD_TYPE=Release",
                 f"-Dgenspirv_DIR={cmake_dir()}", f"-DGENSPIRV_PYTHON={sys.executable}",
                 "-DGENSPIRV_COMPILE_SHADERS=OFF"],
                what="bench c-backend: configure the example", env=env, timeout=600)
    run_command([cmake, "--build", str(work / "build")], what="bench c-backend: build the example", env=env,
                timeout=600)
    return work / "build" / "c_backend"


def run_program(program: Path, *args: str) -> str:
    """``c_backend ARGS``' output; a BenchError unless its last line says exact=yes."""
    out = run_command([str(program), *args], what=f"bench c-backend: c_backend {' '.join(args)}",
                      timeout=600).stdout.decode()
    if "exact=yes" not in out.splitlines()[-1]:
        raise BenchError(f"bench c-backend: c_backend {' '.join(args)} computed wrong values:\n{out[-500:]}")
    return out


def c_samples(output: str, line_tag: str = "bench") -> list[float]:
    """The samples of ``c_backend --bench``'s line ``<line_tag> {...}``: host µs per recorded
    dispatch (``bench``), or GPU µs per recorded graph (``bench_gpu``; none where the queue
    cannot time, or with the calls left out)."""
    for line in output.splitlines():
        if line.startswith(line_tag + " "):
            return list(json.loads(line[len(line_tag) + 1:])["samples"])
    raise BenchError(f"bench c-backend: c_backend --bench printed no {line_tag} line")


# -- the suite ---------------------------------------------------------------------------------


# c, then the same recording with the vkCmd* entry points doing nothing (the header's and the
# program's own share: the rest of "c" is the driver's), then the Python runtime.
CALLS_LEFT_OUT = "c, vkCmd calls left out"
ARMS = ("c", CALLS_LEFT_OUT, "python")


def bench_c_backend(opts: BenchOptions, rec: RunLog) -> None:
    from genspirv.runtime import Device

    graph = QUICK_GRAPH if opts.quick else GRAPH
    reps = opts.repeat or (2 if opts.quick else 7)
    size = ["--n", str(graph["n"]), "--layers", str(graph["layers"])]
    progress = BenchProgress(2 + reps, opts.quiet)
    try:
        with tempfile.TemporaryDirectory(prefix="genspirv-c-backend-") as work:
            progress.step("c-backend: build the example")
            program = build_example(Path(work))
            progress.step("c-backend: trace the graph")
            trace = parse_trace(run_program(program, "--trace", *size))
            dispatches = sum(c.kind == "dispatch" for c in trace.commands)
            with Device(manifest=EXAMPLE / "manifests" / "kernels.json", batch=1 << 20) as dev:
                rec.device = str(dev.properties["name"])
                graph_replay = Replay(dev, trace)
                placed = graph_replay.run()               # also the warm-up: pipelines, plans, sets
                dev.synchronize()
                if placed != [c.barrier for c in trace.commands]:
                    raise BenchError("bench c-backend: the Python runtime placed other barriers than the C "
                                     "path on the same graph")
                for rep in range(reps):
                    progress.step(f"c-backend: repetition {rep + 1}/{reps}")
                    for arm in paired_order(rep, ARMS):
                        if arm == "c":
                            out = run_program(program, "--bench", str(SAMPLES_PER_REPEAT), *size)
                            samples = c_samples(out)
                            for i, us in enumerate(c_samples(out, "bench_gpu")):
                                rec.add("gpu per recorded graph", "c", us * 1e-6, repeat=rep, sample=i,
                                        dispatches=dispatches)
                        elif arm == CALLS_LEFT_OUT:
                            samples = c_samples(run_program(program, "--bench", str(SAMPLES_PER_REPEAT),
                                                            "--calls-left-out", *size))
                        else:
                            samples = []
                            for i in range(SAMPLES_PER_REPEAT):
                                host_us, gpu_ns = graph_replay.record_us_per_dispatch()
                                samples.append(host_us)
                                rec.add("gpu per recorded graph", "python", gpu_ns * 1e-9, repeat=rep,
                                        sample=i, dispatches=dispatches)
                        for i, us in enumerate(samples):
                            rec.add("host per recorded dispatch", arm, us * 1e-6, repeat=rep, sample=i,
                                    dispatches=dispatches)
    finally:
        progress.close()
    rec.ratio("host per recorded dispatch", "python / c", "python", "c")
    if any(r["case"] == "gpu per recorded graph" and r["arm"] == "c" for r in rec.runs):
        rec.ratio("gpu per recorded graph", "python / c", "python", "c")
    c_median = statistics.median(r["value"] for r in rec.runs if r["arm"] == "c")
    own_median = statistics.median(r["value"] for r in rec.runs if r["arm"] == CALLS_LEFT_OUT)
    rec.extra["graph"] = {**graph, "dispatches_per_sample": dispatches, "samples_per_repeat": SAMPLES_PER_REPEAT,
                          "c_median_us": c_median * 1e6, "c_calls_left_out_median_us": own_median * 1e6}
    rec.notes.append(f"c-backend: examples/c-backend's graph ({graph['layers']} layers of 6 dispatches, n = "
                     f"{graph['n']}) recorded into one command buffer, host time per dispatch, submission "
                     "and waiting untimed; c = genspirv/vulkan.h in the c_backend program (its own process, "
                     "device-level function pointers), c with the vkCmd calls left out = the same recording with "
                     "the vkCmd* entry points doing nothing (the header's and the program's own share), "
                     "python = the same commands from its --trace through "
                     "Device.dispatch (batch large enough for one submission); both placed the same "
                     "barriers before the timing started.")
