"""``python -m examples.llm``: greedy decode of a small transformer through the runtime.

Takes the model shape, seed, prompt and token count from the command line;
builds a Llama-shaped decoder with fixed-seed random weights
(``examples.llm.model.make_weights``), decodes greedily on the default device
with the LLM kernels of glsl/ (``examples.llm.driver``) under each
configuration (barrier policy ``smart``, ``always``, and ``smart`` with the
reorder pass of ``examples.llm.reorder``), both recorded by the host step by
step and captured once and replayed, and compares every token and every step's
logits of every run with the numpy float32 reference (``examples.llm.compare``).
Gives a table (tokens/s, wall and device time per token, dispatches and
barriers per token, ratios over ``smart`` from the same alternating rounds)
and, with ``--json``, the same as JSON (``examples.llm.report``). Exits 1 on
any mismatch, including barriers per token other than the model's structure
gives.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from genspirv.errors import GenspirvError
from genspirv import settings
from genspirv.fsutil import git_commit

if TYPE_CHECKING:
    from .model import ModelConfig

# numpy, the runtime and the driver are imported where first used: the CLI
# builds every command's parser, and `genspirv check` should not pay for numpy.

# Positions the attention kernel's shared score array may hold (12 KiB), leaving
# room for the reduction array within Vulkan's guaranteed 16 KiB.
MAX_CONTEXT = 3072

CONFIGS = (  # (label, barrier policy, reorder pass)
    ("smart", "smart", False),
    ("always", "always", False),
    ("smart+reorder", "smart", True),
)


def _tokens(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated token ids, got {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected at least one non-negative token id, got {text!r}")
    return values


# The defaults of model.ModelConfig, repeated so that building the parser
# needs no numpy; tests/test_demo.py checks that the two agree.
MODEL_DEFAULTS = {"n_layers": 2, "dim": 128, "n_heads": 4, "n_kv_heads": 2, "ffn_dim": 256, "vocab": 512}


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = argparse.Namespace(**MODEL_DEFAULTS)
    p.add_argument("--layers", type=int, default=d.n_layers, help=f"decoder layers (default {d.n_layers})")
    p.add_argument("--dim", type=int, default=d.dim, help=f"model width (default {d.dim})")
    p.add_argument("--heads", type=int, default=d.n_heads, help=f"query heads (default {d.n_heads})")
    p.add_argument("--kv-heads", type=int, default=d.n_kv_heads,
                   help=f"key/value heads, dividing --heads (default {d.n_kv_heads})")
    p.add_argument("--ffn", type=int, default=d.ffn_dim, help=f"feed-forward width (default {d.ffn_dim})")
    p.add_argument("--vocab", type=int, default=d.vocab, help=f"vocabulary size (default {d.vocab})")
    p.add_argument("--tokens", type=int, default=16, help="tokens to generate (default 16)")
    p.add_argument("--prompt", type=_tokens, default=(1,), help="comma-separated prompt token ids (default 1)")
    p.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    p.add_argument("--f16", action="store_true", help="float16 weights (needs 16-bit storage)")
    p.add_argument("--block-size", type=int, default=None,
                   help="workgroup size (default: 32 on a CPU device, 128 on a GPU)")
    p.add_argument("--rows-per-group", type=int, default=None,
                   help="matrix rows per workgroup of the mul_mat_vec kernels (default: per weight "
                        "type, examples.llm.kernel_groups.ROWS_PER_GROUP_BY_WEIGHTS)")
    p.add_argument("--tol", type=float, default=1e-4,
                   help="logit tolerance relative to max |logit| (default 1e-4)")
    p.add_argument("--reorder", action="store_true",
                   help="run only smart with the reorder pass (default: smart, always and smart+reorder)")
    p.add_argument("--repeat", type=int, default=1, help="timed decodes per configuration; the median is reported")
    p.add_argument("--no-replay", action="store_true",
                   help="skip the captured-and-replayed decode (device time without host recording)")
    p.add_argument("--validation", action="store_true", help="Khronos validation with sync validation")
    p.add_argument("--json", metavar="FILE", default=None, help="also write the results as JSON")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The demo's options from an argument list, as `python -m examples.llm ARGS` reads them."""
    p = argparse.ArgumentParser(prog="python -m examples.llm")
    add_arguments(p)
    return p.parse_args(list(argv))


def config_from_args(args: argparse.Namespace) -> "ModelConfig":
    from . import model as ref
    n_ctx = len(args.prompt) + args.tokens
    if args.tokens < 1:
        raise GenspirvError(f"--tokens must be at least 1 (got {args.tokens})")
    if not args.tol > 0:
        raise GenspirvError(f"--tol must be a positive number (got {args.tol})")
    if args.rows_per_group is not None and args.rows_per_group < 1:
        raise GenspirvError(f"--rows-per-group must be at least 1 (got {args.rows_per_group})")
    if max(args.prompt) >= args.vocab:
        raise GenspirvError(f"prompt token {max(args.prompt)} is outside the vocabulary of {args.vocab}")
    if n_ctx > MAX_CONTEXT:
        raise GenspirvError(f"prompt + tokens = {n_ctx} exceed {MAX_CONTEXT}: the attention kernel keeps "
                            f"a head's scores in shared memory, 16 KiB on the smallest devices")
    return ref.ModelConfig(n_layers=args.layers, dim=args.dim, n_heads=args.heads,
                           n_kv_heads=args.kv_heads, ffn_dim=args.ffn, vocab=args.vocab,
                           max_ctx=n_ctx, weights_f16=args.f16).check()


def run_demo(args: argparse.Namespace) -> dict:
    """Build, decode under every configuration, compare; returns the report dict.

    Per configuration: the decode recorded by the host as it goes, and (unless
    ``--no-replay``) the same decode captured once and replayed, whose time is
    the device's alone. Rounds alternate the configurations' order (A B C,
    C B A, ...) so that ratios come from runs side by side; every run of every
    round is compared with the reference, the figures are medians.
    """
    from genspirv.runtime import Device
    from .compare import Reference
    from .driver import GpuModel, decode_rounds, default_block_size
    from . import model as ref
    from .report import config_entry, ratios

    config = config_from_args(args)
    weights = ref.make_weights(config, args.seed)
    reference = Reference(weights, args.prompt, args.tokens)
    n = args.tokens
    repeat = max(args.repeat, 1)

    dev = Device(validation=True) if args.validation else Device()
    report = {"device": dev.properties.get("name", "unknown"),
              "device_type": dev.properties.get("type"),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "commit": settings.get("GENSPIRV_COMMIT") or git_commit(Path(__file__).resolve().parent),
              "model": {"layers": config.n_layers, "dim": config.dim, "heads": config.n_heads,
                        "kv_heads": config.n_kv_heads, "ffn": config.ffn_dim, "vocab": config.vocab,
                        "weights": "f16" if config.weights_f16 else "f32", "seed": args.seed,
                        "prompt": list(args.prompt), "tokens": n},
              "tolerance": args.tol, "repeat": repeat, "reference_tokens": list(reference.greedy.tokens),
              "runs": []}
    try:
        block_size = args.block_size or default_block_size(dev)
        report["model"]["block_size"] = block_size
        model = GpuModel(dev, weights, block_size=block_size, rows_per_group=args.rows_per_group)
        report["model"]["rows_per_group"] = model.matvec_variant.rows_per_group
        configs = [c for c in CONFIGS if c[2]] if args.reorder else list(CONFIGS)
        runs: dict[tuple[str, str], list] = {}
        decode_rounds(model, args.prompt, n, configs, repeat, replay=not args.no_replay,
                      on_run=lambda r, label, mode, run: runs.setdefault((label, mode), []).append(run))
        report["runs"] = [config_entry(config, label, policy, reorder, runs[label, "recorded"],
                                       runs.get((label, "replayed"), []), reference, args.tol)
                          for label, policy, reorder in configs]
        report["ratios"] = ratios(report["runs"])
    finally:
        dev.close()
    report["ok"] = all(r["ok"] for r in report["runs"])
    if args.validation:
        errors = [f"{m.id}: {m.text[:300]}" for m in dev.validation_messages if m.severity == "error"]
        report["validation_errors"] = errors
        report["ok"] = report["ok"] and not errors
    return report


def run(args: argparse.Namespace) -> int:
    from . import report as report_mod

    report = run_demo(args)
    report_mod.print_report(report)
    if args.json:
        report_mod.write_json(args.json, report)
    return 0 if report["ok"] else 1


def main(argv: Sequence[str] | None = None) -> int:
    """The command: its options parsed, the demo run; a ``GenspirvError`` is one line and its exit code."""
    import sys
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.json is not None and not Path(args.json).absolute().parent.is_dir():
        print(f"python -m examples.llm: error: --json {args.json}: no folder {Path(args.json).parent}",
              file=sys.stderr)
        return 2
    try:
        return run(args)
    except GenspirvError as exc:
        print(f"python -m examples.llm: error: {exc}", file=sys.stderr)
        return exc.exit_code
