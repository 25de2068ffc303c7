"""The ``runtime``, ``push`` and ``demo`` suites: what the runtime costs on a device.

Both run on the device GENSPIRV_DEVICE selects (index or name substring),
so one command gives the lavapipe and the GPU figures.

``runtime`` runs the workloads of ``runtime_micro`` (barrier-policy arms,
host time per dispatch, staged against blocking uploads, one against two
in-flight slots, replay against recording again, host CPU per dispatch of a
mixed graph and of a decode-shaped step) and records every sample. ``push``
gives the host CPU per dispatch of named push constants against bytes the
caller packs, and of the packing alone. ``demo``
runs the decode demo's loop (``examples.llm.driver.decode_rounds``) under
each configuration (smart, always, smart with the reorder pass) in paired
order, each decode checked against the numpy reference before its time
counts; it gives wall and GPU time per token, and dispatches and barriers per
token.
"""

from __future__ import annotations

import shlex

from .harness import BenchError, BenchOptions, BenchProgress, RunLog

DEMO_REPEATS = 5
QUICK_DEMO_ARGS = "--layers 1 --dim 64 --heads 2 --kv-heads 2 --ffn 128 --vocab 64 --tokens 4"


def _device_name(dev) -> str:
    props = getattr(dev, "properties", None) or {}
    name = props.get("name") if isinstance(props, dict) else getattr(props, "name", None)
    return str(name or "unknown Vulkan device")


def bench_demo(opts: BenchOptions, rec: RunLog) -> None:
    from examples.llm import demo, driver, model as ref
    from examples.llm.compare import Reference
    from genspirv.runtime import Device

    argv = shlex.split(QUICK_DEMO_ARGS if opts.quick else opts.demo_args or "")
    try:
        args = demo.parse_args(argv)
    except SystemExit:
        raise BenchError(f"bench demo: bad --demo-args {opts.demo_args!r}") from None
    config = demo.config_from_args(args)
    weights = ref.make_weights(config, args.seed)
    reference = Reference(weights, args.prompt, args.tokens)
    repeats = opts.repeat or (2 if opts.quick else DEMO_REPEATS)
    progress = BenchProgress(repeats * len(demo.CONFIGS), opts.quiet)
    n = args.tokens
    rec.extra["model"] = {"layers": config.n_layers, "dim": config.dim, "heads": config.n_heads,
                          "kv_heads": config.n_kv_heads, "ffn": config.ffn_dim, "vocab": config.vocab,
                          "tokens": n, "seed": args.seed, "demo_args": argv}
    rec.notes.append("each decode is compared with the numpy reference (examples.llm.compare) before "
                     "its time counts; wall = record + submit + wait per token, gpu = device timestamps "
                     "around the steps; replayed = the same decode captured once (dev.record) and "
                     "resubmitted, so its gpu time has no host recording in it.")

    def on_run(r: int, label: str, mode: str, run) -> None:
        verdict = reference.check(run, args.tol)
        if not verdict.ok:
            raise BenchError(f"bench demo: {label} ({mode}) decode disagrees with the reference: "
                             + "; ".join(verdict.mismatches[:3]))
        info = {"repeat": r, "config": label, "tokens": n}
        if mode == "replayed":
            rec.add("gpu per token, replayed", label, run.gpu_seconds / n, **info)
            return
        progress.step(f"demo {label} (run {r + 1}/{repeats})")
        rec.add("wall per token", label, run.seconds / n, **info)
        rec.add("gpu per token", label, run.gpu_seconds / n, **info)
        rec.add("barriers per token", label, run.stats.get("barriers", 0) / n, "barriers", **info)
        rec.add("dispatches per token", label, run.stats.get("dispatches", 0) / n, "dispatches", **info)

    dev = Device()
    try:
        rec.device = _device_name(dev)
        block_size = args.block_size or driver.default_block_size(dev)
        rec.extra["model"]["block_size"] = block_size
        model = driver.GpuModel(dev, weights, block_size=block_size, rows_per_group=args.rows_per_group)
        rec.extra["model"]["rows_per_group"] = model.matvec_variant.rows_per_group
        bound = _roofline(dev, model, args.prompt, n, rec) if opts.roofline else None
        if bound is not None:
            inner = on_run

            def on_run(r: int, label: str, mode: str, run) -> None:
                inner(r, label, mode, run)
                info = {"repeat": r, "config": label, "tokens": n}
                if mode == "replayed":
                    rec.add("gpu per token, replayed / roofline", label, run.gpu_seconds / n / bound, "x", **info)
                else:
                    rec.add("wall per token / roofline", label, run.seconds / n / bound, "x", **info)
                    rec.add("gpu per token / roofline", label, run.gpu_seconds / n / bound, "x", **info)
        driver.decode_rounds(model, args.prompt, n, demo.CONFIGS, repeats, on_run)
        for case in ("wall per token", "gpu per token", "gpu per token, replayed", "barriers per token"):
            rec.ratio(case, "always / smart", "always", "smart")
            rec.ratio(case, "smart+reorder / smart", "smart+reorder", "smart")
    finally:
        progress.close()
        dev.close()


def _roofline(dev, model, prompt, n_tokens: int, rec: RunLog) -> float:
    """Seconds a token takes at the device's measured read bandwidth; recorded in the JSON."""
    from . import roofline

    try:
        dev.kernel(roofline.PROBE)
    except Exception as exc:                                    # an older manifest
        raise BenchError(f"bench demo --roofline: the device's manifest has no {roofline.PROBE} "
                         f"({exc})") from None
    bandwidth = roofline.measure_bandwidth(dev)
    nbytes = roofline.bytes_per_token(model, prompt, n_tokens)
    bound = nbytes / bandwidth["bytes_per_s"]
    rec.extra["roofline"] = {"bytes_per_token": nbytes, "bandwidth_gb_per_s": bandwidth["bytes_per_s"] / 1e9,
                             "probe": bandwidth["probe"], "probe_bytes": bandwidth["nbytes"],
                             "probe_gb_per_s_by_groups": {str(g): v / 1e9 for g, v in
                                                          bandwidth["by_groups"].items()},
                             "seconds_per_token": bound}
    rec.notes.append(f"roofline: {nbytes / 1e6:.1f} MB bound per token (every weight once, the KV "
                     f"prefix, activations) / {bandwidth['bytes_per_s'] / 1e9:.0f} GB/s measured by "
                     f"{bandwidth['probe']} over {bandwidth['nbytes'] >> 20} MiB (best median of "
                     f"{len(bandwidth['by_groups'])} group counts) = {bound * 1e6:.1f} µs per token; "
                     f"'/ roofline' rows divide each time per token by it.")
    return bound


def bench_runtime(opts: BenchOptions, rec: RunLog) -> None:
    from genspirv.runtime import Device
    from . import peer
    from . import runtime_micro as micro

    reps = opts.repeat or (2 if opts.quick else None)
    kwargs = {"reps": reps} if reps else {}
    progress = BenchProgress(4, opts.quiet)
    try:
        with Device() as dev:
            rec.device = _device_name(dev)
            progress.step("runtime: barrier policies")
            barriers = micro.run_barrier_bench(dev, **kwargs)
            progress.step("runtime: submission")
            submission = micro.run_submission_bench(dev, **kwargs)
            progress.step("runtime: host cost per dispatch")
            host = micro.run_host_bench(dev, samples=reps or 15)
            progress.step("runtime: genspirv against wgpu-py")
            peer_result = peer.run_peer_bench(dev, reps=reps or 11)
    finally:
        progress.close()
    record_barriers(rec, barriers)
    record_submission(rec, submission)
    record_host(rec, host)
    record_peer(rec, peer_result)
    rec.notes.append("barrier policies: GPU time (timestamps) per workload and policy, one command "
                     "buffer per arm; submission: wall time per step; host per dispatch: the calling "
                     "thread's CPU time (cpu) and wall time, the device idle at each sample's start; "
                     "arms paired, order alternating.")


def record_barriers(rec: RunLog, res: dict) -> None:
    """Rows from ``run_barrier_bench``'s dict: every sample."""
    for name, r in res["workloads"].items():
        for policy, samples in r["gpu_ms_samples"].items():
            for i, v in enumerate(samples):
                rec.add(f"{name} gpu time", policy, v * 1e-3, repeat=i, workload=name)
            rec.add(f"{name} barriers", policy, r["barriers_per_dispatch"][policy],
                    "per dispatch", workload=name)
        rec.ratio(f"{name} gpu time", "always / smart", "always", "smart")
        rec.ratio(f"{name} gpu time", "none / smart", "none", "smart")


def record_submission(rec: RunLog, res: dict) -> None:
    """Rows from ``run_submission_bench``'s dict: every sample."""
    for i, v in enumerate(res["host_us_per_dispatch_samples"]):
        rec.add("host per dispatch", "record+submit", v * 1e-6, repeat=i)
    pairs = {"step_ms_upload": ("upload step", ("staged", "blocking")),
             "step_ms_inflight": ("in-flight step", ("inflight_2", "inflight_1")),
             "step_ms_replay": ("replay step", ("replay", "record"))}
    for key, (case, (base, other)) in pairs.items():
        for arm in (base, other):
            for i, v in enumerate(res[f"{key}_samples"][arm]):
                rec.add(case, arm, v * 1e-3, repeat=i)
        rec.ratio(case, f"{other} / {base}", other, base)
    rec.add("upload step", "submits per step", res["submits_per_step_both_arms"], "submits")


def record_host(rec: RunLog, res: dict) -> None:
    """Rows from ``run_host_bench``'s dict: CPU and wall time per dispatch, every sample."""
    for name, r in res["workloads"].items():
        for arm, key in (("cpu", "cpu_us"), ("wall", "wall_us")):
            for i, v in enumerate(r[key]):
                rec.add(f"host per dispatch, {name}", arm, v * 1e-6, repeat=i, workload=name)


def bench_push(opts: BenchOptions, rec: RunLog) -> None:
    """Named push constants against bytes packed by the caller: host CPU per dispatch and per
    packing (``runtime_micro.run_push_bench``), on the device GENSPIRV_DEVICE selects."""
    from genspirv.runtime import Device
    from . import runtime_micro as micro

    with Device() as dev:
        rec.device = _device_name(dev)
        res = micro.run_push_bench(dev, samples=opts.repeat or (3 if opts.quick else 15))
    record_push(rec, res)


def record_push(rec: RunLog, res: dict) -> None:
    """Rows from ``run_push_bench``'s dict: CPU time per dispatch and per packing, every sample."""
    for case, key in (("push per dispatch", "dispatch_cpu_us"), ("push packing", "pack_cpu_us")):
        for arm, values in res[key].items():
            for i, v in enumerate(values):
                rec.add(f"{case}, cpu", arm, v * 1e-6, repeat=i)
    rec.ratio("push per dispatch, cpu", "named / bytes", "named", "bytes")
    rec.notes.append("named push: scale_f32's push as {'n': n, 'alpha': a} against struct.pack "
                     "of the same values by the caller, a new alpha at each dispatch; packing "
                     "alone: a call's CPU time over many calls.")


PEER_CASES = {"record": "peer: host cpu per recorded dispatch",
              "record_checks": "peer: host cpu per recorded dispatch, Vulkan calls left out",
              "step": "peer: 100-dispatch step, wall per dispatch",
              "step_cpu": "peer: 100-dispatch step, cpu per dispatch",
              "step_split": "peer: 100-dispatch step in 4 submissions, wall per dispatch",
              "step_split_cpu": "peer: 100-dispatch step in 4 submissions, cpu per dispatch",
              "replay": "peer: replayed step, wall per dispatch",
              "replay_cpu": "peer: replayed step, cpu per dispatch",
              "replay_amortised": "peer: replayed step x10 back to back then one wait, wall per dispatch",
              "replay_amortised_cpu": "peer: replayed step x10 back to back then one wait, cpu per dispatch"}


def record_peer(rec: RunLog, res: dict) -> None:
    """Rows from ``peer.run_peer_bench``: every sample, and wgpu-py / genspirv ratios."""
    for key, case in PEER_CASES.items():
        for arm, samples in res["samples_us_per_dispatch"][key].items():
            for i, v in enumerate(samples):
                rec.add(case, arm, v * 1e-6, repeat=i)
        if "wgpu-py" in res["samples_us_per_dispatch"][key]:
            rec.ratio(case, "wgpu-py / genspirv", "wgpu-py", "genspirv")
    if res["wgpu_skipped"]:
        rec.notes.append(f"peer: the wgpu-py arm was skipped: {res['wgpu_skipped']}")
    else:
        rec.notes.append("peer: the same fill/scale/add work in genspirv and in wgpu-py (WGSL, push "
                         "constants as immediates, one compute pass), arms alternating "
                         "(benchmarks.peer); record = 1,024 independent fills recorded, not "
                         "submitted; step = 100 dispatches with 75 dependencies recorded, submitted "
                         "and waited for (in 4 submissions: the same, a batch of 25 dispatches, the "
                         "device starting on each while the host records the next); replay x10 = "
                         "the step's capture run 10 times back to back, then one wait (every wait "
                         "the host makes is in its cpu figure).")
