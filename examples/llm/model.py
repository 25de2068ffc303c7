"""numpy float32 references of the LLM kernels and of the whole decoder model.

Takes numpy arrays (and, for the model, a ``ModelConfig`` and a seed); gives
numpy float32 results computed the way the kernels in glsl/ compute them:
float32 arithmetic, weights stored as float32 or float16 and widened on load.
The tests compare every kernel with these, and ``python -m examples.llm`` compares every
decoded token and its logits with ``greedy_decode``.

No Vulkan here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from genspirv.errors import GenspirvError

F32 = np.float32


# -- kernels --------------------------------------------------------------------


def get_rows(table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Rows ``table[ids]`` as float32; an id past the table gives a zero row."""
    ids = np.asarray(ids, dtype=np.int64)
    out = np.zeros((len(ids), table.shape[1]), dtype=F32)
    valid = ids < table.shape[0]
    out[valid] = table[ids[valid]].astype(F32)
    return out


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    x = np.asarray(x, dtype=F32)
    mean_sq = np.mean(x * x, axis=-1, keepdims=True, dtype=F32)
    return (x / np.sqrt(mean_sq + F32(eps))) * weight.astype(F32)


def mul_mat_vec(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``w @ x`` with ``w`` (rows x cols, float32 or float16) widened to float32."""
    return w.astype(F32) @ np.asarray(x, dtype=F32)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T``: a (M x K) activations, b (N x K) weights, float16 widened."""
    return np.asarray(a, dtype=F32) @ b.astype(F32).T


def rope(x: np.ndarray, pos: int, theta_base: float, neox: bool = False) -> np.ndarray:
    """Rotate the pairs of each head (rows of ``x``: n_heads x head_dim) by position."""
    x = np.asarray(x, dtype=F32)
    n_heads, head_dim = x.shape
    if head_dim % 2:
        raise GenspirvError(f"rope: head_dim {head_dim} must be even")
    half = head_dim // 2
    j = np.arange(half, dtype=F32)
    freq = np.power(F32(theta_base), -(2 * j) / F32(head_dim)).astype(F32)
    angle = (F32(pos) * freq).astype(F32)
    c, s = np.cos(angle).astype(F32), np.sin(angle).astype(F32)
    if neox:
        i0, i1 = np.arange(half), np.arange(half) + half
    else:
        i0, i1 = 2 * np.arange(half), 2 * np.arange(half) + 1
    x0, x1 = x[:, i0], x[:, i1]
    out = np.empty_like(x)
    out[:, i0] = x0 * c - x1 * s
    out[:, i1] = x0 * s + x1 * c
    return out


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    """One decode step: q (n_head x d); k, v (n_kv x n_kv_head x d) -> (n_head x d).

    Query head h uses KV head h // (n_head // n_kv_head) (grouped-query attention).
    """
    n_head, d = q.shape
    n_kv_head = k.shape[1]
    group = n_head // n_kv_head
    out = np.empty((n_head, d), dtype=F32)
    for h in range(n_head):
        kh, vh = k[:, h // group, :].astype(F32), v[:, h // group, :].astype(F32)
        s = (kh @ q[h].astype(F32)) * F32(scale)
        p = np.exp(s - s.max())
        out[h] = (p @ vh) / p.sum(dtype=F32)
    return out


def silu_mul(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    g = np.asarray(gate, dtype=F32)
    with np.errstate(over="ignore"):
        return (g / (F32(1) + np.exp(-g))) * np.asarray(up, dtype=F32)


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=F32) + np.asarray(b, dtype=F32)


def argmax(x: np.ndarray) -> int:
    """Index of the largest value, the smallest such index on ties (numpy's rule)."""
    return int(np.argmax(x))


# -- the model ------------------------------------------------------------------


@dataclass(frozen=True)
class ModelConfig:
    """A small Llama-shaped decoder: RMSNorm, rotary GQA attention, SwiGLU MLP."""

    n_layers: int = 2
    dim: int = 128
    n_heads: int = 4
    n_kv_heads: int = 2
    ffn_dim: int = 256
    vocab: int = 512
    max_ctx: int = 64
    eps: float = 1e-5
    rope_base: float = 10000.0
    weights_f16: bool = False

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    def check(self) -> "ModelConfig":
        """Refuse shapes the kernels do not support, naming the field."""
        problems = []
        for name in ("n_layers", "dim", "n_heads", "n_kv_heads", "ffn_dim", "vocab", "max_ctx"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1 (got {getattr(self, name)})")
        if not problems:
            if self.dim % self.n_heads:
                problems.append(f"dim {self.dim} must be a multiple of n_heads {self.n_heads}")
            elif self.head_dim % 2:
                problems.append(f"head_dim {self.head_dim} (dim / n_heads) must be even for rope")
            if self.n_heads % self.n_kv_heads:
                problems.append(f"n_heads {self.n_heads} must be a multiple of n_kv_heads {self.n_kv_heads}")
        if problems:
            raise GenspirvError("model config: " + "; ".join(problems))
        return self


@dataclass(frozen=True)
class LayerWeights:
    attn_norm: np.ndarray   # dim
    wq: np.ndarray          # dim x dim
    wk: np.ndarray          # kv_dim x dim
    wv: np.ndarray          # kv_dim x dim
    wo: np.ndarray          # dim x dim
    ffn_norm: np.ndarray    # dim
    w_gate: np.ndarray      # ffn_dim x dim
    w_up: np.ndarray        # ffn_dim x dim
    w_down: np.ndarray      # dim x ffn_dim


@dataclass(frozen=True)
class ModelWeights:
    config: ModelConfig
    embedding: np.ndarray   # vocab x dim
    layers: tuple[LayerWeights, ...]
    out_norm: np.ndarray    # dim
    output: np.ndarray      # vocab x dim


def make_weights(config: ModelConfig, seed: int) -> ModelWeights:
    """Fixed-seed random weights, scaled so activations stay O(1) through the layers.

    Projections are N(0, 1/fan_in) and the output head N(0, 4/dim): logits then
    have a standard deviation of about 2, so the gap between the two largest of a
    few hundred is typically 0.1 or more — far above float32 rounding (~1e-5).
    """
    config.check()
    rng = np.random.default_rng(seed)
    mat_dtype = np.float16 if config.weights_f16 else F32

    def mat(rows: int, cols: int, std: float) -> np.ndarray:
        return (rng.standard_normal((rows, cols), dtype=F32) * F32(std)).astype(mat_dtype)

    def norm() -> np.ndarray:
        return (F32(1) + F32(0.1) * rng.standard_normal(config.dim, dtype=F32)).astype(F32)

    d, kv, f = config.dim, config.kv_dim, config.ffn_dim
    layers = tuple(
        LayerWeights(attn_norm=norm(), wq=mat(d, d, d ** -0.5), wk=mat(kv, d, d ** -0.5),
                     wv=mat(kv, d, d ** -0.5), wo=mat(d, d, d ** -0.5), ffn_norm=norm(),
                     w_gate=mat(f, d, d ** -0.5), w_up=mat(f, d, d ** -0.5),
                     w_down=mat(d, f, f ** -0.5))
        for _ in range(config.n_layers))
    return ModelWeights(config=config, embedding=mat(config.vocab, d, 1.0), layers=layers,
                        out_norm=norm(), output=mat(config.vocab, d, 2.0 * d ** -0.5))


@dataclass
class KVCache:
    k: list[np.ndarray] = field(default_factory=list)   # per layer: max_ctx x n_kv_heads x head_dim
    v: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def empty(cls, config: ModelConfig) -> "KVCache":
        shape = (config.max_ctx, config.n_kv_heads, config.head_dim)
        return cls(k=[np.zeros(shape, F32) for _ in range(config.n_layers)],
                   v=[np.zeros(shape, F32) for _ in range(config.n_layers)])


def forward(weights: ModelWeights, token: int, pos: int, cache: KVCache) -> np.ndarray:
    """Logits after feeding ``token`` at position ``pos``; fills the cache at ``pos``."""
    c = weights.config
    if not 0 <= pos < c.max_ctx:
        raise GenspirvError(f"position {pos} outside the context of {c.max_ctx}")
    x = get_rows(weights.embedding, np.array([token]))[0]
    for li, lw in enumerate(weights.layers):
        h = rms_norm(x, lw.attn_norm, c.eps)
        q = rope(mul_mat_vec(lw.wq, h).reshape(c.n_heads, c.head_dim), pos, c.rope_base)
        k = rope(mul_mat_vec(lw.wk, h).reshape(c.n_kv_heads, c.head_dim), pos, c.rope_base)
        cache.k[li][pos] = k
        cache.v[li][pos] = mul_mat_vec(lw.wv, h).reshape(c.n_kv_heads, c.head_dim)
        att = attention(q, cache.k[li][:pos + 1], cache.v[li][:pos + 1], c.head_dim ** -0.5)
        x = add(x, mul_mat_vec(lw.wo, att.reshape(-1)))
        h = rms_norm(x, lw.ffn_norm, c.eps)
        a = silu_mul(mul_mat_vec(lw.w_gate, h), mul_mat_vec(lw.w_up, h))
        x = add(x, mul_mat_vec(lw.w_down, a))
    return mul_mat_vec(weights.output, rms_norm(x, weights.out_norm, c.eps))


@dataclass(frozen=True)
class Decode:
    tokens: tuple[int, ...]          # the generated tokens (prompt excluded)
    logits: np.ndarray               # n_tokens x vocab: the logits each token was chosen from


def greedy_decode(weights: ModelWeights, prompt: tuple[int, ...], n_tokens: int) -> Decode:
    """Feed the prompt, then pick the argmax ``n_tokens`` times."""
    return teacher_forced(weights, prompt, n_tokens, forced=None)


def teacher_forced(weights: ModelWeights, prompt: tuple[int, ...], n_tokens: int,
                   forced: tuple[int, ...] | None) -> Decode:
    """Like ``greedy_decode``, but feed ``forced[i]`` after step i when given.

    Lets the logits of another decode be compared step by step along that
    decode's own tokens, even past a near-tie where the two chose differently.
    """
    c = weights.config
    if not prompt:
        raise GenspirvError("the prompt needs at least one token")
    if len(prompt) + n_tokens > c.max_ctx:
        raise GenspirvError(f"prompt ({len(prompt)}) + tokens ({n_tokens}) exceed the "
                            f"context of {c.max_ctx}")
    cache = KVCache.empty(c)
    for pos, tok in enumerate(prompt[:-1]):
        forward(weights, tok, pos, cache)
    token, pos = prompt[-1], len(prompt) - 1
    tokens, logits = [], []
    for step in range(n_tokens):
        lg = forward(weights, token, pos, cache)
        chosen = argmax(lg)
        tokens.append(chosen)
        logits.append(lg)
        token = chosen if forced is None else forced[step]
        pos += 1
    return Decode(tokens=tuple(tokens), logits=np.array(logits, dtype=F32).reshape(n_tokens, c.vocab))
