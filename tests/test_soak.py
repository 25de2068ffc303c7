"""A bounded share of the soak (tools/soak.py): random dependencies, exact values, counters.

The long run (100,000 dispatches, RSS sampled) is `python tools/soak.py`; its
figures are in docs/RELIABILITY.md. Here: 2,000 dispatches under the smart
policy and the same stream under `always`, which must agree with numpy and
differ only in barriers; and a positive control showing the soak's checker
does catch a device buffer that disagrees with the model.
"""

from __future__ import annotations

import importlib.util
import random
import sys

import numpy as np
import pytest
from faults import vulkan_present

from faults import REPO_ROOT

pytest.importorskip("vulkan")
from genspirv.runtime import Device  # noqa: E402

spec = importlib.util.spec_from_file_location("soak", REPO_ROOT / "tools" / "soak.py")
soak = importlib.util.module_from_spec(spec)
sys.modules.setdefault("soak", soak)     # dataclasses look their module up there
spec.loader.exec_module(soak)


pytestmark = pytest.mark.skipif(not vulkan_present(), reason="no Vulkan device")


@pytest.fixture(scope="module")
def smart():
    return soak.run_soak(2000, seed=11, policy="smart", check_every=250)


def test_soak_is_value_exact_and_counts_every_dispatch(smart):
    # run_soak raises SoakMismatch at the first wrong read-back; getting here means all matched.
    assert smart.stats["dispatches"] == 2000
    assert sum(smart.ops.values()) == 2000 and set(smart.ops) == {"add", "scale", "fill", "copy"}
    assert smart.readbacks >= 2000 // 250 * 4
    # Random views of four buffers give both dependent and independent neighbours.
    assert smart.stats["barriers"] > 100
    assert smart.stats["barriers_skipped"] > 100
    assert smart.stats["submits"] >= 2000 // 64


@pytest.mark.slow
def test_always_policy_gives_the_same_values_with_a_barrier_wherever_smart_skipped(smart):
    always = soak.run_soak(2000, seed=11, policy="always", check_every=250)
    assert always.ops == smart.ops and always.readbacks == smart.readbacks
    assert always.stats["barriers_skipped"] == 0
    assert always.stats["barriers"] > smart.stats["barriers"]
    assert always.stats["dispatches"] == smart.stats["dispatches"]


def test_soak_checker_catches_a_device_buffer_that_disagrees():
    """Positive control: change a buffer behind the model's back; the next check must fail."""
    with Device() as dev:
        s = soak.Soak(dev, random.Random(3))
        for _ in range(50):
            s.step()
        s.compare_all(50)
        wrong = s.mirror[2].copy()
        wrong[777] += 1.0
        dev.upload(s.buffers[2], wrong)
        with pytest.raises(soak.SoakMismatch, match=r"buffer 2 .* first at element 777"):
            s.compare_all(51)


def test_soak_command_line(tmp_path):
    out = tmp_path / "soak.json"
    assert soak.main(["--dispatches", "300", "--seed", "5", "--check-every", "100", "--json", str(out)]) == 0
    import json
    result = json.loads(out.read_text())
    assert result["ok"] and result["dispatches"] == 300 and result["stats"]["dispatches"] == 300
    assert np.isfinite(result["seconds"]) and result["rss_kib_at"]["end"] > 0
