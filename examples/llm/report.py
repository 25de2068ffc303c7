"""The demo's report: per-configuration results, ratios, the table and the JSON.

Takes the runs ``decode_rounds`` gave (``examples.llm.driver``), each checked
with the comparison rule (``examples.llm.compare``); gives the report dict
(medians, token-exactness, ties, barriers per token against the model's
structure, ratios over ``smart`` from the same rounds), its text table, and
its JSON file.
"""

from __future__ import annotations

import statistics
import sys
from typing import Sequence

from genspirv.errors import GenspirvError
from genspirv.fsutil import write_json_atomic
from .compare import Reference
from .driver import RunResult, expected_barriers_per_token


def summarize_runs(runs: Sequence[RunResult], reference: Reference, tol: float) -> dict:
    """One mode of one configuration: every run checked, the figures medians."""
    problems, ties, worst = [], set(), 0.0
    for i, run in enumerate(runs):
        v = reference.check(run, tol)
        problems += [f"run {i + 1}: {m}" for m in v.mismatches]
        ties.update(v.ties)
        worst = max(worst, v.max_rel_err)
    n = reference.n_tokens
    seconds = statistics.median(r.seconds for r in runs)
    gpu = statistics.median(r.gpu_seconds for r in runs)
    return {"tokens": list(runs[0].tokens),
            "token_exact": all(r.tokens == reference.greedy.tokens for r in runs),
            "ties": sorted(ties), "max_rel_err": worst, "mismatches": problems, "ok": not problems,
            "runs": len(runs), "seconds": seconds, "tokens_per_s": n / seconds,
            "ms_per_token": 1e3 * seconds / n, "gpu_ms_per_token": 1e3 * gpu / n,
            "stats": runs[0].stats}


def config_entry(config, label: str, policy: str, reorder: bool, recorded: Sequence[RunResult],
                 replayed: Sequence[RunResult], reference: Reference, tol: float) -> dict:
    """A configuration's row: both modes checked, barriers per token against the structure."""
    n = reference.n_tokens
    stats = recorded[0].stats
    entry = {"config": label, "policy": policy, "reorder": reorder,
             "dispatches_per_token": stats.get("dispatches", 0) / n,
             "barriers_per_token": stats.get("barriers", 0) / n,
             "expected_barriers_per_token": expected_barriers_per_token(config, policy, reorder),
             "recorded": summarize_runs(recorded, reference, tol)}
    modes = [entry["recorded"]]
    if replayed:
        entry["replayed"] = summarize_runs(replayed, reference, tol)
        modes.append(entry["replayed"])
    problems = [f"{name}: {m}" for name, mode in zip(("recorded", "replayed"), modes)
                for m in mode["mismatches"]]
    for run in recorded:
        if run.stats.get("barriers", 0) != entry["expected_barriers_per_token"] * n:
            problems.append(f"{run.stats.get('barriers', 0) / n:g} barriers per token, the "
                            f"model's structure gives {entry['expected_barriers_per_token']}")
            break
    entry.update(tokens=entry["recorded"]["tokens"],
                 token_exact=all(m["token_exact"] for m in modes),
                 ties=sorted({t for m in modes for t in m["ties"]}),
                 max_rel_err=max(m["max_rel_err"] for m in modes),
                 mismatches=problems, ok=not problems)
    return entry


def ratios(runs: list[dict]) -> dict:
    """Each configuration's medians over smart's, from the same rounds."""
    base = next((r for r in runs if r["config"] == "smart"), None)
    if base is None:
        return {}
    out = {}
    for r in runs:
        if r is base:
            continue
        ratio = {"recorded_ms_per_token": r["recorded"]["ms_per_token"] / base["recorded"]["ms_per_token"]}
        if "replayed" in r and "replayed" in base:
            ratio["replayed_gpu_ms_per_token"] = (r["replayed"]["gpu_ms_per_token"]
                                                  / base["replayed"]["gpu_ms_per_token"])
        out[f"{r['config']}/smart"] = ratio
    return out




def print_report(report: dict, out=None) -> None:
    out = out or sys.stdout
    m = report["model"]
    say = lambda line="": print(line, file=out)  # noqa: E731
    say(f"device: {report['device']} ({report['device_type']}); {report['date']}, commit "
        f"{(report['commit'] or 'unknown')[:12]}")
    say(f"model: {m['layers']} layers, dim {m['dim']}, {m['heads']} heads ({m['kv_heads']} kv), "
        f"ffn {m['ffn']}, vocab {m['vocab']}, {m['weights']} weights, seed {m['seed']}; "
        f"prompt {m['prompt']}, {m['tokens']} tokens; median of {report['repeat']}")
    say(f"reference tokens: {report['reference_tokens']}")
    say(f"{'config':<15}{'disp/tok':>9}{'barr/tok':>9}{'tok/s':>9}{'ms/tok':>9}"
        f"{'replay tok/s':>13}{'gpu ms/tok':>11}{'max err':>10}  result")
    for r in report["runs"]:
        rec, rep = r["recorded"], r.get("replayed")
        result = "token-exact" if r["token_exact"] and r["ok"] else ("ok" if r["ok"] else "MISMATCH")
        if r["ties"]:
            result += f" ({len(r['ties'])} near-tie(s) at steps {r['ties']})"
        replay = f"{rep['tokens_per_s']:>13.1f}{rep['gpu_ms_per_token']:>11.3f}" if rep else f"{'-':>13}{'-':>11}"
        say(f"{r['config']:<15}{r['dispatches_per_token']:>9.1f}{r['barriers_per_token']:>9.1f}"
            f"{rec['tokens_per_s']:>9.1f}{rec['ms_per_token']:>9.2f}{replay}{r['max_rel_err']:>10.2g}  {result}")
        for line in r["mismatches"][:5]:
            say(f"    {line}")
    if "validation_errors" in report:
        errors = report["validation_errors"]
        say(f"validation layer: {len(errors)} error(s)" + ("" if errors else ", sync validation clean"))
        for line in errors[:5]:
            say(f"    {line}")
    for name, ratio in report.get("ratios", {}).items():
        parts = [f"recorded ms/tok x{ratio['recorded_ms_per_token']:.3f}"]
        if "replayed_gpu_ms_per_token" in ratio:
            parts.append(f"replay gpu ms/tok x{ratio['replayed_gpu_ms_per_token']:.3f}")
        say(f"{name}: " + ", ".join(parts))
    say(f"logits compared with tolerance {report['tolerance']:g} x max|logit| at every step; "
        "tok/s and ms/tok: the host recording each dispatch as it goes (wall time); "
        "replay: the decode captured once and resubmitted, gpu ms/tok from device timestamps")




def write_json(path: str, report: dict) -> None:
    """The report as JSON, written atomically; an unwritable path is a GenspirvError."""
    try:
        write_json_atomic(path, report)
    except OSError as exc:
        raise GenspirvError(f"{path}: cannot write the JSON report: {exc.strerror}") from None
