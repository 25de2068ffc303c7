"""The host's cost of a recorded decode at positions it has never decoded, against the same
positions again.

    python tools/decode_positions.py --layers 8 --dim 1024 --heads 16 --kv-heads 4 \
        --ffn 2816 --vocab 16000 --tokens 16 --rounds 6 --json OUT.json

A decode step may bind views that move with the position (a KV cache row, the
prefix the attention reads, the token slots), and then a step at a new
position meets dispatch plans it has never made: each is checked, gets its
descriptor set written, and its access is worked out by the hazard tracker.
The decode driver binds its caches and logits whole (rows chosen by push
constants), which leaves the token slots.
``python -m benchmarks demo`` times decodes over positions its warm-up already
decoded; a generation that runs on never comes back to a position.

Per round: ``--tokens`` decode steps at positions no earlier round reached
(``new``), then the same steps again (``again``: the same dispatches, the same
device work, every plan cached; timed after as many untimed passes as the
device has in-flight slots, each of which keeps its own descriptor sets),
each recorded with the device's usual batch
size and waited for. Gives, per arm: the calling thread's CPU time per
dispatch, wall time per token, and the device's ``descriptor_updates`` per
token (a plan met for the first time writes one set: the counter shows which
arm missed); with ``--host-profile``, the host profiler's phases per dispatch
too. Medians over rounds, every sample in the JSON. The KV cache rows
before the first round's positions are not filled (no prompt is decoded), so
the tokens are not compared with a reference: this measures the host only.

Not a test and not run by CI: figures come from a real GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.llm import driver, model as ref  # noqa: E402
from genspirv.runtime import Device  # noqa: E402

ARMS = ("new", "again")


def _steps(model: driver.GpuModel, first: int, tokens: int) -> dict:
    """Decode steps at positions first .. first + tokens - 1, recorded and waited for."""
    dev = model.dev
    before, phases_before = dev.stats, dev.profile()
    t0, c0 = time.perf_counter(), time.thread_time()
    for step in range(tokens):
        model.emit(model.token_plan(first + step, step), reorder=False)
    c1 = time.thread_time()
    dev.synchronize()
    wall = time.perf_counter() - t0
    dispatches = dev.stats["dispatches"] - before["dispatches"]
    out = {"cpu_us_per_dispatch": (c1 - c0) * 1e6 / dispatches, "wall_ms_per_token": wall * 1e3 / tokens,
           "descriptor_updates_per_token": (dev.stats["descriptor_updates"] - before["descriptor_updates"]) / tokens,
           "dispatches_per_token": dispatches / tokens}
    for phase, row in dev.profile().items():       # zero unless --host-profile
        out[f"{phase}_us_per_dispatch"] = (row["total_us"] - phases_before[phase]["total_us"]) / dispatches
    return out


def run(args) -> dict:
    config = ref.ModelConfig(n_layers=args.layers, dim=args.dim, n_heads=args.heads, n_kv_heads=args.kv_heads,
                             ffn_dim=args.ffn, vocab=args.vocab,
                             max_ctx=(args.rounds + 1) * args.tokens + 1).check()
    weights = ref.make_weights(config, 0)
    samples: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    with Device(host_profile=args.host_profile) as dev:
        model = driver.GpuModel(dev, weights)
        _steps(model, 0, args.tokens)              # pipelines, pools; positions 0 .. tokens - 1
        for r in range(args.rounds):
            first = (r + 1) * args.tokens
            if dev.properties.get("type") != "cpu":
                driver.warm_clocks(model, [], (1,), 1, driver.ROUND_WARM_UP_S)
            samples["new"].append(_steps(model, first, args.tokens))
            # Each in-flight slot keeps its own descriptor sets: a few more passes
            # let every slot meet every plan before the timed one.
            for _ in range(dev.inflight):
                _steps(model, first, args.tokens)
            samples["again"].append(_steps(model, first, args.tokens))
        device = dev.properties["name"]
    medians = {arm: {k: statistics.median(s[k] for s in samples[arm]) for k in samples[arm][0]}
               for arm in ARMS}
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "commit": os.environ.get("GENSPIRV_COMMIT"), "argv": sys.argv[1:], "device": device,
            "model": {"layers": args.layers, "dim": args.dim, "ffn": args.ffn, "vocab": args.vocab},
            "tokens": args.tokens, "rounds": args.rounds, "medians": medians, "samples": samples}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=2816)
    p.add_argument("--vocab", type=int, default=16000)
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--host-profile", action="store_true",
                   help="also the host profiler's phases per dispatch (record, descriptors, submit, wait, "
                        "bookkeeping: the plan made at a miss is bookkeeping's)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    report = run(args)
    for arm in ARMS:
        m = report["medians"][arm]
        print(f"{arm:6s} {m['cpu_us_per_dispatch']:7.2f} us cpu/dispatch  {m['wall_ms_per_token']:7.3f} ms/token  "
              f"{m['descriptor_updates_per_token']:5.1f} descriptor updates/token")
        if args.host_profile:
            print("       " + "  ".join(f"{k[:-len('_us_per_dispatch')]} {v:.2f}" for k, v in m.items()
                                        if k.endswith("_us_per_dispatch") and not k.startswith("cpu")))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
