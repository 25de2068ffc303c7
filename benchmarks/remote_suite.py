"""``python -m benchmarks build-generator --remote``: a second machine's cold build from a warm remote cache.

Takes the generator project of ``build-generator`` (2,000 variants by default)
and a private nginx WebDAV store (``benchmarks.webdav``) started here;
gives per repeat three cold builds, each a fresh copy with no ``.genspirv/``,
no committed outputs and no shared local cache: ``cold`` (no remote cache),
``first machine`` (read-write with a secret, against an empty store: it
compiles everything and stores it) and ``second machine`` (read mode with the
secret, against the store the first machine filled). ``cold`` and ``first
machine`` alternate in ABBA order; the second machine follows its first.
Each run verifies what it claims: the second machine compiled nothing, took
every variant from the store, and wrote blobs and a manifest byte-identical
to the first machine's.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from . import synth
from .build_outputs import expect_blobs, fresh_copy, output_digests
from .harness import (BenchError, BenchOptions, BenchProgress, RunLog, genspirv_command, genspirv_env,
                      paired_order, run_command, snapshot_package, timed_cpu)
from .webdav import WebdavStore

REMOTE_SIZES = (2000,)
QUICK_SIZES = (200,)
SECRET = "genspirv-bench-secret"        # a benchmark's store lives and dies with the run
_SUMMARY = re.compile(r"^genspirv build: (\d+) compiled(?:, (\d+) from the remote cache)?", re.M)


def bench_remote(opts: BenchOptions, rec: RunLog) -> None:
    jobs = (opts.jobs or (2,))[0]
    sizes = opts.sizes or (QUICK_SIZES if opts.quick else REMOTE_SIZES)
    repeats = opts.repeat or 1
    progress = BenchProgress(len(sizes) * repeats * 3, opts.quiet)
    scratch = Path(tempfile.mkdtemp(prefix="genspirv-bench-remote-"))
    rec.notes.append(
        "remote cache: three cold builds per run, each on a fresh copy (no .genspirv/, no outputs, "
        "no GENSPIRV_CACHE_DIR): cold = no remote cache; first machine = GENSPIRV_REMOTE_CACHE_MODE="
        "read-write with a secret against an empty nginx WebDAV store on 127.0.0.1 (it compiles "
        "everything and stores blob and index entries, waiting for the stores); second machine = "
        "read mode with the secret against the store the first filled; cold and first machine in ABBA "
        f"order; jobs = {jobs}. Each second machine compiled nothing and wrote the first's bytes.")
    try:
        code = snapshot_package(scratch)
        with WebdavStore(scratch / "server") as store:
            for size in sizes:
                fan_out = {} if opts.per_source is None else {"per_source": opts.per_source}
                gen = synth.generate_generator_project(opts.root, scratch / f"pristine-{size}", size,
                                                       opts.header_share, **fan_out)
                rec.extra.setdefault("projects", {})[str(size)] = {
                    "variants": len(gen.project.variants), "sources": gen.project.source_count,
                    "optimized": len(gen.optimized), "vulkan1.3": len(gen.vulkan13)}
                case = f"remote cache variants={size} jobs={jobs}"
                for r in range(repeats):
                    _run_remote_case(case, size, jobs, r, gen.project, store, scratch, rec, progress, code)
                for of, suffix in (("median", ""), ("cpu_median", ", CPU time")):
                    rec.ratio(case, f"second machine / first machine{suffix}", "second machine",
                              "first machine", of=of)
                    rec.ratio(case, f"second machine / cold{suffix}", "second machine", "cold", of=of)
                    rec.ratio(case, f"first machine / cold{suffix}", "first machine", "cold", of=of)
                rec.checkpoint()
                shutil.rmtree(gen.root, ignore_errors=True)
    finally:
        progress.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _env(code: Path, **remote: str) -> dict:
    """The step's environment: no shared local cache and no remote settings but ``remote``."""
    env = {k: v for k, v in genspirv_env(code).items()
           if not k.startswith("GENSPIRV_REMOTE_CACHE") and k != "GENSPIRV_CACHE_DIR"}
    env.update({f"GENSPIRV_REMOTE_CACHE{'_' + k.upper() if k != 'url' else ''}": v for k, v in remote.items()})
    return env


def _run_remote_case(case, size, jobs, r, pristine, store: WebdavStore, scratch: Path, rec: RunLog,
                     progress: BenchProgress, code: Path) -> None:
    info = {"variants": size, "jobs": jobs}
    label = f"{case} (run {r + 1})"
    shutil.rmtree(store.root, ignore_errors=True)       # every first machine meets an empty store
    store.root.mkdir(parents=True)
    arms = {"cold": _env(code), "first machine": _env(code, url=store.url, mode="read-write", secret=SECRET)}
    work = {}
    for arm in paired_order(r, tuple(arms)):
        progress.step(f"{label} {arm}")
        work[arm] = fresh_copy(pristine, scratch / f"{arm.replace(' ', '-')}-{size}-{r}")
        t, cpu, proc = timed_cpu(lambda: _build(work[arm], jobs, arms[arm], f"{case}: {arm}"))
        expect_blobs(work[arm], f"{case} {arm}")
        rec.add(case, arm, t, repeat=r, cpu_s=cpu, **info)
        if arm == "first machine":
            stored = _store_size(store)
            rec.add(case, "store entries", stored[0], unit="entries", repeat=r, bytes=stored[1], **info)

    progress.step(f"{label} second machine")
    second = fresh_copy(pristine, scratch / f"second-machine-{size}-{r}")
    env = _env(code, url=store.url, mode="read", secret=SECRET)
    t, cpu, proc = timed_cpu(lambda: _build(second, jobs, env, f"{case}: second machine"))
    compiled, remote = _summary(proc, case)
    if compiled != 0 or remote != size:
        raise BenchError(f"bench {case}: the second machine compiled {compiled} and took {remote} "
                         f"of {size} variants from the remote cache")
    first, got = output_digests(work["first machine"]), output_digests(second)
    if {k: sha for k, (_, sha) in first.items()} != {k: sha for k, (_, sha) in got.items()}:
        raise BenchError(f"bench {case}: the second machine's outputs differ from the first's")
    rec.add(case, "second machine", t, repeat=r, cpu_s=cpu, **info)
    for project in list(work.values()) + [second]:
        shutil.rmtree(project.root, ignore_errors=True)


def _build(project, jobs: int, env: dict, what: str):
    return run_command(genspirv_command("build", "--root", str(project.root), "--jobs", str(jobs)),
                       what=f"bench build-generator --remote {what}", env=env)


def _summary(proc, case: str) -> tuple[int, int]:
    m = _SUMMARY.search(proc.stdout.decode("utf-8", "replace"))
    if m is None:
        raise BenchError(f"bench {case}: the build printed no summary")
    return int(m.group(1)), int(m.group(2) or 0)


def _store_size(store: WebdavStore) -> tuple[int, int]:
    files = [p for p in store.root.rglob("*") if p.is_file()]
    return len(files), sum(os.path.getsize(p) for p in files)

