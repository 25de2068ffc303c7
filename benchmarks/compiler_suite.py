"""The ``compilers`` suite: what the pinned glslang and slang-glslang each build, and how fast.

Takes the feature corpus of a checkout (``tests/slang_shaders/``: sources using
cooperative matrix 2, the integer dot product, bfloat16, fp8 and fp4, one that
tests an extension macro, and a plain one, with the define matrices backends use)
and gives, per variant and compiler, whether it built (``built`` / ``unavailable``
/ ``failed``, in ``extra["outcomes"]``), then timed runs in alternating order:

- ``default``: glslangValidator 13.1.1 compiling the variant (one process each);
- ``slang``: slang-glslang's whole compile (``SlangGlslang.compile``: preprocessing by
  the pinned glslang and compiling by the newer one, both in a warm worker);
- ``slang-preprocess``: its preprocessing step alone, in the warm worker;
- ``slang-compile``: its compiling step alone (the preprocessed text), in the warm worker;
- ``fresh-process`` (case ``fresh worker``): the whole job in a new worker process
  (start, both libraries loaded, first compile): what a process per variant would
  cost (a few variants only).

Cases: ``both build`` (the like-for-like), ``only slang-glslang builds`` (where the
default arm is glslang finding out it cannot).

Needs the slangpy wheel (the ``slang-glslang`` extra).
"""

from __future__ import annotations

import itertools
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from genspirv.toolchain import tools as toolchain
from genspirv.toolchain.slang.worker_job import WorkerJob
from genspirv.toolchain.slang.preprocess import preamble
from genspirv.toolchain.slang.slang_glslang import SlangGlslang, open_slang_glslang, spirv_version
from genspirv.toolchain.slang.workers import WorkerPool
from genspirv.errors import CompilerCrashError, GenspirvError, UnavailableError
from .harness import BenchError, BenchOptions, BenchProgress, RunLog, paired_order

CORPUS = Path("tests") / "slang_shaders"
INCLUDE = ("glsl/include",)
PIN = "13.1.1"
FRESH_SAMPLES = 3           # fresh-process runs per repeat (each starts a Python process)


@dataclass(frozen=True)
class CorpusVariant:
    """One entry of the feature corpus: just what both compilers need, not a project's ``Variant``."""

    name: str
    source: str
    defines: tuple[tuple[str, str], ...]
    target_env: str


def _matrix(prefix: str, source: str, target_env: str, **axes: dict) -> list[CorpusVariant]:
    """The cartesian product of ``axes`` (define -> {name part: value}), named prefix_part_part."""
    out = []
    for combo in itertools.product(*(list(v.items()) for v in axes.values())):
        name = "_".join([prefix] + [part for part, _ in combo if part])
        defines = tuple(sorted((key, value) for key, (_, value) in zip(axes, combo) if value is not None))
        out.append(CorpusVariant(name, source, defines, target_env))
    return out


def corpus() -> list[CorpusVariant]:
    """llama.cpp-shaped feature-gated variants: quant type x accumulator x alignment, and the like."""
    return (
        _matrix("matmul_cm2_f16", "glsl/matmul_cm2.comp", "vulkan1.3", A_F16={"": "1"},
                ACC_TYPE={"f32acc": "float", "f16acc": "float16_t"}, ALIGNED={"": "0", "aligned": "1"})
        + _matrix("matmul_cm2_q4_0", "glsl/matmul_cm2.comp", "vulkan1.3", A_Q4={"": "1"},
                  ACC_TYPE={"f32acc": "float", "f16acc": "float16_t"}, ALIGNED={"": "0", "aligned": "1"})
        + _matrix("dot_i8", "glsl/dot_i8.comp", "vulkan1.2", BLOCK_SIZE={"32": "32", "64": "64", "128": "128"})
        + _matrix("dot_i8_vk13", "glsl/dot_i8.comp", "vulkan1.3", BLOCK_SIZE={"32": "32", "64": "64"})
        + _matrix("scale_bf16", "glsl/scale_bf16.comp", "vulkan1.2", BLOCK_SIZE={"64": "64", "128": "128"})
        + _matrix("scale_fp8", "glsl/scale_fp8.comp", "vulkan1.2",
                  FP8_TYPE={"e4m3": "floate4m3_t", "e5m2": "floate5m2_t"}, BLOCK_SIZE={"64": "64", "128": "128"})
        + _matrix("scale_fp4", "glsl/scale_fp4.comp", "vulkan1.2", BLOCK_SIZE={"64": "64", "128": "128"})
        + _matrix("gated_bf16", "glsl/gated_bf16.comp", "vulkan1.2", ACTIVATION={"relu": "relu", "silu": "silu"})
        + _matrix("copy_f32", "glsl/copy_f32.comp", "vulkan1.2", ACTIVATION={"relu": "relu", "silu": "silu"},
                  BLOCK_SIZE={"256": "256", "512": "512"})
    )


def _default(compiler: toolchain.Compiler, root: Path, work: Path, v: CorpusVariant) -> str:
    try:
        toolchain.compile_glsl(compiler, source=v.source, output=work / f"{v.name}.spv", depfile=work / f"{v.name}.d",
                               cwd=root, target_env=v.target_env, defines=dict(v.defines), include_dirs=INCLUDE,
                               include_preamble=toolchain.uses_include((root / v.source).read_bytes()), what=v.name)
    except UnavailableError:
        return "unavailable"
    except GenspirvError:
        return "failed"
    return "built"


def _slang(slang: SlangGlslang, root: Path, v: CorpusVariant) -> str:
    try:
        slang.compile(v.source, root=root, defines=dict(v.defines), include_dirs=INCLUDE,
                      target_env=v.target_env, what=v.name)
    except UnavailableError:
        return "unavailable"
    except GenspirvError:
        return "failed"
    return "built"


def _job(slang: SlangGlslang, root: Path, v: CorpusVariant, compile: bool = True) -> WorkerJob:
    """The job ``SlangGlslang.compile`` sends for ``v``."""
    include = toolchain.uses_include((root / v.source).read_bytes())
    return WorkerJob(spirv_version(v.target_env), v.source, root=str(root), include_dirs=INCLUDE,
                     include_preamble=include, compile=compile,
                     preamble=preamble(predefined=slang.predefined_macros(), defines=dict(v.defines), flags=(),
                                       include_preamble=include))


def _fresh(slang: SlangGlslang, job: WorkerJob) -> None:
    pool = WorkerPool(slang.pool.libraries, 1, timeout_s=120, memory_bytes=2048 << 20)
    try:
        pool.compile(job, "fresh")
    finally:
        pool.close()


def bench_compilers(opts: BenchOptions, rec: RunLog) -> None:
    root = opts.root
    if not (root / CORPUS).is_dir():
        raise BenchError(f"compilers: no feature corpus at {root / CORPUS} (run from a genspirv checkout, "
                         "or pass --root to one)")
    root = root / CORPUS
    variants = corpus()
    repeat = opts.repeat or (1 if opts.quick else 3)
    default = toolchain.find_glslang(PIN)
    with tempfile.TemporaryDirectory(prefix="genspirv-bench-compilers-") as scratch, \
            open_slang_glslang(PIN, jobs=1) as slang:
        work = Path(scratch)
        slang.predefined_macros()            # the one-time probes, outside the timed runs
        outcomes = {v.name: {"default": _default(default, root, work, v), "slang": _slang(slang, root, v),
                             "source": v.source, "target_env": v.target_env} for v in variants}
        rec.extra["outcomes"] = outcomes
        rec.extra["identity"] = {"default": f"glslang {default.version}", "slang": slang.identity}
        both = [v for v in variants if outcomes[v.name]["slang"] == "built"]
        texts = {v.name: slang.pool.compile(_job(slang, root, v, compile=False), v.name).preprocessed
                 for v in both}
        arms = ["default", "slang", "slang-preprocess", "slang-compile"]
        progress = BenchProgress(repeat * len(both), quiet=opts.quiet)
        for r in range(repeat):
            for v in both:
                text_job = WorkerJob(spirv_version(v.target_env), v.source, text=texts[v.name])
                preprocess_job = _job(slang, root, v, compile=False)
                steps = {"default": lambda: _default(default, root, work, v), "slang": lambda: _slang(slang, root, v),
                         "slang-preprocess": lambda: slang.pool.compile(preprocess_job, v.name),
                         "slang-compile": lambda: slang.pool.compile(text_job, v.name)}
                case = "both build" if outcomes[v.name]["default"] == "built" else "only slang-glslang builds"
                for arm in paired_order(r, arms):
                    t0 = time.perf_counter()
                    steps[arm]()
                    rec.add(case, arm, time.perf_counter() - t0, variant=v.name, repeat=r)
                progress.step(v.name)
            for v in both[:FRESH_SAMPLES]:
                t0 = time.perf_counter()
                try:
                    _fresh(slang, _job(slang, root, v))
                except CompilerCrashError as exc:
                    raise BenchError(f"compilers: a fresh worker failed: {exc}") from None
                rec.add("fresh worker", "fresh-process", time.perf_counter() - t0, variant=v.name, repeat=r)
            rec.checkpoint()
        progress.close()
    counts = {arm: {s: sum(1 for o in outcomes.values() if o[arm] == s) for s in ("built", "unavailable", "failed")}
              for arm in ("default", "slang")}
    rec.extra["counts"] = counts
    rec.notes.append(f"{len(variants)} variants: glslang {counts['default']}, slang-glslang {counts['slang']}")
    whole = [x["value"] for x in rec.runs if x["arm"] == "slang"]
    if whole:
        rec.notes.append(f"slang-glslang whole compile median {statistics.median(whole) * 1e3:.1f} ms")
    rec.ratio("both build", "default / slang", "default", "slang")
    rec.ratio("only slang-glslang builds", "default (refusing) / slang", "default", "slang")
