"""``genspirv demo``: greedy decode of a small transformer through the runtime.

Takes the model shape, seed, prompt and token count from the command line;
builds a Llama-shaped decoder with fixed-seed random weights
(``genspirv.reference.make_weights``), decodes greedily on the default device
with the LLM kernels of glsl/ under each configuration (barrier policy
``smart``, ``always``, and ``smart`` with the reorder pass of
``genspirv.schedule``), both recorded by the host step by step and captured
once and replayed, and compares every token and every step's logits of every
run with the numpy float32 reference. Gives a table (tokens/s, wall and device
time per token, dispatches and barriers per token, ratios over ``smart`` from
the same alternating rounds) and, with ``--json``, the same as JSON. Exits 1
on any mismatch, including barriers per token other than the model's
structure gives.

The whole decode stays on the device: ``argmax`` writes the chosen token into
its slot of a token buffer, the next step's ``get_rows`` reads it from there,
and every step's logits go to their own slice of a logits buffer, so the host
records all steps first and reads the results once.

Comparison rule. Logits: ``max |gpu - ref| <= tol * max |ref|`` at every
step, the reference being fed the device's own tokens (teacher forcing), so
each step compares like with like. Tokens: the device's token must be the
reference's argmax; a differing token is accepted as a *tie* only when the
reference logits of both tokens are within ``tol * max |ref|`` of each other
(then either choice is as right as float32 can tell), and ties are counted and
reported. Default weights give top-2 gaps far above that tolerance
(see ``make_weights``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from . import schedule
from .errors import GenspirvError

# numpy and genspirv.reference are imported where first used: the CLI builds
# every command's parser, and `genspirv check` should not pay for numpy.
if TYPE_CHECKING:
    import numpy as np

    from . import reference as ref

# Offsets of buffer views (token slots, KV-cache positions, logits rows) are
# multiples of this: Vulkan caps minStorageBufferOffsetAlignment at 256 bytes,
# so any conforming device accepts them.
VIEW_ALIGN = 256

# Positions the attention kernel's shared score array may hold (12 KiB), leaving
# room for the reduction array within Vulkan's guaranteed 16 KiB.
MAX_CONTEXT = 3072

CONFIGS = (  # (label, barrier policy, reorder pass)
    ("smart", "smart", False),
    ("always", "always", False),
    ("smart+reorder", "smart", True),
)


def _align(n: int) -> int:
    return (n + VIEW_ALIGN - 1) // VIEW_ALIGN * VIEW_ALIGN


def _ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


# -- the dispatch plan ------------------------------------------------------------


@dataclass(frozen=True)
class Dispatch:
    """One recorded kernel launch; ``args`` are buffers or views in binding order."""

    label: str
    kernel: object
    args: tuple
    groups: tuple[int, int, int]
    push: bytes

    def access(self):
        """Read and write ranges from the manifest masks: what the runtime tracks."""
        info = self.kernel.entry.info
        reads = tuple(a.range for i, a in enumerate(self.args) if info.readable_mask >> i & 1)
        writes = tuple(a.range for i, a in enumerate(self.args) if info.writable_mask >> i & 1)
        return _Access(reads, writes)


@dataclass(frozen=True)
class _Access:
    reads: tuple
    writes: tuple


def dispatches_per_token(config: ref.ModelConfig) -> int:
    """get_rows; 15 per layer; final norm, logits, argmax."""
    return 1 + 15 * config.n_layers + 3


def expected_barriers_per_token(config: ref.ModelConfig, policy: str, reorder: bool) -> int:
    """Barriers per decoded token, from the model's structure alone.

    ``always``: one before every dispatch. ``smart`` in program order, per layer:
    attn norm, q proj, rope q, rope k (reads the k proj, issued after rope q),
    attention, o proj, residual add, ffn norm, gate (up shares it), silu_mul,
    down, residual add = 12; plus get_rows (reads the slot argmax wrote), output
    norm, logits and argmax = 4. The reorder pass issues the q/k/v projections
    together, then both ropes: one fewer per layer.
    """
    if policy == "always":
        return dispatches_per_token(config)
    return 4 + (11 if reorder else 12) * config.n_layers


class GpuModel:
    """The model's weights, activations, KV cache and kernels on one device."""

    def __init__(self, dev, weights: ref.ModelWeights, block_size: int = 128):
        c = weights.config
        limit = dev.properties["limits"]["max_compute_work_group_invocations"]
        if not 1 <= block_size <= limit:
            raise GenspirvError(f"block size {block_size} must be between 1 and this device's "
                                f"{limit} invocations per workgroup")
        self.dev, self.config, self.weights = dev, c, weights
        wt = "f16" if c.weights_f16 else "f32"
        spec = {"BLOCK_SIZE": block_size}
        self.block_size = block_size
        self.k_get_rows = dev.kernel(f"get_rows_{wt}", spec=spec)
        self.k_matvec = dev.kernel(f"mul_mat_vec_{wt}", spec=spec)
        self.k_rms_norm = dev.kernel("rms_norm", spec=spec)
        self.k_rope = dev.kernel("rope_norm", spec=spec)
        self.k_attention = dev.kernel("attention", spec={"BLOCK_SIZE": block_size,
                                                         "MAX_CTX": c.max_ctx})
        self.k_silu_mul = dev.kernel("silu_mul", spec=spec)
        self.k_add = dev.kernel("add_f32")
        self.k_argmax = dev.kernel("argmax", spec=spec)

        self.embedding = self._upload(weights.embedding)
        self.layers = [{name: self._upload(getattr(lw, name)) for name in lw.__dataclass_fields__}
                       for lw in weights.layers]
        self.out_norm = self._upload(weights.out_norm)
        self.output = self._upload(weights.output)

        f32 = 4
        self.residual = [dev.buffer(c.dim * f32), dev.buffer(c.dim * f32)]
        self.h = dev.buffer(c.dim * f32)
        self.q = dev.buffer(c.dim * f32)
        self.q_rot = dev.buffer(c.dim * f32)
        self.k = dev.buffer(c.kv_dim * f32)
        self.att = dev.buffer(c.dim * f32)
        self.proj = dev.buffer(c.dim * f32)
        self.gate = dev.buffer(c.ffn_dim * f32)
        self.up = dev.buffer(c.ffn_dim * f32)
        self.act = dev.buffer(c.ffn_dim * f32)
        self.kv_slot = _align(c.kv_dim * f32)           # bytes per cached position
        self.k_cache = [dev.buffer(c.max_ctx * self.kv_slot) for _ in range(c.n_layers)]
        self.v_cache = [dev.buffer(c.max_ctx * self.kv_slot) for _ in range(c.n_layers)]
        self.n_slots = c.max_ctx + 1
        self.tokens = dev.buffer(self.n_slots * VIEW_ALIGN)
        self.logits_row = _align(c.vocab * f32)
        self.logits = dev.buffer(c.max_ctx * self.logits_row)

    def _upload(self, array):
        import numpy as np
        buf = self.dev.buffer(max(array.nbytes, 4))
        self.dev.upload(buf, np.ascontiguousarray(array))
        return buf

    # Each helper returns one Dispatch; sizes are push constants (see each .comp).

    def _matvec(self, label, w, x, y, rows, cols) -> Dispatch:
        groups = (min(rows, 65535), _ceil_div(rows, 65535), 1)
        return Dispatch(label, self.k_matvec, (w, x, y), groups, struct.pack("<II", cols, rows))

    def _rms_norm(self, label, x, w, y) -> Dispatch:
        c = self.config
        return Dispatch(label, self.k_rms_norm, (x, w, y), (1, 1, 1),
                        struct.pack("<IIf", c.dim, 1, c.eps))

    def _rope(self, label, src, dst, n_heads, pos) -> Dispatch:
        c = self.config
        pairs = n_heads * c.head_dim // 2
        return Dispatch(label, self.k_rope, (src, dst), (_ceil_div(pairs, self.block_size), 1, 1),
                        struct.pack("<IIIf", n_heads, c.head_dim, pos, c.rope_base))

    def _add(self, label, a, b, out) -> Dispatch:
        n = self.config.dim
        return Dispatch(label, self.k_add, (a, b, out), (_ceil_div(n, 256), 1, 1), struct.pack("<I", n))

    def token_plan(self, pos: int, step: Optional[int]) -> list[Dispatch]:
        """Dispatches that feed the token in slot ``pos`` at position ``pos``.

        With ``step`` (a decode step), also the logits into row ``step`` and the
        argmax into slot ``pos + 1``; without it (a prompt token) the layers only,
        which fill the KV cache.
        """
        c = self.config
        f32 = 4
        slot = self.kv_slot
        plan = [Dispatch("get_rows", self.k_get_rows,
                         (self.tokens.view(pos * VIEW_ALIGN, 4), self.embedding, self.residual[0]),
                         (_ceil_div(c.dim, self.block_size), 1, 1),
                         struct.pack("<III", c.dim, 1, c.vocab))]
        cur = 0
        for li, lw in enumerate(self.layers):
            x = self.residual[cur]
            k_here = self.k_cache[li].view(pos * slot, c.kv_dim * f32)
            v_here = self.v_cache[li].view(pos * slot, c.kv_dim * f32)
            plan += [
                self._rms_norm(f"L{li}.attn_norm", x, lw["attn_norm"], self.h),
                self._matvec(f"L{li}.q", lw["wq"], self.h, self.q, c.dim, c.dim),
                self._rope(f"L{li}.rope_q", self.q, self.q_rot, c.n_heads, pos),
                self._matvec(f"L{li}.k", lw["wk"], self.h, self.k, c.kv_dim, c.dim),
                self._rope(f"L{li}.rope_k", self.k, k_here, c.n_kv_heads, pos),
                self._matvec(f"L{li}.v", lw["wv"], self.h, v_here, c.kv_dim, c.dim),
                Dispatch(f"L{li}.attention", self.k_attention,
                         (self.q_rot, self.k_cache[li].view(0, (pos + 1) * slot),
                          self.v_cache[li].view(0, (pos + 1) * slot), self.att),
                         (c.n_heads, 1, 1),
                         struct.pack("<IIIIIf", c.n_heads, c.n_kv_heads, c.head_dim, pos + 1,
                                     slot // f32, c.head_dim ** -0.5)),
                self._matvec(f"L{li}.o", lw["wo"], self.att, self.proj, c.dim, c.dim),
                self._add(f"L{li}.attn_residual", x, self.proj, self.residual[1 - cur]),
            ]
            cur = 1 - cur
            x = self.residual[cur]
            plan += [
                self._rms_norm(f"L{li}.ffn_norm", x, lw["ffn_norm"], self.h),
                self._matvec(f"L{li}.gate", lw["w_gate"], self.h, self.gate, c.ffn_dim, c.dim),
                self._matvec(f"L{li}.up", lw["w_up"], self.h, self.up, c.ffn_dim, c.dim),
                Dispatch(f"L{li}.silu_mul", self.k_silu_mul, (self.gate, self.up, self.act),
                         (_ceil_div(c.ffn_dim, self.block_size), 1, 1), struct.pack("<I", c.ffn_dim)),
                self._matvec(f"L{li}.down", lw["w_down"], self.act, self.proj, c.dim, c.ffn_dim),
                self._add(f"L{li}.ffn_residual", x, self.proj, self.residual[1 - cur]),
            ]
            cur = 1 - cur
        if step is None:
            return plan
        logits = self.logits.view(step * self.logits_row, c.vocab * f32)
        plan += [
            self._rms_norm("out_norm", self.residual[cur], self.out_norm, self.h),
            self._matvec("logits", self.output, self.h, logits, c.vocab, c.dim),
            Dispatch("argmax", self.k_argmax, (logits, self.tokens.view((pos + 1) * VIEW_ALIGN, 4)),
                     (1, 1, 1), struct.pack("<I", c.vocab)),
        ]
        return plan

    def emit(self, plan: Sequence[Dispatch], reorder: bool) -> None:
        order = schedule.reorder([d.access() for d in plan]) if reorder else range(len(plan))
        for i in order:
            d = plan[i]
            self.dev.dispatch(d.kernel, list(d.args), groups=d.groups, push=d.push)

    def _start(self, prompt: Sequence[int], n_tokens: int, reorder: bool) -> None:
        """Prompt into its token slots, the prompt's KV entries filled; then idle."""
        import numpy as np
        c = self.config
        if len(prompt) + n_tokens > c.max_ctx:
            raise GenspirvError(f"prompt ({len(prompt)}) + tokens ({n_tokens}) exceed the "
                                f"context of {c.max_ctx}")
        slots = np.zeros((self.n_slots, VIEW_ALIGN // 4), dtype=np.uint32)
        slots[:len(prompt), 0] = prompt
        self.dev.upload(self.tokens, slots)
        for pos in range(len(prompt) - 1):
            self.emit(self.token_plan(pos, None), reorder)
        self.dev.synchronize()

    def _emit_steps(self, prompt: Sequence[int], n_tokens: int, reorder: bool) -> None:
        first = len(prompt) - 1
        for step in range(n_tokens):
            self.emit(self.token_plan(first + step, step), reorder)

    def _finish(self, prompt, n_tokens, seconds, gpu_seconds, stats) -> "RunResult":
        c = self.config
        slots = self.dev.download(self.tokens, dtype="uint32").reshape(self.n_slots, VIEW_ALIGN // 4)
        tokens = tuple(int(t) for t in slots[len(prompt):len(prompt) + n_tokens, 0])
        rows = self.dev.download(self.logits, dtype="float32").reshape(c.max_ctx, self.logits_row // 4)
        return RunResult(tokens=tokens, logits=rows[:n_tokens, :c.vocab].copy(), seconds=seconds,
                         gpu_seconds=gpu_seconds, stats=stats)

    def decode(self, prompt: Sequence[int], n_tokens: int, reorder: bool) -> "RunResult":
        """Greedy decode, every dispatch recorded by the host as it goes.

        Stats and times cover the decode steps only (not the prompt).
        """
        self._start(prompt, n_tokens, reorder)
        before = self.dev.stats
        t0 = time.perf_counter()
        with self.dev.gpu_timer() as timer:
            self._emit_steps(prompt, n_tokens, reorder)
        self.dev.synchronize()
        elapsed = time.perf_counter() - t0
        stats = _delta(before, self.dev.stats)
        return self._finish(prompt, n_tokens, elapsed, timer.ns * 1e-9, stats)

    def capture(self, prompt: Sequence[int], n_tokens: int, reorder: bool):
        """The decode steps captured once as a replay graph; gives (graph, capture stats).

        Every step reads its token from the device, so one capture serves any
        number of runs; what differs per step (positions, views) is fixed in it.
        """
        self._start(prompt, n_tokens, reorder)
        before = self.dev.stats
        with self.dev.record() as graph:
            self._emit_steps(prompt, n_tokens, reorder)
        return graph, _delta(before, self.dev.stats)

    def replay(self, graph, prompt: Sequence[int], n_tokens: int, stats: dict) -> "RunResult":
        """One run of a captured decode: the device's time without the host's recording."""
        self._start(prompt, n_tokens, reorder=False)
        t0 = time.perf_counter()
        with self.dev.gpu_timer() as timer:
            graph.run()
        self.dev.synchronize()
        elapsed = time.perf_counter() - t0
        return self._finish(prompt, n_tokens, elapsed, timer.ns * 1e-9, stats)


def _delta(before: dict, after: dict) -> dict:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


@dataclass
class RunResult:
    tokens: tuple[int, ...]
    logits: "np.ndarray"
    seconds: float          # wall time: record, submit, wait
    gpu_seconds: float      # device timestamps around the same steps
    stats: dict


@dataclass(frozen=True)
class Verdict:
    max_rel_err: float           # max over steps of max|gpu - ref| / max|ref|
    ties: tuple[int, ...]        # steps where a near-tie was resolved differently
    mismatches: tuple[str, ...]  # what failed, step by step

    @property
    def ok(self) -> bool:
        return not self.mismatches


def compare(run: RunResult, forced: ref.Decode, tol: float) -> Verdict:
    """Check a device decode against the reference fed the device's tokens."""
    import numpy as np
    worst, ties, bad = 0.0, [], []
    for step, (gpu_tok, g, r) in enumerate(zip(run.tokens, run.logits, forced.logits)):
        scale = max(float(np.max(np.abs(r))), 1e-30)
        err = float(np.max(np.abs(g.astype(np.float64) - r))) / scale
        if not math.isfinite(err):
            err = math.inf
        worst = max(worst, err)
        if err > tol:
            bad.append(f"step {step}: logits differ by {err:.3g} x max|logit| (tolerance {tol:g})")
        best = int(np.argmax(r))
        if gpu_tok != best:
            if 0 <= gpu_tok < len(r) and r[best] - r[gpu_tok] <= tol * scale:
                ties.append(step)
            else:
                got = f"{r[gpu_tok]:.6g}" if 0 <= gpu_tok < len(r) else "out of range"
                bad.append(f"step {step}: device chose token {gpu_tok} (reference logit {got}), "
                           f"reference argmax {best} (logit {r[best]:.6g})")
    return Verdict(max_rel_err=worst, ties=tuple(ties), mismatches=tuple(bad))


# -- the command -------------------------------------------------------------------


def _tokens(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated token ids, got {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected at least one non-negative token id, got {text!r}")
    return values


# The defaults of reference.ModelConfig, repeated so that building the parser
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
    """The demo's options from an argument list, as `genspirv demo ARGS` reads them."""
    p = argparse.ArgumentParser(prog="genspirv demo")
    add_arguments(p)
    return p.parse_args(list(argv))


def config_from_args(args: argparse.Namespace) -> "ref.ModelConfig":
    from . import reference as ref
    n_ctx = len(args.prompt) + args.tokens
    if args.tokens < 1:
        raise GenspirvError(f"--tokens must be at least 1 (got {args.tokens})")
    if not args.tol > 0:
        raise GenspirvError(f"--tol must be a positive number (got {args.tol})")
    if max(args.prompt) >= args.vocab:
        raise GenspirvError(f"prompt token {max(args.prompt)} is outside the vocabulary of {args.vocab}")
    if n_ctx > MAX_CONTEXT:
        raise GenspirvError(f"prompt + tokens = {n_ctx} exceed {MAX_CONTEXT}: the attention kernel keeps "
                            f"a head's scores in shared memory, 16 KiB on the smallest devices")
    return ref.ModelConfig(n_layers=args.layers, dim=args.dim, n_heads=args.heads,
                           n_kv_heads=args.kv_heads, ffn_dim=args.ffn, vocab=args.vocab,
                           max_ctx=n_ctx, weights_f16=args.f16).check()


def default_block_size(dev) -> int:
    """The workgroup size (spec constant BLOCK_SIZE) for this device.

    A CPU implementation (lavapipe) runs a workgroup as a loop over SIMD lanes,
    where each reduction step's barrier costs a pass: 32 invocations measured
    about 3x faster there than 128. GPUs want more invocations per row.
    """
    return 32 if dev.properties.get("type") == "cpu" else 128


def run_demo(args: argparse.Namespace) -> dict:
    """Build, decode under every configuration, compare; returns the report dict.

    Per configuration: the decode recorded by the host as it goes, and (unless
    ``--no-replay``) the same decode captured once and replayed, whose time is
    the device's alone. Rounds alternate the configurations' order (A B C,
    C B A, ...) so that ratios come from runs side by side; every run of every
    round is compared with the reference, the figures are medians.
    """
    from . import reference as ref
    from .runtime import Device

    config = config_from_args(args)
    weights = ref.make_weights(config, args.seed)
    greedy = ref.greedy_decode(weights, args.prompt, args.tokens)
    forced_cache: dict[tuple[int, ...], ref.Decode] = {greedy.tokens: greedy}
    n = args.tokens
    repeat = max(args.repeat, 1)

    def checked(runs: list[RunResult]) -> dict:
        problems, ties, worst = [], set(), 0.0
        for i, run in enumerate(runs):
            forced = forced_cache.get(run.tokens)
            if forced is None:
                forced = forced_cache[run.tokens] = ref.teacher_forced(weights, args.prompt, n, run.tokens)
            v = compare(run, forced, args.tol)
            problems += [f"run {i + 1}: {m}" for m in v.mismatches]
            ties.update(v.ties)
            worst = max(worst, v.max_rel_err)
        seconds = statistics.median(r.seconds for r in runs)
        gpu = statistics.median(r.gpu_seconds for r in runs)
        return {"tokens": list(runs[0].tokens),
                "token_exact": all(r.tokens == greedy.tokens for r in runs),
                "ties": sorted(ties), "max_rel_err": worst, "mismatches": problems, "ok": not problems,
                "runs": len(runs), "seconds": seconds, "tokens_per_s": n / seconds,
                "ms_per_token": 1e3 * seconds / n, "gpu_ms_per_token": 1e3 * gpu / n,
                "stats": runs[0].stats}

    dev = Device(validation=True) if args.validation else Device()
    report = {"device": dev.properties.get("name", "unknown"),
              "device_type": dev.properties.get("type"),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": _git_commit(),
              "model": {"layers": config.n_layers, "dim": config.dim, "heads": config.n_heads,
                        "kv_heads": config.n_kv_heads, "ffn": config.ffn_dim, "vocab": config.vocab,
                        "weights": "f16" if config.weights_f16 else "f32", "seed": args.seed,
                        "prompt": list(args.prompt), "tokens": n},
              "tolerance": args.tol, "repeat": repeat, "reference_tokens": list(greedy.tokens),
              "runs": []}
    try:
        block_size = args.block_size or default_block_size(dev)
        report["model"]["block_size"] = block_size
        model = GpuModel(dev, weights, block_size=block_size)
        model.decode(args.prompt, n, reorder=False)      # warm-up: pipelines, descriptor pools
        configs = [c for c in CONFIGS if c[2]] if args.reorder else list(CONFIGS)
        graphs = {}
        if not args.no_replay:
            for label, policy, reorder in configs:
                set_policy(dev, policy)
                graphs[label] = model.capture(args.prompt, n, reorder)
        recorded = {c[0]: [] for c in configs}
        replayed = {c[0]: [] for c in configs}
        for round_no in range(repeat):
            for label, policy, reorder in (configs if round_no % 2 == 0 else configs[::-1]):
                set_policy(dev, policy)
                recorded[label].append(model.decode(args.prompt, n, reorder))
                if label in graphs:
                    graph, capture_stats = graphs[label]
                    replayed[label].append(model.replay(graph, args.prompt, n, capture_stats))
        dev.synchronize()
        for graph, _ in graphs.values():
            graph.destroy()
        for label, policy, reorder in configs:
            stats = recorded[label][0].stats
            entry = {"config": label, "policy": policy, "reorder": reorder,
                     "dispatches_per_token": stats.get("dispatches", 0) / n,
                     "barriers_per_token": stats.get("barriers", 0) / n,
                     "expected_barriers_per_token": expected_barriers_per_token(config, policy, reorder),
                     "recorded": checked(recorded[label])}
            modes = [entry["recorded"]]
            if label in graphs:
                entry["replayed"] = checked(replayed[label])
                modes.append(entry["replayed"])
            problems = [f"{name}: {m}" for name, mode in zip(("recorded", "replayed"), modes)
                        for m in mode["mismatches"]]
            for run in recorded[label]:
                if run.stats.get("barriers", 0) != entry["expected_barriers_per_token"] * n:
                    problems.append(f"{run.stats.get('barriers', 0) / n:g} barriers per token, the "
                                    f"model's structure gives {entry['expected_barriers_per_token']}")
                    break
            entry.update(tokens=entry["recorded"]["tokens"],
                         token_exact=all(m["token_exact"] for m in modes),
                         ties=sorted({t for m in modes for t in m["ties"]}),
                         max_rel_err=max(m["max_rel_err"] for m in modes),
                         mismatches=problems, ok=not problems)
            report["runs"].append(entry)
        report["ratios"] = _ratios(report["runs"])
    finally:
        set_policy(dev, "smart")
        dev.close()
    report["ok"] = all(r["ok"] for r in report["runs"])
    if args.validation:
        errors = [f"{m.id}: {m.text[:300]}" for m in dev.validation_messages if m.severity == "error"]
        report["validation_errors"] = errors
        report["ok"] = report["ok"] and not errors
    return report


def _git_commit() -> Optional[str]:
    """The checkout's commit, for the record of a benchmark run; None outside a git checkout."""
    import subprocess
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def _ratios(runs: list[dict]) -> dict:
    """Each configuration's medians over smart's, from the same rounds."""
    base = next((r for r in runs if r["config"] == "smart"), None)
    if base is None:
        return {}
    out = {}
    for r in runs:
        if r is base:
            continue
        ratio = {"recorded_ms_per_token": r["recorded"]["ms_per_token"] / base["recorded"]["ms_per_token"]}
        if "replayed" in r and "replayed" in base:
            ratio["replayed_gpu_ms_per_token"] = (r["replayed"]["gpu_ms_per_token"]
                                                  / base["replayed"]["gpu_ms_per_token"])
        out[f"{r['config']}/smart"] = ratio
    return out


def set_policy(dev, policy: str) -> None:
    dev.barrier_policy = policy


def print_report(report: dict, out=None) -> None:
    out = out or sys.stdout
    m = report["model"]
    say = lambda line="": print(line, file=out)  # noqa: E731
    say(f"device: {report['device']} ({report['device_type']}); {report['date']}, commit "
        f"{(report['commit'] or 'unknown')[:12]}")
    say(f"model: {m['layers']} layers, dim {m['dim']}, {m['heads']} heads ({m['kv_heads']} kv), "
        f"ffn {m['ffn']}, vocab {m['vocab']}, {m['weights']} weights, seed {m['seed']}; "
        f"prompt {m['prompt']}, {m['tokens']} tokens; median of {report['repeat']}")
    say(f"reference tokens: {report['reference_tokens']}")
    say(f"{'config':<15}{'disp/tok':>9}{'barr/tok':>9}{'tok/s':>9}{'ms/tok':>9}"
        f"{'replay tok/s':>13}{'gpu ms/tok':>11}{'max err':>10}  result")
    for r in report["runs"]:
        rec, rep = r["recorded"], r.get("replayed")
        result = "token-exact" if r["token_exact"] and r["ok"] else ("ok" if r["ok"] else "MISMATCH")
        if r["ties"]:
            result += f" ({len(r['ties'])} near-tie(s) at steps {r['ties']})"
        replay = f"{rep['tokens_per_s']:>13.1f}{rep['gpu_ms_per_token']:>11.3f}" if rep else f"{'-':>13}{'-':>11}"
        say(f"{r['config']:<15}{r['dispatches_per_token']:>9.1f}{r['barriers_per_token']:>9.1f}"
            f"{rec['tokens_per_s']:>9.1f}{rec['ms_per_token']:>9.2f}{replay}{r['max_rel_err']:>10.2g}  {result}")
        for line in r["mismatches"][:5]:
            say(f"    {line}")
    if "validation_errors" in report:
        errors = report["validation_errors"]
        say(f"validation layer: {len(errors)} error(s)" + ("" if errors else ", sync validation clean"))
        for line in errors[:5]:
            say(f"    {line}")
    for name, ratio in report.get("ratios", {}).items():
        parts = [f"recorded ms/tok x{ratio['recorded_ms_per_token']:.3f}"]
        if "replayed_gpu_ms_per_token" in ratio:
            parts.append(f"replay gpu ms/tok x{ratio['replayed_gpu_ms_per_token']:.3f}")
        say(f"{name}: " + ", ".join(parts))
    say(f"logits compared with tolerance {report['tolerance']:g} x max|logit| at every step; "
        "tok/s and ms/tok: the host recording each dispatch as it goes (wall time); "
        "replay: the decode captured once and resubmitted, gpu ms/tok from device timestamps")


def write_json(path: str, report: dict) -> None:
    """Atomic: a temp file in the same folder, then os.replace."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise GenspirvError(f"{path}: cannot write the JSON report: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise GenspirvError(f"{path}: cannot write the JSON report: {exc.strerror}") from None
        raise


def run(args: argparse.Namespace) -> int:
    report = run_demo(args)
    print_report(report)
    if args.json:
        write_json(args.json, report)
    return 0 if report["ok"] else 1
