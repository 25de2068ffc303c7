"""The ``build-ab`` suite: this tree's build beside another tree's, step by step, in one run.

Takes a baseline revision (``--baseline REV``: its ``genspirv/``, from ``git
archive`` of this checkout) and the sizes; for
each size, one generator project of ``synth.generate_generator_project``'s
shape. Each round runs both trees on their own fresh copy, in ABBA order,
through the same steps: ``cold`` (the first build), ``noop`` (the build
again), ``noop again`` (once more: the steady state), ``fresh clone noop`` (the build in a copy without ``.genspirv/``) and
``edit`` (after one header edit). Gives each step's raw runs per tree and the
ratio this tree / baseline per step. Each step checks what it claims: one
distinct blob per variant after the cold build, no output rewritten by a
no-op, exactly the header's dependents rebuilt by the edit. Both trees run as
snapshots (``harness.snapshot_package``), each with its bytecode compiled, so
the figures are of the code and not of compiling it.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path

from . import synth
from .build_outputs import expect_blobs, fresh_copy, output_digests
from .build_suite import _expect_changed
from .harness import (BenchError, BenchOptions, BenchProgress, RunLog, baseline_package, genspirv_command, genspirv_env,
                      paired_order, run_command, snapshot_package, timed_cpu)

STEPS = ("cold", "noop", "noop again", "fresh clone noop", "edit")
TREES = ("this tree", "baseline")
AB_SIZES = (2000,)


def bench_build_ab(opts: BenchOptions, rec: RunLog) -> None:
    if opts.baseline is None:
        raise BenchError("build-ab: --baseline REV names the revision to set this tree beside")
    sizes = opts.sizes or AB_SIZES
    jobs = (opts.jobs or (2,))[0]
    repeats = opts.repeat or 3
    progress = BenchProgress(len(sizes) * repeats * len(TREES) * len(STEPS), opts.quiet)
    scratch = Path(tempfile.mkdtemp(prefix="genspirv-bench-ab-"))
    rec.notes.append(f"build-ab: this tree beside the baseline {opts.baseline} on the same generator "
                     f"projects, {jobs} jobs, each tree's steps on its own fresh copy, trees in ABBA order; "
                     f"edit = one edit of a header {opts.header_share:.0%} of the sources include")
    try:
        code = {"this tree": snapshot_package(scratch / "this"),
                "baseline": baseline_package(opts.root, opts.baseline, scratch)}
        for size in sizes:
            gen = synth.generate_generator_project(opts.root, scratch / f"pristine-{size}", size, opts.header_share)
            case = f"generator variants={size} jobs={jobs}"
            for r in range(repeats):
                for tree in paired_order(r, TREES):
                    _steps(case, tree, gen, jobs, r, scratch / f"work-{size}-{r}-{TREES.index(tree)}", code[tree],
                           rec, progress)
                rec.checkpoint()
            for step in STEPS:
                rec.ratio(case, f"{step}: this tree / baseline", f"{step} this tree", f"{step} baseline")
                rec.ratio(case, f"{step}: this tree / baseline, CPU time", f"{step} this tree", f"{step} baseline",
                          of="cpu_median")
            shutil.rmtree(gen.root, ignore_errors=True)
    finally:
        progress.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _steps(case: str, tree: str, gen, jobs: int, r: int, dest: Path, code: Path, rec: RunLog,
           progress: BenchProgress) -> None:
    info = {"variants": len(gen.project.variants), "jobs": jobs, "repeat": r, "tree": tree}

    def build(root: Path, what: str) -> float:
        progress.step(f"{case} {tree} {what}")
        # From the snapshot's folder: the worker processes a build starts (python -c) put their
        # working folder first on sys.path, and must import the tree measured, not a checkout's.
        t, cpu, _ = timed_cpu(lambda: run_command(
            genspirv_command("build", "--root", str(root), "--jobs", str(jobs), "--quiet"),
            what=f"bench build-ab {case} {tree}: {what}", env=genspirv_env(code), cwd=code))
        rec.add(case, f"{what} {tree}", t, cpu_s=cpu, **info)
        return t

    work = fresh_copy(gen.project, dest)
    build(work.root, "cold")
    expect_blobs(work, f"{case} {tree} cold build")
    before = output_digests(work)
    build(work.root, "noop")
    if output_digests(work) != before:
        raise BenchError(f"bench build-ab {case} {tree}: the no-op build rewrote outputs")
    build(work.root, "noop again")      # the steady state: the first no-op has logged all it read
    clone = dest.with_name(dest.name + "-clone")
    shutil.copytree(work.root, clone, ignore=shutil.ignore_patterns(".genspirv"))
    clone_before = output_digests(dataclasses.replace(work, root=clone))
    build(clone, "fresh clone noop")
    if output_digests(dataclasses.replace(work, root=clone)) != clone_before:
        raise BenchError(f"bench build-ab {case} {tree}: the fresh clone's build rewrote outputs")
    shutil.rmtree(clone, ignore_errors=True)
    synth.edit_header(work)
    build(work.root, "edit")
    _expect_changed(before, output_digests(work), work, case)
    shutil.rmtree(work.root, ignore_errors=True)
