"""The runtime on lavapipe under Khronos sync validation: values, counters, hard checks.

Every device here runs with ``validation=True``; ``clean`` asserts the layer
reported nothing. The positive control proves the layer is listening: the
same fill -> scale sequence with the barrier left out (policy "none") must
be reported as a read-after-write hazard.
"""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.errors import (  # noqa: E402
    AllocationError,
    ArgumentTypeError,
    BindingCountError,
    BlobIntegrityError,
    BufferRangeError,
    DeviceFeatureError,
    DispatchError,
    GenspirvError,
    PushConstantSizeError,
    SpecConstantError,
)

from genspirv.runtime import Device  # noqa: E402
from genspirv.runtime.device import choose_physical_device, default_manifest_path  # noqa: E402
from genspirv.runtime.kernel import pack_spec  # noqa: E402


pytestmark = pytest.mark.skipif(not rt.device_present(), reason="no Vulkan device")


@pytest.fixture
def dev():
    with Device(manifest=rt.MANIFEST, validation=True, barriers="smart") as d:
        yield d
    # Teardown itself must be clean too (messages survive close()).
    assert [m for m in d.validation_messages if m.severity == "error"] == []


def clean(dev):
    msgs = [f"{m.id}: {m.text[:300]}" for m in dev.validation_messages]
    assert msgs == [], "\n".join(msgs)


def counts(dev, *names):
    s = dev.stats
    return tuple(s[n] for n in names)


# -- values against numpy, zero hazards reported -------------------------------


def test_upload_dispatch_download(dev):
    n = 1000
    x, y = rt.f32(np.arange(n)), rt.f32(np.full(n, 3.0))
    a, b, c = dev.buffer(4 * n), dev.buffer(4 * n), dev.buffer(4 * n)
    dev.upload(a, x)
    dev.upload(b, y)
    rt.add(dev, a, b, c, n)
    np.testing.assert_array_equal(dev.download(c), x + y)
    assert counts(dev, "dispatches", "staged_uploads", "blocking_uploads") == (1, 2, 0)
    clean(dev)


def test_raw_chain(dev):
    out, ref = rt.raw_chain(dev, 4096, 21)
    np.testing.assert_array_equal(out, ref)
    # upload -> first scale (RAW), then every scale RAW on its input: 21 barriers,
    # plus the download's copy (RAW) and the host read (RAW).
    assert counts(dev, "dispatches", "barriers", "barriers_skipped") == (21, 23, 0)
    clean(dev)


def test_read_modify_write_chain(dev):
    out, ref = rt.rmw_chain(dev, 2000, 9)
    np.testing.assert_array_equal(out, ref)
    assert counts(dev, "dispatches", "barriers") == (10, 9 + 2)
    clean(dev)


def test_write_after_read_gets_its_own_barrier(dev):
    n = 1024
    x, y = dev.buffer(4 * n), dev.buffer(4 * n)
    rt.fill(dev, x, n, 1.0)
    rt.scale(dev, x, y, n, 2.0)          # RAW on x
    rt.fill(dev, x, n, 5.0)              # WAR on x: the scale must have read it first
    assert counts(dev, "barriers", "barriers_skipped") == (2, 0)
    np.testing.assert_array_equal(dev.download(y), np.full(n, 2.0, np.float32))
    np.testing.assert_array_equal(dev.download(x), np.full(n, 5.0, np.float32))
    clean(dev)


def test_diamond(dev):
    out, ref = rt.diamond(dev, 3000)
    np.testing.assert_array_equal(out, ref)
    # upload x | scale x->a: RAW | scale x->b: skipped | add: RAW | copy: RAW | host: RAW
    assert counts(dev, "barriers", "barriers_skipped") == (4, 1)
    clean(dev)


def test_independent_writers_then_one_consumer(dev):
    n = 512
    a, b, c = dev.buffer(4 * n), dev.buffer(4 * n), dev.buffer(4 * n)
    rt.fill(dev, a, n, 1.5)
    rt.fill(dev, b, n, 2.0)
    rt.add(dev, a, b, c, n)
    np.testing.assert_array_equal(dev.download(c), np.full(n, 3.5, np.float32))
    assert counts(dev, "barriers", "barriers_skipped") == (1 + 2, 1)
    clean(dev)


def test_writers_to_disjoint_views_then_one_reader_of_both(dev):
    n = 256                                   # 1 KiB halves: offsets stay aligned
    y, z = dev.buffer(8 * n), dev.buffer(8 * n)
    rt.fill(dev, y.view(0, 4 * n), n, 1.0)
    rt.fill(dev, y.view(4 * n, 4 * n), n, 2.0)
    rt.scale(dev, y, z, 2 * n, 3.0)
    assert counts(dev, "barriers", "barriers_skipped") == (1, 1)
    np.testing.assert_array_equal(dev.download(z), np.repeat(rt.f32([3.0, 6.0]), n))
    clean(dev)


def test_overlapping_views_of_one_buffer_are_ordered(dev):
    n = 256
    y, z = dev.buffer(12 * n), dev.buffer(8 * n)
    rt.fill(dev, y.view(0, 8 * n), 2 * n, 1.0)
    rt.fill(dev, y.view(4 * n, 8 * n), 2 * n, 2.0)     # overlaps the middle third: WAW
    rt.scale(dev, y.view(0, 8 * n), z, 2 * n, 1.0)     # reads both writes: RAW
    assert counts(dev, "barriers", "barriers_skipped") == (2, 0)
    np.testing.assert_array_equal(dev.download(z), np.repeat(rt.f32([1.0, 2.0]), n))
    clean(dev)


def test_views_of_a_view_and_copies(dev):
    n = 1024
    src, dst = dev.buffer(4 * n), dev.buffer(4 * n)
    x = rt.f32(np.arange(n))
    dev.upload(src, x)
    dev.copy(src.view(0, 2048), dst.view(2048, 2048))
    dev.copy(src.view(2048, 2048), dst.view(0, 2048))
    got = dev.download(dst)
    np.testing.assert_array_equal(got, np.concatenate([x[512:], x[:512]]))
    part = dev.download(dst.view(1024, 2048).view(1024, 1024))
    np.testing.assert_array_equal(part, got[512:768])
    clean(dev)


def test_uniform_buffer_binding(dev):
    n = 100
    params, x, y = dev.buffer(256), dev.buffer(4 * n), dev.buffer(4 * n)
    dev.upload(params, struct.pack("<fI", 4.0, n))
    dev.upload(x, rt.f32(np.arange(n)))
    dev.dispatch("rt_ubo", [params, x, y], groups=2)
    np.testing.assert_array_equal(dev.download(y), rt.f32(np.arange(n) * 4))
    clean(dev)


def test_upload_array_can_be_reused_at_once(dev):
    n = 300
    a, b = dev.buffer(4 * n), dev.buffer(4 * n)
    host = rt.f32(np.full(n, 7.0))
    dev.upload(a, host)
    host[:] = -1.0                            # overwritten before anything was submitted
    dev.upload(b, host)
    assert dev.stats["submits"] == 0
    np.testing.assert_array_equal(dev.download(a), np.full(n, 7.0, np.float32))
    np.testing.assert_array_equal(dev.download(b), np.full(n, -1.0, np.float32))
    clean(dev)


# -- the positive control: a missing barrier is seen by the layer ---------------


def test_positive_control_missing_barrier_is_reported():
    with Device(manifest=rt.MANIFEST, validation=True, barriers="none") as d:
        n = 1024
        y, z = d.buffer(4 * n), d.buffer(4 * n)
        rt.fill(d, y, n, 1.0)
        rt.scale(d, y, z, n, 2.0)           # another pipeline reads what fill wrote
        d.synchronize()
        assert d.stats["barriers"] == 0
    assert any(m.id == "SYNC-HAZARD-READ-AFTER-WRITE" for m in d.validation_messages), \
        "sync validation is not active: the deliberately missing barrier went unreported"


def test_same_sequence_under_smart_is_clean(dev):
    n = 1024
    y, z = dev.buffer(4 * n), dev.buffer(4 * n)
    rt.fill(dev, y, n, 1.0)
    rt.scale(dev, y, z, n, 2.0)
    dev.synchronize()
    assert dev.stats["barriers"] == 1
    clean(dev)


def test_policy_always_and_switching_in_one_process(dev):
    n = 256
    y = dev.buffer(8 * n)
    dev.barrier_policy = "always"
    rt.fill(dev, y.view(0, 4 * n), n, 1.0)
    rt.fill(dev, y.view(4 * n, 4 * n), n, 1.0)
    assert counts(dev, "barriers", "barriers_skipped") == (1, 0)   # nothing pending before the first
    dev.barrier_policy = "smart"
    rt.fill(dev, y.view(0, 4 * n), n, 1.0)             # only the second fill is pending: skipped
    rt.fill(dev, y.view(4 * n, 4 * n), n, 1.0)         # WAW with the second fill
    assert counts(dev, "barriers", "barriers_skipped") == (2, 1)
    with pytest.raises(GenspirvError, match="unknown barrier policy"):
        dev.barrier_policy = "maybe"
    dev.synchronize()
    clean(dev)


def test_barrier_policy_from_environment(monkeypatch):
    monkeypatch.setenv("GENSPIRV_BARRIERS", "always")
    with Device(manifest=rt.MANIFEST) as d:
        assert d.barrier_policy == "always"


# -- kernels: spec constants and pipeline cache ---------------------------------


def test_spec_constants_arrive_with_their_types(dev):
    k = dev.kernel("rt_spec", spec={"COUNT": 11, "FLAG": True, "SCALE": 2.5, "OFFSET": -9,
                                    "BIG": (3 << 32) + 7})
    out = dev.buffer(32)
    dev.dispatch(k, [out], groups=1)
    v = dev.download(out, dtype="uint32")
    assert list(v[1:3]) == [11, 1]
    assert struct.unpack("<f", struct.pack("<I", int(v[3])))[0] == 2.5
    assert int(v[4]) == (-9) & 0xFFFFFFFF and list(v[5:8]) == [7, 3, 0xC0FFEE]
    default = dev.kernel("rt_spec")
    dev.dispatch(default, [out], groups=1)
    assert list(dev.download(out, dtype="uint32")[1:7]) == [7, 0, 0x3FC00000, (-3) & 0xFFFFFFFF, 5, 0]
    clean(dev)


def test_pipelines_are_cached_by_name_and_spec(dev):
    a = dev.kernel("rt_spec", spec={"COUNT": 3})
    assert dev.kernel("rt_spec", spec={"COUNT": 3}).pipeline is a.pipeline
    assert dev.kernel("rt_spec", spec={"COUNT": 4}).pipeline is not a.pipeline


def test_pack_spec_sizes():
    from genspirv.manifest import load_manifest
    e = load_manifest(rt.MANIFEST).entry("rt_spec")
    spec = pack_spec(e, {"FLAG": False, "BIG": 1, "SCALE": 1})
    assert spec.entries == ((2, 0, 4), (3, 4, 4), (5, 8, 8))
    assert spec.data == struct.pack("<IfQ", 0, 1.0, 1)


@pytest.mark.parametrize("spec, message", [
    ({"NOPE": 1}, r"kernel rt_spec: unknown spec constant\(s\) NOPE \(known: BIG, COUNT, FLAG, OFFSET, SCALE\)"),
    ({"FLAG": 1}, r"spec constant FLAG \(bool\) needs True or False, not 1"),
    ({"COUNT": -1}, r"spec constant COUNT \(uint32\): -1 is outside \[0, 4294967295\]"),
    ({"SCALE": "x"}, r"spec constant SCALE \(float32\) needs a number"),
])
def test_bad_spec_constants(dev, spec, message):
    with pytest.raises(SpecConstantError, match=message):
        dev.kernel("rt_spec", spec=spec)


# -- hard checks ----------------------------------------------------------------


def test_binding_count_checked(dev):
    a = dev.buffer(64)
    with pytest.raises(BindingCountError, match=r"kernel rt_add: 2 buffer\(s\) bound, the kernel has 3"):
        dev.dispatch("rt_add", [a, a], groups=1, push=struct.pack("<I", 1))


def test_push_size_checked(dev):
    a = dev.buffer(64)
    with pytest.raises(PushConstantSizeError, match=r"kernel rt_fill: 4 byte\(s\) of push data, .* 8 bytes"):
        dev.dispatch("rt_fill", [a], groups=1, push=struct.pack("<I", 1))
    with pytest.raises(PushConstantSizeError, match=r"0 byte\(s\)"):
        dev.dispatch("rt_fill", [a], groups=1)


def test_groups_checked(dev):
    a = dev.buffer(64)
    push = struct.pack("<If", 1, 0.0)
    with pytest.raises(DispatchError, match="kernel rt_fill: 0 groups along x; a dispatch needs at least 1"):
        dev.dispatch("rt_fill", [a], groups=(0, 1, 1), push=push)
    limit = dev.properties["limits"]["max_compute_work_group_count"][1]
    with pytest.raises(DispatchError, match=f"{limit + 1} groups along y, the device allows at most {limit}"):
        dev.dispatch("rt_fill", [a], groups=(1, limit + 1, 1), push=push)
    with pytest.raises(ArgumentTypeError, match="groups must be"):
        dev.dispatch("rt_fill", [a], groups=(1.5, 1, 1), push=push)
    assert dev.stats["dispatches"] == 0


def test_views_checked(dev):
    a = dev.buffer(1024, name="weights")
    with pytest.raises(BufferRangeError, match=r"weights: view \[512, 1536\) is outside the buffer of 1024 bytes"):
        a.view(512, 1024)
    with pytest.raises(BufferRangeError, match="a view of 0 bytes"):
        a.view(0, 0)
    with pytest.raises(BufferRangeError, match="upload of 2048 bytes into weights"):
        dev.upload(a, np.zeros(512, np.float32))
    align = dev.properties["limits"]["min_storage_buffer_offset_alignment"]
    if align > 1:
        with pytest.raises(BufferRangeError, match=f"view offset 4 of weights is not a multiple of the "
                                                   f"device's {align}-byte"):
            dev.dispatch("rt_fill", [a.view(4, 64)], groups=1, push=struct.pack("<If", 1, 0.0))
    with pytest.raises(BufferRangeError, match="not a whole number of float32 items"):
        dev.download(a.view(0, 6))
    with pytest.raises(BufferRangeError, match="overlaps destination"):
        dev.copy(a.view(0, 512), a.view(256, 512))


def test_allocation_larger_than_the_device_is_a_clear_error(dev):
    with pytest.raises(AllocationError, match=r"\d+ bytes asked, the device allows at most \d+ bytes"):
        dev.buffer(1 << 52)
    with pytest.raises(BufferRangeError, match="positive integer"):
        dev.buffer(0)


def test_blob_integrity_checked_before_the_driver_sees_it(tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(rt.MANIFEST.parent.parent, root, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    blob = root / "spirv" / "rt_add.spv"
    data = bytearray(blob.read_bytes())
    data[40] ^= 0xFF
    blob.write_bytes(bytes(data))
    from genspirv.manifest import load_manifest
    manifest = load_manifest(root / "manifests" / "shaders.json", verify_blobs=False)
    with Device(manifest=manifest) as d:
        with pytest.raises(BlobIntegrityError, match=r"rt_add: blob spirv/rt_add.spv does not match"):
            d.kernel("rt_add")
        d.kernel("rt_fill")       # the others still load


def test_unknown_kernel_names_the_known_ones(dev):
    with pytest.raises(GenspirvError, match="no shader named 'nope'.*rt_add"):
        dev.kernel("nope")


def test_missing_device_feature_is_refused(dev):
    # The pure check is tests/test_device_limits.py; the real path: a device without shaderInt64 refuses rt_spec (it declares Int64).
    dev.features["shader_int64"] = False
    with pytest.raises(DeviceFeatureError, match="kernel rt_spec needs device feature shader_int64 "
                                                 r"\(shaderInt64, for OpCapability Int64\)"):
        dev.kernel("rt_spec")


def test_closed_device_refuses_work_and_close_is_idempotent():
    d = Device(manifest=rt.MANIFEST, validation=True)
    d.close()
    d.close()
    with pytest.raises(GenspirvError, match="the device is closed"):
        d.buffer(16)
    assert d.validation_messages == []


# -- device choice ----------------------------------------------------------------


def test_choose_physical_device():
    import vulkan as vk
    devs = [("llvmpipe", vk.VK_PHYSICAL_DEVICE_TYPE_CPU),
            ("NVIDIA H200", vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU),
            ("Intel UHD", vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU)]
    assert choose_physical_device(devs, None) == 1
    assert choose_physical_device(devs[::2], None) == 1
    assert choose_physical_device(devs, "0") == 0
    assert choose_physical_device(devs, "uhd") == 2
    with pytest.raises(GenspirvError, match="GENSPIRV_DEVICE='amd' matches no device"):
        choose_physical_device(devs, "amd")
    with pytest.raises(GenspirvError, match="GENSPIRV_DEVICE=7: no such device"):
        choose_physical_device(devs, "7")


def test_device_from_environment(monkeypatch):
    monkeypatch.setenv("GENSPIRV_DEVICE", "llvmpipe")
    try:
        d = Device(manifest=rt.MANIFEST)
    except GenspirvError as exc:
        pytest.skip(f"no llvmpipe here: {exc}")
    with d:
        assert "llvmpipe" in d.properties["name"]
        assert d.properties["type"] == "cpu"
    monkeypatch.setenv("GENSPIRV_DEVICE", "no-such-gpu")
    with pytest.raises(GenspirvError, match="matches no device"):
        Device(manifest=rt.MANIFEST)


def test_default_manifest_is_the_shipped_library():
    path = default_manifest_path()
    if not path.is_file():
        pytest.skip("no kernel library built in this checkout")
    with Device() as d:
        names = {e.name for e in d.manifest.shaders}
        assert "add_f32" in names
        n = 256
        a, b, c = d.buffer(4 * n), d.buffer(4 * n), d.buffer(4 * n)
        d.upload(a, np.ones(n, np.float32))
        d.upload(b, np.ones(n, np.float32))
        d.dispatch("add_f32", [a, b, c], groups=1, push=struct.pack("<I", n))
        np.testing.assert_array_equal(d.download(c), np.full(n, 2.0, np.float32))


def test_gpu_timer_measures_something(dev):
    n = 4096
    x, y = dev.buffer(4 * n), dev.buffer(4 * n)
    with dev.gpu_timer() as t:
        for _ in range(4):
            rt.scale(dev, x, y, n, 1.0)
    assert t.ns > 0
    clean(dev)


@pytest.mark.slow
def test_committed_test_kernels_match_their_sources():
    """tests/shaders_rt is a genspirv project of its own: its blobs and manifest are current."""
    import subprocess
    from genspirv.errors import ToolchainError
    from genspirv.toolchain.tools import find_tool
    try:
        find_tool("glslangValidator")
    except ToolchainError as exc:      # a GPU machine that only runs kernels
        pytest.skip(f"no compiler here: {exc}")
    root = rt.MANIFEST.parent.parent
    proc = subprocess.run([sys.executable, "-m", "genspirv", "--root", str(root), "check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_destroying_a_buffer_in_use_waits_for_its_work(dev):
    n = 4096
    y, z = dev.buffer(4 * n), dev.buffer(4 * n)
    rt.fill(dev, y, n, 1.0)
    y.destroy()                                  # recorded, not yet submitted: drained first
    assert dev.stats["submits"] == 1 and y.handle is None
    with pytest.raises(BufferRangeError, match="was destroyed"):
        rt.scale(dev, y, z, n, 1.0)
    z.destroy()                                  # idle: freed at once
    assert dev.stats["submits"] == 1
    clean(dev)


def test_bad_arguments_are_clear_errors(dev, monkeypatch):
    a = dev.buffer(64, name="x")
    with pytest.raises(ArgumentTypeError, match="kernel rt_fill: buffers must be a list in binding order"):
        dev.dispatch("rt_fill", a, groups=1, push=struct.pack("<If", 1, 0.0))
    with pytest.raises(ArgumentTypeError, match="push data must be a dict of named members, bytes or a numpy array"):
        dev.dispatch("rt_fill", [a], groups=1, push=[1, 2])
    with pytest.raises(ArgumentTypeError, match="'nope' is not a numpy dtype"):
        dev.download(a, dtype="nope")
    with pytest.raises(ArgumentTypeError, match="upload takes a numpy array or bytes"):
        dev.upload(a, [1.0, 2.0])
    monkeypatch.setenv("GENSPIRV_BATCH", "lots")
    with pytest.raises(GenspirvError, match="GENSPIRV_BATCH must be a whole number of dispatches, not 'lots'"):
        Device(manifest=rt.MANIFEST)
    with pytest.raises(GenspirvError, match="inflight must be 1..4, not 9"):
        Device(manifest=rt.MANIFEST, inflight=9)
    clean(dev)


def test_subgroup_properties_are_read_only_and_consistent(dev):
    """The device's subgroup properties (what the decode's kernel choice reads)."""
    assert dev.subgroup_size >= 1 and dev.subgroup_size & (dev.subgroup_size - 1) == 0
    assert dev.properties["subgroup"] == {"size": dev.subgroup_size,
                                          "operations": dev.subgroup_operations,
                                          "stages": dev.subgroup_stages}
    if tuple(int(p) for p in dev.properties["api_version"].split(".")[:2]) >= (1, 1):
        assert dev.subgroup_operations & 0x1           # VK_SUBGROUP_FEATURE_BASIC_BIT is required
    with pytest.raises(AttributeError):
        dev.subgroup_size = 64
