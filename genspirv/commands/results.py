"""Results for CI: what ``build`` and ``check`` did, as JSON (``--json``) and as GitHub annotations.

Takes a command's report (``BuildReport``, ``CheckReport``), or the error it
ended with, and gives:

- ``build_result`` / ``check_result``: the JSON document of schema
  ``genspirv-results/1`` (docs/GUIDE.md, "Results for CI", defines it): the
  command, ``ok``, its exit status, a summary, one row per variant with its
  status, and the problems (each error with its file, line and variants);
- ``annotations``: the problems as GitHub Actions workflow commands,
  ``::error file=F,line=L,title=T::message``, which the job's page shows on the
  file's line.

Pure but for ``emit`` (``add_arguments`` gives the options): the document to a
file (the atomic writer) or to stdout; the annotations to stdout, or to stderr
when the document takes stdout (``--json -``), so stdout holds one format that
parses (GitHub's runner reads workflow commands from both streams).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..errors import GenspirvError, UsageError
from ..fsutil import write_report

if TYPE_CHECKING:       # the command line adds --json before the build's modules load
    from ..buildsys.check import CheckReport
    from ..buildsys.report import BuildReport
    from ..project.config import Config

SCHEMA = "genspirv-results/1"
STDOUT = "-"


class Status(enum.Enum):
    """A variant's status in a result."""

    COMPILED = "compiled"
    FROM_CACHE = "from_cache"
    FROM_REMOTE = "from_remote"
    UP_TO_DATE = "up_to_date"
    UNAVAILABLE = "unavailable"
    FAILED = "failed"
    NOT_SELECTED = "not_selected"     # build NAME...: another variant, kept as committed
    NOT_BUILT = "not_built"           # the build stopped before it came to this variant
    DIFFERS = "differs"               # check: the committed blob is not what the sources give
    MISSING = "missing"               # check: no committed blob


class Annotations(enum.Enum):
    GITHUB = "github"


@dataclass(frozen=True)
class Problem:
    """One error as a CI shows it: where, what, and which variants it hit."""

    message: str
    file: Optional[str] = None      # relative to the project root
    line: Optional[int] = None
    variants: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "message": self.message, "variants": list(self.variants)}


def _relative(config: Optional[Config], path: Optional[str]) -> Optional[str]:
    if path is None or config is None:
        return path
    try:
        return Path(path).resolve().relative_to(config.root.resolve()).as_posix() if Path(path).is_absolute() \
            else path
    except ValueError:
        return path


def error_problems(error: Optional[GenspirvError], config: Optional[Config] = None) -> list[Problem]:
    """A command's error as problems: one per distinct compiler error, naming its variants."""
    if error is None:
        return []
    failures = getattr(error, "failures", None)
    if not failures:
        return [Problem(str(error).split("\n", 1)[0])]
    from ..buildsys.compile import error_site
    grouped: dict[tuple, list[str]] = {}
    for name, exc in sorted(failures.items()):
        file, line, message = error_site(exc)
        grouped.setdefault((_relative(config, file), line, message), []).append(name)
    return [Problem(message, file, line, tuple(names)) for (file, line, message), names in grouped.items()]


def _document(command: str, exit_code: int, summary: dict, variants: list, problems: Sequence[Problem],
              **more) -> dict[str, Any]:
    return {"schema": SCHEMA, "command": command, "ok": exit_code == 0, "exit_code": exit_code,
            "summary": summary, "variants": variants, "problems": [p.to_json() for p in problems], **more}


def build_result(config: Config, report: Optional[BuildReport], exit_code: int,
                 error: Optional[GenspirvError] = None) -> dict[str, Any]:
    """The ``--json`` document of a build (``report`` None: it stopped before it had one)."""
    problems = error_problems(error, config)
    if report is None:
        return _document("build", exit_code, {"text": str(error or "interrupted").split("\n", 1)[0]}, [], problems)
    status: dict[str, Status] = {}
    for names, s in ((report.up_to_date, Status.UP_TO_DATE), (report.not_selected, Status.NOT_SELECTED),
                     ([n for n, _ in report.unavailable], Status.UNAVAILABLE), (report.cached, Status.FROM_CACHE),
                     (report.remote or (), Status.FROM_REMOTE), (report.compiled, Status.COMPILED),
                     (report.failed, Status.FAILED)):
        status.update(dict.fromkeys(names, s))
    variants = [{"name": v.name, "source": v.source, "spirv": config.blob_relpath(v),
                 "status": status.get(v.name, Status.NOT_BUILT).value} for v in config.variants]
    counts = {s.value: sum(1 for row in variants if row["status"] == s.value)
              for s in Status if s not in (Status.DIFFERS, Status.MISSING)}
    summary = {"text": report.summary(), **counts, "removed": len(report.removed), "written": len(report.written)}
    return _document("build", exit_code, summary, variants, problems,
                     removed=list(report.removed), written=list(report.written))


_LINE = re.compile(r"\(line (\d+)\)")


def check_problems(report: CheckReport) -> list[Problem]:
    """Each stale file as a problem: a generated text file on the line where it first differs, a
    blob on the file whose edit made it stale (its source, or the blob when it was edited by hand),
    its variant named once (in the problem's variants, not in the message too)."""
    found = []
    for d in report.differences:
        head = str(dataclasses.replace(d, variant=None)).split("\n", 1)[0]
        m = _LINE.search(head) if d.kind == "differs" and d.variant is None else None
        found.append(Problem(f"{head}; run `genspirv build` and commit the result", d.blame or d.path,
                             int(m.group(1)) if m else None, (d.variant,) if d.variant else ()))
    return found


def check_result(config: Config, report: Optional[CheckReport], exit_code: int,
                 error: Optional[GenspirvError] = None) -> dict[str, Any]:
    """The ``--json`` document of a check."""
    if report is None:
        return _document("check", exit_code, {"text": str(error).split("\n", 1)[0]}, [],
                         error_problems(error, config))
    by_path = {d.path: d for d in report.differences}
    checked = set(report.checked)
    variants = []
    for v in config.variants:
        rel = config.blob_relpath(v)
        d = by_path.get(rel)
        status = Status(d.kind) if d is not None else Status.UP_TO_DATE if rel in checked else Status.UNAVAILABLE
        variants.append({"name": v.name, "source": v.source, "spirv": rel, "status": status.value})
    files = [{"path": d.path, "status": d.kind, "variant": d.variant, "detail": d.detail, "cause": d.cause or None}
             for d in report.differences]
    summary = {"text": (f"{len(report.checked)} files up to date" if report.ok else
                        f"{len(report.differences)} of the committed outputs are stale"),
               "checked": len(report.checked), "stale": len(report.differences)}
    return _document("check", exit_code, summary, variants, check_problems(report), files=files)


def _escape(text: str, prop: bool = False) -> str:
    """GitHub's workflow-command escaping: of the message, and more of a property's value."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def annotations(problems: Sequence[Problem], title: str) -> list[str]:
    """``::error file=...,line=...,title=...::message`` per problem (GitHub Actions)."""
    lines = []
    for p in problems:
        props = [f"file={_escape(p.file, True)}"] if p.file else []
        props += [f"line={p.line}"] if p.file and p.line else []
        props.append(f"title={_escape(title, True)}")
        hit = f" (in {', '.join(p.variants)})" if p.variants else ""
        lines.append(f"::error {','.join(props)}::{_escape(p.message + hit)}")
    return lines


def write_json(doc: dict[str, Any], target: str) -> None:
    """``doc`` to the file ``target`` (atomically), or to stdout for ``-``."""
    data = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if target == STDOUT:
        sys.stdout.write(data)
        sys.stdout.flush()
    else:
        write_report(target, data.encode("utf-8"))


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--json FILE`` and ``--annotations github``, for build and check."""
    p.add_argument("--json", metavar="FILE", default=None,
                   help="also write the result as JSON (schema genspirv-results/1) to FILE; - for stdout")
    p.add_argument("--annotations", choices=[a.value for a in Annotations], default=None,
                   help="github: print each error as a GitHub Actions annotation (::error file=...,line=...::)")


def emit(json_target: Optional[str], kind: Optional[str], doc: dict[str, Any], problems: Sequence[Problem],
         title: str) -> None:
    """What --annotations and --json asked for: the annotations, then the document. With the
    document on stdout (``--json -``) the annotations go to stderr: stdout is the JSON alone."""
    if kind is not None:
        stream = sys.stderr if json_target == STDOUT else sys.stdout
        for line in annotations(problems, title):
            print(line, file=stream, flush=True)
    if json_target:
        try:
            write_json(doc, json_target)
        except OSError as exc:
            raise UsageError(f"--json {json_target}: cannot write: {exc.strerror or exc}") from None
