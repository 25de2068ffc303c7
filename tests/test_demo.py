"""`genspirv demo`: token-exact greedy decode, structural barrier counts, sync validation.

Barrier figures are asserted against numbers derived from the model's
structure (genspirv.driver.expected_barriers_per_token, and the schedule model),
not against times.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from examples.llm import compare, demo, driver, reorder
from examples.llm import model as ref

runtime = pytest.importorskip("genspirv.runtime")

SMALL = ["--layers", "2", "--dim", "64", "--heads", "4", "--kv-heads", "2", "--ffn", "96",
         "--vocab", "200", "--tokens", "6"]


@pytest.fixture(scope="module")
def lavapipe_ok():
    try:
        with runtime.Device():
            pass
    except Exception as exc:
        pytest.skip(f"no Vulkan device: {exc}")


def test_cli_defaults_match_the_model_defaults():
    d = ref.ModelConfig()
    assert demo.MODEL_DEFAULTS == {k: getattr(d, k) for k in demo.MODEL_DEFAULTS}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_demo_token_exact_with_structural_barrier_counts(lavapipe_ok, seed):
    args = demo.parse_args(SMALL + ["--seed", str(seed)])
    report = demo.run_demo(args)
    assert report["ok"], report
    runs = {r["config"]: r for r in report["runs"]}
    assert set(runs) == {"smart", "always", "smart+reorder"}
    config = demo.config_from_args(args)
    for r in runs.values():
        assert r["token_exact"] and r["ties"] == [] and r["mismatches"] == []
        assert r["tokens"] == report["reference_tokens"]
        assert r["max_rel_err"] <= 1e-5
        assert r["dispatches_per_token"] == driver.dispatches_per_token(config) == 3 + 7 * 2
    # The structure (each norm fused into the products that read it, each residual add
    # into the product before it, each rope applied by its projection, silu_mul into
    # the down projection): 3 + 5 per layer in program order, which is already one step
    # per DAG level, so the same reordered; a barrier before every dispatch under "always".
    assert runs["smart"]["barriers_per_token"] == 3 + 5 * 2
    assert runs["smart+reorder"]["barriers_per_token"] == 3 + 5 * 2
    assert runs["always"]["barriers_per_token"] == 3 + 7 * 2
    assert runs["smart"]["recorded"]["stats"]["barriers_skipped"] > 0
    for r in runs.values():   # the captured-and-replayed decode is checked the same way
        assert r["replayed"]["token_exact"] and r["replayed"]["ok"]
        assert r["replayed"]["stats"]["barriers"] == r["recorded"]["stats"]["barriers"] - 1, \
            "a capture holds every barrier but the entry one, which the replay records"
    # A reference of other weights must not pass: the comparison can fail.
    other = ref.greedy_decode(ref.make_weights(config, seed + 100), args.prompt, args.tokens)
    assert other.tokens != tuple(report["reference_tokens"])


@pytest.mark.slow
def test_default_configuration_barriers_per_token(lavapipe_ok):
    """`genspirv demo` as it runs with no options (replay left out to save time)."""
    report = demo.run_demo(demo.parse_args(["--no-replay"]))
    assert report["ok"]
    got = {r["config"]: (r["dispatches_per_token"], r["barriers_per_token"]) for r in report["runs"]}
    layers = ref.ModelConfig().n_layers
    assert got == {"smart": (17, 13), "always": (17, 17), "smart+reorder": (17, 13)}
    assert got["smart"] == (3 + 7 * layers, 3 + 5 * layers)
    assert all(r["token_exact"] for r in report["runs"])


@pytest.mark.slow
def test_demo_f16_weights_grouped_query_odd_sizes(lavapipe_ok):
    """f16 weights, multi-query attention, sizes that are not multiples of the workgroup."""
    args = demo.parse_args(["--layers", "1", "--dim", "72", "--heads", "6", "--kv-heads", "1",
                            "--ffn", "100", "--vocab", "131", "--tokens", "5", "--prompt", "3,7,11",
                            "--f16", "--block-size", "48", "--reorder", "--no-replay"])
    report = demo.run_demo(args)
    assert report["ok"] and [r["config"] for r in report["runs"]] == ["smart+reorder"]
    r = report["runs"][0]
    assert r["token_exact"] and "replayed" not in r, report
    assert r["barriers_per_token"] == 3 + 5


@pytest.mark.slow
def test_schedule_model_agrees_with_the_formula(lavapipe_ok):
    """The pure tracker model over the real plan gives the closed-form counts."""
    for layers in (1, 3):
        config = ref.ModelConfig(n_layers=layers, dim=32, n_heads=2, n_kv_heads=1, ffn_dim=48,
                                 vocab=64, max_ctx=4)
        with runtime.Device() as dev:
            model = driver.GpuModel(dev, ref.make_weights(config, 0), block_size=32)
            a0 = [d.access() for d in model.token_plan(0, 0)]
            a1 = [d.access() for d in model.token_plan(1, 1)]
        # Steady state: the second token, after the first (its get_rows reads the slot
        # the first token's argmax wrote).
        natural = reorder.count_barriers(a0 + a1) - reorder.count_barriers(a0)
        o0 = reorder.reorder(a0)
        o1 = [len(a0) + i for i in reorder.reorder(a1)]
        reordered = reorder.count_barriers(a0 + a1, o0 + o1) - reorder.count_barriers(a0, o0)
        assert natural == driver.expected_barriers_per_token(config, "smart", False) == 3 + 5 * layers
        assert reordered == driver.expected_barriers_per_token(config, "smart", True) == 3 + 5 * layers
        plan = model.token_plan(1, 1)
        labels = [[plan[i].label for i in g] for g in reorder.levels(a1)]
        assert labels[:2] == [["get_rows"], ["L0.q", "L0.k", "L0.v"]]
        assert labels[2:6] == [["L0.attention"], ["L0.o"], ["L0.gate_up"], ["L0.down"]]
        assert labels[-2:] == [["logits"], ["argmax"]]
        # The dependency DAG's depth, the dependent steps of a token: get_rows, logits,
        # argmax and 5 a layer (q/k/v with the attention norm and the ropes, attention,
        # o + residual, gate and up in one with the ffn norm, down + residual); 4 + 7 a layer with
        # the norms as steps of their own, 4 + 11 before any fusion.
        assert len(labels) == 3 + 5 * layers
        assert not any(word in label for g in labels for label in g
                       for word in ("norm", "rope", "silu_mul", "residual"))
        # No dispatch reads a buffer it writes (the residual stream ping-pongs).
        for d, access in zip(plan, a1):
            assert not any(w.overlaps(r) for w in access.writes for r in access.reads), d.label


@pytest.mark.parametrize("operations, variant", [(None, "mul_mat_vec_f32"), (0, "mul_mat_vec_f32_noshuffle")])
def test_the_matvec_variant_follows_the_subgroup_operations(lavapipe_ok, monkeypatch, operations, variant):
    """The driver reads the device's subgroup operations: without subgroup arithmetic
    it binds the _noshuffle variant, and either decodes token-exact."""
    if operations is not None:
        monkeypatch.setattr(runtime.Device, "subgroup_operations", property(lambda self: operations))
    args = demo.parse_args(SMALL + ["--no-replay", "--reorder"])
    config = demo.config_from_args(args)
    weights = ref.make_weights(config, args.seed)
    with runtime.Device() as dev:
        model = driver.GpuModel(dev, weights, block_size=32)
        assert model.matvec_variant.name == variant == model.k_matvec.name
        for kernel, fusion in ((model.k_matvec_norm, "norm"), (model.k_matvec_rope_norm, "rope_norm"),
                               (model.k_matvec_add, "add"), (model.k_matvec_glu_norm, "glu_norm")):
            assert kernel.name == variant.replace("mul_mat_vec_", f"mul_mat_vec_{fusion}_")
        run = model.decode(args.prompt, args.tokens, reorder=False)
    assert compare.Reference(weights, args.prompt, args.tokens).check(run, args.tol).ok


def test_one_schedule_serves_every_position(lavapipe_ok):
    """The reorder pass runs once per step shape: the order it gives at the first
    position is the one it gives at every other (positions move views, not their
    overlaps), and a decode computes it once for prompt tokens and once for steps."""
    config = ref.ModelConfig(n_layers=2, dim=32, n_heads=2, n_kv_heads=1, ffn_dim=48,
                             vocab=64, max_ctx=12)
    with runtime.Device() as dev:
        model = driver.GpuModel(dev, ref.make_weights(config, 0), block_size=32)
        for step in (None, 0):
            orders = {tuple(reorder.reorder([d.access() for d in model.token_plan(pos, step)]))
                      for pos in range(config.max_ctx - 1)}
            assert len(orders) == 1
        model.decode((1, 2, 3), 5, reorder=True)
        assert model.schedules.misses == 2                 # prompt shape, step shape
        model.decode((1, 2, 3), 5, reorder=True)
        assert model.schedules.misses == 2


def test_every_layer_dispatch_binds_the_same_buffers_at_every_position(lavapipe_ok):
    """The caches and the logits are bound whole (the row in push constants), so a
    step at a new position makes no new plan in any layer: only the token slots
    (get_rows, argmax) move. Negative control: the push constants do move."""
    config = ref.ModelConfig(n_layers=2, dim=32, n_heads=2, n_kv_heads=1, ffn_dim=48,
                             vocab=64, max_ctx=12)
    with runtime.Device() as dev:
        model = driver.GpuModel(dev, ref.make_weights(config, 0), block_size=32)
        plans = [model.token_plan(pos, step) for pos, step in ((3, 0), (7, 4))]
        moved = [a.label for a, b in zip(*plans) if a.args != b.args]
        assert moved == ["get_rows", "argmax"]
        pushed = {a.label for a, b in zip(*plans) if a.push != b.push}
        assert {"L0.k", "L0.v", "L0.attention", "L1.k", "logits"} <= pushed


def test_a_schedule_cache_is_keyed_by_shape():
    """Negative control: a different shape gets its own order, not a stale one."""
    R = runtime.Range
    write_a = runtime.Access("compute", writes=(R("A", 0, 4),))
    read_a = runtime.Access("compute", reads=(R("A", 0, 4),))
    write_b = runtime.Access("compute", writes=(R("B", 0, 4),))
    cache = reorder.ScheduleCache()
    assert cache.order("dependent", lambda: [write_a, read_a, write_b]) == (0, 2, 1)
    assert cache.order("independent", lambda: [write_a, write_b, read_a]) == (0, 1, 2)
    assert cache.order("dependent", lambda: []) == (0, 2, 1) and cache.misses == 2


def _decode_under_validation(policy: str, reorder: bool):
    config = ref.ModelConfig(n_layers=1, dim=32, n_heads=2, n_kv_heads=1, ffn_dim=48, vocab=64,
                             max_ctx=4)
    weights = ref.make_weights(config, 3)
    with runtime.Device(validation=True, barriers=policy) as dev:
        model = driver.GpuModel(dev, weights, block_size=32)
        run = model.decode((1,), 3, reorder=reorder)
        graph, stats = model.capture((1,), 3, reorder=reorder)
        replayed = model.replay(graph, (1,), 3, stats)
        dev.synchronize()
        messages = list(dev.validation_messages)
    assert replayed.tokens == run.tokens or policy == "none"
    return run, ref.greedy_decode(weights, (1,), 3), messages


@pytest.mark.slow
@pytest.mark.parametrize("reorder", [False, True])
def test_sync_validation_clean(lavapipe_ok, reorder):
    run, want, messages = _decode_under_validation("smart", reorder)
    assert [f"{m.id}: {m.text[:200]}" for m in messages if m.severity == "error"] == []
    assert run.tokens == want.tokens


@pytest.mark.slow
def test_sync_validation_positive_control(lavapipe_ok):
    """With the barriers left out the layer must report hazards, or it was not active."""
    _, _, messages = _decode_under_validation("none", False)
    assert any(m.id.startswith("SYNC-HAZARD") for m in messages), \
        "sync validation is not active: the decode without barriers went unreported"


# -- the comparison rule -------------------------------------------------------------


def _fake_run(tokens, logits):
    return driver.RunResult(tokens=tuple(tokens), logits=np.asarray(logits, np.float32), seconds=1.0,
                          gpu_seconds=1.0, stats={})


def test_compare_accepts_a_near_tie_and_refuses_a_clear_miss():
    r = ref.Decode(tokens=(1, 0), logits=np.array([[1.0, 3.0, 3.0 - 1e-6], [5.0, 1.0, 0.0]], np.float32))
    assert compare.compare(_fake_run((1, 0), r.logits), r, 1e-4).ok
    tie = compare.compare(_fake_run((2, 0), r.logits), r, 1e-4)   # 1e-6 apart: a near-tie
    assert tie.ok and tie.ties == (0,)
    miss = compare.compare(_fake_run((1, 1), r.logits), r, 1e-4)  # 4.0 apart: wrong
    assert not miss.ok and "step 1" in miss.mismatches[0]
    off = compare.compare(_fake_run((1, 0), r.logits + np.float32(0.01)), r, 1e-4)
    assert not off.ok and "logits differ" in off.mismatches[0]
    nan = compare.compare(_fake_run((1, 0), np.full((2, 3), np.nan)), r, 1e-4)
    assert not nan.ok
    assert not compare.compare(_fake_run((9, 0), r.logits), r, 1e-4).ok   # token outside the vocabulary


# -- the command line ------------------------------------------------------------------


@pytest.mark.slow
def test_cli_json_and_exit_code(lavapipe_ok, tmp_path, capsys):
    from examples.llm.demo import main
    out = tmp_path / "demo.json"
    code = main(["--layers", "1", "--dim", "32", "--heads", "2", "--kv-heads", "1", "--ffn", "40",
                 "--vocab", "50", "--tokens", "3", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "token-exact" in text and "smart+reorder" in text
    report = json.loads(out.read_text())
    assert report["ok"] and len(report["runs"]) == 3
    run = report["runs"][0]
    assert {"barriers_per_token", "dispatches_per_token", "recorded", "replayed"} <= set(run)
    assert {"tokens_per_s", "gpu_ms_per_token"} <= set(run["recorded"]) & set(run["replayed"])
    assert not list(out.parent.glob(".demo.json.*"))          # no temp file left behind


@pytest.mark.parametrize("argv,message", [
    (["--heads", "3", "--kv-heads", "2", "--dim", "48"], "n_heads 3 must be a multiple of n_kv_heads 2"),
    (["--dim", "30", "--heads", "2"], "head_dim 15"),
    (["--prompt", "999", "--vocab", "100"], "outside the vocabulary"),
    (["--tokens", "4000"], "exceed 3072"),
    (["--block-size", "4096", "--tokens", "1", "--layers", "1"], "invocations per workgroup"),
    (["--rows-per-group", "0"], "--rows-per-group must be at least 1"),
])
def test_cli_refuses_bad_shapes(lavapipe_ok, capsys, argv, message):
    from examples.llm.demo import main
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "python -m examples.llm: error:" in err and message in err and "Traceback" not in err


class _FakeDevice:
    def __init__(self, kind="discrete", **subgroups):
        self.properties = {"type": kind, "limits": {"max_compute_work_group_invocations": 1024}}
        self.__dict__.update(subgroups)


def test_matvec_variant_follows_what_the_device_reports():
    v = driver.matvec_variant(_FakeDevice(), "f32")      # reports nothing: arithmetic assumed
    assert (v.name, v.block_size, v.rows_per_group) == ("mul_mat_vec_f32", 128, 1)
    assert driver.matvec_variant(_FakeDevice("cpu"), "f16").block_size == 32
    basic_only = _FakeDevice(subgroup_operations=0x1, subgroup_stages=0x20, subgroup_size=32)
    assert driver.matvec_variant(basic_only, "f16").name == "mul_mat_vec_f16_noshuffle"
    arithmetic = _FakeDevice(subgroup_operations=0x5, subgroup_stages=0x20, subgroup_size=48)
    assert (driver.matvec_variant(arithmetic, "f32").name, driver.matvec_variant(arithmetic, "f32").block_size) \
        == ("mul_mat_vec_f32", 96)


def test_decode_with_the_noshuffle_variant_and_two_rows_per_group(lavapipe_ok, monkeypatch):
    """The driver's group counts follow the variant's rows per group; the shared-memory
    fallback decodes the same tokens as the reference."""
    from examples.llm import kernel_groups
    monkeypatch.setattr(driver, "matvec_variant", lambda dev, wt, rows_per_group: kernel_groups.MatVecVariant(
        f"mul_mat_vec_{wt}_noshuffle", block_size=32, rows_per_group=2))
    config = ref.ModelConfig(n_layers=2, dim=64, n_heads=4, n_kv_heads=2, ffn_dim=96, vocab=101,
                             max_ctx=5)
    weights = ref.make_weights(config, 5)
    with runtime.Device() as dev:
        model = driver.GpuModel(dev, weights, block_size=32)
        assert model.k_matvec.name == "mul_mat_vec_f32_noshuffle"
        assert [d.groups for d in model.token_plan(0, 0) if d.label == "logits"] == [(51, 1, 1)]
        run = model.decode((1,), 4, reorder=False)
    assert run.tokens == ref.greedy_decode(weights, (1,), 4).tokens


@pytest.mark.slow
def test_rows_per_group_is_a_parameter_of_the_model(lavapipe_ok):
    """GpuModel(rows_per_group=N): every product's groups follow it (pairs of rows for
    the rope variants, pairs of gate and up rows), f16 weights, and the decode stays token-exact."""
    config = ref.ModelConfig(n_layers=2, dim=48, n_heads=4, n_kv_heads=2, ffn_dim=100, vocab=131,
                             max_ctx=5, weights_f16=True)
    weights = ref.make_weights(config, 9)
    with runtime.Device() as dev:
        model = driver.GpuModel(dev, weights, block_size=32, rows_per_group=3)
        assert model.matvec_variant.rows_per_group == 3
        groups = {d.label: d.groups[0] for d in model.token_plan(0, 0)}
        assert (groups["logits"], groups["L1.gate_up"], groups["L0.down"]) == (44, 34, 16)   # ceil(n / 3)
        assert (groups["L0.q"], groups["L0.k"]) == (8, 4)                              # ceil(n / 6)
        run = model.decode((2,), 4, reorder=False)
    assert compare.Reference(weights, (2,), 4).check(run, 1e-4).ok
