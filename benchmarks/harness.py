"""The harness every benchmark suite shares.

Takes measurements as they are made (``RunLog.add``: one raw run each) and
gives back medians, min–max, derived ratios, a text table, and a JSON document
holding every run with the metadata needed to trust it: date, device, genspirv
commit, Python version, cores. Also the small helpers the suites share: ABBA
ordering of paired arms (``paired_order``, the one spelling of ABBA), a
progress line on stderr, running a step that must succeed.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from genspirv import settings
from genspirv.errors import GenspirvError
from genspirv.fsutil import git_commit, write_json_atomic

SCHEMA = "genspirv-bench/1"


class BenchError(GenspirvError):
    """A benchmark could not run (missing part, failed step); names the suite and step."""

    exit_code = 2


# -- options, records ----------------------------------------------------------


@dataclass(frozen=True)
class BenchOptions:
    suite: str
    repeat: Optional[int] = None           # None: each suite's own default per size
    sizes: Optional[tuple[int, ...]] = None
    jobs: Optional[tuple[int, ...]] = None   # None: the suite's default plan
    quiet: bool = False
    root: Path = field(default_factory=Path.cwd)
    header_share: float = 0.25
    per_source: Optional[float] = None     # build: variants per copied source (None: llama.cpp's ~10)
    keep: Optional[Path] = None            # keep the synthetic projects here
    quick: bool = False                    # smallest honest run (reflect, runtime, demo)
    demo_args: Optional[str] = None        # demo: model options, as `python -m examples.llm` takes them
    roofline: bool = False                 # demo: each time per token over the bandwidth bound
    remote: bool = False                   # build-generator: a second machine from a warm remote cache
    baseline: Optional[str] = None         # build-ab, tables: the git revision set beside this tree


@dataclass
class RunLog:
    """Every raw run, and the comparisons a suite asks for between arms."""

    suite: str
    runs: list[dict] = field(default_factory=list)
    derived: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    device: Optional[str] = None
    extra: dict = field(default_factory=dict)
    on_checkpoint: Optional[Callable[["RunLog"], None]] = None

    def checkpoint(self) -> None:
        """A suite calls this after each finished case: --json then holds what is done so far."""
        if self.on_checkpoint is not None:
            self.on_checkpoint(self)

    def add(self, case: str, arm: str, value: float, unit: str = "s", **info: Any) -> None:
        # The load average beside each run: on a shared machine it says which runs to doubt.
        self.runs.append({"case": case, "arm": arm, "value": value, "unit": unit,
                          "seq": len(self.runs), "load1": _load1(), **info})

    def ratio(self, case: str, label: str, num: str, den: str, of: str = "median") -> None:
        """After the runs: median(num) / median(den), both arms of ``case``
        (``of="cpu_median"``: of their CPU times)."""
        self.derived.append({"case": case, "label": label, "kind": "ratio", "num": num, "den": den,
                             "of": of})

    def per_unit(self, case: str, label: str, arm: str, divisor: float, unit: str) -> None:
        """After the runs: median(arm) / divisor, e.g. no-op seconds per variant."""
        self.derived.append({"case": case, "label": label, "kind": "per_unit", "num": arm,
                             "divisor": divisor, "unit": unit})


def _load1() -> Optional[float]:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def paired_order(repeat_index: int, arms: Sequence[str]) -> list[str]:
    """Arms in order for repeat ``repeat_index``: forward, reversed, forward, ... (ABBA)."""
    arms = list(arms)
    return arms if repeat_index % 2 == 0 else arms[::-1]


def summarize(runs: Iterable[dict]) -> list[dict]:
    """Median, min, max and count per (case, arm): cases in first-seen order, arms within."""
    groups: dict[str, dict[str, list[dict]]] = {}
    for r in runs:
        groups.setdefault(r["case"], {}).setdefault(r["arm"], []).append(r)
    out = []
    for case, arms in groups.items():
        for arm, rs in arms.items():
            values = [r["value"] for r in rs]
            row = {"case": case, "arm": arm, "unit": rs[0]["unit"], "n": len(values),
                   "median": statistics.median(values), "min": min(values), "max": max(values)}
            if all("cpu_s" in r for r in rs):
                row["cpu_median"] = statistics.median(r["cpu_s"] for r in rs)
            out.append(row)
    return out


def resolve_derived(summary: Sequence[dict], derived: Sequence[dict]) -> list[dict]:
    medians = {(s["case"], s["arm"]): s for s in summary}
    out = []
    for d in derived:
        num = medians.get((d["case"], d["num"]))
        if num is None:
            continue
        if d["kind"] == "ratio":
            of = d.get("of", "median")
            den = medians.get((d["case"], d["den"]))
            if den is None or not den.get(of) or of not in num:
                continue
            value, unit = num[of] / den[of], "x"
        else:
            value, unit = num["median"] / d["divisor"], d["unit"]
        out.append({"case": d["case"], "label": d["label"], "value": value, "unit": unit})
    return out


# -- display -------------------------------------------------------------------


class BenchProgress:
    """One self-overwriting status line on stderr; silent unless stderr is a TTY."""

    def __init__(self, total: int, quiet: bool = False, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and getattr(self.stream, "isatty", lambda: False)()
        self.total = max(total, 1)
        self.done = 0
        self.start = time.monotonic()

    def step(self, label: str) -> None:
        if self.enabled:
            elapsed = time.monotonic() - self.start
            eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
            line = f"[{self.done + 1}/{self.total}] {label}  ({elapsed:.0f} s, ~{eta:.0f} s left)"
            self.stream.write("\r\x1b[K" + line[:150])
            self.stream.flush()
        self.done += 1

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def format_value(value: float, unit: str) -> str:
    if unit == "s":
        for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
            if abs(value) >= scale or suffix == "µs":
                return f"{value / scale:.3g} {suffix}"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:.4g} {unit}".rstrip()


def format_range(s: dict) -> str:
    """'min – max' of a summary row; a counter that never varied says so instead."""
    if s["min"] == s["max"]:
        return "one run" if s["n"] == 1 else "same in every run"
    return f"{format_value(s['min'], s['unit'])} – {format_value(s['max'], s['unit'])}"


def render_table(rec: RunLog) -> str:
    summary = summarize(rec.runs)
    lines = [f"python -m benchmarks {rec.suite}" + (f" — {rec.device}" if rec.device else "")]
    with_cpu = any("cpu_median" in s for s in summary)
    rows = [("case", "arm", "n", "median", "min–max") + (("CPU median",) if with_cpu else ())]
    for s in summary:
        row = (s["case"], s["arm"], str(s["n"]), format_value(s["median"], s["unit"]), format_range(s))
        if with_cpu:
            row += (format_value(s["cpu_median"], "s") if "cpu_median" in s else "",)
        rows.append(row)
    lines += _columns(rows)
    derived = resolve_derived(summary, rec.derived)
    if derived:
        lines.append("")
        lines.append("derived from the medians above (same run):")
        lines += _columns([("case", "figure", "value")] +
                          [(d["case"], d["label"], format_value(d["value"], d["unit"])) for d in derived])
    for note in rec.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


# -- metadata --------------------------------------------------------------------


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def metadata(root: Path, device: Optional[str]) -> dict:
    return {
        # shlex.join: the printed command parses back to the same argv (--demo-args '...').
        "command": (shlex.join(["python", "-m", "benchmarks", *sys.argv[1:]])
                    if Path(sys.argv[0]).parent.name == "benchmarks" else shlex.join(sys.argv)),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        # A copy without .git (e.g. a tree shipped to another machine) may name its commit.
        # A stated commit wins: a copy of the tree can carry a stale .git of its own.
        "genspirv_commit": (settings.get("GENSPIRV_COMMIT") or git_commit(Path(__file__).resolve().parent)
                            or git_commit(root)),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "load1": _load1(),
        "device": device or cpu_name(),
    }


def write_json(path: Path, rec: RunLog, options: BenchOptions, meta: dict, seconds: float,
               complete: bool = True) -> None:
    summary = summarize(rec.runs)
    doc = {
        "schema": SCHEMA,
        "complete": complete,          # False: a checkpoint of a suite still running (or killed)
        "suite": rec.suite,
        "meta": meta,
        "options": {"repeat": options.repeat, "sizes": list(options.sizes) if options.sizes else None,
                    "jobs": list(options.jobs) if options.jobs else None, "header_share": options.header_share,
                    "per_source": options.per_source},
        "suite_seconds": round(seconds, 3),
        "runs": rec.runs,
        "summary": summary,
        "derived": resolve_derived(summary, rec.derived),
        "notes": rec.notes,
        "extra": rec.extra,
    }
    write_json_atomic(path, doc)


# -- shared helpers ------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def cpu_seconds() -> float:
    """User + system CPU of this process and of every child it has waited for."""
    try:
        import resource
    except ImportError:     # Windows has no getrusage: this process's own CPU only
        return time.process_time()

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed_cpu(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall seconds, CPU seconds (this process and its children) and the result of ``fn``.
    On a shared machine wall time grows with the others' load; CPU time much less so."""
    c0, t0 = cpu_seconds(), time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, cpu_seconds() - c0, result


def genspirv_command(*args: str) -> list[str]:
    # -P (Python 3.11+): the working folder is not put first on sys.path, so a benchmark run from
    # a checkout times the package on PYTHONPATH (genspirv_env's snapshot), not the checkout's.
    return [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), "-m", "genspirv", *args]


def snapshot_package(scratch: Path) -> Path:
    """Copy the genspirv package running this benchmark under ``scratch``; returns the folder
    to put on PYTHONPATH. Timed steps run the copy, so an edit of the working tree during a
    long run cannot change the code measured (compiled bytecode comes along, still valid)."""
    import compileall
    import shutil

    dest = scratch / "code"
    import genspirv
    shutil.copytree(Path(genspirv.__file__).resolve().parent, dest / "genspirv",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # Bytecode as an installed package has it, whether or not this environment writes any
    # (PYTHONDONTWRITEBYTECODE): a timed step measures genspirv, not compiling its sources.
    compileall.compile_dir(str(dest / "genspirv"), quiet=1)
    return dest


def baseline_package(repo: Path, rev: str, scratch: Path) -> Path:
    """The genspirv package of ``rev`` (git archive of ``repo``), compiled, under ``scratch``: the
    folder to put on PYTHONPATH for an arm that runs that revision."""
    import compileall
    dest = scratch / "baseline"
    dest.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev, "genspirv"], capture_output=True)
    if archive.returncode != 0:
        raise BenchError(f"--baseline {rev}: git archive failed: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    compileall.compile_dir(str(dest / "genspirv"), quiet=1)
    return dest


def genspirv_env(code: Optional[Path] = None) -> dict:
    """The environment for a ``python -m genspirv`` step: ``code`` (a snapshot), else this
    very package, first on the path, so the code measured is the code that was asked for."""
    import genspirv
    here = str(code or Path(genspirv.__file__).resolve().parent.parent)
    old = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=f"{here}{os.pathsep}{old}" if old else here)


def timed_tail(cmd: Sequence[str], *, what: str, env: Optional[dict] = None,
               timeout: float = 3600) -> tuple[float, Optional[float], float]:
    """A genspirv build or check run with its progress lines: its wall seconds, the seconds after
    its last compile's ``[n/N]`` line (what renders, writes or compares, and commits after the
    compiles; None when it compiled nothing) and its CPU seconds. Lines are timed as they come
    (piped, the progress prints whole lines, each flushed)."""
    c0, t0 = cpu_seconds(), time.perf_counter()
    last, tail_text = None, []
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            stdin=subprocess.DEVNULL)
    deadline = t0 + timeout
    for line in proc.stdout:
        if line.startswith(b"["):
            last = time.perf_counter()
        tail_text = (tail_text + [line])[-20:]
        if time.perf_counter() > deadline:
            proc.kill()
    code = proc.wait()
    end = time.perf_counter()
    if code != 0:
        raise BenchError(f"{what}: exit {code} from {' '.join(map(str, cmd))}:\n"
                         + b"".join(tail_text).decode("utf-8", "replace")[-2000:])
    return end - t0, (end - last if last is not None else None), cpu_seconds() - c0


def run_command(cmd: Sequence[str], *, what: str, cwd: Optional[Path] = None,
                expect: int = 0, timeout: float = 3600, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """Run a step; anything but exit ``expect`` is a BenchError quoting its output."""
    try:
        proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{what}: did not finish within {timeout:g} s: {' '.join(map(str, cmd))}") from None
    except OSError as exc:
        raise BenchError(f"{what}: cannot run {cmd[0]}: {exc.strerror}") from None
    if proc.returncode != expect:
        tail = (proc.stdout + proc.stderr).decode("utf-8", "replace").strip()[-2000:]
        raise BenchError(f"{what}: exit {proc.returncode} (expected {expect}) from "
                         f"{' '.join(map(str, cmd))}:\n{tail}")
    return proc
