"""``mul_mat_vec_glu_norm_*``: a SwiGLU's gate and up in one dispatch, against numpy.

y = silu(gate (rms_norm(x) * g)) * (up (rms_norm(x) * g)), with gate at binding 0,
up at binding 4 and the norm's weight at binding 3; ROWS_PER_GROUP counts pairs
of gate and up rows. Subgroup and shared-memory reductions, f32 and f16 weights,
the scalar and vector input paths, rows not a multiple of the pairs per group, a
grid smaller than the blocks. Negative controls: gate and up swapped, no silu,
no norm, each must give a measurably different result.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from genspirv.kernel_groups import mul_mat_vec_groups
from genspirv.llm import model as ref

runtime = pytest.importorskip("genspirv.runtime")

# `dev`: the library device, from tests/conftest.py

EPS = 1e-5
SENTINEL = 7.0
rng = np.random.default_rng(2718)


def _rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape, dtype=np.float32).astype(dtype)


def _buf(dev, array):
    array = np.ascontiguousarray(array)
    b = dev.buffer(max(array.nbytes, 4))
    dev.upload(b, array)
    return b


def _differs(got, other):
    return not np.allclose(got, other, rtol=1e-3, atol=1e-3)


def _run(dev, name, w_gate, w_up, x, g, rows, cols, block, pairs, max_groups=None):
    k = dev.kernel(name, spec={"BLOCK_SIZE": block, "ROWS_PER_GROUP": pairs})
    y = _buf(dev, np.full(rows + 8, SENTINEL, dtype=np.float32))
    dev.dispatch(k, [_buf(dev, w_gate), _buf(dev, x), y, _buf(dev, g), _buf(dev, w_up)],
                 groups=mul_mat_vec_groups(rows, pairs, max_groups=max_groups),
                 push=struct.pack("<IIf", cols, rows, EPS))
    got = dev.download(y, dtype="float32")[:rows + 8]
    assert (got[rows:] == SENTINEL).all(), "a row past n_rows was written"
    return got[:rows]


# cols: 1 and odd (scalar path), 300 (vector path for f32 only), 520 and 4096 (both);
# rows not a multiple of the pairs per group.
@pytest.mark.parametrize("variant", ["", "_noshuffle"])
@pytest.mark.parametrize("wt,dtype", [("f32", np.float32), ("f16", np.float16)])
@pytest.mark.parametrize("rows,cols,block,pairs", [
    (1, 1, 32, 1), (67, 300, 128, 2), (5, 1031, 256, 3), (7, 520, 48, 4), (3, 4096, 128, 1), (31, 8, 32, 8)])
def test_mul_mat_vec_glu_norm(dev, variant, wt, dtype, rows, cols, block, pairs):
    w_gate, w_up = _rand(rows, cols, dtype=dtype), _rand(rows, cols, dtype=dtype)
    x, g = _rand(cols) * 3, (1.0 + 0.3 * _rand(cols)).astype(np.float32)
    got = _run(dev, f"mul_mat_vec_glu_norm_{wt}{variant}", w_gate, w_up, x, g, rows, cols, block, pairs)
    h = ref.rms_norm(x, g, EPS)
    gate, up = ref.mul_mat_vec(w_gate, h), ref.mul_mat_vec(w_up, h)
    want = ref.silu_mul(gate, up)
    scale = max(float(np.abs(gate).max()) * float(np.abs(up).max()), 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(cols) * scale)
    # Negative controls: gate and up swapped; gate * up without silu; without the norm.
    assert _differs(got, ref.silu_mul(up, gate))
    assert _differs(got, gate * up)
    if cols > 1:
        assert _differs(got, ref.silu_mul(ref.mul_mat_vec(w_gate, x), ref.mul_mat_vec(w_up, x)))


@pytest.mark.parametrize("variant", ["", "_noshuffle"])
def test_mul_mat_vec_glu_norm_fewer_groups_than_blocks(dev, variant):
    """Each of 5 groups loops over blocks of pairs; every block's sum of squares is its own."""
    rows, cols = 203, 72
    w_gate, w_up = _rand(rows, cols, dtype=np.float16), _rand(rows, cols, dtype=np.float16)
    x, g = _rand(cols), (1.0 + 0.3 * _rand(cols)).astype(np.float32)
    got = _run(dev, f"mul_mat_vec_glu_norm_f16{variant}", w_gate, w_up, x, g, rows, cols, 64, 3, max_groups=5)
    h = ref.rms_norm(x, g, EPS)
    np.testing.assert_allclose(got, ref.silu_mul(ref.mul_mat_vec(w_gate, h), ref.mul_mat_vec(w_up, h)),
                               rtol=1e-4, atol=1e-3)


def test_mul_mat_vec_glu_norm_interface(dev):
    """Five bindings (gate, x, y, norm weight, up) and a 12-byte push block."""
    info = dev.kernel("mul_mat_vec_glu_norm_f32").entry.info
    assert (info.binding_count, info.push_constant_size) == (5, 12)
