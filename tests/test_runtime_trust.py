"""What the runtime proves before it runs a kernel, and what it refuses by name.

- The manifest's reflection is proven against the blob at kernel load: a
  hand-edited entry (a written binding marked read-only, another push size, a
  wrong entry point) is a ``ManifestMismatchError`` naming the field and both
  values. The positive control, under sync validation: with the proof
  bypassed, the read-only edit drops the barrier and the layer reports the
  read-after-write; unedited, the same sequence gets its barrier and is clean.
- After specialisation, a workgroup size of 0 or past
  ``maxComputeWorkGroupSize`` / ``maxComputeWorkGroupInvocations``, and
  shared memory past ``maxComputeSharedMemorySize`` (attention's MAX_CTX), are
  ``WorkgroupLimitError`` naming the kernel, the spec constant, the value and
  the limit; a value at the limit passes.
- A view smaller than a binding's ``min_size`` is a ``BufferRangeError``;
  ``Device(robust=True)`` turns on robust buffer access for debugging.

The limits come from the device, so the tests hold on lavapipe and on a GPU.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.reflect import verify as reflect_verify  # noqa: E402
from genspirv.errors import (BufferRangeError, DeviceFeatureError, GenspirvError,  # noqa: E402
                             ManifestMismatchError, WorkgroupLimitError)
from genspirv.runtime import Device  # noqa: E402
from genspirv.runtime import context as context_module  # noqa: E402
from genspirv.runtime import kernel as kernel_module  # noqa: E402
from genspirv.runtime import trust  # noqa: E402

pytestmark = pytest.mark.skipif(not rt.device_present(), reason="no Vulkan device")

N = 1024


refused = rt.refused


# -- the manifest proven against the blob ----------------------------------------


@pytest.fixture
def edited(tmp_path):
    """A copy of the test kernels' project; ``edited(name, change)`` edits one entry."""
    root = tmp_path / "rt"
    shutil.copytree(rt.MANIFEST.parent.parent, root)
    manifest = root / "manifests" / "shaders.json"

    def edit(name, change):
        doc = json.loads(manifest.read_text())
        entry = next(e for e in doc["shaders"] if e["name"] == name)
        change(entry)
        manifest.write_text(json.dumps(doc, indent=2))
        return manifest

    return edit


def _mark_read_only(entry):
    """rt_fill's only binding is written: say it is only read (masks kept consistent)."""
    b = entry["bindings"][0]
    b["access"], b["written"] = "read", False
    entry["writable_mask"], entry["readable_mask"] = 0, 1


def test_manifest_marking_a_written_binding_read_only_is_refused(edited):
    manifest = edited("rt_fill", _mark_read_only)
    with Device(manifest=manifest, validation=True) as d:
        msg = refused(d, ManifestMismatchError, "kernel rt_fill",
                      "bindings[set=0,binding=0].access: manifest says 'read', the blob 'write'",
                      "writable_mask: manifest says 0, the blob 1",
                      "readable_mask: manifest says 1, the blob 0",
                      call=lambda: d.kernel("rt_fill"))
        assert "genspirv build" in msg
        # The other entries of the same manifest still load and run.
        y = d.buffer(4 * N)
        d.upload(y, np.ones(N, np.float32))
        rt.scale(d, y, y2 := d.buffer(4 * N), N, 3.0)
        np.testing.assert_array_equal(d.download(y2), np.full(N, 3.0, np.float32))
    assert d.validation_messages == []


def _fill_then_scale(d):
    y, z = d.buffer(4 * N), d.buffer(4 * N)
    rt.fill(d, y, N, 1.0)
    rt.scale(d, y, z, N, 2.0)           # another pipeline reads what fill wrote
    out = d.download(z)
    d.synchronize()
    return out


def test_the_proof_is_what_keeps_the_barrier(edited, monkeypatch):
    """Positive control under sync validation: bypass the proof, and the edited
    manifest drops the read-after-write barrier, which the layer reports."""
    with Device(manifest=rt.MANIFEST, validation=True) as d:          # unedited: clean
        np.testing.assert_array_equal(_fill_then_scale(d), np.full(N, 2.0, np.float32))
        assert d.stats["barriers"] >= 1
        barriers = d.stats["barriers"]
    assert d.validation_messages == []
    manifest = edited("rt_fill", _mark_read_only)
    monkeypatch.setattr(kernel_module, "verify_kernel", lambda entry, blob: None)
    with Device(manifest=manifest, validation=True) as d:
        _fill_then_scale(d)
        assert d.stats["barriers"] == barriers - 1, "the edit did not drop the barrier"
    assert any(m.id == "SYNC-HAZARD-READ-AFTER-WRITE" for m in d.validation_messages), \
        f"the layer reported no hazard: {[m.id for m in d.validation_messages]}"


def test_manifest_with_another_push_size_is_refused(edited):
    manifest = edited("rt_fill", lambda e: e.update(push_constant_size=12))
    with Device(manifest=manifest, validation=True) as d:
        refused(d, ManifestMismatchError, "kernel rt_fill",
                "push_constant_size: manifest says 12, the blob 8",
                call=lambda: d.kernel("rt_fill"))
    assert d.validation_messages == []


def test_manifest_naming_a_wrong_entry_point_is_refused(edited):
    manifest = edited("rt_fill", lambda e: e.update(entry_point="mian"))
    with Device(manifest=manifest, validation=True) as d:
        msg = refused(d, ManifestMismatchError, "kernel rt_fill",
                      "entry_point: manifest says 'mian', the blob ['main']",
                      call=lambda: d.kernel("rt_fill"))
        assert "VkError" not in msg
    assert d.validation_messages == []


def test_the_proof_runs_once_per_blob(monkeypatch):
    calls = []
    real = reflect_verify.check_entry
    monkeypatch.setattr(reflect_verify, "check_entry",
                        lambda kernel, info, blob, names=True: (calls.append(kernel), real(kernel, info, blob, names)))
    monkeypatch.setattr(trust, "_proven", set())
    for _ in range(2):
        with Device(manifest=rt.MANIFEST) as d:
            d.kernel("rt_scale")
            d.kernel("rt_spec", spec={"COUNT": 3})
            d.kernel("rt_spec", spec={"COUNT": 4})
    assert sorted(calls) == ["rt_scale", "rt_spec"]


# -- workgroup size and shared memory after specialisation -------------------------


@pytest.fixture(scope="module")
def lib():
    with Device(validation=True) as d:
        yield d
    assert d.validation_messages == []


def test_workgroup_size_of_zero_is_refused(lib):
    refused(lib, WorkgroupLimitError, "kernel argmax", "workgroup size x = 0",
            "spec constant BLOCK_SIZE (spec id 0)", "at least 1",
            call=lambda: lib.kernel("argmax", spec={"BLOCK_SIZE": 0}))


def test_workgroup_size_past_the_device_limit_is_refused(lib):
    most = lib.debug.limits["max_compute_work_group_size"][0]
    refused(lib, WorkgroupLimitError, "kernel argmax", f"workgroup size x = {4 * most}",
            "spec constant BLOCK_SIZE", f"at most {most}", "maxComputeWorkGroupSize",
            call=lambda: lib.kernel("argmax", spec={"BLOCK_SIZE": 4 * most}))
    lib.kernel("argmax", spec={"BLOCK_SIZE": 64})      # within the limits: accepted


def test_workgroup_invocations_past_the_device_limit_are_refused(lib):
    most = lib.debug.limits["max_compute_work_group_invocations"]
    side = 2 * math.isqrt(most)                        # side * side = 4x the limit
    refused(lib, WorkgroupLimitError, "kernel matmul_f32",
            f"{side} x {side} x 1 = {side * side} invocations", "spec constant TILE_N",
            "spec constant TILE_M", f"at most {most}", "maxComputeWorkGroupInvocations",
            call=lambda: lib.kernel("matmul_f32", spec={"TILE_N": side, "TILE_M": side}))


def test_shared_memory_past_the_device_limit_is_refused(lib):
    """attention keeps a head's scores in ``shared float scores[MAX_CTX]``."""
    most = lib.debug.limits["max_compute_shared_memory_size"]
    entry = lib.manifest.entry("attention")
    rest = entry.info.shared_memory - 4 * 1024          # all but scores[1024] at the defaults
    fits = (most - rest) // 4
    refused(lib, WorkgroupLimitError, "kernel attention", f"spec constant MAX_CTX = {fits + 1}",
            f"{rest + 4 * (fits + 1)} bytes of shared memory", f"at most {most}",
            "maxComputeSharedMemorySize",
            call=lambda: lib.kernel("attention", spec={"MAX_CTX": fits + 1}))
    refused(lib, WorkgroupLimitError, "MAX_CTX = 1000000",
            call=lambda: lib.kernel("attention", spec={"MAX_CTX": 1000000}))
    lib.kernel("attention", spec={"MAX_CTX": fits})     # exactly at the limit: accepted


# -- min_size and robust buffer access ------------------------------------------


def test_view_smaller_than_the_blocks_min_size_is_refused():
    """rt_spec writes ``uint v[8]``: its block needs 32 bytes."""
    with Device(manifest=rt.MANIFEST, validation=True) as d:
        small, out = d.buffer(16, name="small"), d.buffer(64, name="out")
        k = d.kernel("rt_spec")
        refused(d, BufferRangeError, "kernel rt_spec, binding Out", "view of 16 bytes of small",
                "at least 32 bytes (min_size)", call=lambda: d.dispatch(k, [small], groups=1))
        refused(d, BufferRangeError, "view of 28 bytes of out", "at least 32 bytes",
                call=lambda: d.dispatch(k, [out.view(0, 28)], groups=1))
        d.dispatch(k, [out.view(0, 32)], groups=1)              # exactly min_size: accepted
        assert int(d.download(out.view(0, 32), dtype="uint32")[7]) == 0xC0FFEE
    assert d.validation_messages == []


def _out_of_range(d, n=256):
    """rt_scale over n items with x bound to 16 floats of a buffer holding 999.0 beyond
    them, and then with y bound to 16 floats of a buffer holding -1.0 beyond them."""
    x, y = d.buffer(4 * N, name="x"), d.buffer(4 * N, name="y")
    d.upload(x, np.full(N, 999.0, np.float32))
    d.upload(x.view(0, 64), np.arange(16, dtype=np.float32))
    d.upload(y, np.full(N, -1.0, np.float32))
    d.dispatch("rt_scale", [x.view(0, 64), y.view(0, 4 * n)], groups=1, push=struct.pack("<If", n, 1.0))
    read = d.download(y)[:n]
    d.upload(y, np.full(N, -1.0, np.float32))
    d.dispatch("rt_scale", [x.view(0, 4 * n), y.view(0, 64)], groups=1, push=struct.pack("<If", n, 1.0))
    written = d.download(y)
    return read, written


def test_robust_buffer_access_option():
    """With robust=True an out-of-range read gives 0 or a value from inside the bound
    range, never the 999.0 lying beyond it, and an out-of-range write is dropped.
    (lavapipe bounds-checks storage buffers even without the feature, so the
    difference from robust=False shows on a GPU only: tests/gpu.)"""
    with Device(manifest=rt.MANIFEST, robust=True, validation=True) as d:
        assert d.debug.robust_buffer_access and d.features["robust_buffer_access"]
        read, written = _out_of_range(d)
    np.testing.assert_array_equal(read[:16], np.arange(16, dtype=np.float32))
    assert set(np.unique(read[16:])) <= set(range(16)), np.unique(read[16:])
    np.testing.assert_array_equal(written[16:], np.full(N - 16, -1.0, np.float32))
    assert d.validation_messages == []
    with Device(manifest=rt.MANIFEST) as plain:
        assert not plain.debug.robust_buffer_access


def test_robust_buffer_access_on_a_device_without_it_is_refused(monkeypatch):
    real = context_module.vk.vkGetPhysicalDeviceFeatures2

    def without_robust(physical, features2):
        real(physical, features2)
        features2.features.robustBufferAccess = 0

    monkeypatch.setattr(context_module.vk, "vkGetPhysicalDeviceFeatures2", without_robust)
    with pytest.raises(DeviceFeatureError, match=r"robust=True needs the robustBufferAccess feature, "
                                                  r"which this device lacks"):
        Device(manifest=rt.MANIFEST, robust=True)
    with Device(manifest=rt.MANIFEST) as d:             # not asked for: no refusal
        assert not d.features["robust_buffer_access"]
