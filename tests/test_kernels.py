"""Every LLM kernel of glsl/ against its numpy reference, on the default device.

Sizes are odd and not multiples of the workgroup on purpose (bounds checks),
and the workgroup size is varied through spec constant BLOCK_SIZE (powers of
two and not: the reductions fold any size). Push data is
packed here from each kernel's documented layout, independently of the demo.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from examples.llm import model as ref
from genspirv.errors import DeviceFeatureError

runtime = pytest.importorskip("genspirv.runtime")
from helpers import empty_buffer, filled_buffer, read_back, seeded_normal  # noqa: E402


# `dev`: the library device, from tests/conftest.py


def _ceil(a, b):
    return -(-a // b)


_rand = seeded_normal(1234)


# -- get_rows ---------------------------------------------------------------------


@pytest.mark.parametrize("wt,dtype", [("f32", np.float32), ("f16", np.float16)])
@pytest.mark.parametrize("n_cols,block", [(1, 32), (130, 128), (301, 64)])
def test_get_rows(dev, wt, dtype, n_cols, block):
    table = _rand(37, n_cols, dtype=dtype)
    ids = np.array([0, 36, 5, 5, 99], dtype=np.uint32)     # 99: outside, a zero row
    k = dev.kernel(f"get_rows_{wt}", spec={"BLOCK_SIZE": block})
    dst = empty_buffer(dev, len(ids) * n_cols)
    dev.dispatch(k, [filled_buffer(dev, ids), filled_buffer(dev, table), dst], groups=(_ceil(n_cols, block), len(ids), 1),
                 push=struct.pack("<III", n_cols, len(ids), 37))
    got = read_back(dev, dst, len(ids) * n_cols).reshape(len(ids), n_cols)
    np.testing.assert_array_equal(got, ref.get_rows(table, ids))
    assert not got[4].any()


# -- rms_norm ---------------------------------------------------------------------


# n a multiple of 4: 16-byte loads (1000, 500, 4096, 44); otherwise scalars. Blocks small
# enough against n for the unrolled loop and its remainder to both run.
@pytest.mark.parametrize("n,rows,block", [(1, 1, 32), (129, 3, 128), (1000, 2, 64), (77, 5, 256),
                                          (500, 2, 48), (33, 1, 1), (4096, 1, 128), (44, 3, 2),
                                          (23, 2, 3)])
def test_rms_norm(dev, n, rows, block):
    x = _rand(rows, n) * 3
    w = _rand(n)
    k = dev.kernel("rms_norm", spec={"BLOCK_SIZE": block})
    y = empty_buffer(dev, rows * n)
    dev.dispatch(k, [filled_buffer(dev, x), filled_buffer(dev, w), y], groups=(rows, 1, 1),
                 push=struct.pack("<IIf", n, rows, 1e-5))
    np.testing.assert_allclose(read_back(dev, y, rows * n).reshape(rows, n), ref.rms_norm(x, w, 1e-5),
                               rtol=1e-5, atol=1e-5)


# -- add_rms_norm (a residual add fused with the norm after it) ----------------------------


# n a multiple of 4 (vector path: 1000 and 44 past UNROLL * block vectors, the rest
# recomputed; 4096 as in decode) and not (scalar path); blocks that are not powers of two.
@pytest.mark.parametrize("n,rows,block", [(1, 1, 32), (129, 3, 128), (1000, 2, 8), (77, 5, 256),
                                          (500, 2, 48), (4096, 1, 128), (44, 3, 1), (23, 2, 3)])
def test_add_rms_norm(dev, n, rows, block):
    x, r, w = _rand(rows, n) * 3, _rand(rows, n), _rand(n)
    k = dev.kernel("add_rms_norm", spec={"BLOCK_SIZE": block})
    h = filled_buffer(dev, np.full(rows * n + 4, 7.0, dtype=np.float32))     # sentinels past the end
    y = filled_buffer(dev, np.full(rows * n + 4, 7.0, dtype=np.float32))
    dev.dispatch(k, [filled_buffer(dev, x), filled_buffer(dev, r), filled_buffer(dev, w), h, y], groups=(rows, 1, 1),
                 push=struct.pack("<IIf", n, rows, 1e-5))
    got_h, got_y = read_back(dev, h, rows * n + 4), read_back(dev, y, rows * n + 4)
    # The sum is one float addition per element: exactly numpy's.
    np.testing.assert_array_equal(got_h[:rows * n].reshape(rows, n), x + r)
    np.testing.assert_allclose(got_y[:rows * n].reshape(rows, n), ref.rms_norm(x + r, w, 1e-5),
                               rtol=1e-5, atol=1e-5)
    assert (got_h[rows * n:] == 7.0).all() and (got_y[rows * n:] == 7.0).all()
    # Negative control: the norm of x alone (the residual left out) is not what it gave
    # (for one element both are +-weight: only the signs could tell them apart).
    assert n == 1 or not np.allclose(got_y[:rows * n].reshape(rows, n), ref.rms_norm(x, w, 1e-5),
                           rtol=1e-3, atol=1e-3)


# -- mul_mat_vec --------------------------------------------------------------------


MMV_VARIANTS = ["", "_noshuffle"]


@pytest.mark.parametrize("variant", MMV_VARIANTS)
@pytest.mark.parametrize("wt,dtype", [("f32", np.float32), ("f16", np.float16)])
# cols: 1 and odd (scalar path), 300 (a multiple of 4, not 8: vector path for f32 only),
# 520 and 4096 (vector path for both); rows not a multiple of rows per group.
@pytest.mark.parametrize("rows,cols,block,rows_per_group", [
    (1, 1, 32, 1), (67, 300, 128, 2), (513, 129, 64, 4), (5, 1031, 256, 3), (9, 777, 100, 2),
    (7, 520, 48, 4), (3, 4096, 128, 2), (31, 8, 32, 8)])
def test_mul_mat_vec(dev, variant, wt, dtype, rows, cols, block, rows_per_group):
    from examples.llm.kernel_groups import mul_mat_vec_groups
    w = _rand(rows, cols, dtype=dtype)
    x = _rand(cols)
    k = dev.kernel(f"mul_mat_vec_{wt}{variant}", spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": rows_per_group})
    y = filled_buffer(dev, np.full(rows + 8, 7.0, dtype=np.float32))   # sentinels past the last row
    dev.dispatch(k, [filled_buffer(dev, w), filled_buffer(dev, x), y], groups=mul_mat_vec_groups(rows, rows_per_group),
                 push=struct.pack("<II", cols, rows))
    got = read_back(dev, y, rows + 8)
    np.testing.assert_allclose(got[:rows], ref.mul_mat_vec(w, x), rtol=1e-4, atol=1e-4 * np.sqrt(cols))
    assert (got[rows:] == 7.0).all(), "a row past n_rows was written"


@pytest.mark.parametrize("variant", MMV_VARIANTS)
@pytest.mark.parametrize("wt,dtype", [("f32", np.float32), ("f16", np.float16)])
# The same awkward shapes as above: scalar and vector input paths, partial row blocks.
@pytest.mark.parametrize("rows,cols,block,rows_per_group", [
    (1, 1, 32, 1), (67, 300, 128, 2), (5, 1031, 256, 3), (9, 777, 100, 2), (7, 520, 48, 4),
    (3, 4096, 128, 2)])
def test_mul_mat_vec_silu_input(dev, variant, wt, dtype, rows, cols, block, rows_per_group):
    """mul_mat_vec_silu_*: y = W (silu(gate) * up), gate at binding 1, up at binding 3."""
    from examples.llm.kernel_groups import mul_mat_vec_groups
    w = _rand(rows, cols, dtype=dtype)
    gate, up = _rand(cols) * 4, _rand(cols)
    gate[0] = -200.0        # exp(-g) overflows to +inf: silu's limit -0, not NaN
    k = dev.kernel(f"mul_mat_vec_silu_{wt}{variant}",
                   spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": rows_per_group})
    y = filled_buffer(dev, np.full(rows + 8, 7.0, dtype=np.float32))
    dev.dispatch(k, [filled_buffer(dev, w), filled_buffer(dev, gate), y, filled_buffer(dev, up)],
                 groups=mul_mat_vec_groups(rows, rows_per_group), push=struct.pack("<II", cols, rows))
    got = read_back(dev, y, rows + 8)
    want = ref.mul_mat_vec(w, ref.silu_mul(gate, up))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got[:rows], want, rtol=1e-4, atol=1e-4 * np.sqrt(cols))
    assert (got[rows:] == 7.0).all(), "a row past n_rows was written"
    if cols > 1:   # negative control: the plain product of gate and up is not what it gave
        assert not np.allclose(got[:rows], ref.mul_mat_vec(w, gate * up), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("variant", MMV_VARIANTS)
@pytest.mark.parametrize("wt,dtype", [("f32", np.float32), ("f16", np.float16)])
# heads x head_dim rows; pairs per group 1 to 3 (a group's last pairs past the end on
# 5 x 6 = 30 rows with 4 pairs); scalar (cols 33) and vector input paths.
@pytest.mark.parametrize("n_heads,head_dim,cols,pos,block,pairs", [
    (1, 2, 1, 0, 32, 1), (3, 10, 33, 7, 64, 1), (5, 6, 520, 300, 48, 4), (4, 64, 4096, 5, 128, 1),
    (2, 16, 300, 1, 100, 3)])
def test_mul_mat_vec_rope_output(dev, variant, wt, dtype, n_heads, head_dim, cols, pos, block, pairs):
    """mul_mat_vec_rope_*: y = rope(W x) at pos ("normal" mode), ROWS_PER_GROUP pairs of rows."""
    from examples.llm.kernel_groups import mul_mat_vec_groups
    rows = n_heads * head_dim
    w, x = _rand(rows, cols, dtype=dtype), _rand(cols)
    k = dev.kernel(f"mul_mat_vec_rope_{wt}{variant}", spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": pairs})
    y = filled_buffer(dev, np.full(rows + 8, 7.0, dtype=np.float32))
    dev.dispatch(k, [filled_buffer(dev, w), filled_buffer(dev, x), y], groups=mul_mat_vec_groups(rows, 2 * pairs),
                 push=struct.pack("<IIIIf", cols, rows, head_dim, pos, 10000.0))
    got = read_back(dev, y, rows + 8)
    plain = ref.mul_mat_vec(w, x)
    want = ref.rope(plain.reshape(n_heads, head_dim), pos, 10000.0).reshape(rows)
    # The dot products' rounding plus rope's (a few ulps of angles up to `pos` radians).
    scale = np.abs(plain).max()
    np.testing.assert_allclose(got[:rows], want, rtol=1e-4,
                               atol=(1e-4 * np.sqrt(cols) + 2e-6 * max(pos, 1)) * max(scale, 1.0))
    assert (got[rows:] == 7.0).all(), "a row past n_rows was written"
    if pos > 0:   # negative controls: the unrotated product, and the NeoX pairing
        assert not np.allclose(got[:rows], plain, rtol=1e-3, atol=1e-3)
        if head_dim > 2:
            neox = ref.rope(plain.reshape(n_heads, head_dim), pos, 10000.0, neox=True).reshape(rows)
            assert not np.allclose(got[:rows], neox, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("variant", MMV_VARIANTS)
def test_mul_mat_vec_2d_grid(dev, variant):
    """Rows beyond groups.x come from groups.y (flat group id); extra groups do nothing."""
    rows, cols = 50, 33
    w, x = _rand(rows, cols), _rand(cols)
    k = dev.kernel(f"mul_mat_vec_f32{variant}", spec={"BLOCK_SIZE": 32, "ROWS_PER_GROUP": 1})
    y = filled_buffer(dev, np.full(rows + 1, 7.0, dtype=np.float32))    # sentinel past the end
    dev.dispatch(k, [filled_buffer(dev, w), filled_buffer(dev, x), y], groups=(16, 4, 1), push=struct.pack("<II", cols, rows))
    got = read_back(dev, y, rows + 1)
    np.testing.assert_allclose(got[:rows], ref.mul_mat_vec(w, x), rtol=1e-4, atol=1e-4)
    assert got[rows] == 7.0


@pytest.mark.parametrize("variant", MMV_VARIANTS)
@pytest.mark.parametrize("wt,dtype,cols", [("f32", np.float32, 64), ("f16", np.float16, 72),
                                           ("f32", np.float32, 33)])
def test_mul_mat_vec_fewer_groups_than_blocks(dev, variant, wt, dtype, cols):
    """A grid smaller than the blocks of rows: each group loops over several blocks
    (the shared partial sums are reused from block to block)."""
    from examples.llm.kernel_groups import mul_mat_vec_groups
    rows, per_group = 203, 3
    w, x = _rand(rows, cols, dtype=dtype), _rand(cols)
    k = dev.kernel(f"mul_mat_vec_{wt}{variant}", spec={"BLOCK_SIZE": 64, "ROWS_PER_GROUP": per_group})
    y = filled_buffer(dev, np.full(rows + 1, 7.0, dtype=np.float32))
    groups = mul_mat_vec_groups(rows, per_group, max_groups=5)
    assert groups == (5, 1, 1)
    dev.dispatch(k, [filled_buffer(dev, w), filled_buffer(dev, x), y], groups=groups, push=struct.pack("<II", cols, rows))
    got = read_back(dev, y, rows + 1)
    np.testing.assert_allclose(got[:rows], ref.mul_mat_vec(w, x), rtol=1e-4, atol=1e-3)
    assert got[rows] == 7.0


def test_mul_mat_vec_past_65535_groups(dev):
    """More groups than maxComputeWorkGroupCount[0] guarantees: the 2-D grid of
    mul_mat_vec_groups covers every row, with a partial last group."""
    from examples.llm.kernel_groups import mul_mat_vec_groups
    rows, cols, per_group = 65535 * 2 + 3, 8, 2
    groups = mul_mat_vec_groups(rows, per_group)
    assert groups == (65535, 2, 1)
    w, x = _rand(rows, cols, dtype=np.float16), _rand(cols)
    k = dev.kernel("mul_mat_vec_f16", spec={"BLOCK_SIZE": 8, "ROWS_PER_GROUP": per_group})
    y = filled_buffer(dev, np.full(rows + 1, 7.0, dtype=np.float32))
    dev.dispatch(k, [filled_buffer(dev, w), filled_buffer(dev, x), y], groups=groups, push=struct.pack("<II", cols, rows))
    got = read_back(dev, y, rows + 1)
    np.testing.assert_allclose(got[:rows], ref.mul_mat_vec(w, x), rtol=1e-4, atol=1e-3)
    assert got[rows] == 7.0


def test_mul_mat_vec_groups_and_pick():
    from examples.llm import kernel_groups as kg
    assert kg.mul_mat_vec_groups(1) == (1, 1, 1)
    assert kg.mul_mat_vec_groups(4096, 2) == (2048, 1, 1)
    assert kg.mul_mat_vec_groups(4097, 2) == (2049, 1, 1)
    assert kg.mul_mat_vec_groups(65535, 1) == (65535, 1, 1)
    assert kg.mul_mat_vec_groups(65536, 1) == (65535, 2, 1)
    assert kg.mul_mat_vec_groups(4096, 1, max_groups=1056) == (1056, 1, 1)
    assert kg.mul_mat_vec_groups(100, 1, max_groups=1056) == (100, 1, 1)
    with pytest.raises(ValueError):
        kg.mul_mat_vec_groups(0)
    with pytest.raises(ValueError):
        kg.mul_mat_vec_groups(10, 1, max_groups=0)
    nvidia = dict(supported_operations=0xFF, supported_stages=0x7FFFFFFF, subgroup_size=32)
    v = kg.pick_mul_mat_vec("f16", **nvidia)
    assert (v.name, v.block_size, v.spec["ROWS_PER_GROUP"]) == ("mul_mat_vec_f16", 128, 4)
    no_arith = dict(nvidia, supported_operations=0x1 | 0x2)        # basic + vote only
    assert kg.pick_mul_mat_vec("f32", **no_arith).name == "mul_mat_vec_f32_noshuffle"
    no_compute = dict(nvidia, supported_stages=0x10)                # fragment only
    assert kg.pick_mul_mat_vec("f32", **no_compute).name == "mul_mat_vec_f32_noshuffle"
    assert kg.pick_mul_mat_vec("f32", **dict(nvidia, subgroup_size=64), max_invocations=1024).block_size == 128
    assert kg.pick_mul_mat_vec("f32", **dict(nvidia, subgroup_size=48)).block_size == 96
    assert kg.pick_mul_mat_vec("f32", **dict(nvidia, subgroup_size=8), is_cpu=True).block_size == 32
    assert kg.pick_mul_mat_vec("f32", **nvidia, max_invocations=64).block_size == 64
    with pytest.raises(ValueError):
        kg.pick_mul_mat_vec("q4", **nvidia)
    # Rows per group: by weight type unless given, from the table the driver can tune.
    assert {w: kg.pick_mul_mat_vec(w, **nvidia).rows_per_group for w in ("f32", "f16")} \
        == kg.ROWS_PER_GROUP_BY_WEIGHTS
    assert kg.pick_mul_mat_vec("f16", **nvidia, rows_per_group=4).spec["ROWS_PER_GROUP"] == 4
    with pytest.raises(ValueError):
        kg.pick_mul_mat_vec("f16", **nvidia, rows_per_group=0)


def test_pick_mul_mat_vec_follows_the_rows_per_group_table(monkeypatch):
    """Negative control for the default: a changed table entry changes only its type."""
    from examples.llm import kernel_groups as kg
    monkeypatch.setitem(kg.ROWS_PER_GROUP_BY_WEIGHTS, "f16", 3)
    nvidia = dict(supported_operations=0xFF, supported_stages=0x7FFFFFFF, subgroup_size=32)
    assert kg.pick_mul_mat_vec("f16", **nvidia).rows_per_group == 3
    assert kg.pick_mul_mat_vec("f32", **nvidia).rows_per_group == kg.ROWS_PER_GROUP


# -- matmul -------------------------------------------------------------------------


@pytest.mark.parametrize("wt,dtype", [("f32", np.float32), ("f16", np.float16)])
@pytest.mark.parametrize("m,n,kk,tile", [(1, 1, 1, None), (37, 45, 70, None), (64, 64, 64, None),
                                         (3, 100, 17, (8, 4, 8)), (129, 7, 33, (8, 8, 16))])
def test_matmul(dev, wt, dtype, m, n, kk, tile):
    a = _rand(m, kk)
    b = _rand(n, kk, dtype=dtype)
    tn, tm, tk = tile or (16, 16, 16)
    spec = {"TILE_N": tn, "TILE_M": tm, "TILE_K": tk} if tile else None
    k = dev.kernel(f"matmul_{wt}", spec=spec)
    c = empty_buffer(dev, m * n)
    rows_per_thread = 4
    dev.dispatch(k, [filled_buffer(dev, a), filled_buffer(dev, b), c], groups=(_ceil(n, tn), _ceil(m, tm * rows_per_thread), 1),
                 push=struct.pack("<III", m, n, kk))
    np.testing.assert_allclose(read_back(dev, c, m * n).reshape(m, n), ref.matmul(a, b), rtol=1e-4,
                               atol=1e-4 * np.sqrt(kk))


# -- rope ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["norm", "neox"])
@pytest.mark.parametrize("n_heads,head_dim,pos,block", [(1, 2, 0, 32), (3, 10, 7, 32), (8, 64, 300, 128)])
def test_rope(dev, mode, n_heads, head_dim, pos, block):
    x = _rand(n_heads, head_dim)
    k = dev.kernel(f"rope_{mode}", spec={"BLOCK_SIZE": block})
    dst = empty_buffer(dev, x.size)
    pairs = n_heads * head_dim // 2
    dev.dispatch(k, [filled_buffer(dev, x), dst], groups=(_ceil(pairs, block), 1, 1),
                 push=struct.pack("<IIIf", n_heads, head_dim, pos, 10000.0))
    want = ref.rope(x, pos, 10000.0, neox=(mode == "neox"))
    got = read_back(dev, dst, x.size).reshape(x.shape)
    # Device sin/cos of angles up to `pos` radians: a few ulps of the angle.
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-6 * max(pos, 1) + 1e-5)


def test_rope_modes_differ(dev):
    """The two modes pair different elements: a test that mixes them up fails."""
    x = _rand(2, 8)
    assert not np.allclose(ref.rope(x, 3, 10000.0, neox=False), ref.rope(x, 3, 10000.0, neox=True))


# -- attention ------------------------------------------------------------------------


@pytest.mark.parametrize("n_head,n_kv_head,head_dim,n_kv,pad,block", [
    (1, 1, 2, 1, 0, 32),        # one position: softmax of one score is 1
    (4, 2, 16, 37, 4, 32),      # grouped-query, padded cache slots, n_kv past the block
    (4, 4, 6, 300, 0, 128),     # n_kv > 2 blocks, head_dim below the block
    (6, 1, 40, 129, 24, 64),    # multi-query
    (2, 2, 8, 100, 0, 48),      # a workgroup size that is not a power of two
    (32, 32, 128, 5, 0, 128),   # a decode step's shape: head_dim = the block, 16-byte loads
    (2, 1, 64, 70, 0, 32),      # head_dim above the block: invocations loop over it
    (3, 1, 12, 45, 1, 64),      # kv_stride not a multiple of 4: the scalar dot product
    (2, 2, 64, 33, 4, 100),     # two lanes per score, a block they do not divide evenly
    (2, 1, 256, 30, 0, 100),    # eight lanes per score: 12 positions a pass, 4 invocations idle
])
def test_attention(dev, n_head, n_kv_head, head_dim, n_kv, pad, block):
    q = _rand(n_head, head_dim)
    kc = _rand(n_kv, n_kv_head, head_dim)
    vc = _rand(n_kv, n_kv_head, head_dim)
    stride = n_kv_head * head_dim + pad

    def padded(cache):
        out = np.full((n_kv, stride), np.nan, dtype=np.float32)   # padding must never be read
        out[:, :n_kv_head * head_dim] = cache.reshape(n_kv, -1)
        return out

    scale = head_dim ** -0.5
    k = dev.kernel("attention", spec={"BLOCK_SIZE": block, "MAX_CTX": 512})
    out = empty_buffer(dev, q.size)
    dev.dispatch(k, [filled_buffer(dev, q), filled_buffer(dev, padded(kc)), filled_buffer(dev, padded(vc)), out],
                 groups=(n_head, 1, 1),
                 push=struct.pack("<IIIIIf", n_head, n_kv_head, head_dim, n_kv, stride, scale))
    np.testing.assert_allclose(read_back(dev, out, q.size).reshape(q.shape), ref.attention(q, kc, vc, scale),
                               rtol=1e-4, atol=1e-5)


# -- silu_mul, add, argmax --------------------------------------------------------------


@pytest.mark.parametrize("n,block", [(1, 32), (1000, 128), (4099, 256)])
def test_silu_mul(dev, n, block):
    g = _rand(n) * 4
    g[0] = -200.0                     # exp(200) overflows: the product must be -0, not NaN
    u = _rand(n)
    k = dev.kernel("silu_mul", spec={"BLOCK_SIZE": block})
    out = empty_buffer(dev, n)
    dev.dispatch(k, [filled_buffer(dev, g), filled_buffer(dev, u), out], groups=(_ceil(n, block), 1, 1),
                 push=struct.pack("<I", n))
    got = read_back(dev, out, n)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, ref.silu_mul(g, u), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 257, 1001])
def test_add(dev, n):
    a, b = _rand(n), _rand(n)
    out = empty_buffer(dev, n)
    dev.dispatch(dev.kernel("add_f32"), [filled_buffer(dev, a), filled_buffer(dev, b), out], groups=(_ceil(n, 256), 1, 1),
                 push=struct.pack("<I", n))
    np.testing.assert_array_equal(read_back(dev, out, n), ref.add(a, b))


@pytest.mark.parametrize("n,block,where", [(1, 32, 0), (1000, 128, 999), (1000, 128, 3),
                                            (4097, 64, 4096), (300, 256, 150), (1000, 96, 998),
                                            (50, 7, 49), (32000, 128, 31999), (4096, 16, 2051),
                                            (96, 3, 1)])
def test_argmax(dev, n, block, where):
    x = _rand(n)
    x[where] = 10.0
    k = dev.kernel("argmax", spec={"BLOCK_SIZE": block})
    out = empty_buffer(dev, 1, np.uint32)
    dev.dispatch(k, [filled_buffer(dev, x), out], groups=(1, 1, 1), push=struct.pack("<I", n))
    assert int(read_back(dev, out, 1, "uint32")[0]) == ref.argmax(x) == where


def test_argmax_ties_take_the_smallest_index(dev):
    x = np.zeros(700, dtype=np.float32)
    x[[5, 133, 650]] = 2.0            # in different invocations' strides
    x[[6, 7]] = 2.0                   # and in one invocation's 16-byte load
    k = dev.kernel("argmax", spec={"BLOCK_SIZE": 64})
    out = empty_buffer(dev, 1, np.uint32)
    dev.dispatch(k, [filled_buffer(dev, x), out], groups=(1, 1, 1), push=struct.pack("<I", 700))
    assert int(read_back(dev, out, 1, "uint32")[0]) == ref.argmax(x) == 5


# -- 16-bit storage ------------------------------------------------------------------


def test_f16_kernels_need_16bit_storage(dev):
    """The f16 variants declare StorageBuffer16BitAccess and nothing wider."""
    from genspirv.reflect import spirv
    from genspirv.manifest import load_manifest
    manifest = load_manifest(runtime_manifest_path())
    for name in ("get_rows_f16", "mul_mat_vec_f16", "matmul_f16"):
        caps = spirv.capabilities(manifest.read_blob(manifest.entry(name)))
        assert "StorageBuffer16BitAccess" in caps and "Float16" not in caps, (name, caps)
    for name in ("get_rows_f32", "mul_mat_vec_f32", "matmul_f32"):
        assert "StorageBuffer16BitAccess" not in spirv.capabilities(manifest.read_blob(manifest.entry(name)))


def runtime_manifest_path():
    from pathlib import Path
    return Path(__file__).resolve().parents[1] / "manifests" / "shaders.json"


def test_f16_kernel_refused_without_the_feature():
    """A device without 16-bit storage refuses the f16 kernels by name, and only them."""
    with runtime.Device() as fresh:        # its own kernel cache: the check runs on creation
        assert fresh.features["storage_buffer_16bit_access"], "lavapipe and the GPUs we test have it"
        fresh.features["storage_buffer_16bit_access"] = False
        with pytest.raises(DeviceFeatureError, match="mul_mat_vec_f16.*storage_buffer_16bit_access"):
            fresh.kernel("mul_mat_vec_f16", spec={"BLOCK_SIZE": 64})
        fresh.kernel("mul_mat_vec_f32", spec={"BLOCK_SIZE": 64})


# -- the references themselves, against independent formulations (no device) ----------


def test_rope_reference_is_a_complex_rotation():
    x = _rand(3, 8)
    pos, base = 5, 10000.0
    freq = base ** (-np.arange(0, 8, 2) / 8)
    z = (x[:, 0::2] + 1j * x[:, 1::2]) * np.exp(1j * pos * freq)        # adjacent pairs
    want = np.empty_like(x)
    want[:, 0::2], want[:, 1::2] = z.real, z.imag
    np.testing.assert_allclose(ref.rope(x, pos, base), want, rtol=1e-5, atol=1e-5)
    zn = (x[:, :4] + 1j * x[:, 4:]) * np.exp(1j * pos * freq)           # halves (NeoX)
    np.testing.assert_allclose(ref.rope(x, pos, base, neox=True), np.concatenate([zn.real, zn.imag], 1),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ref.rope(x, 0, base), x)


def test_attention_reference_matches_repeated_kv_heads():
    n_head, n_kv_head, d, n_kv = 6, 2, 4, 9
    q, k, v = _rand(n_head, d), _rand(n_kv, n_kv_head, d), _rand(n_kv, n_kv_head, d)
    kk = np.repeat(k, n_head // n_kv_head, axis=1)    # kv head j serves query heads j*g .. j*g+g-1
    vv = np.repeat(v, n_head // n_kv_head, axis=1)
    s = np.einsum("hd,thd->ht", q.astype(np.float64), kk) * 0.5
    p = np.exp(s - s.max(1, keepdims=True))
    want = np.einsum("ht,thd->hd", p / p.sum(1, keepdims=True), vv)
    np.testing.assert_allclose(ref.attention(q, k, v, 0.5), want, rtol=1e-5, atol=1e-6)
    # One cached position: the output is that position's value.
    np.testing.assert_allclose(ref.attention(q, k[:1], v[:1], 0.5), np.repeat(v[0], 3, axis=0), rtol=1e-6)


def test_rms_norm_reference_has_unit_rms():
    y = ref.rms_norm(_rand(4, 50) * 7, np.ones(50, np.float32), 0.0)
    np.testing.assert_allclose(np.sqrt((y.astype(np.float64) ** 2).mean(1)), 1.0, rtol=1e-5)


def test_model_reference_is_seeded_and_teacher_forcing_agrees():
    c = ref.ModelConfig(n_layers=1, dim=32, n_heads=4, n_kv_heads=2, ffn_dim=40, vocab=50, max_ctx=8)
    a = ref.greedy_decode(ref.make_weights(c, 1), (3, 4), 5)
    assert a.tokens == ref.greedy_decode(ref.make_weights(c, 1), (3, 4), 5).tokens
    assert a.tokens != ref.greedy_decode(ref.make_weights(c, 2), (3, 4), 5).tokens
    forced = ref.teacher_forced(ref.make_weights(c, 1), (3, 4), 5, a.tokens)
    np.testing.assert_array_equal(forced.logits, a.logits)
    with pytest.raises(ref.GenspirvError, match="exceed the context"):
        ref.greedy_decode(ref.make_weights(c, 1), (1,), 8)
