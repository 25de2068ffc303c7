"""The ``kernel`` benchmark suite in its quick form, on the default device: it runs,
its probes and every swept arm give positive GB/s, and the peak it reports is the
best probe median (what the shares of peak divide by)."""

from __future__ import annotations

import statistics

import pytest

pytest.importorskip("genspirv.runtime")


@pytest.mark.slow
def test_kernel_suite_quick():
    from benchmarks import kernel_suite
    from benchmarks.harness import BenchOptions, RunLog, resolve_derived, summarize
    rec = RunLog("kernel")
    kernel_suite.bench_kernel(BenchOptions(suite="kernel", quick=True, repeat=2, quiet=True), rec)
    cases = {r["case"] for r in rec.runs}
    assert "bandwidth probes" in cases
    assert sum(c.startswith("mul_mat_vec_f32") for c in cases) == 4
    assert sum(c.startswith("mul_mat_vec_f16") for c in cases) == 4
    assert sum(c.startswith("mul_mat_vec_norm_") for c in cases) == 2 * 3     # not dim x ffn
    assert {r["arm"] for r in rec.runs if r["case"].startswith("mul_mat_vec_norm_f16")} == {"norm b32 r1",
                                                                                          "norm b32 r2"}
    assert all(r["value"] > 0 for r in rec.runs)
    assert {r["unit"] for r in rec.runs if r["case"] != "tiny dispatch, chain of 64"} == {"GB/s"}
    assert {r["arm"] for r in rec.runs if r["case"] == "tiny dispatch, chain of 64"} == \
        {"behind a barrier", "no barrier"}
    probes = [s for s in summarize(rec.runs) if s["case"] == "bandwidth probes"]
    assert rec.extra["kernel"]["peak_gbps"] == max(s["median"] for s in probes)
    arms = {r["arm"] for r in rec.runs if r["case"].startswith("mul_mat_vec")}
    assert {"subgroup b32 r2", "noshuffle b32 r2", "subgroup b32 r1 g3", "subgroup b32 r2, no barrier"} <= arms
    shares = resolve_derived(summarize(rec.runs), rec.derived)
    one = next(d for d in shares if d["label"].startswith("subgroup b32 r2:"))
    runs = [r["value"] for r in rec.runs if r["case"] == one["case"] and r["arm"] == "subgroup b32 r2"]
    assert one["value"] == pytest.approx(statistics.median(runs) / rec.extra["kernel"]["peak_gbps"] * 100)


def test_kernel_suite_rejects_bad_sizes():
    from benchmarks import kernel_suite
    from benchmarks.harness import BenchError, BenchOptions, RunLog
    with pytest.raises(BenchError, match="DIM,FFN,VOCAB"):
        kernel_suite.bench_kernel(BenchOptions(suite="kernel", quick=True, sizes=(64, 64), quiet=True),
                                  RunLog("kernel"))


def test_kernel_suite_rejects_a_bad_pool_size(monkeypatch):
    from benchmarks import kernel_suite
    from benchmarks.harness import BenchOptions, RunLog
    from genspirv.settings import SettingError
    monkeypatch.setenv("GENSPIRV_BENCH_POOL_BYTES", "lots")
    with pytest.raises(SettingError, match="GENSPIRV_BENCH_POOL_BYTES"):
        kernel_suite.bench_kernel(BenchOptions(suite="kernel", quick=True, quiet=True), RunLog("kernel"))
