"""The element-wise kernels (add, mul, scale, fill, copy; f32 and f16) and matvec_f32
against numpy, on the default Vulkan device.

Sizes are odd on purpose (bounds checks), and some dispatches have fewer groups
than ceil(n / 256) so the grid-stride loop must cover the rest. Push data is
packed here from the layouts the README documents, independently of any helper.
Runs on lavapipe here; on a real GPU with GENSPIRV_DEVICE set to pick it.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from genspirv.reflect import spirv
from genspirv.manifest import load_manifest

runtime = pytest.importorskip("genspirv.runtime")
from helpers import empty_buffer, filled_buffer, read_back  # noqa: E402

TYPES = {"f32": np.float32, "f16": np.float16}
rng = np.random.default_rng(20261202)


# `dev`: the library device, from tests/conftest.py


def groups_for(n, capped):
    full = max(1, -(-n // 256))
    return (min(full, 3) if capped else full, 1, 1)


SIZES = [(1, False), (257, False), (70001, True)]


@pytest.mark.parametrize("ty", TYPES)
@pytest.mark.parametrize("n,capped", SIZES)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_binary(dev, op, ty, n, capped):
    dtype = TYPES[ty]
    a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    c = empty_buffer(dev, n, dtype)
    dev.dispatch(dev.kernel(f"{op}_{ty}"), [filled_buffer(dev, a), filled_buffer(dev, b), c],
                 groups=groups_for(n, capped), push=struct.pack("<I", n))
    # Computed in float32, rounded once on store.
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    want = (a32 + b32 if op == "add" else a32 * b32).astype(dtype)
    np.testing.assert_array_equal(read_back(dev, c, n, dtype), want)


@pytest.mark.parametrize("ty", TYPES)
@pytest.mark.parametrize("n,capped", SIZES)
def test_scale(dev, ty, n, capped):
    dtype = TYPES[ty]
    x = rng.standard_normal(n).astype(dtype)
    y = empty_buffer(dev, n, dtype)
    alpha = np.float32(-1.75)
    dev.dispatch(dev.kernel(f"scale_{ty}"), [filled_buffer(dev, x), y], groups=groups_for(n, capped),
                 push=struct.pack("<If", n, alpha))
    np.testing.assert_array_equal(read_back(dev, y, n, dtype), (alpha * x.astype(np.float32)).astype(dtype))


@pytest.mark.parametrize("ty", TYPES)
@pytest.mark.parametrize("n,capped", SIZES)
def test_fill_writes_exactly_n(dev, ty, n, capped):
    dtype = TYPES[ty]
    sentinel = np.full(n + 5, 9.0, dtype=dtype)
    y = filled_buffer(dev, sentinel)
    dev.dispatch(dev.kernel(f"fill_{ty}"), [y], groups=groups_for(n, capped), push=struct.pack("<If", n, 0.1))
    got = read_back(dev, y, n + 5, dtype)
    np.testing.assert_array_equal(got[:n], np.full(n, np.float32(0.1).astype(dtype)))
    np.testing.assert_array_equal(got[n:], sentinel[n:])      # the bounds check held


@pytest.mark.parametrize("ty", TYPES)
@pytest.mark.parametrize("n,capped", SIZES)
def test_copy(dev, ty, n, capped):
    dtype = TYPES[ty]
    x = rng.standard_normal(n).astype(dtype)
    y = empty_buffer(dev, n, dtype)
    dev.dispatch(dev.kernel(f"copy_{ty}"), [filled_buffer(dev, x), y], groups=groups_for(n, capped),
                 push=struct.pack("<I", n))
    np.testing.assert_array_equal(read_back(dev, y, n, dtype), x)


@pytest.mark.parametrize("rows,cols,block,groups", [
    (1, 1, 256, 1), (37, 513, 256, 37), (64, 100, 7, 64), (130, 1000, 64, 16), (5, 3, 1, 5)])
def test_matvec(dev, rows, cols, block, groups):
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    y = empty_buffer(dev, rows, np.float32)
    k = dev.kernel("matvec_f32", spec={"BLOCK_SIZE": block})
    dev.dispatch(k, [filled_buffer(dev, a), filled_buffer(dev, x), y], groups=(groups, 1, 1),
                 push=struct.pack("<II", rows, cols))
    want = a.astype(np.float64) @ x.astype(np.float64)
    np.testing.assert_allclose(read_back(dev, y, rows, np.float32), want, rtol=1e-4, atol=1e-4 * np.sqrt(cols))


def test_f16_variants_need_only_16bit_storage():
    from pathlib import Path
    manifest = load_manifest(Path(__file__).resolve().parents[1] / "manifests" / "shaders.json")
    for op in ("add", "mul", "scale", "fill", "copy"):
        f16 = spirv.capabilities(manifest.read_blob(manifest.entry(f"{op}_f16")))
        f32 = spirv.capabilities(manifest.read_blob(manifest.entry(f"{op}_f32")))
        assert "StorageBuffer16BitAccess" in f16 and "Float16" not in f16, (op, f16)
        assert "StorageBuffer16BitAccess" not in f32, (op, f32)
