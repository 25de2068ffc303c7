"""The norm and residual fusions of mul_mat_vec against numpy, on the default device.

``mul_mat_vec_norm_*`` (the input rms_norm(x) * weight), ``mul_mat_vec_rope_norm_*``
(that, with the output rotated), ``mul_mat_vec_add_*`` (resid + W x) and
``mul_mat_vec_glu_norm_*`` (silu(gate h) * (up h), h the normed input); each with the
subgroup and the shared-memory reduction, f32 and f16 weights. Shapes as in
test_kernels.py: n_cols odd or not a multiple of the vector width (the scalar
input path), n_rows not a multiple of the rows per group. Every test carries a
negative control: the result must differ measurably from what a kernel that
skipped the fusion, or read the wrong binding or eps, would give.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from examples.llm.kernel_groups import mul_mat_vec_groups
from examples.llm import model as ref

runtime = pytest.importorskip("genspirv.runtime")
from helpers import filled_buffer, seeded_normal  # noqa: E402

# `dev`: the library device, from tests/conftest.py

MMV_VARIANTS = ["", "_noshuffle"]
WEIGHTS = [("f32", np.float32), ("f16", np.float16)]
EPS = 1e-5
SENTINEL = 7.0

_rand = seeded_normal(4321)


def _y(dev, rows):
    """The output buffer, with sentinels past the last row."""
    return filled_buffer(dev, np.full(rows + 8, SENTINEL, dtype=np.float32))


def _read(dev, y, rows):
    got = dev.download(y, dtype="float32")[:rows + 8]
    assert (got[rows:] == SENTINEL).all(), "a row past n_rows was written"
    return got[:rows]


def _norm_weight(n):
    return (1.0 + 0.3 * _rand(n)).astype(np.float32)


def _close(got, want, cols, scale=1.0):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(cols) * max(scale, 1.0))


def _differs(got, other):
    return not np.allclose(got, other, rtol=1e-3, atol=1e-3)


# cols: 1 and odd (scalar path), 300 (a multiple of 4, not 8: vector path for f32 only),
# 520 and 4096 (vector path for both); rows not a multiple of the rows per group.
SHAPES = [(1, 1, 32, 1), (67, 300, 128, 2), (5, 1031, 256, 3), (9, 777, 100, 2),
          (7, 520, 48, 4), (3, 4096, 128, 2), (31, 8, 32, 8)]


@pytest.mark.parametrize("variant", MMV_VARIANTS)
@pytest.mark.parametrize("wt,dtype", WEIGHTS)
@pytest.mark.parametrize("rows,cols,block,rows_per_group", SHAPES)
def test_mul_mat_vec_norm_input(dev, variant, wt, dtype, rows, cols, block, rows_per_group):
    """y = W (rms_norm(x) * g): x's 1 / rms from the same pass as the products."""
    w, x, g = _rand(rows, cols, dtype=dtype), _rand(cols) * 3, _norm_weight(cols)
    k = dev.kernel(f"mul_mat_vec_norm_{wt}{variant}",
                   spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": rows_per_group})
    y = _y(dev, rows)
    dev.dispatch(k, [filled_buffer(dev, w), filled_buffer(dev, x), y, filled_buffer(dev, g)],
                 groups=mul_mat_vec_groups(rows, rows_per_group), push=struct.pack("<IIfI", cols, rows, EPS, 0))
    got = _read(dev, y, rows)
    _close(got, ref.mul_mat_vec(w, ref.rms_norm(x, g, EPS)), cols)
    # Negative controls: the plain product, and the norm without its weight.
    assert _differs(got, ref.mul_mat_vec(w, x))
    if cols > 1:
        assert _differs(got, ref.mul_mat_vec(w, ref.rms_norm(x, np.ones(cols, np.float32), EPS)))


@pytest.mark.parametrize("variant", MMV_VARIANTS)
@pytest.mark.parametrize("cols", [300, 33])
def test_mul_mat_vec_norm_reads_eps(dev, variant, cols):
    """An input whose mean square is of the order of eps: the eps pushed decides the
    result (a kernel ignoring it, or reading another word, would not match both)."""
    rows = 40
    w, x, g = _rand(rows, cols), _rand(cols) * 2e-3, _norm_weight(cols)
    k = dev.kernel(f"mul_mat_vec_norm_f32{variant}", spec={"BLOCK_SIZE": 64, "ROWS_PER_GROUP": 2})
    results = {}
    for eps in (1e-6, 1e-5):
        y = _y(dev, rows)
        dev.dispatch(k, [filled_buffer(dev, w), filled_buffer(dev, x), y, filled_buffer(dev, g)],
                     groups=mul_mat_vec_groups(rows, 2), push=struct.pack("<IIfI", cols, rows, eps, 0))
        results[eps] = got = _read(dev, y, rows)
        _close(got, ref.mul_mat_vec(w, ref.rms_norm(x, g, eps)), cols)
    assert _differs(results[1e-6], results[1e-5])
    assert _differs(results[1e-5], ref.mul_mat_vec(w, ref.rms_norm(x, g, 0.0)))


@pytest.mark.parametrize("variant", MMV_VARIANTS)
@pytest.mark.parametrize("wt,dtype", WEIGHTS)
# heads x head_dim rows; pairs per group 1 to 4 (a group's last pairs past the end on
# 5 x 6 = 30 rows with 4 pairs); scalar (cols 33) and vector input paths.
@pytest.mark.parametrize("n_heads,head_dim,cols,pos,block,pairs", [
    (1, 2, 1, 3, 32, 1), (3, 10, 33, 7, 64, 1), (5, 6, 520, 300, 48, 4), (4, 64, 4096, 5, 128, 1),
    (2, 16, 300, 1, 100, 3)])
def test_mul_mat_vec_rope_norm(dev, variant, wt, dtype, n_heads, head_dim, cols, pos, block, pairs):
    """y = rope(W (rms_norm(x) * g)) at pos: a q or k projection with its norm and rope."""
    rows = n_heads * head_dim
    w, x, g = _rand(rows, cols, dtype=dtype), _rand(cols) * 3, _norm_weight(cols)
    k = dev.kernel(f"mul_mat_vec_rope_norm_{wt}{variant}", spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": pairs})
    y = _y(dev, rows)
    dev.dispatch(k, [filled_buffer(dev, w), filled_buffer(dev, x), y, filled_buffer(dev, g)], groups=mul_mat_vec_groups(rows, 2 * pairs),
                 push=struct.pack("<IIIIffI", cols, rows, head_dim, pos, 10000.0, EPS, 0))
    got = _read(dev, y, rows)
    product = ref.mul_mat_vec(w, ref.rms_norm(x, g, EPS))
    want = ref.rope(product.reshape(n_heads, head_dim), pos, 10000.0).reshape(rows)
    scale = float(np.abs(product).max())
    np.testing.assert_allclose(got, want, rtol=1e-4,
                               atol=(1e-4 * np.sqrt(cols) + 2e-6 * max(pos, 1)) * max(scale, 1.0))
    # Negative controls: unrotated; rotated but not normalised.
    assert _differs(got, product)
    plain = ref.rope(ref.mul_mat_vec(w, x).reshape(n_heads, head_dim), pos, 10000.0).reshape(rows)
    assert _differs(got, plain)


@pytest.mark.parametrize("variant", MMV_VARIANTS)
@pytest.mark.parametrize("wt,dtype", WEIGHTS)
@pytest.mark.parametrize("rows,cols,block,rows_per_group", SHAPES)
def test_mul_mat_vec_add_output(dev, variant, wt, dtype, rows, cols, block, rows_per_group):
    """y = resid + W x: a projection with the residual add as its epilogue."""
    w, x, resid = _rand(rows, cols, dtype=dtype), _rand(cols), _rand(rows) * 5
    k = dev.kernel(f"mul_mat_vec_add_{wt}{variant}",
                   spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": rows_per_group})
    y = _y(dev, rows)
    dev.dispatch(k, [filled_buffer(dev, w), filled_buffer(dev, x), y, filled_buffer(dev, resid)],
                 groups=mul_mat_vec_groups(rows, rows_per_group), push=struct.pack("<II", cols, rows))
    got = _read(dev, y, rows)
    product = ref.mul_mat_vec(w, x)
    _close(got, ref.add(resid, product), cols)
    assert _differs(got, product)          # negative control: the residual was added


@pytest.mark.parametrize("variant", MMV_VARIANTS)
@pytest.mark.parametrize("name,wt,dtype,cols", [("norm", "f32", np.float32, 64), ("norm", "f16", np.float16, 72),
                                                ("norm", "f32", np.float32, 33), ("add", "f16", np.float16, 72)])
def test_fused_fewer_groups_than_blocks(dev, variant, name, wt, dtype, cols):
    """A grid smaller than the blocks of rows: each group loops, and the sum of squares
    (or the residual) is per block, not carried over from the one before."""
    rows, per_group = 203, 3
    w, x, g, resid = _rand(rows, cols, dtype=dtype), _rand(cols), _norm_weight(cols), _rand(rows)
    k = dev.kernel(f"mul_mat_vec_{name}_{wt}{variant}", spec={"BLOCK_SIZE": 64, "ROWS_PER_GROUP": per_group})
    groups = mul_mat_vec_groups(rows, per_group, max_groups=5)
    assert groups == (5, 1, 1)
    y = _y(dev, rows)
    if name == "norm":
        args, push = [filled_buffer(dev, w), filled_buffer(dev, x), y, filled_buffer(dev, g)], struct.pack("<IIfI", cols, rows, EPS, 0)
        want = ref.mul_mat_vec(w, ref.rms_norm(x, g, EPS))
    else:
        args, push = [filled_buffer(dev, w), filled_buffer(dev, x), y, filled_buffer(dev, resid)], struct.pack("<II", cols, rows)
        want = ref.add(resid, ref.mul_mat_vec(w, x))
    dev.dispatch(k, args, groups=groups, push=push)
    np.testing.assert_allclose(_read(dev, y, rows), want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("name", ["mul_mat_vec_norm_f32", "mul_mat_vec_rope_norm_f16_noshuffle",
                                  "mul_mat_vec_glu_norm_f32"])
def test_norm_variants_write_from_y_offset(dev, name):
    """The rows land at float y_offset of the buffer bound (a KV cache's row at one
    position), every float before and after untouched; the same dispatch at offset 0
    (the negative control) writes the first rows instead."""
    rows, cols, offset = 12, 40, 37
    w, w_up, x, g = _rand(rows, cols), _rand(rows, cols), _rand(cols), _norm_weight(cols)
    k = dev.kernel(name, spec={"BLOCK_SIZE": 32, "ROWS_PER_GROUP": 1})
    rope = "rope" in name
    results = {}
    for y_offset in (offset, 0):
        y = filled_buffer(dev, np.full(offset + rows + 8, SENTINEL, dtype=np.float32))
        args = [filled_buffer(dev, w), filled_buffer(dev, x), y, filled_buffer(dev, g)] + ([filled_buffer(dev, w_up)] if "glu" in name else [])
        push = (struct.pack("<IIIIffI", cols, rows, 4, 3, 10000.0, EPS, y_offset) if rope
                else struct.pack("<IIfI", cols, rows, EPS, y_offset))
        dev.dispatch(k, args, groups=mul_mat_vec_groups(rows, 2 if rope else 1), push=push)
        results[y_offset] = dev.download(y, dtype="float32")
    got = results[offset]
    assert (got[:offset] == SENTINEL).all() and (got[offset + rows:] == SENTINEL).all()
    np.testing.assert_array_equal(got[offset:offset + rows], results[0][:rows])
    assert (results[0][rows:] == SENTINEL).all() and not (got[offset:offset + rows] == SENTINEL).any()


@pytest.mark.parametrize("name,bindings,push", [
    ("mul_mat_vec_norm_f32", 4, 16), ("mul_mat_vec_rope_norm_f16", 4, 28),
    ("mul_mat_vec_add_f32_noshuffle", 4, 8), ("mul_mat_vec_glu_norm_f16", 5, 16)])
def test_fused_variants_interface(dev, name, bindings, push):
    """The layouts the driver packs: binding count and push-constant size per variant,
    and a dispatch that binds one buffer too few is refused before recording."""
    from genspirv.errors import GenspirvError
    info = dev.kernel(name).entry.info
    assert (info.binding_count, info.push_constant_size) == (bindings, push)
    before = dev.stats["dispatches"]
    with pytest.raises(GenspirvError, match=name):
        dev.dispatch(name, [dev.buffer(16) for _ in range(bindings - 1)], groups=(1, 1, 1), push=bytes(push))
    assert dev.stats["dispatches"] == before

# -- mul_mat_vec_glu_norm_*: a SwiGLU's gate and up in one dispatch ---------------------
# y = silu(gate (rms_norm(x) * g)) * (up (rms_norm(x) * g)), gate at binding 0, up at
# binding 4, the norm's weight at binding 3; ROWS_PER_GROUP counts pairs of gate and up
# rows. Negative controls: gate and up swapped, no silu, no norm.


def _run_glu(dev, name, w_gate, w_up, x, g, rows, cols, block, pairs, max_groups=None):
    k = dev.kernel(name, spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": pairs})
    y = _y(dev, rows)
    dev.dispatch(k, [filled_buffer(dev, w_gate), filled_buffer(dev, x), y, filled_buffer(dev, g), filled_buffer(dev, w_up)],
                 groups=mul_mat_vec_groups(rows, pairs, max_groups=max_groups),
                 push=struct.pack("<IIfI", cols, rows, EPS, 0))
    return _read(dev, y, rows)


# cols: 1 and odd (scalar path), 300 (vector path for f32 only), 520 and 4096 (both);
# rows not a multiple of the pairs per group.
@pytest.mark.parametrize("variant", MMV_VARIANTS)
@pytest.mark.parametrize("wt,dtype", WEIGHTS)
@pytest.mark.parametrize("rows,cols,block,pairs", [
    (1, 1, 32, 1), (67, 300, 128, 2), (5, 1031, 256, 3), (7, 520, 48, 4), (3, 4096, 128, 1), (31, 8, 32, 8)])
def test_mul_mat_vec_glu_norm(dev, variant, wt, dtype, rows, cols, block, pairs):
    # Weights scaled by 1 / sqrt(fan-in): gate x is O(1), where silu is far from both the
    # identity and zero, so the negative controls below hold whatever the draw.
    w_gate, w_up = ((_rand(rows, cols) / np.float32(np.sqrt(cols))).astype(dtype) for _ in range(2))
    x, g = _rand(cols) * 3, _norm_weight(cols)
    got = _run_glu(dev, f"mul_mat_vec_glu_norm_{wt}{variant}", w_gate, w_up, x, g, rows, cols, block, pairs)
    h = ref.rms_norm(x, g, EPS)
    gate, up = ref.mul_mat_vec(w_gate, h), ref.mul_mat_vec(w_up, h)
    want = ref.silu_mul(gate, up)
    scale = max(float(np.abs(gate).max()) * float(np.abs(up).max()), 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(cols) * scale)
    # Negative controls: gate and up swapped; gate * up without silu; without the norm.
    # Relative, not absolute: with one row the outputs can be ~1e-2 by chance.
    def differs(other):
        return not np.allclose(got, other, rtol=1e-2, atol=0)
    assert differs(ref.silu_mul(up, gate))
    assert differs(gate * up)
    if cols > 1:
        assert differs(ref.silu_mul(ref.mul_mat_vec(w_gate, x), ref.mul_mat_vec(w_up, x)))


@pytest.mark.parametrize("variant", MMV_VARIANTS)
def test_mul_mat_vec_glu_norm_fewer_groups_than_blocks(dev, variant):
    """Each of 5 groups loops over blocks of pairs; every block's sum of squares is its own."""
    rows, cols = 203, 72
    w_gate, w_up = _rand(rows, cols, dtype=np.float16), _rand(rows, cols, dtype=np.float16)
    x, g = _rand(cols), _norm_weight(cols)
    got = _run_glu(dev, f"mul_mat_vec_glu_norm_f16{variant}", w_gate, w_up, x, g, rows, cols, 64, 3, max_groups=5)
    h = ref.rms_norm(x, g, EPS)
    np.testing.assert_allclose(got, ref.silu_mul(ref.mul_mat_vec(w_gate, h), ref.mul_mat_vec(w_up, h)),
                               rtol=1e-4, atol=1e-3)


def test_mul_mat_vec_glu_norm_interface(dev):
    """Five bindings (gate, x, y, norm weight, up) and a 16-byte push block."""
    info = dev.kernel("mul_mat_vec_glu_norm_f32").entry.info
    assert (info.binding_count, info.push_constant_size) == (5, 16)
