"""Runtime faults: each a clear GenspirvError, and the device still good afterwards.

Every refusal is checked three ways: the exception class, the message naming
the kernel / binding / numbers, and that nothing happened — the counters did
not move and a correct dispatch right after still gives exact values. Tampered
blobs are refused before the driver sees them, at load and at
``Device.kernel``. A Device closes cleanly when an exception escapes its
``with`` block: under the Khronos validation layer no object is reported
leaked at vkDestroyDevice, and a deliberately leaked buffer (the positive
control) is.

Runs on whatever Vulkan device is present (lavapipe here); skipped without one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from faults import REPO_ROOT, cli_env, vulkan_present
from genspirv import GenspirvError
from genspirv.errors import (AllocationError, BindingCountError, BlobIntegrityError,
                             BufferRangeError, DispatchError, ManifestError,
                             PushConstantSizeError, SpecConstantError)

vk = pytest.importorskip("vulkan")
from genspirv.runtime import Device  # noqa: E402

N = 1024


pytestmark = pytest.mark.skipif(not vulkan_present(), reason="no Vulkan device")


@pytest.fixture(scope="module")
def dev():
    with Device() as d:
        yield d


@pytest.fixture
def bufs(dev):
    a, b, c = (dev.buffer(N * 4, name=n) for n in "abc")
    dev.upload(a, np.arange(N, dtype=np.float32))
    dev.upload(b, np.full(N, 2.0, np.float32))
    yield a, b, c
    for buf in (a, b, c):
        buf.destroy()


def push_n(n=N) -> bytes:
    return np.array([n], np.uint32).tobytes()


def still_works(dev, a, b, c) -> None:
    """A correct add right after a refusal gives exact values."""
    dev.dispatch(dev.kernel("add_f32"), [a, b, c], groups=(N // 256, 1, 1), push=push_n())
    np.testing.assert_array_equal(dev.download(c), np.arange(N, dtype=np.float32) + 2.0)


def refused(dev, exc_type, *needles, call):
    before = dict(dev.stats)
    with pytest.raises(exc_type) as info:
        call()
    assert isinstance(info.value, GenspirvError)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in: {info.value}"
    assert dict(dev.stats) == before, "a refused call changed the counters"
    return info.value


# -- the hard checks -----------------------------------------------------------


def test_binding_count_mismatch(dev, bufs):
    a, b, c = bufs
    k = dev.kernel("add_f32")
    refused(dev, BindingCountError, "add_f32", "2 buffer(s)", "3 binding(s)",
            call=lambda: dev.dispatch(k, [a, b], groups=(4, 1, 1), push=push_n()))
    refused(dev, BindingCountError, "add_f32", "4 buffer(s)",
            call=lambda: dev.dispatch(k, [a, b, c, a], groups=(4, 1, 1), push=push_n()))
    still_works(dev, a, b, c)


def test_push_size_mismatch(dev, bufs):
    a, b, c = bufs
    k = dev.kernel("add_f32")
    refused(dev, PushConstantSizeError, "add_f32", "8", "4",
            call=lambda: dev.dispatch(k, [a, b, c], groups=(4, 1, 1), push=bytes(8)))
    refused(dev, PushConstantSizeError, "add_f32", "0",
            call=lambda: dev.dispatch(k, [a, b, c], groups=(4, 1, 1), push=None))
    still_works(dev, a, b, c)


@pytest.mark.parametrize("spec, needles", [
    ({"BLOCK_SIZ": 64}, ("rms_norm", "BLOCK_SIZ", "BLOCK_SIZE")),
    ({"BLOCK_SIZE": 1.5}, ("rms_norm", "BLOCK_SIZE", "integer")),
    ({"BLOCK_SIZE": -1}, ("rms_norm", "BLOCK_SIZE", "outside")),
])
def test_spec_constant_mismatch(dev, bufs, spec, needles):
    refused(dev, SpecConstantError, *needles, call=lambda: dev.kernel("rms_norm", spec=spec))
    still_works(dev, *bufs)


def test_spec_constant_on_a_kernel_without_any(dev):
    refused(dev, SpecConstantError, "add_f32", "N", "none", call=lambda: dev.kernel("add_f32", spec={"N": 1}))


@pytest.mark.parametrize("offset, size", [(0, N * 4 + 4), (N * 4, 4), (-4, 8), (8, 0)])
def test_view_out_of_range(dev, bufs, offset, size):
    a, b, c = bufs
    err = refused(dev, BufferRangeError, "a", call=lambda: a.view(offset, size))
    assert str(offset) in str(err) or str(size) in str(err)
    still_works(dev, a, b, c)


def test_sub_view_out_of_its_view(dev, bufs):
    a, b, c = bufs
    v = a.view(1024, 1024)
    refused(dev, BufferRangeError, "a", call=lambda: v.view(512, 1024))


def test_transfers_out_of_range(dev, bufs):
    a, b, c = bufs
    refused(dev, BufferRangeError, "a", str(N * 4 + 4),
            call=lambda: dev.upload(a, np.zeros(N + 1, np.float32)))
    refused(dev, BufferRangeError, "a", call=lambda: dev.download(a.view(0, 6), dtype="float32"))
    still_works(dev, a, b, c)


@pytest.mark.parametrize("groups, needle", [((0, 1, 1), "at least 1"), ((1, 0, 1), "along y"),
                                            ((-3, 1, 1), "-3")])
def test_dispatch_of_zero_groups(dev, bufs, groups, needle):
    a, b, c = bufs
    refused(dev, DispatchError, "add_f32", needle,
            call=lambda: dev.dispatch(dev.kernel("add_f32"), [a, b, c], groups=groups, push=push_n()))
    still_works(dev, a, b, c)


def test_dispatch_beyond_max_compute_work_group_count(dev, bufs):
    a, b, c = bufs
    limit = dev.debug.limits["max_compute_work_group_count"]
    for axis in range(3):
        groups = [1, 1, 1]
        groups[axis] = limit[axis] + 1
        refused(dev, DispatchError, "add_f32", str(limit[axis] + 1), str(limit[axis]),
                call=lambda: dev.dispatch(dev.kernel("add_f32"), [a, b, c], groups=tuple(groups),
                                          push=push_n()))
    still_works(dev, a, b, c)


def test_allocation_larger_than_the_device_memory(dev, bufs):
    total = sum(dev.debug.memory_heap_bytes)
    err = refused(dev, AllocationError, str(total * 2), call=lambda: dev.buffer(total * 2))
    assert "at most" in str(err)
    refused(dev, BufferRangeError, "0", call=lambda: dev.buffer(0))
    still_works(dev, *bufs)


def test_unknown_kernel(dev):
    refused(dev, ManifestError, "no_such_kernel", "add_f32", call=lambda: dev.kernel("no_such_kernel"))


def test_device_refuses_work_after_close():
    d = Device()
    buf = d.buffer(64)
    d.close()
    d.close()                      # twice is fine
    with pytest.raises(GenspirvError, match="closed"):
        d.kernel("add_f32")
    with pytest.raises(GenspirvError, match="closed"):
        d.buffer(64)
    with pytest.raises(GenspirvError, match="closed"):
        d.download(buf)


# -- tampered blobs ------------------------------------------------------------


@pytest.fixture
def library_copy(tmp_path):
    """This repo's manifest and blobs, in a project of their own."""
    root = tmp_path / "lib"
    (root / "manifests").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "manifests" / "shaders.json", root / "manifests" / "shaders.json")
    shutil.copytree(REPO_ROOT / "spirv", root / "spirv")
    (root / "pyproject.toml").write_text("[tool.genspirv]\n")
    return root


def _tamper(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[:-4])
    elif how == "corrupted":
        path.write_bytes(data[:20] + bytes([data[20] ^ 1]) + data[21:])
    else:
        path.write_bytes((path.parent / "copy_f32.spv").read_bytes())


@pytest.mark.parametrize("how", ["truncated", "corrupted", "replaced"])
def test_tampered_blob_refused_when_the_device_loads_the_manifest(library_copy, how):
    _tamper(library_copy / "spirv" / "scale_f32.spv", how)
    with Device(manifest=library_copy / "manifests" / "shaders.json") as d:
        with pytest.raises(BlobIntegrityError, match=r"scale_f32.*spirv/scale_f32\.spv"):
            d.kernel("add_f32")


@pytest.mark.parametrize("how", ["truncated", "corrupted", "replaced"])
def test_tampered_blob_refused_at_device_kernel(library_copy, how):
    """The blob changes after the manifest was loaded and verified: kernel() checks again."""
    with Device(manifest=library_copy / "manifests" / "shaders.json") as d:
        d.kernel("add_f32")                     # manifest loaded, every blob verified
        _tamper(library_copy / "spirv" / "scale_f32.spv", how)
        with pytest.raises(BlobIntegrityError, match=r"scale_f32.*spirv/scale_f32\.spv"):
            d.kernel("scale_f32")
        assert d.stats["dispatches"] == 0


# -- teardown ------------------------------------------------------------------

TEARDOWN = textwrap.dedent("""\
    import json, sys
    import numpy as np
    import vulkan as vk
    from genspirv.runtime import Device

    leak = sys.argv[1] == "leak"
    dev = None
    try:
        with Device(validation=True) as dev:
            a, b, c = (dev.buffer(4096) for _ in range(3))
            dev.upload(a, np.ones(1024, np.float32))
            dev.upload(b, np.ones(1024, np.float32))
            k = dev.kernel("add_f32")
            if leak:   # the positive control: a buffer genspirv knows nothing about
                info = vk.VkBufferCreateInfo(size=256, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                             sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
                leaked = vk.vkCreateBuffer(dev.handle, info, None)
            for _ in range(50):
                dev.dispatch(k, [a, b, c], groups=(4, 1, 1), push=np.array([1024], np.uint32))
            raise RuntimeError("escaping the with block with work in flight")
    except RuntimeError:
        pass
    print(json.dumps({"closed": dev._closed,
                      "messages": [[m.severity, m.id, m.text[:300]] for m in dev.validation_messages]}))
""")


def _validation_layer_present() -> bool:
    return any(p.layerName == "VK_LAYER_KHRONOS_validation"
               for p in vk.vkEnumerateInstanceLayerProperties())


def _teardown(mode: str) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", TEARDOWN, mode], cwd=REPO_ROOT, env=cli_env(),
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # What the layer prints itself (after the messenger is gone) lands in stdout/stderr.
    return report, proc.stdout + proc.stderr


def _leak_reports(report: dict, output: str) -> list[str]:
    found = [m[1] + " " + m[2] for m in report["messages"]
             if "vkDestroyDevice" in m[1] or "vkDestroyInstance" in m[1] or "ObjectLeak" in m[1]
             or "has not been destroyed" in m[2]]
    found += [ln for ln in output.splitlines()
              if "has not been destroyed" in ln or "ObjectLeak" in ln or "VUID-vkDestroy" in ln]
    return found


@pytest.mark.slow
@pytest.mark.skipif(not _validation_layer_present(), reason="no Khronos validation layer")
def test_device_closes_cleanly_when_an_exception_escapes_its_with_block():
    control, control_out = _teardown("leak")
    assert control["closed"]
    assert any("VK_OBJECT_TYPE_BUFFER" in r or "VkBuffer" in r for r in _leak_reports(control, control_out)), \
        f"positive control: the layer did not report a leaked buffer, so it was not watching\n{control}"
    report, output = _teardown("clean")
    assert report["closed"]
    assert _leak_reports(report, output) == []
    errors = [m for m in report["messages"] if m[0] == "error"]
    assert errors == [], errors


@pytest.mark.skipif(not _validation_layer_present(), reason="no Khronos validation layer")
def test_destroying_a_buffer_in_use_waits_for_the_work_that_uses_it():
    with Device(validation=True) as d:
        a, b, c, spare = (d.buffer(4096) for _ in range(4))
        k = d.kernel("add_f32")
        for out in (c, spare):
            d.dispatch(k, [a, b, out], groups=(4, 1, 1), push=push_n(1024))
        d.flush()
        waits = d.stats["fence_waits"]
        c.destroy()
        assert d.stats["fence_waits"] == waits + 1, "destroy() must wait for the batch using the buffer"
        assert [m for m in d.validation_messages if m.severity == "error"] == []
        # Positive control: the same thing behind genspirv's back is reported.
        d.dispatch(k, [a, b, spare], groups=(4, 1, 1), push=push_n(1024))
        d.flush()
        handle, memory = spare.handle, spare.memory
        vk.vkDestroyBuffer(d.handle, handle, None)
        assert any("vkDestroyBuffer" in m.id for m in d.validation_messages), d.validation_messages
        d.synchronize()
        vk.vkFreeMemory(d.handle, memory, None)
        spare.handle = spare.memory = None


@pytest.mark.parametrize("kwargs, env, needle", [
    ({"manifest": "/nonexistent/shaders.json"}, {}, "/nonexistent/shaders.json: cannot read manifest"),
    ({"device": "no-such-gpu"}, {}, "matches no device"),
    ({"device": "97"}, {}, "GENSPIRV_DEVICE=97: no such device"),
    ({"inflight": 9}, {}, "inflight must be 1..4"),
    ({"barriers": "sometimes"}, {}, "unknown barrier policy 'sometimes'"),
    ({}, {"GENSPIRV_BATCH": "lots"}, "GENSPIRV_BATCH must be a whole number"),
    ({}, {"GENSPIRV_INFLIGHT": "x"}, "GENSPIRV_INFLIGHT must be 1..4"),
])
def test_bad_device_settings(monkeypatch, kwargs, env, needle):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(GenspirvError) as info:
        with Device(**kwargs) as d:
            d.kernel("add_f32")
    assert needle in str(info.value)
