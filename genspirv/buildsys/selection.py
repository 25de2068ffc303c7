"""One shader at a time: the variants ``genspirv build NAME_OR_SOURCE...`` names, and the plan that builds only them.

``choose(config, words, cwd)`` takes the words typed (a variant name; a source
path, relative to the current folder, the project root or ``glsl_dir``; or a
glob of names or sources, ``mul_mat_vec_*``, ``glsl/add*.comp``) and gives the
chosen variant names. A word that names nothing is a ``UsageError`` of one line
with the closest names.

``only(plan, chosen, records, on_disk)`` gives the plan a selective build runs:
the chosen variants' steps as planned, and for every other variant what is
committed, kept as it is: an up-to-date step with its last record (reason
``NOT_SELECTED``), its blob and manifest entry unchanged, even where its
inputs have changed since (the next full build compiles it). A variant not
chosen that was never built, or whose committed blob is gone, has nothing to
keep and is left out. Pure apart from ``on_disk``.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Sequence

from .keys import Record
from ..project.config import Config, Variant
from ..errors import UsageError
from .plan import Action, Plan, Reason, Step

GLOB_CHARS = frozenset("*?[")
CLOSE_MATCHES = 3


def choose(config: Config, words: Sequence[str], cwd: Optional[Path] = None) -> frozenset[str]:
    """The names of the variants ``words`` name (every word must name at least one)."""
    chosen: set[str] = set()
    for word in words:
        found = _named(config, word, cwd or Path.cwd())
        if not found:
            raise UsageError(_unknown(config, word))
        chosen |= found
    return frozenset(chosen)


def _forms(config: Config, v: Variant) -> tuple[str, ...]:
    """The spellings of a variant's source a word may use: root-relative and glsl_dir-relative."""
    prefix = config.glsl_dir.rstrip("/") + "/"
    return (v.source, v.source[len(prefix):]) if v.source.startswith(prefix) else (v.source,)


def _named(config: Config, word: str, cwd: Path) -> set[str]:
    if GLOB_CHARS & set(word):
        return {v.name for v in config.variants
                if fnmatch.fnmatchcase(v.name, word) or any(fnmatch.fnmatchcase(f, word) for f in _forms(config, v))}
    by_name = {v.name for v in config.variants if v.name == word}
    if by_name:
        return by_name
    rel = _project_relative(config.root, cwd, word)
    return {v.name for v in config.variants if word in _forms(config, v) or v.source == rel}


def _project_relative(root: Path, cwd: Path, word: str) -> Optional[str]:
    """``word`` as a path from the current folder, written relative to the root (None: outside it)."""
    try:
        return Path(os.path.relpath((cwd / word).resolve(), root.resolve())).as_posix()
    except ValueError:          # another drive
        return None


def _unknown(config: Config, word: str) -> str:
    names = [v.name for v in config.variants]
    sources = sorted({f for v in config.variants for f in _forms(config, v)})
    close = difflib.get_close_matches(word, names + sources, n=CLOSE_MATCHES)
    hint = f"close matches: {', '.join(close)}" if close else "`genspirv list` shows the variants"
    return f"no variant or source named {word!r} in {config.root / 'pyproject.toml'} ({hint})"


def only(plan: Plan, chosen: Optional[Iterable[str]], records: Mapping[str, Record],
         on_disk: Callable[[Variant], bool]) -> Plan:
    """``plan`` for the ``chosen`` variants; every other variant kept as committed (None: all chosen)."""
    if chosen is None:
        return plan
    chosen = frozenset(chosen)
    steps = []
    for step in plan.steps:
        if step.name in chosen or step.action in (Action.UP_TO_DATE, Action.UNAVAILABLE):
            steps.append(step)
            continue
        record = records.get(step.name)
        if record is None:
            continue            # never built: nothing committed to keep
        if record.unavailable:
            steps.append(Step(step.variant, Action.UNAVAILABLE, Reason.NOT_SELECTED, "not selected", record))
        elif record.sha256 is not None and on_disk(step.variant):
            steps.append(Step(step.variant, Action.UP_TO_DATE, Reason.NOT_SELECTED, "not selected", record))
    return Plan(tuple(steps))


def left_out(plan: Plan, variants: Sequence[Variant]) -> tuple[str, ...]:
    """The variants a selective build did not build: kept as committed, or left out of its plan
    (an unavailable one is counted as unavailable)."""
    kept = {s.name for s in plan.steps if s.reason is not Reason.NOT_SELECTED or s.action is Action.UNAVAILABLE}
    return tuple(v.name for v in variants if v.name not in kept)
