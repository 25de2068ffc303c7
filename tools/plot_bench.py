"""Render benchmark JSON from ``python -m benchmarks ... --json FILE``: PNG plots, markdown tables.

Takes the JSON files the suites write; gives ``build_scaling.png`` (cold
build, floor, check and no-op time against the number of variants, one line
per arm and job count, median with min–max bars), ``build_jobs.png`` (the
``build-generator --jobs 1,2,4,8,16`` series: cold build and the compiler
and optimiser alone against the job count, with their ratio) and
``reflect_scaling.png`` (reflection time against blob size, beside
spirv-cross), and with
``--markdown`` the tables of every suite for docs/BENCHMARKS.md, printed from
the same JSON so the doc and the raw runs cannot disagree. Plots need
matplotlib: ``pip install -e '.[bench]'``.

    python tools/plot_bench.py build.json reflect.json --out docs/bench
    python tools/plot_bench.py runtime.json --markdown
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import format_range, format_value  # noqa: E402


def _series(doc: dict, key: str) -> dict[tuple[str, int], list[tuple[float, float, float, float]]]:
    """(arm, group) -> [(x, median, min, max)] from a suite's summary."""
    out: dict = {}
    for s in doc["summary"]:
        m = re.match(key, s["case"])
        if not m:
            continue
        x, group = float(m.group(1)), int(m.group(2)) if m.lastindex and m.lastindex > 1 else 0
        out.setdefault((s["arm"], group), []).append((x, s["median"], s["min"], s["max"]))
    return {k: sorted(v) for k, v in out.items()}


def _footer(doc: dict) -> str:
    runs = doc["meta"].get("runs", [doc["meta"]])
    meta = runs[0]
    dates = ", ".join(sorted({m["date"][:16].replace("T", " ") for m in runs}))
    commits = ", ".join(sorted({(m.get("genspirv_commit") or "unknown")[:12] for m in runs}))
    return (f"{dates} UTC · {meta['device']} · {meta['cores']} cores · "
            f"genspirv {commits} · medians, bars min–max")


def _plot(ax, series, label_of, styles):
    for (arm, group), pts in sorted(series.items()):
        xs = [p[0] for p in pts]
        med = [p[1] for p in pts]
        lo = [p[1] - p[2] for p in pts]
        hi = [p[3] - p[1] for p in pts]
        colour, marker = styles.get(arm, (None, "o"))
        ax.errorbar(xs, med, yerr=[lo, hi], label=label_of(arm, group), color=colour, marker=marker,
                    linestyle="-" if group != 1 else "--", capsize=3, linewidth=1.4, markersize=4)


def plot_build(doc: dict, out: Path, plt) -> Path:
    series = _series(doc, r"variants=(\d+) jobs=(\d+)")
    styles = {"cold": ("tab:blue", "o"), "floor": ("tab:gray", "s"), "check": ("tab:orange", "^"),
              "edit": ("tab:green", "v"), "noop": ("tab:red", "D")}
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6))
    heavy = {k: v for k, v in series.items() if k[0] in ("cold", "floor", "check")}
    light = {k: v for k, v in series.items() if k[0] in ("noop", "edit")}
    label = {"cold": "cold build", "floor": "glslangValidator alone (floor)", "check": "check",
             "noop": "no-op build",
             "edit": f"one-header edit ({doc['options'].get('header_share', 0.25):.0%} of sources)"}
    _plot(left, heavy, lambda a, g: f"{label[a]}, {g} job{'s' * (g > 1)}", styles)
    _plot(right, light, lambda a, g: f"{label[a]}, {g} job{'s' * (g > 1)}", styles)
    left.set_title("full compiles")
    right.set_title("incremental builds")
    for ax in (left, right):
        _log_axes(ax, "variants in the project", "wall time (s)", y_plain=True)
        ax.set_xticks(sorted({p[0] for pts in series.values() for p in pts}))
    fig.suptitle("genspirv build: time against the number of variants")
    return _save(fig, doc, out / "build_scaling.png", plt, fontsize=7, top=0.95)


def plot_build_jobs(doc: dict, out: Path, plt) -> Path:
    """The --jobs series of ``build-generator``: wall time against the job count, one line per
    arm and project size, and cold / floor+opt beside it."""
    series = {(arm, size): [(jobs, med, lo, hi) for size_, jobs, med, lo, hi in pts if size_ == size]
              for (arm, size), pts in _by_jobs(doc).items()}
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6))
    styles = {"cold": ("tab:blue", "o"), "floor+opt": ("tab:gray", "s")}
    label = {"cold": "cold build", "floor+opt": "glslangValidator + spirv-opt alone"}
    _plot(left, series, lambda a, n: f"{label.get(a, a)}, {n} variants", styles)
    _log_axes(left, "jobs", "wall time (s)", y_plain=True)
    for size in sorted({n for _, n in series}):
        cold = dict((p[0], p[1]) for p in series.get(("cold", size), []))
        floor = dict((p[0], p[1]) for p in series.get(("floor+opt", size), []))
        jobs = sorted(set(cold) & set(floor))
        right.plot(jobs, [cold[j] / floor[j] for j in jobs], marker="o", label=f"{size} variants")
    right.axhline(1.05, color="tab:red", linestyle=":", linewidth=1, label="1.05x")
    right.set_xscale("log")
    right.set_xlabel("jobs")
    right.set_ylabel("cold / floor+opt (wall, medians)")
    right.grid(True, alpha=0.3)
    right.legend(fontsize=7)
    from matplotlib.ticker import ScalarFormatter

    for ax in (left, right):
        ax.set_xticks(sorted({p[0] for pts in series.values() for p in pts}))
        ax.xaxis.set_major_formatter(ScalarFormatter())
    fig.suptitle("genspirv build against the job count")
    return _save(fig, doc, out / "build_jobs.png", plt, fontsize=7, top=0.95)


def _by_jobs(doc: dict) -> dict:
    """(arm, size) -> [(size, jobs, median, min, max)] of the generator cases."""
    out: dict = {}
    for s in doc["summary"]:
        m = re.match(r"generator variants=(\d+) jobs=(\d+)", s["case"])
        if m and s["arm"] in ("cold", "floor+opt"):
            size, jobs = int(m.group(1)), int(m.group(2))
            out.setdefault((s["arm"], size), []).append((size, jobs, s["median"], s["min"], s["max"]))
    return {k: sorted(v, key=lambda p: p[1]) for k, v in out.items()}


def _log_axes(ax, xlabel: str, ylabel: str, y_plain: bool = False) -> None:
    """Log-log axes with plain numbers, a grid and a legend."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    axes = (ax.xaxis, ax.yaxis) if y_plain else (ax.xaxis,)
    for axis in axes:
        axis.set_major_formatter(ScalarFormatter())
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def _save(fig, doc: dict, path: Path, plt, fontsize: int, top: float) -> Path:
    fig.text(0.5, 0.01, _footer(doc), ha="center", fontsize=fontsize)
    fig.tight_layout(rect=(0, 0.03, 1, top))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_reflect(doc: dict, out: Path, plt) -> Path:
    series = _series(doc, r"size ([\d.]+) KiB")
    styles = {"reflect": ("tab:blue", "o"), "spirv-cross": ("tab:gray", "s"), "cli": ("tab:orange", "^")}
    label = {"reflect": "genspirv reflect() in-process", "spirv-cross": "spirv-cross --reflect (process)",
             "cli": "genspirv reflect --json (process)"}
    fig, ax = plt.subplots(figsize=(6.5, 4.6))
    _plot(ax, series, lambda a, g: label.get(a, a), styles)
    _log_axes(ax, "blob size (KiB)", "time per blob (s)")
    ax.set_title("reflection time against blob size")
    return _save(fig, doc, out / "reflect_scaling.png", plt, fontsize=6, top=1)


def markdown(doc: dict) -> str:
    """The suite's summary and derived figures as markdown, headed by how they were made."""
    meta = doc["meta"]
    lines = [f"Command: `{meta.get('command', 'python -m benchmarks ' + doc['suite'])}` "
             f"({doc['suite_seconds']:.0f} s)  ",
             f"Date: {meta['date']} · device: {meta['device']} · {meta['cores']} cores · "
             f"Python {meta['python']} · genspirv {meta.get('genspirv_commit') or 'unknown'}",
             ""]
    with_cpu = any("cpu_median" in s for s in doc["summary"])
    lines += ["| case | arm | runs | median | min – max |" + (" CPU median |" if with_cpu else ""),
              "| --- | --- | --- | --- | --- |" + (" --- |" if with_cpu else "")]
    for s in doc["summary"]:
        u = s["unit"]
        cpu = (f" {format_value(s['cpu_median'], 's')} |" if "cpu_median" in s else " |") if with_cpu else ""
        lines.append(f"| {s['case']} | {s['arm']} | {s['n']} | {format_value(s['median'], u)} | "
                     f"{format_range(s)} |{cpu}")
    if doc["derived"]:
        lines += ["", "| case | figure (from the medians above) | value |", "| --- | --- | --- |"]
        lines += [f"| {d['case']} | {d['label']} | {format_value(d['value'], d['unit'])} |"
                  for d in doc["derived"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="JSON from python -m benchmarks build/reflect --json")
    parser.add_argument("--out", type=Path, default=Path("docs/bench"), help="folder for the PNGs")
    parser.add_argument("--markdown", action="store_true", help="print markdown tables instead of plotting")
    args = parser.parse_args(argv)
    if args.markdown:
        for f in args.files:
            print(markdown(json.loads(f.read_text())))
        return 0
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_bench: needs matplotlib: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    plotters = {"build": plot_build, "build-generator": plot_build_jobs, "reflect": plot_reflect}
    by_suite: dict[str, list[dict]] = {}
    for f in args.files:
        doc = json.loads(f.read_text())
        if doc.get("suite") not in plotters:
            print(f"plot_bench: {f}: no plot for suite {doc.get('suite')!r}", file=sys.stderr)
            return 2
        by_suite.setdefault(doc["suite"], []).append(doc)
    for suite, docs in by_suite.items():
        print(plotters[suite](merge(docs), args.out, plt))
    return 0


def merge(docs: list[dict]) -> dict:
    """Several runs of one suite (e.g. small and big sizes run apart) as one document;
    their summaries are kept as measured, and the footer names every run."""
    if len(docs) == 1:
        return docs[0]
    merged = dict(docs[0], summary=[s for d in docs for s in d["summary"]])
    merged["meta"] = dict(docs[0]["meta"], runs=[d["meta"] for d in docs])
    return merged


if __name__ == "__main__":
    sys.exit(main())
