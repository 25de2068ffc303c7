"""The ``runtime`` and ``demo`` suites: what the runtime costs on a device.

Both run on the device GENSPIRV_DEVICE selects (index or name substring),
so one command gives the lavapipe and the GPU figures.

``runtime`` takes the runtime's own micro-benchmarks (``genspirv.runtime.bench``:
barrier-policy arms, host time per dispatch, staged against blocking uploads,
one against two in-flight slots, replay against recording again) and records
every sample they return. ``demo`` takes the decode demo's model
(``genspirv.demo``) and decodes it under each configuration (smart, always,
smart with the reorder pass) in alternating order, each decode checked
against the numpy reference before its time counts; it gives wall and GPU
time per token, and dispatches and barriers per token.
"""

from __future__ import annotations

import shlex

from .harness import BenchError, BenchOptions, Progress, Recorder, paired_order, require

DEMO_REPEATS = 5
QUICK_DEMO_ARGS = "--layers 1 --dim 64 --heads 2 --kv-heads 2 --ffn 128 --vocab 64 --tokens 4"


def _device_name(dev) -> str:
    props = getattr(dev, "properties", None) or {}
    name = props.get("name") if isinstance(props, dict) else getattr(props, "name", None)
    return str(name or "unknown Vulkan device")


def bench_demo(opts: BenchOptions, rec: Recorder) -> None:
    demo = require("genspirv.demo", "the decode demo", "demo")
    runtime = require("genspirv.runtime", "the runtime", "demo")
    from .. import reference as ref

    argv = shlex.split(QUICK_DEMO_ARGS if opts.quick else opts.demo_args or "")
    try:
        args = demo.parse_args(argv)
    except SystemExit:
        raise BenchError(f"bench demo: bad --demo-args {opts.demo_args!r}") from None
    config = demo.config_from_args(args)
    weights = ref.make_weights(config, args.seed)
    greedy = ref.greedy_decode(weights, args.prompt, args.tokens)
    repeats = opts.repeat or (2 if opts.quick else DEMO_REPEATS)
    progress = Progress(repeats * len(demo.CONFIGS), opts.quiet)
    n = args.tokens
    rec.extra["model"] = {"layers": config.n_layers, "dim": config.dim, "heads": config.n_heads,
                          "kv_heads": config.n_kv_heads, "ffn": config.ffn_dim, "vocab": config.vocab,
                          "tokens": n, "seed": args.seed, "demo_args": argv}
    rec.notes.append("each decode is compared with the numpy reference (demo.compare) before its "
                     "time counts; wall = record + submit + wait per token, gpu = device timestamps.")
    dev = runtime.Device()
    try:
        rec.device = _device_name(dev)
        model = demo.GpuModel(dev, weights, block_size=args.block_size)
        for _, policy, reorder in demo.CONFIGS:          # warm-up: pipelines, pools, caches
            demo.set_policy(dev, policy)
            model.decode(args.prompt, n, reorder)
        forced = {greedy.tokens: greedy}
        for r in range(repeats):
            for label, policy, reorder in paired_order(r, demo.CONFIGS):
                progress.step(f"demo {label} (run {r + 1}/{repeats})")
                demo.set_policy(dev, policy)
                run = model.decode(args.prompt, n, reorder)
                if run.tokens not in forced:
                    forced[run.tokens] = ref.teacher_forced(weights, args.prompt, n, run.tokens)
                verdict = demo.compare(run, forced[run.tokens], args.tol)
                if not verdict.ok:
                    raise BenchError(f"bench demo: {label} decode disagrees with the reference: "
                                     + "; ".join(verdict.mismatches[:3]))
                info = {"repeat": r, "config": label, "tokens": n}
                rec.add("wall per token", label, run.seconds / n, **info)
                rec.add("gpu per token", label, run.gpu_seconds / n, **info)
                rec.add("barriers per token", label, run.stats.get("barriers", 0) / n, "barriers", **info)
                rec.add("dispatches per token", label, run.stats.get("dispatches", 0) / n, "dispatches", **info)
        for case in ("wall per token", "gpu per token", "barriers per token"):
            rec.ratio(case, "always / smart", "always", "smart")
            rec.ratio(case, "smart+reorder / smart", "smart+reorder", "smart")
    finally:
        progress.close()
        demo.set_policy(dev, "smart")
        dev.close()


def bench_runtime(opts: BenchOptions, rec: Recorder) -> None:
    bench = require("genspirv.runtime.bench", "the runtime's micro-benchmarks", "runtime")
    runtime = require("genspirv.runtime", "the runtime", "runtime")
    raise BenchError("bench runtime: genspirv.runtime.bench has no entry point this harness knows "
                     f"(found: {', '.join(n for n in dir(bench) if not n.startswith('_'))}); "
                     f"runtime {runtime.__name__} present")
