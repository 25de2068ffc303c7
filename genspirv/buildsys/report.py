"""What a build did: ``BuildReport``, the value ``genspirv.buildsys.builder.build`` returns and tests assert on.

Takes the names the build sorted into each outcome and gives the one-line
summary the command prints (``summary``) and what it says of its unavailable
variants (``unavailable_lines``). ``genspirv.commands.results`` writes it as JSON.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .plan import Plan
from ..project.variants import CompilerName


@dataclass(frozen=True)
class BuildReport:
    compiled: tuple[str, ...]      # variant names compiled this time
    up_to_date: tuple[str, ...]    # variant names reused from the last build
    removed: tuple[str, ...]       # orphan blobs deleted (paths relative to the root)
    written: tuple[str, ...]       # files written (paths relative to the root)
    cached: tuple[str, ...] = ()   # variant names taken from a blob cache instead of compiled
    unavailable: tuple[tuple[str, tuple[str, ...]], ...] = ()   # (name, missing) of optional variants
    failed: tuple[str, ...] = ()   # variant names that failed (only on a BuildFailed's report)
    plan: Optional[Plan] = field(default=None, compare=False, repr=False)    # what was decided, and why
    # (name, compiler) of each variant compiled this time by a compiler other than the default
    compiled_by: tuple[tuple[str, str], ...] = ()
    # (name, why) of each unavailable variant: what its compiler lacks, or how to install one
    unavailable_because: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    remote: Optional[tuple[str, ...]] = None   # variant names taken from the remote cache; None: none set
    not_selected: tuple[str, ...] = ()   # a build of named variants: the others, not up to date, kept as committed
    # blobs in spirv_dir that are not genspirv's (commit.SpareBlobs.strays): reported, never deleted
    strays: tuple[str, ...] = ()

    def summary(self) -> str:
        by = Counter(compiler for _, compiler in self.compiled_by)
        parts = [f"{len(self.compiled)} compiled"
                 + "".join(f" ({n} by {compiler})" for compiler, n in sorted(by.items()))]
        if self.remote is not None:
            parts.append(f"{len(self.remote)} from the remote cache")
        if self.cached:
            parts.append(f"{len(self.cached)} from cache")
        parts.append(f"{len(self.up_to_date)} up to date")
        if self.unavailable:
            parts.append(f"{len(self.unavailable)} unavailable")
        if self.failed:
            parts.append(f"{len(self.failed)} failed")
        if self.not_selected:
            parts.append(f"{len(self.not_selected)} not selected")
        return ", ".join(parts) + f", {len(self.removed)} removed, {len(self.written)} files written"

    def unavailable_lines(self, verbose: bool = False) -> list[str]:
        """What a build says of its unavailable variants: in full the ones this build found (a
        change), every one with ``verbose``, each with why (what its compiler lacks, or how to
        install the compiler it needs); the ones it knew already in one line, so a no-op stays
        quiet."""
        known = {s.name for s in self.plan.unavailable} if self.plan is not None else set()
        why = dict(self.unavailable_because)
        lines = [f"{name} unavailable: {why.get(name) or 'the pinned compiler lacks ' + ', '.join(missing)}"
                 for name, missing in self.unavailable if verbose or name not in known]
        if len(lines) < len(self.unavailable):
            # A compiler's own name is what a variant lacks when that compiler is not installed.
            names = {c.value for c in CompilerName}
            lacking = dict.fromkeys(f"{m} (not installed)" if m in names else m
                                    for _, missing in self.unavailable for m in missing)
            lines.append(f"{len(self.unavailable)} unavailable: {', '.join(lacking)}; genspirv list --unavailable")
        return lines

    def lines(self, notes: Sequence[str] = (), verbose: bool = False) -> list[str]:
        """What ``genspirv build`` prints at its end: the unavailable variants, the config's
        ``notes``, the summary."""
        return [f"genspirv build: {line}" for line in [*self.unavailable_lines(verbose), *notes, self.summary()]]
