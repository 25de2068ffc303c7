"""Where one decode step's GPU time goes, kernel by kernel, and what replayed decode costs.

    python tools/decode_profile.py --layers 8 --dim 4096 --heads 32 --kv-heads 32 \
        --ffn 11008 --vocab 32000 --weights f32,f16 [--fast-weights f32,f16] \
        [--before MANIFEST] [--rows-per-group 2,4] --json OUT.json

Takes a model shape (as ``genspirv demo``), the weight types and optionally a
second manifest (an older build of the same kernels, e.g. the main checkout's
``manifests/shaders.json``) measured in the same process as the arm ``before``,
and other ``ROWS_PER_GROUP`` for every matrix-vector product (arms ``rows N``).
Gives, per weight type and arm, as JSON and a table:

- ``kernels``: one decode step recorded with a GPU timer around every dispatch
  (``--passes`` times; medians). A timer's first timestamp is written once all
  earlier work has finished, so each dispatch's figure is the time from the end
  of the previous one to its own end: its barrier, launch and work, and the
  figures add up to the step. Matrix-vector products also get GB/s (weights + x + y).
- ``step_us``: the same step under one timer, without the per-dispatch timestamps.
- ``replayed``: the decode of ``--tokens`` tokens captured once per configuration
  (smart, smart+reorder) and replayed ``--replays`` times back to back; GPU µs
  per token (each sample, and the median), tokens and whether they equal the
  numpy reference's greedy decode. Before each timed part, ``warm_clocks``
  keeps the device busy for a while: GPUs idle at a fraction of their clock.
- ``roofline_us``: the bytes each token must read (every weight matrix once; the
  embedding row, norms and KV cache are negligible) over ``--peak-gbps``.
- ``allocations`` (f32 only): a chain of the model's own ``wq`` matrices (one
  allocation each) against the same number of matrices in one pool buffer, with
  a barrier between dispatches as in decode: whether separate allocations or the
  address range the weights span changes what a matrix-vector product reads.

Not a test and not run by CI: figures come from a real GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.llm import kernel_groups  # noqa: E402
from examples.llm import driver, model as ref  # noqa: E402


def _kernel_class(label: str) -> str:
    return label.split(".", 1)[1] if label.startswith("L") and "." in label else label


def _matvec_bytes(config: ref.ModelConfig, label: str) -> int:
    c = config
    wsize = 2 if c.weights_f16 else 4
    shape = {"q": (c.dim, c.dim), "k": (c.kv_dim, c.dim), "v": (c.kv_dim, c.dim), "o": (c.dim, c.dim),
             "gate_up": (2 * c.ffn_dim, c.dim), "down": (c.dim, c.ffn_dim),
             "logits": (c.vocab, c.dim)}.get(_kernel_class(label))
    if shape is None:
        return 0
    rows, cols = shape
    return rows * cols * wsize + (rows + cols) * 4


def roofline_bytes(config: ref.ModelConfig) -> int:
    """Weight bytes one decoded token reads: every matrix once (norm vectors and the
    embedding row are a few KiB)."""
    return sum(_matvec_bytes(config, f"L0.{n}") for n in ("q", "k", "v", "o", "gate_up", "down")) \
        * config.n_layers + _matvec_bytes(config, "logits")


def profile_step(model: driver.GpuModel, pos: int, passes: int) -> tuple[list[dict], list[float]]:
    """Per-dispatch GPU µs of the decode step at ``pos`` (medians over ``passes``), and the
    step timed whole ``passes`` times."""
    dev = model.dev
    plan = model.token_plan(pos, 0)
    samples = [[] for _ in plan]
    whole = []
    for _ in range(passes):
        timers = []
        for d in plan:
            with dev.gpu_timer() as t:
                dev.dispatch(d.kernel, list(d.args), groups=d.groups, push=d.push)
            timers.append(t)
        dev.synchronize()
        for s, t in zip(samples, timers):
            s.append(t.ns * 1e-3)
        with dev.gpu_timer() as t:
            model.emit(plan, reorder=False)
        dev.synchronize()
        whole.append(t.ns * 1e-3)
    rows = []
    for d, s in zip(plan, samples):
        us = statistics.median(s)
        nbytes = _matvec_bytes(model.config, d.label)
        rows.append({"label": d.label, "kernel": d.kernel.name, "groups": list(d.groups), "us": us,
                     "gbps": nbytes / (us * 1e-6) / 1e9 if nbytes else None})
    return rows, whole


def by_class(rows: list[dict]) -> dict:
    """Kernel class (q, attention, attn_norm, ...) -> count, total µs, median µs, median GB/s."""
    out: dict[str, dict] = {}
    for r in rows:
        out.setdefault(_kernel_class(r["label"]), []).append(r)
    return {name: {"count": len(rs), "total_us": sum(r["us"] for r in rs),
                   "median_us": statistics.median(r["us"] for r in rs),
                   "median_gbps": (statistics.median(r["gbps"] for r in rs) if rs[0]["gbps"] else None)}
            for name, rs in out.items()}


def replayed(model: driver.GpuModel, prompt, n_tokens: int, replays: int, want: tuple) -> dict:
    out = {}
    for label, policy, reorder in (("smart", "smart", False), ("smart+reorder", "smart", True)):
        model.dev.barrier_policy = policy
        model.decode(prompt, n_tokens, reorder)            # warm-up: pipelines, descriptor pools
        graph, stats = model.capture(prompt, n_tokens, reorder)
        try:
            if model.dev.properties.get("type") != "cpu":
                driver.warm_clocks(model, [graph], prompt, n_tokens, driver.CLOCK_WARM_UP_S)
            runs = [model.replay(graph, prompt, n_tokens, stats) for _ in range(replays)]
        finally:
            graph.destroy()
        per_token = [r.gpu_seconds / n_tokens * 1e6 for r in runs]
        out[label] = {"us_per_token": per_token, "median_us_per_token": statistics.median(per_token),
                      "tokens": list(runs[-1].tokens),
                      "token_exact": None if want is None else all(r.tokens == want for r in runs),
                      "barriers_per_token": stats.get("barriers", 0) / n_tokens}
    model.dev.barrier_policy = "smart"
    return out


def allocations(dev, model: driver.GpuModel, reps: int) -> dict:
    """wq of every layer (own allocations) vs as many views of one pool buffer, chained."""
    c = model.config
    k, v = model.k_matvec, model.matvec_variant
    nbytes = c.dim * c.dim * 4
    pool = dev.buffer(len(model.layers) * nbytes, "pool")
    views = [pool.view(i * nbytes, nbytes) for i in range(len(model.layers))]
    groups = kernel_groups.mul_mat_vec_groups(c.dim, v.rows_per_group)
    push = struct.pack("<II", c.dim, c.dim)
    out = {}
    for name, mats in (("own allocations", [lw["wq"] for lw in model.layers]), ("one pool", views)):
        samples = []
        for _ in range(reps):
            with dev.gpu_timer() as t:
                for w in mats:
                    dev.dispatch(k, [w, model.residual[0], model.q_rot], groups=groups, push=push)
            dev.synchronize()
            samples.append((nbytes + 8 * c.dim) * len(mats) / (t.ns * 1e-9) / 1e9)
        out[name] = {"gbps": statistics.median(samples), "samples": samples}
    return out


def fast_weights(config: ref.ModelConfig, seed: int) -> ref.ModelWeights:
    """Weights of the right shapes and scales, tiled from 2**20 random values: for timing
    alone (seconds instead of a minute at 8 x 4096 x 11008; no reference decode)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(1 << 20, dtype=np.float32)
    mat_dtype = np.float16 if config.weights_f16 else np.float32

    def mat(rows, cols, std):
        return (np.resize(base, rows * cols).reshape(rows, cols) * np.float32(std)).astype(mat_dtype)

    def norm():
        return np.ones(config.dim, np.float32)

    d, kv, f = config.dim, config.kv_dim, config.ffn_dim
    layers = tuple(ref.LayerWeights(attn_norm=norm(), wq=mat(d, d, d ** -0.5), wk=mat(kv, d, d ** -0.5),
                                    wv=mat(kv, d, d ** -0.5), wo=mat(d, d, d ** -0.5), ffn_norm=norm(),
                                    w_gate=mat(f, d, d ** -0.5), w_up=mat(f, d, d ** -0.5),
                                    w_down=mat(d, f, f ** -0.5))
                   for _ in range(config.n_layers))
    return ref.ModelWeights(config=config, embedding=mat(config.vocab, d, 1.0), layers=layers,
                            out_norm=norm(), output=mat(config.vocab, d, 2.0 * d ** -0.5))


def run_arm(weights: ref.ModelWeights, manifest, args, want, rows_per_group=None) -> dict:
    from genspirv.runtime import Device

    dev = Device(manifest=manifest) if manifest else Device()
    dev.batch_size = 1 << 20      # no submit inside a timed region
    try:
        model = driver.GpuModel(dev, weights, block_size=driver.default_block_size(dev),
                                rows_per_group=rows_per_group)
        prompt = tuple(args.prompt)
        model._start(prompt, args.tokens, reorder=False)
        if dev.properties.get("type") != "cpu":
            driver.warm_clocks(model, [], prompt, args.tokens, driver.CLOCK_WARM_UP_S)
        rows, whole = profile_step(model, len(prompt) - 1, args.passes)
        arm = {"device": dev.properties.get("name"), "matvec": model.matvec_variant.name,
               "matvec_spec": model.matvec_variant.spec, "kernels": rows, "classes": by_class(rows),
               "sum_us": sum(r["us"] for r in rows), "step_us": whole}
        arm["replayed"] = replayed(model, prompt, args.tokens, args.replays, want)
        if not weights.config.weights_f16:
            arm["allocations"] = allocations(dev, model, 5)
        return arm
    finally:
        dev.close()


def print_arm(title: str, arm: dict, roofline_us: float) -> None:
    print(f"== {title}: {arm['device']}, {arm['matvec']} {arm['matvec_spec']}")
    for name, c in sorted(arm["classes"].items(), key=lambda kv: -kv[1]["total_us"]):
        gb = f"{c['median_gbps']:7.0f} GB/s" if c["median_gbps"] else ""
        print(f"  {name:14s} x{c['count']:<3d} total {c['total_us']:8.1f} us  median {c['median_us']:7.1f} us  {gb}")
    print(f"  step: sum of dispatches {arm['sum_us']:.1f} us; timed whole "
          f"{statistics.median(arm['step_us']):.1f} us")
    for label, r in arm["replayed"].items():
        print(f"  replayed {label:14s} {r['median_us_per_token']:8.1f} us/token = "
              f"{r['median_us_per_token'] / roofline_us:.2f} x roofline; samples "
              f"{[round(x) for x in r['us_per_token']]}; token-exact {r['token_exact']}")
    if "allocations" in arm:
        print("  wq chain: " + ", ".join(f"{k} {v['gbps']:.0f} GB/s" for k, v in arm["allocations"].items()))
    sys.stdout.flush()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--dim", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=32)
    p.add_argument("--ffn", type=int, default=11008)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--tokens", type=int, default=4)
    p.add_argument("--prompt", type=lambda s: [int(t) for t in s.split(",")], default=[1])
    p.add_argument("--weights", default="f32,f16")
    p.add_argument("--before", default=None, help="a second manifest, measured as the arm 'before'")
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--replays", type=int, default=5)
    p.add_argument("--peak-gbps", type=float, default=4430.0,
                   help="HBM bandwidth for the roofline (default: the kernel suite's measured H200 peak)")
    p.add_argument("--fast-weights", default="", metavar="TYPES",
                   help="weight types (e.g. f16 or f32,f16) given tiled random weights: timing only, "
                        "no reference decode and no token check")
    p.add_argument("--rows-per-group", default="", metavar="N,...",
                   help="also measure the model with these ROWS_PER_GROUP (arms 'rows N')")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "commit": os.environ.get("GENSPIRV_COMMIT"), "argv": sys.argv[1:],
              "peak_gbps": args.peak_gbps, "runs": {}}
    ok = True
    for wt in args.weights.split(","):
        config = ref.ModelConfig(n_layers=args.layers, dim=args.dim, n_heads=args.heads,
                                 n_kv_heads=args.kv_heads, ffn_dim=args.ffn, vocab=args.vocab,
                                 max_ctx=len(args.prompt) + args.tokens, weights_f16=wt == "f16").check()
        t0 = time.perf_counter()
        if wt in args.fast_weights.split(","):
            weights, want = fast_weights(config, 0), None
        else:
            weights = ref.make_weights(config, 0)
            want = ref.greedy_decode(weights, tuple(args.prompt), args.tokens).tokens
        print(f"[{wt}] weights and reference in {time.perf_counter() - t0:.1f} s; tokens {want}")
        roofline_us = roofline_bytes(config) / (args.peak_gbps * 1e9) * 1e6
        entry = {"roofline_bytes": roofline_bytes(config), "roofline_us": roofline_us,
                 "reference_tokens": None if want is None else list(want), "arms": {}}
        arms = [("after", None, None)] + ([("before", args.before, None)] if args.before else [])
        arms += [(f"rows {n}", None, int(n)) for n in args.rows_per_group.split(",") if n]
        for name, manifest, rows_per_group in arms:
            entry["arms"][name] = arm = run_arm(weights, manifest, args, want, rows_per_group)
            print_arm(f"{wt} {name}", arm, roofline_us)
            ok = ok and all(r["token_exact"] is not False for r in arm["replayed"].values())
        report["runs"][wt] = entry
        del weights
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
