"""tools/decode_positions.py: a decode step at a new position misses its plans, the same
step again does not (shown by the device's descriptor-update counter, not by a time)."""

from __future__ import annotations

import importlib.util
import json

import pytest
from faults import REPO_ROOT, vulkan_present

pytest.importorskip("vulkan")
pytestmark = pytest.mark.skipif(not vulkan_present(), reason="no Vulkan device")

spec = importlib.util.spec_from_file_location("decode_positions", REPO_ROOT / "tools" / "decode_positions.py")
decode_positions = importlib.util.module_from_spec(spec)
spec.loader.exec_module(decode_positions)


@pytest.mark.slow
def test_new_positions_write_descriptor_sets_and_the_same_positions_again_do_not(tmp_path):
    out = tmp_path / "positions.json"
    args = ["--layers", "1", "--dim", "64", "--heads", "2", "--kv-heads", "1", "--ffn", "128",
            "--vocab", "96", "--tokens", "3", "--rounds", "2", "--host-profile", "--json", str(out)]
    assert decode_positions.main(args) == 0
    report = json.loads(out.read_text())
    new, again = report["medians"]["new"], report["medians"]["again"]
    # Per step at a new position the token slots are new views (the slot get_rows reads,
    # the logits row and slot argmax binds): each a new plan with a set written (more in
    # an early round, where a slot may not yet hold a set every position shares). The
    # KV caches and the logits are bound whole, so no layer adds one.
    assert new["descriptor_updates_per_token"] >= 2
    assert again["descriptor_updates_per_token"] == 0
    assert new["dispatches_per_token"] == again["dispatches_per_token"] == 3 + 7 * 1
    assert len(report["samples"]["new"]) == 2 and new["descriptors_us_per_dispatch"] > 0
