"""The benchmark harness: statistics, ordering, JSON, the synthetic project, the suites' own checks.

No timing is asserted here (speed lives in docs/BENCHMARKS.md); what is
asserted is that the harness records every run, pairs arms in ABBA order,
and that each build step verifies what it claims, so a wrong benchmark fails.
"""

from __future__ import annotations

import io
import json
import shutil
import struct
from pathlib import Path

import pytest

from benchmarks import harness, synth
from benchmarks.build_suite import bench_build, build_plan
from benchmarks.harness import BenchError, BenchOptions, RunLog
from genspirv.errors import ConfigError, GenspirvError


# -- harness ---------------------------------------------------------------------


def test_paired_order_is_abba():
    seq = [arm for r in range(4) for arm in harness.paired_order(r, ("A", "B"))]
    assert "".join(seq) == "ABBAABBA"
    assert harness.paired_order(1, ("a", "b", "c")) == ["c", "b", "a"]


def test_summary_medians_ranges_and_derived():
    rec = RunLog("t")
    for v in (3.0, 1.0, 2.0):
        rec.add("c", "slow", v)
    for v in (1.0, 0.5):
        rec.add("c", "fast", v)
    rec.ratio("c", "slow / fast", "slow", "fast")
    rec.per_unit("c", "slow per item", "slow", 4, "s")
    rec.ratio("c", "missing arm", "slow", "absent")
    summary = {s["arm"]: s for s in harness.summarize(rec.runs)}
    assert (summary["slow"]["median"], summary["slow"]["min"], summary["slow"]["max"]) == (2.0, 1.0, 3.0)
    assert summary["fast"]["median"] == 0.75 and summary["fast"]["n"] == 2
    derived = {d["label"]: d["value"] for d in harness.resolve_derived(harness.summarize(rec.runs), rec.derived)}
    assert derived == {"slow / fast": pytest.approx(2.0 / 0.75), "slow per item": 0.5}
    table = harness.render_table(rec)
    assert "slow / fast" in table and "2.67x" in table and "missing arm" not in table


def test_cpu_time_medians_and_ratios():
    rec = RunLog("t")
    for wall, cpu in ((5.0, 1.0), (9.0, 3.0), (7.0, 2.0)):
        rec.add("c", "a", wall, cpu_s=cpu)
    rec.add("c", "b", 1.0, cpu_s=0.5)
    rec.add("c", "no_cpu", 1.0)
    rec.ratio("c", "a / b, CPU", "a", "b", of="cpu_median")
    rec.ratio("c", "no cpu", "no_cpu", "b", of="cpu_median")
    summary = harness.summarize(rec.runs)
    assert [s.get("cpu_median") for s in summary] == [2.0, 0.5, None]
    derived = harness.resolve_derived(summary, rec.derived)
    assert [(d["label"], d["value"]) for d in derived] == [("a / b, CPU", 4.0)]
    assert "CPU median" in harness.render_table(rec)


def test_format_value_units():
    assert harness.format_value(2.5, "s") == "2.5 s"
    assert harness.format_value(0.0123, "s") == "12.3 ms"
    assert harness.format_value(4e-6, "s") == "4 µs"
    assert harness.format_value(1.5, "x") == "1.50x"
    assert harness.format_value(3, "barriers") == "3 barriers"
    assert harness.format_range({"min": 2.0, "max": 2.0, "n": 3, "unit": "x"}) == "same in every run"
    assert harness.format_range({"min": 1.0, "max": 2.0, "n": 3, "unit": "s"}) == "1 s – 2 s"


def test_json_holds_every_run_and_metadata(tmp_path):
    rec = RunLog("t", device="some device")
    for i in range(5):
        rec.add("case", "arm", 0.1 * (i + 1), repeat=i)
    out = tmp_path / "sub" / "b.json"
    meta = harness.metadata(Path.cwd(), rec.device)
    harness.write_json(out, rec, BenchOptions(suite="t", repeat=5), meta, 1.0)
    doc = json.loads(out.read_text())
    assert doc["schema"] == harness.SCHEMA
    assert [r["value"] for r in doc["runs"]] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    assert doc["summary"][0]["median"] == pytest.approx(0.3)
    for key in ("command", "date", "device", "genspirv_commit", "python", "cores"):
        assert key in doc["meta"]
    assert doc["meta"]["device"] == "some device"
    assert [p.name for p in out.parent.iterdir()] == ["b.json"]   # no temp file left


def test_git_commit_names_this_checkout():
    from genspirv.fsutil import git_commit

    commit = git_commit(Path(__file__).parent)
    if shutil.which("git") is None or commit is None:
        pytest.skip("not a git checkout")
    assert len(commit.split("-")[0]) == 40


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_only_on_a_tty_and_not_when_quiet():
    for stream, quiet, shown in ((io.StringIO(), False, False), (_Tty(), True, False), (_Tty(), False, True)):
        p = harness.BenchProgress(2, quiet=quiet, stream=stream)
        p.step("first")
        p.close()
        assert ("[1/2] first" in stream.getvalue()) is shown


def test_run_command_failure_quotes_output():
    import sys

    with pytest.raises(BenchError, match="exit 3.*boom"):
        harness.run_command([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], what="step")


# -- the synthetic project ---------------------------------------------------------


def test_synthetic_project_has_exact_count_and_header_share(tiny_project, tmp_path):
    from genspirv.project.config import load_config

    root = tiny_project()
    project = synth.generate_project(root, tmp_path / "synth", 11, header_share=0.5, per_source=1)
    names = [v.name for v in project.variants]
    assert len(names) == 11 == len(set(names))
    cfg = load_config(project.root)
    assert sorted(v.name for v in cfg.variants) == sorted(names)
    # 2 sources, 3 variants a copy (add: 2, neg: 1): 3 full copies and the 4th copy's add.
    assert project.source_count == 7
    with_header = {v.source for v in project.variants if v.includes_header}
    assert len(with_header) == 4                       # the 1st, 3rd, 5th and 7th copied source
    assert project.header_dependents == sum(v.includes_header for v in project.variants)
    salts = {dict(v.defines)[synth.SALT_DEFINE] for v in project.variants}
    assert len(salts) == 11                            # one distinct salt per variant
    assert not list((project.root / "glsl").glob("add.comp"))   # originals not built twice


def test_copied_sources_build_about_as_many_variants_as_llama_cpp_sources(tiny_project, tmp_path):
    project = synth.generate_project(tiny_project(), tmp_path / "s", 100)
    assert len(project.variants) == 100
    # 3 base variants from 2 sources: 7 salts each, so add copies build 14 and neg copies 7.
    assert project.source_count == 10
    assert 9 <= len(project.variants) / project.source_count <= 11
    assert "add_f32_c0_s6" in {v.name for v in project.variants}


def test_edit_header_changes_the_header(tiny_project, tmp_path):
    project = synth.generate_project(tiny_project(), tmp_path / "s", 3)
    before = (project.root / project.header).read_text()
    synth.edit_header(project)
    synth.edit_header(project)
    after = (project.root / project.header).read_text()
    assert before != after and "2u" in after


def test_synthetic_project_refusals(tiny_project, tmp_path):
    root = tiny_project()
    with pytest.raises(ConfigError, match="at least 1 variant"):
        synth.generate_project(root, tmp_path / "a", 0)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(ConfigError, match="not empty"):
        synth.generate_project(root, tmp_path / "full", 3)
    bad = tiny_project(files={"glsl/x.comp": "void main() {}\n"}, pyproject="[tool.genspirv]\n")
    with pytest.raises(ConfigError, match="x.comp has no #version"):
        synth.generate_project(bad, tmp_path / "b", 1)


# -- the build suite -----------------------------------------------------------------


def test_default_plan_runs_one_job_only_on_small_sizes():
    plan = build_plan()
    assert {(c.variants, c.jobs) for c in plan} == {(50, 1), (50, 2), (200, 1), (200, 2), (800, 2), (1600, 2)}
    assert all(c.repeats == 1 for c in build_plan(jobs=(1,), repeat=1))
    assert {c.jobs for c in build_plan(sizes=(1600,), jobs=(1, 2))} == {1, 2}


@pytest.mark.slow
def test_build_suite_end_to_end_records_every_arm_in_abba_order(tiny_project):
    root = tiny_project()
    rec = RunLog("build")
    bench_build(BenchOptions(suite="build", sizes=(4,), jobs=(2,), repeat=2, quiet=True, root=root,
                                   per_source=1), rec)
    arms = [(r["repeat"], r["arm"]) for r in rec.runs]
    assert arms == [(0, "cold"), (0, "floor"), (0, "noop"), (0, "edit"), (0, "check"),
                    (1, "floor"), (1, "cold"), (1, "noop"), (1, "edit"), (1, "check")]
    assert all(r["value"] > 0 and r["variants"] == 4 for r in rec.runs)
    project = rec.extra["projects"]["4"]
    assert project["variants"] == 4 and 0 < project["header_dependents"] < 4
    labels = {d["label"] for d in harness.resolve_derived(harness.summarize(rec.runs), rec.derived)}
    assert {"cold / floor", "check / floor", "noop per variant"} <= labels


@pytest.mark.slow
def test_build_suite_catches_an_edit_that_rebuilds_nothing(tiny_project, monkeypatch):
    # Negative control for the suite's own verification: without a real header
    # change the edit step must refuse rather than report a figure.
    monkeypatch.setattr(synth, "edit_header", lambda project: None)
    rec = RunLog("build")
    with pytest.raises(BenchError, match="header edit changed 0 blobs"):
        bench_build(BenchOptions(suite="build", sizes=(2,), jobs=(2,), repeat=1, quiet=True,
                                 root=tiny_project(), per_source=1), rec)


# -- the reflect suite ------------------------------------------------------------------


@pytest.mark.slow
def test_synthetic_reflect_shader_reflects_what_it_declares(tmp_path):
    from benchmarks import reflect_suite
    from genspirv.reflect import reflect

    repo = Path(__file__).resolve().parent.parent
    blob = reflect_suite.compile_synthetic(reflect_suite.find_pinned_glslang(repo), 9, tmp_path)
    info = reflect(blob)
    n = reflect_suite.bindings_for(9)
    assert len(info.bindings) == n + 2
    assert [b.access for b in info.bindings] == ["read"] * n + ["read_write", "write"]
    assert all(b.accessed for b in info.bindings)
    assert info.local_size_spec_ids[0] == 0 and len(info.spec_constants) == 3
    figures = reflect_suite.bench_reflect([blob, blob])
    assert figures["blobs"] == 2 and figures["bytes"] == 2 * len(blob) and figures["seconds"] > 0


# -- the command ---------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["nosuch"], ["build", "--repeat", "0"],
                                  ["build", "--sizes", "10,x"], ["build", "--header-share", "2"]])
def test_bench_usage_errors_exit_2(argv, capsys):
    from benchmarks import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2


def test_bench_error_is_a_genspirv_error():
    assert issubclass(BenchError, GenspirvError) and BenchError.exit_code == 2


# -- the demo suite (lavapipe or whatever GENSPIRV_DEVICE selects) --------------------------


@pytest.mark.slow
def test_demo_suite_checks_values_and_counts_barriers(monkeypatch):
    pytest.importorskip("vulkan")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/tmp")
    from examples.llm import demo, driver
    from benchmarks import runtime_suite

    rec = RunLog("demo")
    try:
        runtime_suite.bench_demo(BenchOptions(suite="demo", quick=True, repeat=2, quiet=True), rec)
    except GenspirvError as exc:
        if "no Vulkan" in str(exc) or "physical device" in str(exc):
            pytest.skip(f"no Vulkan device: {exc}")
        raise
    configs = [r["config"] for r in rec.runs if r["case"] == "wall per token"]
    assert configs == ["smart", "always", "smart+reorder", "smart+reorder", "always", "smart"]
    config = demo.config_from_args(demo.parse_args(runtime_suite.QUICK_DEMO_ARGS.split()))
    for r in rec.runs:
        if r["case"] == "barriers per token":
            policy, reorder = {c[0]: (c[1], c[2]) for c in demo.CONFIGS}[r["config"]]
            assert r["value"] == driver.expected_barriers_per_token(config, policy, reorder)
        if r["case"] == "dispatches per token":
            assert r["value"] == driver.dispatches_per_token(config)


@pytest.mark.slow
def test_demo_suite_passes_rows_per_group_to_the_model(monkeypatch):
    """--demo-args '... --rows-per-group 2' reaches the model (it was parsed and dropped)."""
    pytest.importorskip("vulkan")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/tmp")
    from benchmarks import runtime_suite

    rec = RunLog("demo")
    opts = BenchOptions(suite="demo", repeat=1, quiet=True,
                        demo_args=runtime_suite.QUICK_DEMO_ARGS + " --rows-per-group 2")
    try:
        runtime_suite.bench_demo(opts, rec)
    except GenspirvError as exc:
        if "no Vulkan" in str(exc) or "physical device" in str(exc):
            pytest.skip(f"no Vulkan device: {exc}")
        raise
    assert rec.extra["model"]["rows_per_group"] == 2


def test_runtime_rows_are_every_raw_sample():
    from benchmarks import runtime_suite

    barriers = {"workloads": {"chain": {
        "gpu_ms_median": {"smart": 2.0, "always": 3.0},
        "gpu_ms_samples": {"smart": [1.0, 2.0, 9.0], "always": [3.0, 3.0, 3.0]},
        "barriers_per_dispatch": {"smart": 1.0, "always": 1.0}}}}
    rec = RunLog("runtime")
    runtime_suite.record_barriers(rec, barriers)
    smart = [r["value"] for r in rec.runs if r["case"] == "chain gpu time" and r["arm"] == "smart"]
    assert smart == pytest.approx([1e-3, 2e-3, 9e-3])
    arms = {"step_ms_upload": ("staged", "blocking"), "step_ms_inflight": ("inflight_2", "inflight_1"),
            "step_ms_replay": ("replay", "record")}
    submission = {"host_us_per_dispatch_samples": [5.0, 7.0], "submits_per_step_both_arms": 3.0,
                  **{f"{k}_samples": {a: [1.0, 2.0] for a in v} for k, v in arms.items()}}
    rec = RunLog("runtime")
    runtime_suite.record_submission(rec, submission)
    rows = [(r["case"], r["arm"], r["value"]) for r in rec.runs]
    assert rows[:2] == [("host per dispatch", "record+submit", pytest.approx(5e-6)),
                        ("host per dispatch", "record+submit", pytest.approx(7e-6))]
    assert ("upload step", "blocking", pytest.approx(2e-3)) in rows
    assert ("upload step", "submits per step", 3.0) in rows and len(rows) == 2 + 3 * 2 * 2 + 1
    rec = RunLog("runtime")
    runtime_suite.record_host(rec, {"workloads": {"decode_step": {"cpu_us": [4.0], "wall_us": [6.0]}}})
    assert [(r["case"], r["arm"], r["value"]) for r in rec.runs] == [
        ("host per dispatch, decode_step", "cpu", pytest.approx(4e-6)),
        ("host per dispatch, decode_step", "wall", pytest.approx(6e-6))]


def test_generator_project_lists_the_same_variants_with_a_backend_mix(tiny_project, tmp_path):
    from genspirv.project.config import load_config
    gen = synth.generate_generator_project(tiny_project(), tmp_path / "gen", 40, per_source=1)
    cfg = load_config(gen.root)
    assert cfg.generator == synth.GENERATOR_FILE
    assert sorted(v.name for v in cfg.variants) == sorted(v.name for v in gen.project.variants)
    by = {v.name: v for v in cfg.variants}
    assert {n for n, v in by.items() if v.optimize} == gen.optimized and len(gen.optimized) == 28
    assert {n for n, v in by.items() if v.target_env == "vulkan1.3"} == gen.vulkan13
    assert 1 <= len(gen.vulkan13) <= 3


@pytest.mark.slow
def test_build_generator_suite_quick_records_noops_and_checks_them(tiny_project, tmp_path):
    from benchmarks.build_suite import QUICK_NOOPS, bench_build_generator
    rec = RunLog("build-generator")
    bench_build_generator(BenchOptions(suite="build-generator", sizes=(4,), jobs=(2,), repeat=1, quiet=True,
                                       root=tiny_project(), per_source=1, quick=True, keep=tmp_path / "kept"), rec)
    arms = [r["arm"] for r in rec.runs]
    assert arms == ["cold"] + ["noop", "fresh clone noop", "fresh clone floor"] * QUICK_NOOPS
    assert [d["label"] for d in rec.derived] == ["fresh clone noop / fresh clone floor"]
    assert rec.extra["projects"]["4"]["variants"] == 4
    assert (tmp_path / "kept/pristine-4/shaders/variants.py").is_file()     # --keep kept the project


# -- genspirv against wgpu-py, and the roofline ------------------------------------------


def test_peer_rows_are_every_raw_sample_with_the_ratio():
    from benchmarks import runtime_suite

    samples = {k: {"genspirv": [2.0, 4.0], "wgpu-py": [6.0, 8.0]} for k in ("record", "step", "step_cpu")}
    samples.update({k: {"genspirv": [1.0]} for k in ("record_checks", "step_split", "step_split_cpu", "replay",
                                                     "replay_cpu", "replay_amortised", "replay_amortised_cpu")})
    rec = RunLog("runtime")
    runtime_suite.record_peer(rec, {"samples_us_per_dispatch": samples, "wgpu_skipped": None})
    rows = [(r["case"], r["arm"], r["value"]) for r in rec.runs]
    assert ("peer: host cpu per recorded dispatch", "wgpu-py", pytest.approx(8e-6)) in rows
    assert len(rows) == 3 * 4 + 7
    assert [d["label"] for d in rec.derived] == ["wgpu-py / genspirv"] * 3
    rec = RunLog("runtime")
    only = {k: {"genspirv": v["genspirv"]} for k, v in samples.items()}
    runtime_suite.record_peer(rec, {"samples_us_per_dispatch": only, "wgpu_skipped": "not installed"})
    assert not rec.derived and any("skipped: not installed" in n for n in rec.notes)


@pytest.mark.slow
def test_peer_arms_check_their_results(monkeypatch):
    """Each arm's check compares with numpy (a wrong kernel fails it: negative control),
    and the paired run gives every workload a sample per repeat and arm."""
    pytest.importorskip("vulkan")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/tmp")
    from benchmarks import peer
    from genspirv.runtime import Device

    with Device() as dev:
        batch = dev.batch_size
        arm = peer.GenspirvArm(dev)
        try:
            assert arm.check() is None
            # Recording with the Vulkan calls left out leaves the next batch whole.
            arm.record_checks()
            arm.after_record()
            assert arm.check() is None
            arm.fill_pushes[3] = struct.pack("<If", peer.FILL_N, -1.0)
            assert "fills are wrong" in arm.check()
        finally:
            arm.close()
        assert dev.batch_size == batch                                    # restored
        result = peer.run_peer_bench(dev, reps=2)
    arms = ["genspirv"] + ([] if result["wgpu_skipped"] else ["wgpu-py"])
    for key in ("record", "step", "step_cpu"):
        assert sorted(result["samples_us_per_dispatch"][key]) == sorted(arms)
        assert all(len(v) == 2 and min(v) > 0 for v in result["samples_us_per_dispatch"][key].values())
    assert len(result["samples_us_per_dispatch"]["replay"]["genspirv"]) == 2
    assert len(result["samples_us_per_dispatch"]["replay_amortised_cpu"]["genspirv"]) == 2
    assert len(result["samples_us_per_dispatch"]["step_split"]["genspirv"]) == 2
    # The runtime's own share, less than the whole (the Vulkan calls are the rest).
    checks = result["samples_us_per_dispatch"]["record_checks"]["genspirv"]
    assert len(checks) == 2 and 0 < min(checks)
    if result["wgpu_skipped"] is None:
        wgpu_arm = peer.WgpuArm(result["device"])
        try:
            assert wgpu_arm.check() is None
            wgpu_arm.fill_pushes[5] = struct.pack("<If", peer.FILL_N, -1.0)
            assert "fills are wrong" in wgpu_arm.check()
        finally:
            wgpu_arm.close()


def test_plan_bytes_counts_each_binding_once():
    from types import SimpleNamespace as NS

    from benchmarks import roofline

    plan = [NS(args=(NS(size=4096), NS(size=64), NS(size=16)), touched_bytes=None),
            NS(args=(NS(size=16),), touched_bytes=None)]
    assert roofline.plan_bytes(plan) == 4096 + 64 + 16 + 16
    # A dispatch that reads less than it binds (the attention's KV prefix) counts that.
    plan.append(NS(args=(NS(size=1 << 20),), touched_bytes=300))
    assert roofline.plan_bytes(plan) == 4096 + 64 + 16 + 16 + 300


@pytest.mark.slow
def test_bytes_per_token_counts_the_kv_prefix_not_the_whole_caches_bound():
    """The attention binds whole KV caches and reads their first rows: a model with a
    longer context (larger caches) binds more and reads the same per token."""
    pytest.importorskip("vulkan")
    from benchmarks import roofline
    from examples.llm import model as ref
    from examples.llm.driver import GpuModel
    from genspirv.runtime import Device

    per_token = []
    with Device() as dev:
        for max_ctx in (32, 96):
            config = ref.ModelConfig(n_layers=1, dim=64, n_heads=2, n_kv_heads=1, ffn_dim=128, vocab=96,
                                     max_ctx=max_ctx)
            model = GpuModel(dev, ref.make_weights(config, seed=0))
            per_token.append(roofline.bytes_per_token(model, (1, 2, 3), 8))
            bound = sum(roofline.plan_bytes([d._replace(touched_bytes=None)]) for d in model.token_plan(2, 0))
            assert bound > roofline.plan_bytes(model.token_plan(2, 0))      # the control: caches bound whole
    assert per_token[0] == per_token[1]


def test_the_bandwidth_probe_measures_and_frees_its_buffers(monkeypatch):
    pytest.importorskip("vulkan")
    from benchmarks import roofline
    from genspirv.runtime import Device

    with Device() as dev:
        before = len(dev._buffers)
        got = roofline.measure_bandwidth(dev, nbytes=(1 << 20) + 8, groups=(2, 4), repeats=1)
        assert got["nbytes"] == 1 << 20 and set(got["by_groups"]) == {2, 4}
        assert got["bytes_per_s"] == max(got["by_groups"].values()) > 0
        assert len(dev._buffers) == before


@pytest.mark.slow
def test_a_peer_that_cannot_open_the_device_is_skipped_with_the_reason(monkeypatch):
    pytest.importorskip("vulkan")
    from benchmarks import peer
    from genspirv.runtime import Device

    class Broken:
        def __init__(self, name):
            raise OSError("no adapter today")

    monkeypatch.setattr(peer, "wgpu_unavailable", lambda name: None)
    monkeypatch.setattr(peer, "WgpuArm", Broken)
    with Device() as dev:
        result = peer.run_peer_bench(dev, reps=1)
    assert "OSError: no adapter today" in result["wgpu_skipped"]
    assert list(result["samples_us_per_dispatch"]["record"]) == ["genspirv"]


# -- a real backend's generated tables, and the peer's pipeline ----------------------------


def test_generator_project_outputs_are_one_file_per_source_and_a_header(tiny_project, tmp_path):
    from genspirv.project.config import load_config
    gen = synth.generate_generator_project(tiny_project(), tmp_path / "gen", 12, per_source=2, outputs="arrays")
    cfg = load_config(gen.root)
    stems = sorted({Path(v.source).stem for v in gen.project.variants})
    assert [g.output for g in cfg.generate] == list(gen.outputs)
    assert list(gen.outputs) == [f"src/shaders/{s}.cpp" for s in stems] + ["src/shaders/shaders.hpp"]
    assert {g.template for g in cfg.generate} == {synth.OUTPUTS_TEMPLATE}
    assert {g.blobs.value for g in cfg.generate} == {"arrays"}
    assert "blobs" not in (gen.root / "pyproject.toml").read_text()     # readable by any genspirv
    files = synth.generate_generator_project(tiny_project(), tmp_path / "files", 12, per_source=2, outputs="files")
    assert {g.blobs.value for g in load_config(files.root).generate} == {"files"}
    assert "blob_array" in synth.outputs_template("files") and "blob_array" not in synth.outputs_template("arrays")


@pytest.mark.slow
def test_tables_suite_renders_the_same_bytes_in_every_arm_and_compiles_both_modes(tiny_project, tmp_path):
    from benchmarks.tables_suite import bench_tables, compilers
    if not compilers():
        pytest.skip("needs a C++ compiler")
    rec = RunLog("tables")
    bench_tables(BenchOptions(suite="tables", sizes=(8,), jobs=(2,), repeat=1, quiet=True, root=tiny_project(),
                              per_source=2), rec)
    arms = {r["arm"] for r in rec.runs}
    assert {"cold build", "render, plain formatter", "render, after", "render, after, 2 processes"} <= arms
    for label, _ in compilers():
        assert {f"compile arrays, {label}", f"compile files, {label}"} <= arms
    project = rec.extra["projects"]["8"]
    assert project["outputs"] == project["sources"] + 1 and project["files_text_bytes"] < project["arrays_text_bytes"]


@pytest.mark.slow
@pytest.mark.parametrize("hide_glslc", [False, True])
def test_build_generator_suite_runs_the_peer_and_the_library_floor(tiny_project, tmp_path, monkeypatch, hide_glslc):
    import shutil
    from benchmarks import build_suite
    from benchmarks.build_suite import GLSLC_ARM, LIBRARY_FLOOR_ARM, bench_build_generator
    if hide_glslc:      # a host without glslc: the arm is skipped with a note, the rest runs
        which = shutil.which
        monkeypatch.setattr(build_suite.shutil, "which", lambda name, *a, **k: None if name == "glslc"
                            else which(name, *a, **k))
    rec = RunLog("build-generator")
    bench_build_generator(BenchOptions(suite="build-generator", sizes=(4,), jobs=(2,), repeat=1, quiet=True,
                                       root=tiny_project(), per_source=1), rec)
    arms = [r["arm"] for r in rec.runs]
    assert LIBRARY_FLOOR_ARM in arms and (GLSLC_ARM in arms) == (shutil.which("glslc") is not None)
    labels = {d["label"] for d in rec.derived}
    assert {f"cold / {LIBRARY_FLOOR_ARM}", f"noop / {LIBRARY_FLOOR_ARM}", f"check / {LIBRARY_FLOOR_ARM}"} <= labels
    if shutil.which("glslc") is None:
        assert any("glslc is not installed here" in n for n in rec.notes)
