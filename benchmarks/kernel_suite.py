"""The ``kernel`` suite: ``mul_mat_vec`` bandwidth against the device's measured peak.

Runs on the device GENSPIRV_DEVICE selects. Takes the decode shapes of a model
(``--sizes DIM,FFN,VOCAB``, default 4096,11008,32000: matrices DIM x DIM,
FFN x DIM, DIM x FFN and VOCAB x DIM, rows x columns) and gives, per shape and
weight type (f32, f16), the GB/s each ``mul_mat_vec`` configuration reads
(variant x BLOCK_SIZE x ROWS_PER_GROUP) and its share of the peak.

The peak is the best median of the bandwidth probes (``bandwidth_probe_read``,
16-byte loads at several group counts, and ``bandwidth_probe_copy``, counted as
read + write bytes) over a pool of weights far larger than the last-level
cache. Every kernel time is GPU time from device timestamps around a chain of
dispatches over distinct matrices of that pool (so no read hits a cache a
previous dispatch warmed), each writing the same y: the runtime puts a barrier
between them, as between dependent dispatches of a decode step. GB/s counts the
bytes of W, x and y once per dispatch. Arms alternate order between repeats.

GENSPIRV_BENCH_POOL_BYTES sets the pool's size (default 1.5 GiB): a decode's
weights span far more (7 GB at 8 x 4096 x 11008), and a larger pool shows whether
the address range read per pass changes the figures.

With GENSPIRV_BENCH_BASELINE naming another project's manifest (e.g. an older
commit's ``manifests/shaders.json``), its ``mul_mat_vec_f32/_f16`` are measured
in the same run as the arm ``before`` (BLOCK_SIZE 128, one group per row, the
older group-count rule).

The decode binds ``mul_mat_vec_norm_*`` (the input rms_norm(x) * weight) for every
product that reads a norm, whose workgroups also read the norm's weight: per shape
with DIM columns and weight type, the case ``mul_mat_vec_norm_<wt> ...`` sweeps its
rows per workgroup (GB/s counting W, x, the weight and y), so that the default of
``kernel_groups.ROWS_PER_GROUP_BY_WEIGHTS`` can be chosen from a measurement.
"""

from __future__ import annotations

import struct

from genspirv import settings
from examples.llm import kernel_groups
from .harness import BenchError, BenchOptions, BenchProgress, RunLog, paired_order

DEFAULT_SIZES = (4096, 11008, 32000)
QUICK_SIZES = (64, 96, 160)
POOL_BYTES = 3 << 29            # 1.5 GiB: thirty times an H200's 50 MiB L2
QUICK_POOL_BYTES = 1 << 21
MAX_CHAIN = 256                 # dispatches per timed chain (the pool usually limits it first)
ALIGN = 256                     # view offsets: any device's minStorageBufferOffsetAlignment
# (variant suffix, BLOCK_SIZE, ROWS_PER_GROUP, group cap or None) measured on a GPU; quick
# runs take three. The first entry is the shipped default (examples.llm.kernel_groups); the
# capped ones size the grid to an H200 (132 SMs x 8 or 16 groups) and loop over rows.
SWEEP = (("", 128, 1, None),) + \
    tuple(("", b, r, None) for b in (64, 128, 256) for r in (1, 2, 4) if (b, r) != (128, 1)) + \
    tuple(("_noshuffle", b, r, None) for b in (128, 256) for r in (1, 2, 4)) + \
    (("", 128, 1, 1056), ("", 128, 1, 2112), ("", 128, 2, 2112))
QUICK_SWEEP = (("", 32, 2, None), ("_noshuffle", 32, 2, None), ("", 32, 1, 3))
# (BLOCK_SIZE, ROWS_PER_GROUP) of mul_mat_vec_norm_*: on a GPU, and in quick runs.
NORM_SWEEP = tuple((128, r) for r in (1, 2, 4, 8))
QUICK_NORM_SWEEP = ((32, 1), (32, 2))
NORM_EPS = 1e-5
OVERHEAD_CHAIN = 64             # tiny dispatches per timed chain (the overhead case)
PROBE_GROUPS = (1024, 4096, 16384, 65535)
QUICK_PROBE_GROUPS = (8,)
PROBE_BLOCK = 256


def shapes(dim: int, ffn: int, vocab: int) -> list[tuple[str, int, int]]:
    """(name, rows, cols) of one decode step's matrix shapes."""
    return [("dim x dim", dim, dim), ("ffn x dim", ffn, dim), ("dim x ffn", dim, ffn),
            ("vocab x dim", vocab, dim)]


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _fill(dev, k_fill, buf, nbytes: int, value: float) -> None:
    n = nbytes // 4
    dev.dispatch(k_fill, [buf], groups=(min(-(-n // 256), 65535), 1, 1), push=struct.pack("<If", n, value))


class _Pool:
    """One big buffer of weights on one device, seen as distinct matrices."""

    def __init__(self, dev, nbytes: int):
        self.dev = dev
        self.nbytes = nbytes
        self.buf = dev.buffer(nbytes, "weight pool")
        # 2**-10 as f32 reads as two finite halves in the f16 kernels.
        _fill(dev, dev.kernel("fill_f32"), self.buf, nbytes, 2.0 ** -10)

    def matrices(self, nbytes: int, limit: int = MAX_CHAIN) -> list:
        step = _align(nbytes)
        count = min(limit, self.nbytes // step)
        if count < 1:
            raise BenchError(f"bench kernel: a {nbytes}-byte matrix does not fit the {self.nbytes}-byte pool")
        return [self.buf.view(i * step, nbytes) for i in range(count)]


def _chain_gbps(dev, kernel, views, x, y, groups, push: bytes, nbytes_each: int,
                extra: tuple = ()) -> tuple[float, float]:
    """GB/s and µs per dispatch of one timed chain over ``views`` (``extra``: the bindings
    after y, the same for every dispatch)."""
    with dev.gpu_timer() as t:
        for w in views:
            dev.dispatch(kernel, [w, x, y, *extra], groups=groups, push=push)
    dev.synchronize()
    seconds = t.ns * 1e-9
    if seconds <= 0:
        raise BenchError(f"bench kernel: {kernel.name} timed at {t.ns} ns")
    return nbytes_each * len(views) / seconds / 1e9, seconds / len(views) * 1e6


def _probe_arms(dev, pool: _Pool, groups_list) -> dict:
    """Arm name -> () -> (GB/s, µs) for the bandwidth probes over the pool."""
    read_k = dev.kernel("bandwidth_probe_read", spec={"BLOCK_SIZE": PROBE_BLOCK})
    copy_k = dev.kernel("bandwidth_probe_copy", spec={"BLOCK_SIZE": PROBE_BLOCK})
    sink = dev.buffer(max(groups_list) * PROBE_BLOCK * 4, "probe sink")
    half = pool.nbytes // 2 // ALIGN * ALIGN
    src, dst = pool.buf.view(0, half), pool.buf.view(half, half)
    arms = {}

    def timed(kernel, bufs, groups, push, nbytes):
        def go():
            with dev.gpu_timer() as t:
                dev.dispatch(kernel, bufs, groups=groups, push=push)
            dev.synchronize()
            return nbytes / (t.ns * 1e-9) / 1e9, t.ns * 1e-3
        return go

    n_all = pool.nbytes // 16
    for g in groups_list:
        arms[f"read {g} groups"] = timed(read_k, [pool.buf, sink], (g, 1, 1), struct.pack("<I", n_all),
                                          pool.nbytes)
    g = max(groups_list)
    arms[f"copy {g} groups"] = timed(copy_k, [src, dst], (g, 1, 1), struct.pack("<I", half // 16), 2 * half)
    return arms


def _matvec_arms(dev, pool: _Pool, wt: str, rows: int, cols: int, sweep, kernel_groups) -> dict:
    """Arm name -> () -> (GB/s, µs) for each swept configuration of ``mul_mat_vec_<wt>``."""
    wbytes = rows * cols * (2 if wt == "f16" else 4)
    views = pool.matrices(wbytes)
    x, y = dev.buffer(cols * 4, "x"), dev.buffer(rows * 4, "y")
    _fill(dev, dev.kernel("fill_f32"), x, cols * 4, 1.0)
    nbytes = wbytes + cols * 4 + rows * 4
    push = struct.pack("<II", cols, rows)
    arms = {}
    for suffix, block, per_group, cap in sweep:
        k = dev.kernel(f"mul_mat_vec_{wt}{suffix}", spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": per_group})
        groups = kernel_groups.mul_mat_vec_groups(rows, per_group, max_groups=cap)
        arms[_label(suffix, block, per_group, cap)] = (lambda k=k, groups=groups:
                                                       _chain_gbps(dev, k, views, x, y, groups, push, nbytes))
    # The first configuration again, each dispatch writing its own y: no barrier between
    # them, so the gap between dependent dispatches shows as the difference.
    suffix, block, per_group, cap = sweep[0]
    k = dev.kernel(f"mul_mat_vec_{wt}{suffix}", spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": per_group})
    ys = dev.buffer(_align(rows * 4) * len(views), "y per dispatch")
    y_views = [ys.view(i * _align(rows * 4), rows * 4) for i in range(len(views))]
    groups = kernel_groups.mul_mat_vec_groups(rows, per_group, max_groups=cap)

    def unchained():
        with dev.gpu_timer() as t:
            for w, yv in zip(views, y_views):
                dev.dispatch(k, [w, x, yv], groups=groups, push=push)
        dev.synchronize()
        return nbytes * len(views) / (t.ns * 1e-9) / 1e9, t.ns * 1e-3 / len(views)
    arms[_label(suffix, block, per_group, cap) + ", no barrier"] = unchained
    return arms


def _norm_arms(dev, pool: _Pool, wt: str, rows: int, cols: int, sweep, kernel_groups) -> dict:
    """Arm name -> () -> (GB/s, µs) for each (BLOCK_SIZE, ROWS_PER_GROUP) of
    ``mul_mat_vec_norm_<wt>``; the bytes count the norm's weight as well."""
    wbytes = rows * cols * (2 if wt == "f16" else 4)
    views = pool.matrices(wbytes)
    x, y, weight = dev.buffer(cols * 4, "x"), dev.buffer(rows * 4, "y"), dev.buffer(cols * 4, "norm weight")
    for buf in (x, weight):
        _fill(dev, dev.kernel("fill_f32"), buf, cols * 4, 1.0)
    nbytes = wbytes + 2 * cols * 4 + rows * 4
    push = struct.pack("<IIfI", cols, rows, NORM_EPS, 0)      # y from its first float
    arms = {}
    for block, per_group in sweep:
        k = dev.kernel(f"mul_mat_vec_norm_{wt}", spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": per_group})
        groups = kernel_groups.mul_mat_vec_groups(rows, per_group)
        arms[f"norm b{block} r{per_group}"] = (lambda k=k, groups=groups:
                                               _chain_gbps(dev, k, views, x, y, groups, push, nbytes, (weight,)))
    return arms


def _label(suffix: str, block: int, per_group: int, cap) -> str:
    return (f"{'noshuffle' if suffix else 'subgroup'} b{block} r{per_group}"
            + (f" g{cap}" if cap else ""))


def _overhead_arms(dev, kernel_groups) -> dict:
    """Arm -> () -> (µs per dispatch, µs): a chain of 1 x 4 mul_mat_vec_f32 dispatches,
    each behind a barrier (one y) or free to overlap (a y each): what a dependent
    dispatch costs beyond its work."""
    k = dev.kernel("mul_mat_vec_f32", spec={"BLOCK_SIZE": 128, "ROWS_PER_GROUP": 1})
    w, x = dev.buffer(16, "w"), dev.buffer(16, "x")
    _fill(dev, dev.kernel("fill_f32"), w, 16, 1.0)
    _fill(dev, dev.kernel("fill_f32"), x, 16, 1.0)
    ys = dev.buffer(ALIGN * OVERHEAD_CHAIN, "ys")
    push, groups = struct.pack("<II", 4, 1), kernel_groups.mul_mat_vec_groups(1)

    def chain(distinct: bool):
        def go():
            with dev.gpu_timer() as t:
                for i in range(OVERHEAD_CHAIN):
                    y = ys.view(ALIGN * i if distinct else 0, 4)
                    dev.dispatch(k, [w, x, y], groups=groups, push=push)
            dev.synchronize()
            return t.ns * 1e-9 / OVERHEAD_CHAIN, t.ns * 1e-3
        return go
    return {"behind a barrier": chain(False), "no barrier": chain(True)}


def _baseline_arm(dev, pool: _Pool, wt: str, rows: int, cols: int):
    """The older kernel (one group per row, BLOCK_SIZE 128) from another manifest's device."""
    wbytes = rows * cols * (2 if wt == "f16" else 4)
    views = pool.matrices(wbytes)
    x, y = dev.buffer(cols * 4, "x"), dev.buffer(rows * 4, "y")
    _fill(dev, dev.kernel("fill_f32"), x, cols * 4, 1.0)
    k = dev.kernel(f"mul_mat_vec_{wt}", spec={"BLOCK_SIZE": 128})
    groups = (min(rows, 65535), -(-rows // 65535), 1)
    push = struct.pack("<II", cols, rows)
    return lambda: _chain_gbps(dev, k, views, x, y, groups, push, wbytes + cols * 4 + rows * 4)


def _measure(rec: RunLog, case: str, arms: dict, reps: int, progress: BenchProgress, unit: str = "GB/s",
             **info) -> dict:
    """Run every arm ``reps`` times (order alternating); record its figure; give the medians."""
    import statistics
    for arm in arms.values():     # warm-up: pipelines, descriptor sets
        arm()
    samples = {name: [] for name in arms}
    for r in range(reps):
        progress.step(f"kernel {case} (run {r + 1}/{reps})")
        for name in paired_order(r, list(arms)):
            value, us = arms[name]()
            samples[name].append(value)
            rec.add(case, name, value, unit, repeat=r, us=us, **info)
    rec.checkpoint()
    return {name: statistics.median(v) for name, v in samples.items()}


def bench_kernel(opts: BenchOptions, rec: RunLog) -> None:
    from genspirv import runtime   # Vulkan is loaded only when a benchmark runs
    sizes = opts.sizes or (QUICK_SIZES if opts.quick else DEFAULT_SIZES)
    if len(sizes) != 3:
        raise BenchError(f"bench kernel: --sizes takes DIM,FFN,VOCAB, not {','.join(map(str, sizes))}")
    reps = opts.repeat or (2 if opts.quick else 7)
    pool_bytes = settings.get("GENSPIRV_BENCH_POOL_BYTES") or (QUICK_POOL_BYTES if opts.quick else POOL_BYTES)
    pool_bytes -= pool_bytes % ALIGN
    sweep = QUICK_SWEEP if opts.quick else SWEEP
    norm_sweep = QUICK_NORM_SWEEP if opts.quick else NORM_SWEEP
    baseline_manifest = settings.get("GENSPIRV_BENCH_BASELINE")
    cases = [(wt, name, rows, cols) for wt in ("f32", "f16") for name, rows, cols in shapes(*sizes)]
    norm_cases = [c for c in cases if c[3] == sizes[0]]     # the products that read a norm
    progress = BenchProgress(reps * (2 + len(cases) + len(norm_cases)), opts.quiet)
    rec.extra["kernel"] = {"sizes": list(sizes), "pool_bytes": pool_bytes, "max_chain": MAX_CHAIN,
                           "sweep": [list(s) for s in sweep], "norm_sweep": [list(s) for s in norm_sweep],
                           "baseline_manifest": baseline_manifest}
    dev = runtime.Device()
    dev.batch_size = 1 << 20      # one command buffer per timed chain: no submit inside a timing
    base_dev = None
    try:
        rec.device = dev.properties.get("name", "unknown Vulkan device")
        pool = _Pool(dev, pool_bytes)
        probes = _measure(rec, "bandwidth probes", _probe_arms(
            dev, pool, QUICK_PROBE_GROUPS if opts.quick else PROBE_GROUPS), reps, progress)
        peak = max(probes.values())
        rec.extra["kernel"]["peak_gbps"] = peak
        rec.extra["kernel"]["peak_arm"] = max(probes, key=probes.get)
        _measure(rec, "tiny dispatch, chain of 64", _overhead_arms(dev, kernel_groups), reps, progress,
                 unit="s")
        if baseline_manifest:
            base_dev = runtime.Device(manifest=baseline_manifest)
            base_dev.batch_size = 1 << 20
            base_pool = _Pool(base_dev, pool_bytes)
        best = {}
        for wt, name, rows, cols in cases:
            case = f"mul_mat_vec_{wt} {name} ({rows}x{cols})"
            arms = _matvec_arms(dev, pool, wt, rows, cols, sweep, kernel_groups)
            if base_dev is not None:
                arms["before"] = _baseline_arm(base_dev, base_pool, wt, rows, cols)
            medians = _measure(rec, case, arms, reps, progress, weights=wt, rows=rows, cols=cols)
            for arm in medians:
                rec.per_unit(case, f"{arm}: % of peak", arm, peak / 100, "%")
            top = max(medians, key=medians.get)
            best[case] = {"arm": top, "gbps": medians[top], "share_of_peak": medians[top] / peak,
                          "before_gbps": medians.get("before")}
        for wt, name, rows, cols in norm_cases:
            case = f"mul_mat_vec_norm_{wt} {name} ({rows}x{cols})"
            medians = _measure(rec, case, _norm_arms(dev, pool, wt, rows, cols, norm_sweep, kernel_groups),
                               reps, progress, weights=wt, rows=rows, cols=cols)
            for arm in medians:
                rec.per_unit(case, f"{arm}: % of peak", arm, peak / 100, "%")
            top = max(medians, key=medians.get)
            best[case] = {"arm": top, "gbps": medians[top], "share_of_peak": medians[top] / peak,
                          "before_gbps": None}
        rec.extra["kernel"]["best"] = best
        rec.notes.append(f"peak = best probe median: {peak:.0f} GB/s ({rec.extra['kernel']['peak_arm']}); "
                         "kernel GB/s = (W + x + y bytes, and the norm's weight for mul_mat_vec_norm) "
                         "per dispatch / GPU time, chains of dispatches "
                         "over distinct matrices with a barrier between each.")
    finally:
        progress.close()
        if base_dev is not None:
            base_dev.close()
        dev.close()
