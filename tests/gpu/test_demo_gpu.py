"""The decode demo on a real GPU, where dispatches overlap and a missing barrier shows.

lavapipe runs dispatches one after another, so only a GPU proves the smart
policy's barriers (and the reorder pass's) are enough. Skipped on a CPU device
(GENSPIRV_GPU_TESTS_ANY_DEVICE=1 runs them there with small shapes, to check the
tests; the "none" positive control is then expected to fail).
Run: python -m pytest -q tests/gpu/test_demo_gpu.py
"""

from __future__ import annotations

import os

import pytest

from examples.llm import compare, demo, driver

from genspirv import runtime  # noqa: E402


_ON_CPU = []


@pytest.fixture(scope="module", autouse=True)
def real_gpu():
    try:
        with runtime.Device() as dev:
            kind = dev.properties.get("type")
    except Exception as exc:
        pytest.skip(f"no Vulkan device: {exc}")
    # GENSPIRV_GPU_TESTS_ANY_DEVICE=1 runs them on a CPU device too, to check the tests themselves.
    if kind == "cpu" and os.environ.get("GENSPIRV_GPU_TESTS_ANY_DEVICE") != "1":
        pytest.skip("needs a GPU: a CPU device runs dispatches serially and hides missing barriers")
    _ON_CPU.append(kind == "cpu")


def _shape(argv: list[str]) -> list[str]:
    """On a CPU device (checking the tests themselves) the same test, with a model it runs in seconds."""
    if _ON_CPU and _ON_CPU[0]:
        return argv + ["--layers", "1", "--dim", "120", "--heads", "6", "--kv-heads", "2", "--ffn", "96",
                       "--vocab", "300", "--tokens", "4"]
    return argv


LARGE = ["--layers", "6", "--dim", "768", "--heads", "12", "--kv-heads", "4", "--ffn", "2048",
         "--vocab", "8000", "--tokens", "48"]


@pytest.mark.parametrize("seed", [0, 5])
def test_demo_token_exact_on_gpu(seed):
    args = demo.parse_args(_shape(LARGE + ["--seed", str(seed)]))
    report = demo.run_demo(args)
    config = demo.config_from_args(args)
    for r in report["runs"]:
        assert r["ok"] and r["token_exact"], (r["config"], r["mismatches"][:5])
        assert r["replayed"]["token_exact"], r["config"]
        assert r["barriers_per_token"] == driver.expected_barriers_per_token(config, r["policy"], r["reorder"])
        assert r["dispatches_per_token"] == driver.dispatches_per_token(config)


def test_demo_f16_weights_long_prompt_on_gpu():
    args = demo.parse_args(_shape(["--layers", "3", "--dim", "520", "--heads", "10", "--kv-heads", "2",
                                   "--ffn", "1000", "--vocab", "5003", "--tokens", "40",
                                   "--prompt", "5,17,99,200,250,3,3,3", "--f16", "--block-size", "256"]))
    report = demo.run_demo(args)
    assert report["ok"], [r["mismatches"][:5] for r in report["runs"]]
    assert all(r["token_exact"] for r in report["runs"])


def test_demo_without_barriers_goes_wrong_on_gpu():
    """Positive control: with the barriers left out (test-only policy "none") the same
    decode must disagree with the reference at least once in three tries, or exactness
    under smart proves nothing about its barriers on this device."""
    from examples.llm import model as ref
    args = demo.parse_args(_shape(LARGE))
    config = demo.config_from_args(args)
    weights = ref.make_weights(config, args.seed)
    want = ref.greedy_decode(weights, args.prompt, args.tokens)
    with runtime.Device(barriers="none") as dev:
        model = driver.GpuModel(dev, weights, block_size=driver.default_block_size(dev))
        verdicts = []
        for _ in range(3):
            run = model.decode(args.prompt, args.tokens, reorder=False)
            forced = ref.teacher_forced(weights, args.prompt, args.tokens, run.tokens)
            verdicts.append(compare.compare(run, forced, args.tol).ok and run.tokens == want.tokens)
            assert run.stats["barriers"] == 0
    assert not all(verdicts), "three decodes without barriers all came out right: the GPU hid the hazards"
