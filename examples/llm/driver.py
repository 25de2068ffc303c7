"""The decode driver: a Llama-shaped decoder run on a ``Device``, step by step.

Takes a ``Device`` and ``ModelWeights`` (``examples.llm.model``); gives
``GpuModel`` (weights, activations, KV cache and kernels on the device; the
dispatch plan of one token; greedy decode recorded as it goes, or captured
once and replayed) and ``decode_rounds``, the measured loop that both
``python -m examples.llm`` and ``python -m benchmarks demo`` run: warm-up and capture per
configuration, then rounds in paired order (ABBA).

The whole decode stays on the device: ``argmax`` writes the chosen token into
its slot of a token buffer, the next step's ``get_rows`` reads it from there,
and every step's logits go to their own slice of a logits buffer, so the host
records all steps first and reads the results once.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional, Sequence

from . import kernel_groups
from genspirv.errors import GenspirvError
from genspirv.runtime.hazards import access_of
from .reorder import ScheduleCache

if TYPE_CHECKING:
    import numpy as np

    from . import model as ref


# Offsets of buffer views (token slots, KV-cache positions, logits rows) are
# multiples of this: Vulkan caps minStorageBufferOffsetAlignment at 256 bytes,
# so any conforming device accepts them.
VIEW_ALIGN = 256

def _align(n: int) -> int:
    return (n + VIEW_ALIGN - 1) // VIEW_ALIGN * VIEW_ALIGN


def _ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


# -- the dispatch plan ------------------------------------------------------------


class Dispatch(NamedTuple):
    """One recorded kernel launch; ``args`` are buffers or views in binding order.

    A named tuple, not a frozen dataclass: a token's plan makes a few dozen of
    these, and a tuple is made several times faster."""

    label: str
    kernel: object
    args: tuple
    groups: tuple[int, int, int]
    push: bytes
    # The bytes the kernel reads and writes, where fewer than it binds (the attention
    # binds whole caches and reads their first rows); None: every bound byte.
    touched_bytes: Optional[int] = None

    def access(self):
        """Its reads and writes, as the device's tracker will see them."""
        return access_of(self.kernel.entry.info, [a.range for a in self.args])


def dispatches_per_token(config: ref.ModelConfig) -> int:
    """get_rows; 7 per layer; logits, argmax.

    Per layer: q and k (each with the attention norm fused into its input and its
    rope applied to the result), v (with the attention norm), attention, o (the
    residual add fused into its output), gate and up in one dispatch (the ffn norm
    fused into their input, silu(gate) * up their output), down (the residual add
    fused into its output). The logits take the output norm the same way. No norm,
    add or silu_mul has a dispatch of its own."""
    return 1 + 7 * config.n_layers + 2


def expected_barriers_per_token(config: ref.ModelConfig, policy: str, reorder: bool) -> int:
    """Barriers per decoded token, from the model's structure alone.

    ``always``: one before every dispatch. ``smart`` in program order, per layer:
    q (reads the residual stream the step before wrote; k and v share its step),
    attention, o (writes the second residual buffer), gate and up (one dispatch),
    down (reads their silu(gate) * up, writes the first residual buffer) = 5; plus get_rows
    (reads the slot argmax wrote), logits and argmax = 3. Program order is
    already one step per level of the dependency DAG, so the reorder pass gives
    the same count. (With the norms as dispatches of their own, the residual
    adds fused into them, it was 4 + 7 per layer; before any fusion, 12 per
    layer in program order and 11 reordered.)
    """
    if policy == "always":
        return dispatches_per_token(config)
    return 3 + 5 * config.n_layers



class GpuModel:
    """The model's weights, activations, KV cache and kernels on one device."""

    def __init__(self, dev, weights: ref.ModelWeights, block_size: int = 128,
                 rows_per_group: Optional[int] = None):
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
        # rows_per_group: the mul_mat_vec kernels' ROWS_PER_GROUP (default: per weight
        # type, kernel_groups.ROWS_PER_GROUP_BY_WEIGHTS).
        self.matvec_variant = v = matvec_variant(dev, wt, rows_per_group)
        self.k_matvec = dev.kernel(v.name, spec=v.spec)
        # Every norm and residual add of the decode is fused into a matrix product
        # (glsl/mul_mat_vec.comp): the norms into the inputs of the products that read
        # them, the adds into the outputs of o and down. The rope variant's
        # ROWS_PER_GROUP counts pairs of rows.
        self.k_matvec_norm = dev.kernel(fused_name(v, "norm"), spec=v.spec)
        self.k_matvec_rope_norm = dev.kernel(fused_name(v, "rope_norm"), spec=v.spec)
        self.k_matvec_add = dev.kernel(fused_name(v, "add"), spec=v.spec)
        # Gate and up as one product (ROWS_PER_GROUP counts pairs of their rows).
        self.k_matvec_glu_norm = dev.kernel(fused_name(v, "glu_norm"), spec=v.spec)
        self.k_attention = dev.kernel("attention", spec={"BLOCK_SIZE": block_size,
                                                         "MAX_CTX": c.max_ctx})
        self.k_argmax = dev.kernel("argmax", spec=spec)

        self.embedding = self._upload(weights.embedding)
        self.layers = [{name: self._upload(getattr(lw, name)) for name in lw.__dataclass_fields__}
                       for lw in weights.layers]
        self.out_norm = self._upload(weights.out_norm)
        self.output = self._upload(weights.output)

        f32 = 4
        # The residual stream: x in residual[0] between layers, x2 (after attention) in
        # residual[1], so that no dispatch reads and writes one buffer.
        self.residual = [dev.buffer(c.dim * f32), dev.buffer(c.dim * f32)]
        self.q_rot = dev.buffer(c.dim * f32)
        self.att = dev.buffer(c.dim * f32)
        self.ffn_act = dev.buffer(c.ffn_dim * f32)      # silu(gate) * up
        self.kv_slot = _align(c.kv_dim * f32)           # bytes per cached position
        self.k_cache = [dev.buffer(c.max_ctx * self.kv_slot) for _ in range(c.n_layers)]
        self.v_cache = [dev.buffer(c.max_ctx * self.kv_slot) for _ in range(c.n_layers)]
        self.n_slots = c.max_ctx + 1
        self.tokens = dev.buffer(self.n_slots * VIEW_ALIGN)
        self.logits_row = _align(c.vocab * f32)
        self.logits = dev.buffer(c.max_ctx * self.logits_row)
        # The dispatches that are the same at every position, made once per layer;
        # and the reorder pass's order, once per step shape.
        self._static = [self._layer_static(li, lw) for li, lw in enumerate(self.layers)]
        self.schedules = ScheduleCache()

    def _upload(self, array):
        import numpy as np
        buf = self.dev.buffer(max(array.nbytes, 4))
        self.dev.upload(buf, np.ascontiguousarray(array))
        return buf

    # Each helper returns one Dispatch; sizes are push constants (see each .comp).

    def _groups(self, rows: int) -> tuple[int, int, int]:
        return kernel_groups.mul_mat_vec_groups(rows, self.matvec_variant.rows_per_group)

    # The norm variants write y from float ``y_row`` of the buffer bound: a KV cache, or
    # the logits, is bound whole and one position's (or step's) row written, so that
    # every position dispatches through one plan. They touch W, x, the norm's weight and
    # their rows of y (the roofline's count), not the whole buffer bound.

    def _matvec_norm(self, label, w, x, norm, y, rows, cols, y_row=0) -> Dispatch:
        """y[y_row:y_row + rows] = W (rms_norm(x) * norm)."""
        return Dispatch(label, self.k_matvec_norm, (w, x, y, norm), self._groups(rows),
                        struct.pack("<IIfI", cols, rows, self.config.eps, y_row),
                        w.size + x.size + norm.size + 4 * rows)

    def _matvec_rope_norm(self, label, w, x, norm, y, rows, cols, pos, y_row=0) -> Dispatch:
        """y[y_row:y_row + rows] = rope(W (rms_norm(x) * norm)) at ``pos``: a q or k
        projection with the attention norm before it and its rotary embedding after."""
        c = self.config
        groups = kernel_groups.mul_mat_vec_groups(rows, 2 * self.matvec_variant.rows_per_group)
        return Dispatch(label, self.k_matvec_rope_norm, (w, x, y, norm), groups,
                        struct.pack("<IIIIffI", cols, rows, c.head_dim, pos, c.rope_base, c.eps, y_row),
                        w.size + x.size + norm.size + 4 * rows)

    def _layer_static(self, li: int, lw: dict) -> dict[str, Dispatch]:
        """Layer ``li``'s dispatches that no position changes, by role. Each layer
        reads x in residual[0] and leaves its output there: o writes x2 = x + Wo att
        to residual[1], gate and up read it (the ffn norm fused) and give
        silu(gate) * up, down writes x2 + W_down that back to residual[0]."""
        c = self.config
        x, x2 = self.residual
        return {
            "o": Dispatch(f"L{li}.o", self.k_matvec_add, (lw["wo"], self.att, x2, x),
                          self._groups(c.dim), struct.pack("<II", c.dim, c.dim)),
            "gate_up": Dispatch(f"L{li}.gate_up", self.k_matvec_glu_norm,
                                (lw["w_gate"], x2, self.ffn_act, lw["ffn_norm"], lw["w_up"]),
                                self._groups(c.ffn_dim),
                                struct.pack("<IIfI", c.dim, c.ffn_dim, c.eps, 0)),
            "down": Dispatch(f"L{li}.down", self.k_matvec_add, (lw["w_down"], self.ffn_act, x, x2),
                             self._groups(c.dim), struct.pack("<II", c.ffn_dim, c.dim)),
        }

    def token_plan(self, pos: int, step: Optional[int]) -> list[Dispatch]:
        """Dispatches that feed the token in slot ``pos`` at position ``pos``.

        With ``step`` (a decode step), also the logits into row ``step`` and the
        argmax into slot ``pos + 1``; without it (a prompt token) the layers only,
        which fill the KV cache.
        """
        c = self.config
        f32 = 4
        slot = self.kv_slot
        x = self.residual[0]
        plan = [Dispatch("get_rows", self.k_get_rows,
                         (self.tokens.view(pos * VIEW_ALIGN, 4), self.embedding, x),
                         (_ceil_div(c.dim, self.block_size), 1, 1),
                         struct.pack("<III", c.dim, 1, c.vocab))]
        attention_push = struct.pack("<IIIIIf", c.n_heads, c.n_kv_heads, c.head_dim, pos + 1,
                                     slot // f32, c.head_dim ** -0.5)
        attention_bytes = self.q_rot.nbytes + 2 * (pos + 1) * slot + self.att.nbytes
        kv_row = pos * slot // f32          # this position's row of a cache, in floats
        for li, (s, lw) in enumerate(zip(self._static, self.layers)):
            k_cache, v_cache = self.k_cache[li], self.v_cache[li]
            norm = lw["attn_norm"]
            # The caches are bound whole: K and V write this position's row, the attention
            # reads the first pos + 1 rows (push constants say which), and one plan serves
            # every position where views of the rows and the prefix made three plans
            # (checks, descriptor sets) per position and layer. The wider ranges order
            # nothing more: the rows are written just before the attention reads them,
            # and the next position's only after the barriers of o, gate_up and down.
            plan += [
                self._matvec_rope_norm(f"L{li}.q", lw["wq"], x, norm, self.q_rot, c.dim, c.dim, pos),
                self._matvec_rope_norm(f"L{li}.k", lw["wk"], x, norm, k_cache, c.kv_dim, c.dim, pos, kv_row),
                self._matvec_norm(f"L{li}.v", lw["wv"], x, norm, v_cache, c.kv_dim, c.dim, kv_row),
                Dispatch(f"L{li}.attention", self.k_attention,
                         (self.q_rot, k_cache, v_cache, self.att),
                         (c.n_heads, 1, 1), attention_push, attention_bytes),
                s["o"], s["gate_up"], s["down"],
            ]
        if step is None:
            return plan
        logits = self.logits.view(step * self.logits_row, c.vocab * f32)
        plan += [
            self._matvec_norm("logits", self.output, x, self.out_norm, self.logits, c.vocab, c.dim,
                              step * self.logits_row // f32),
            Dispatch("argmax", self.k_argmax, (logits, self.tokens.view((pos + 1) * VIEW_ALIGN, 4)),
                     (1, 1, 1), struct.pack("<I", c.vocab)),
        ]
        return plan

    def emit(self, plan: Sequence[Dispatch], reorder: bool) -> None:
        dispatch = self.dev.dispatch
        if reorder:
            # The step's shape: every dispatch's role (label: kernel and buffers). A
            # position moves the KV-cache and token-slot views but keeps their
            # overlaps, so one order serves every token (tests/test_demo.py checks
            # that the pass gives it at every position).
            shape = tuple([d.label for d in plan])
            for i in self.schedules.order(shape, lambda: [d.access() for d in plan]):
                d = plan[i]
                dispatch(d.kernel, d.args, d.groups, d.push)
        else:
            for d in plan:
                dispatch(d.kernel, d.args, d.groups, d.push)

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



def matvec_variant(dev, weights: str, rows_per_group: Optional[int] = None) -> kernel_groups.MatVecVariant:
    """The ``mul_mat_vec`` variant and spec constants for this device (``pick_mul_mat_vec``;
    ``rows_per_group`` None: its default for the weight type).

    Subgroup properties come from the device where it reports them
    (``subgroup_size``, ``subgroup_operations``, ``subgroup_stages``); a device
    that does not is taken to have subgroup arithmetic in compute shaders, as
    the decode has always required, with any workgroup size allowed.
    """
    def reported(name, assumed):
        value = getattr(dev, name, None)
        return assumed if value is None else value

    return kernel_groups.pick_mul_mat_vec(
        weights,
        supported_operations=reported("subgroup_operations", kernel_groups.SUBGROUP_FEATURE_BASIC
                                      | kernel_groups.SUBGROUP_FEATURE_ARITHMETIC),
        supported_stages=reported("subgroup_stages", kernel_groups.SHADER_STAGE_COMPUTE),
        subgroup_size=reported("subgroup_size", 1),
        is_cpu=dev.properties.get("type") == "cpu",
        max_invocations=dev.properties["limits"]["max_compute_work_group_invocations"],
        rows_per_group=rows_per_group)


def fused_name(variant: kernel_groups.MatVecVariant, fusion: str) -> str:
    """The ``mul_mat_vec_{fusion}_*`` kernel that pairs with ``variant`` (same weights and
    reduction; glsl/mul_mat_vec.comp): ``norm``, its input rms_norm(x) * weight;
    ``rope_norm``, that and its output rotated by the rotary embedding; ``add``, its
    output plus a residual; ``glu_norm``, gate and up at once (a second weight binding)
    over the normed input, its output silu(gate) * up (and ``silu``, ``rope``: one
    fusion alone)."""
    return variant.name.replace("mul_mat_vec_", f"mul_mat_vec_{fusion}_", 1)


def default_block_size(dev) -> int:
    """The workgroup size (spec constant BLOCK_SIZE) for this device.

    A CPU implementation (lavapipe) runs a workgroup as a loop over SIMD lanes,
    where each reduction step's barrier costs a pass: 32 invocations measured
    about 3x faster there than 128. GPUs want more invocations per row.
    """
    if dev.properties.get("type") == "cpu":
        return kernel_groups.CPU_BLOCK_SIZE
    return kernel_groups.GPU_BLOCK_SIZE


# -- the measured loop -----------------------------------------------------------------

OnRun = Callable[[int, str, str, RunResult], None]   # (round, config label, mode, run)

# A GPU at rest runs its cores at a fraction of their clock: an NVIDIA H200 idles at
# 345 MHz and reaches its 1980 MHz only after about a second of load, and falls back
# within a second of rest. A decode of a few tokens lasts milliseconds, so without this
# the rounds would time the idle clock (three times slower there) rather than the
# decode. Seconds of replayed decode run just before the rounds on a non-CPU device.
CLOCK_WARM_UP_S = 1.5
# And this much again before each timed decode: between two, the host compares the last
# one with the reference, long enough for the clock to start falling (on the H200 the
# recorded decodes of the smaller models, host-bound, came out in two clusters 1.5x
# apart without it).
ROUND_WARM_UP_S = 0.2


def warm_clocks(model: "GpuModel", graphs: Sequence, prompt: Sequence[int], n_tokens: int,
                seconds: float) -> int:
    """Keep the device busy for ``seconds``: the captured ``graphs`` replayed in turn (a
    recorded decode when there are none). Gives the number of decodes run."""
    runs = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        if graphs:
            for graph in graphs:
                graph.run()
        else:
            model.decode(prompt, n_tokens, reorder=False)
        runs += 1
    model.dev.synchronize()
    return runs


def decode_rounds(model: GpuModel, prompt: Sequence[int], n_tokens: int, configs: Sequence[tuple],
                  repeats: int, on_run: OnRun, replay: bool = True) -> None:
    """Decode under each configuration ``(label, policy, reorder)``, ``repeats`` rounds.

    First, per configuration, one decode as warm-up (pipelines, descriptor pools)
    and, with ``replay``, one capture; on a GPU, ``CLOCK_WARM_UP_S`` seconds of
    decoding (``warm_clocks``), so that its cores leave their idle clock, and
    ``ROUND_WARM_UP_S`` before each timed decode. Then
    each round runs the configurations in paired order (forward, reversed, ...), so ratios come from runs side by side:
    the decode recorded by the host (mode ``recorded``) and, with ``replay``, the
    captured one resubmitted (``replayed``); ``on_run`` gets each as it finishes.
    The device's barrier policy is ``smart`` again afterwards.
    """
    dev = model.dev
    graphs = {}
    try:
        for label, policy, reorder in configs:
            dev.barrier_policy = policy
            model.decode(prompt, n_tokens, reorder)
            if replay:
                graphs[label] = model.capture(prompt, n_tokens, reorder)
        on_gpu = dev.properties.get("type") != "cpu"
        every_graph = [g for g, _ in graphs.values()]
        if on_gpu:
            warm_clocks(model, every_graph, prompt, n_tokens, CLOCK_WARM_UP_S)
        for r in range(repeats):
            # Forward, reversed, forward, ... (ABBA, as the benchmarks pair their arms).
            for label, policy, reorder in (configs if r % 2 == 0 else configs[::-1]):
                if on_gpu:
                    warm_clocks(model, every_graph, prompt, n_tokens, ROUND_WARM_UP_S)
                dev.barrier_policy = policy
                on_run(r, label, "recorded", model.decode(prompt, n_tokens, reorder))
                if label in graphs:
                    if on_gpu:
                        warm_clocks(model, every_graph, prompt, n_tokens, ROUND_WARM_UP_S)
                    graph, capture_stats = graphs[label]
                    on_run(r, label, "replayed", model.replay(graph, prompt, n_tokens, capture_stats))
    finally:
        dev.synchronize()
        for graph, _ in graphs.values():
            graph.destroy()
        dev.barrier_policy = "smart"
