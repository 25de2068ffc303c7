"""Threads and robust buffer access on a real GPU (skipped unless Vulkan offers a non-CPU device).

Lavapipe runs one dispatch at a time and bounds-checks every storage-buffer
access; a GPU overlaps dispatches and reads what lies past a view. Here:
four threads share one Device with chains big enough to overlap, values and
counters exact (and clean under sync validation where the layer is present);
``robust=True`` never lets a read past the view see the 999.0 beyond it,
while without it the GPU's reads past the view are recorded (the negative
control, where the hardware shows one).

The limit, proof and ownership checks run on any device: tests/test_runtime_trust.py
and tests/test_runtime_sharing.py (run them on the GPU machine too).
"""

from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.runtime import Device  # noqa: E402

RESULTS: dict = {}


def _gpu_present() -> bool:
    try:
        with Device(manifest=rt.MANIFEST) as d:
            return d.properties["type"] != "cpu" or os.environ.get("GENSPIRV_GPU_TESTS_ANY_DEVICE") == "1"
    except Exception:
        return False


pytestmark = pytest.mark.skipif(not _gpu_present(), reason="no GPU Vulkan device")


@pytest.mark.parametrize("validation", [False, True])
def test_four_threads_share_one_gpu_device(validation):
    try:
        dev = Device(manifest=rt.MANIFEST, validation=validation)
    except Exception as exc:
        pytest.skip(f"no validation layer: {exc}")
    with dev:
        before = dev.stats
        done = rt.thread_chains(dev, threads=4, rounds=3, steps=40, n=1 << 20)
        after = dev.stats
    RESULTS[f"threads_validation_{validation}"] = {
        "failures": done["failures"], "dispatches": done["dispatches"],
        "counted": after["dispatches"] - before["dispatches"], "device": dev.properties["name"]}
    assert done["failures"] == []
    assert after["dispatches"] - before["dispatches"] == done["dispatches"] == 4 * 3 * 40
    # (an upload moved to the transfer queue counts in staged_uploads too)
    assert after["staged_uploads"] - before["staged_uploads"] == done["uploads"]
    errors = [f"{m.id}: {m.text[:200]}" for m in dev.validation_messages if m.severity == "error"]
    assert errors == [], "\n".join(errors)


def _reads_past_the_view(robust: bool, n: int = 1 << 16) -> np.ndarray:
    with Device(manifest=rt.MANIFEST, robust=robust) as d:
        assert d.debug.robust_buffer_access == robust
        x, y = d.buffer(4 * n, name="x"), d.buffer(4 * n, name="y")
        d.upload(x, np.full(n, 999.0, np.float32))
        d.upload(x.view(0, 256), np.arange(64, dtype=np.float32))
        d.dispatch("rt_scale", [x.view(0, 256), y], groups=rt.groups_for(n),
                   push=struct.pack("<If", n, 1.0))
        return d.download(y)


def test_robust_buffer_access_on_the_gpu():
    try:
        robust = _reads_past_the_view(True)
    except Exception as exc:        # DeviceFeatureError: the device lacks the feature
        pytest.skip(str(exc))
    plain = _reads_past_the_view(False)
    RESULTS["robust"] = {"robust_999": int(np.count_nonzero(robust == 999.0)),
                         "plain_999": int(np.count_nonzero(plain == 999.0)), "of": int(plain.size)}
    np.testing.assert_array_equal(robust[:64], np.arange(64, dtype=np.float32))
    assert np.count_nonzero(robust == 999.0) == 0, "robust access read past the view"


def teardown_module(module):
    out = os.environ.get("OUT")
    if out and RESULTS:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gpu_trust.json").write_text(json.dumps(RESULTS, indent=2, sort_keys=True))
