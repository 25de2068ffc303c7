"""What the host hands the runtime arrives as the values it means, or is refused in one line.

An array in the other byte order (numpy ``'>f4'`` on a little-endian host), a typed
memoryview of one, push data given as such an array, and a download asked for in that
order all carry the caller's values: converted with a copy, at no other cost (the
counters equal those of the same work in native order, which is the control). A spec
constant outside its type's range is a ``SpecConstantError`` naming the constant, its
type and the range, never an ``OverflowError``; a float's inf and nan are taken as
given, and ``0.0`` and ``-0.0`` (equal as values, not as bits) each get their own pipeline.

Runs on lavapipe under Khronos sync validation, as tests/test_runtime.py does.
"""

from __future__ import annotations

import dataclasses
import math
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.errors import SpecConstantError  # noqa: E402
from genspirv.manifest import load_manifest  # noqa: E402
from genspirv.reflect import SpecConstant  # noqa: E402
from genspirv.runtime.kernel import pack_spec  # noqa: E402
from test_runtime import clean, dev  # noqa: E402,F401  (dev: the fixture, a Device under sync validation)

pytestmark = pytest.mark.skipif(not rt.device_present(), reason="no Vulkan device")

N = 300                 # not a multiple of the workgroup: the bounds check in the shaders matters
COUNTERS = ("dispatches", "barriers", "barriers_skipped", "submits", "fence_waits", "staged_uploads",
            "blocking_uploads")


def _add(dev, a_host, b_host, push=None):
    """c = a + b on the device from host arrays as given; returns (c as float32, counters)."""
    a, b, c = dev.buffer(4 * N), dev.buffer(4 * N), dev.buffer(4 * N)
    dev.upload(c, np.zeros(N, np.float32))
    before = dict(dev.stats)
    dev.upload(a, a_host)
    dev.upload(b, b_host)
    dev.dispatch("rt_add", [a, b, c], groups=rt.groups_for(N),
                 push=struct.pack("<I", N) if push is None else push)
    out = dev.download(c)
    return out, {k: dev.stats[k] - before[k] for k in COUNTERS}


def test_an_array_in_the_other_byte_order_uploads_its_values(dev):
    x = np.arange(N, dtype=np.float32) * 0.5 - 7
    y = np.full(N, 3.25, np.float32)
    native, native_counts = _add(dev, x, y)                      # control
    np.testing.assert_array_equal(native, x + y)
    swapped, counts = _add(dev, x.astype(">f4"), y.astype(">f4"))
    np.testing.assert_array_equal(swapped, x + y)
    assert counts == native_counts and counts["dispatches"] == 1 and counts["staged_uploads"] == 2
    clean(dev)


def test_a_typed_memoryview_and_a_strided_array_in_the_other_order_upload_their_values(dev):
    x = np.arange(2 * N, dtype=np.float32)
    y = np.linspace(-1, 1, N, dtype=np.float32)
    out, _ = _add(dev, x.astype(">f4")[::2], memoryview(y.astype(">f4")))
    np.testing.assert_array_equal(out, x[::2] + y)
    raw, _ = _add(dev, x[::2].tobytes(), y.tobytes())          # control: plain bytes go as they are
    np.testing.assert_array_equal(raw, out)
    clean(dev)


def test_push_data_as_an_array_in_the_other_byte_order_means_its_values(dev):
    x, y = np.ones(N, np.float32), np.ones(N, np.float32)
    out, counts = _add(dev, x, y, push=np.array([5], ">u4"))    # n = 5: only c[0:5] written
    assert list(out[:6]) == [2, 2, 2, 2, 2, 0] and not out[5:].any()
    native, native_counts = _add(dev, x, y, push=np.array([5], "<u4"))
    np.testing.assert_array_equal(out, native)
    assert counts == native_counts
    clean(dev)


@pytest.mark.parametrize("dtype", [">f4", ">i4", ">u2", ">f8"])
def test_a_download_in_the_other_byte_order_gives_the_values(dev, dtype):
    values = np.arange(-6, 10).astype(dtype)
    buf = dev.buffer(values.nbytes)
    dev.upload(buf, values)
    back = dev.download(buf, dtype=dtype)
    assert back.dtype == np.dtype(dtype) and back.tolist() == values.tolist()
    assert dev.download(buf, dtype=np.dtype(dtype).newbyteorder("<")).tolist() == values.tolist()   # control
    clean(dev)


def test_a_record_of_fields_in_both_orders_goes_little_endian(dev):
    kind = np.dtype([("a", ">i4"), ("b", "<f4"), ("c", ">u2"), ("pad", "u1", 2)])
    rows = np.array([(-(i + 1), i / 4, 3 * i, (i, 0)) for i in range(8)], dtype=kind)
    buf = dev.buffer(rows.nbytes)
    dev.upload(buf, rows)
    little = rows.astype(kind.newbyteorder("<"))
    assert dev.download(buf, dtype="uint8").tobytes() == little.tobytes()
    back = dev.download(buf, dtype=kind)
    assert back.dtype == kind and bool((back == rows).all())
    clean(dev)


# -- spec constants within their types' ranges ------------------------------------------------


def _entry(*types: str):
    """rt_spec's entry with constants 10, 11, ... of ``types`` added (its blob is not needed to pack)."""
    entry = load_manifest(rt.MANIFEST).entry("rt_spec")
    extra = tuple(SpecConstant(id=10 + i, name=f"C_{t.upper()}", type=t, default=0) for i, t in enumerate(types))
    return dataclasses.replace(entry, info=dataclasses.replace(entry.info,
                                                               spec_constants=entry.info.spec_constants + extra))


F32_MAX, F16_MAX, F64_MAX = 3.4028234663852886e38, 65504.0, sys.float_info.max


OUT_OF_RANGE = [
    ("SCALE", 1e39, f"spec constant SCALE (float32): 1e+39 is outside the float32 range [{-F32_MAX!r}, {F32_MAX!r}]"),
    ("SCALE", -3.5e38, "spec constant SCALE (float32): -3.5e+38 is outside the float32 range"),
    ("SCALE", 2 ** 1024, "spec constant SCALE (float32): 17976931348623159077... is outside the float32 range"),
    ("C_FLOAT16", 65520.0, f"spec constant C_FLOAT16 (float16): 65520.0 is outside the float16 range "
                           f"[{-F16_MAX!r}, {F16_MAX!r}]"),
    ("C_FLOAT64", 10 ** 400, f"spec constant C_FLOAT64 (float64): 10000000000000000000... is outside the float64 "
                             f"range [{-F64_MAX!r}, {F64_MAX!r}]"),
    ("COUNT", 2 ** 32, "spec constant COUNT (uint32): 4294967296 is outside [0, 4294967295]"),
    ("COUNT", -1, "spec constant COUNT (uint32): -1 is outside [0, 4294967295]"),
    ("OFFSET", 2 ** 31, "spec constant OFFSET (int32): 2147483648 is outside [-2147483648, 2147483647]"),
    ("OFFSET", -2 ** 31 - 1, "spec constant OFFSET (int32): -2147483649 is outside"),
    ("BIG", 2 ** 64, "spec constant BIG (uint64): 18446744073709551616 is outside [0, 18446744073709551615]"),
    ("C_INT64", 2 ** 63, "spec constant C_INT64 (int64): 9223372036854775808 is outside"),
    ("C_UINT16", np.uint32(70000), "spec constant C_UINT16 (uint16): 70000 is outside [0, 65535]"),
    ("FLAG", 2, "spec constant FLAG (bool) needs True or False, not 2"),
]
EDGES = [
    ("SCALE", F32_MAX, struct.pack("<f", F32_MAX)),                     # the edge itself
    ("SCALE", 3.4028235e38, struct.pack("<f", F32_MAX)),               # rounds down to it: taken
    ("SCALE", math.inf, struct.pack("<f", math.inf)),
    ("C_FLOAT16", -65504.0, struct.pack("<e", -65504.0)),
    ("C_FLOAT64", -math.inf, struct.pack("<d", -math.inf)),
    ("COUNT", np.uint32(4294967295), struct.pack("<I", 4294967295)),    # a numpy integer is an integer
    ("OFFSET", np.int64(-2 ** 31), struct.pack("<i", -2 ** 31)),
    ("SCALE", np.float32(0.5), struct.pack("<f", 0.5)),
]


def _ids(rows) -> list[str]:
    return [f"{name}={value!r:.14}" for name, value, _ in rows]


@pytest.mark.parametrize("name, value, says", OUT_OF_RANGE, ids=_ids(OUT_OF_RANGE))
def test_a_spec_constant_outside_its_range_names_it_its_type_and_the_range(name, value, says):
    with pytest.raises(SpecConstantError) as info:
        pack_spec(_entry("float16", "float64", "int64", "uint16"), {name: value})
    assert str(info.value).startswith(f"kernel rt_spec: {says}"), info.value


@pytest.mark.parametrize("name, value, packed", EDGES, ids=_ids(EDGES))
def test_the_values_at_the_edges_of_each_range_are_taken(name, value, packed):
    spec = pack_spec(_entry("float16", "float64"), {name: value})
    assert spec.data == packed


def _scale_bits(dev, out, spec_value: str):
    """The bits SCALE arrives with for ``float(spec_value)``, and the pipeline that ran."""
    k = dev.kernel("rt_spec", spec={"SCALE": float(spec_value)})   # float("nan"): a new object, and nan != nan
    dev.dispatch(k, [out], groups=1)
    return int(dev.download(out, dtype="uint32")[3]), k.pipeline


def test_inf_nan_and_negative_zero_arrive_as_given(dev):
    out = dev.buffer(32)
    bits = {v: _scale_bits(dev, out, v)[0] for v in ("0.0", "-0.0", "inf", "-inf", "nan")}
    assert bits == {"0.0": 0, "-0.0": 0x80000000, "inf": 0x7F800000, "-inf": 0xFF800000, "nan": 0x7FC00000}
    assert dev.stats["dispatches"] == 5
    clean(dev)


def test_pipelines_are_cached_by_the_bits_of_the_spec_values(dev):
    """0.0 == -0.0 as values, so a cache by value ran -0.0 with 0.0's pipeline; nan != nan, so it
    made a pipeline per call. By their bits: two for the zeros, one for every nan."""
    out = dev.buffer(32)
    (zero, zero_pipe), (negative, negative_pipe) = _scale_bits(dev, out, "0.0"), _scale_bits(dev, out, "-0.0")
    assert (zero, negative) == (0, 0x80000000) and zero_pipe is not negative_pipe
    nans = [_scale_bits(dev, out, "nan")[1] for _ in range(3)]
    assert nans[0] is nans[1] is nans[2]
    assert dev.kernel("rt_spec", spec={"SCALE": 2}).pipeline is dev.kernel("rt_spec", spec={"SCALE": 2.0}).pipeline
    clean(dev)


def test_a_numpy_integer_spec_value_arrives(dev):
    out = dev.buffer(32)
    k = dev.kernel("rt_spec", spec={"COUNT": np.uint32(11), "BIG": np.uint64((3 << 32) + 7)})
    assert dev.kernel("rt_spec", spec={"COUNT": 11, "BIG": (3 << 32) + 7}).pipeline is k.pipeline
    dev.dispatch(k, [out], groups=1)
    v = dev.download(out, dtype="uint32")
    assert int(v[1]) == 11 and list(v[5:7]) == [7, 3]
    clean(dev)


@pytest.mark.parametrize("spec", [{1: 11}, {"COUNT": 11, 5: 1}, {None: 1}], ids=["an id", "an id beside a name", "None"])
def test_spec_keyed_by_anything_but_names_is_one_line(spec):
    """Was: TypeError: sequence item 0: expected str instance, int found (from the message's own join)."""
    from genspirv.errors import ArgumentTypeError
    with pytest.raises(ArgumentTypeError, match=r"kernel rt_spec: spec is keyed by spec constant name, not "
                                                r"(int \d|None) \(known: BIG, COUNT, FLAG, OFFSET, SCALE\)"):
        pack_spec(_entry(), spec)
    assert pack_spec(_entry(), {"COUNT": 11}).data == struct.pack("<I", 11)      # control
