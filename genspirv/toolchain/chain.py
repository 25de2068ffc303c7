"""The compilers one build or check uses, and which of them builds each variant.

Takes a ``Config`` (each variant's ``compiler`` chain) and ``--jobs``; gives
``Compilers`` (``open_compilers``): the default compiler, and slang-glslang when
some variant names it, opened once for the whole build with its workers sized
to ``--jobs`` and stopped on ``close()`` (or ``with``). A compiler that cannot
be opened (the ``slang-glslang`` extra not installed) is *absent*, with the
one line that says how to install it. ``Compilers.compile(job)`` runs the
variant's chain: its first compiler, then, for an optional variant the ones
before lack a feature for, the next (docs/COMPILERS.md, "In a build");
``versions()`` gives each compiler's label for the content keys;
``ships(variant)`` whether that chain may run in a worker process, and
``shipped()`` the part of these compilers a worker is given.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence, Union

from .compiler import Compiler, CompilerOutput, Job, find_compiler
from ..project.config import Config, Variant
from ..errors import ToolchainError, UnavailableError
from ..project.variants import CompilerName, Versions


@dataclass(frozen=True)
class Built:
    """One variant's compile: which compiler of its chain made it, and what it gave."""

    name: CompilerName
    compiler: Compiler
    output: CompilerOutput


class Compilers:
    """The compilers of one build or check, by name; ``absent`` says why each missing one is."""

    def __init__(self, default: Compiler, others: Optional[Mapping[CompilerName, Compiler]] = None,
                 absent: Optional[Mapping[CompilerName, str]] = None):
        self.by_name: dict[CompilerName, Compiler] = {CompilerName.GLSLANG: default, **(others or {})}
        self.absent: dict[CompilerName, str] = dict(absent or {})

    @property
    def default(self) -> Compiler:
        return self.by_name[CompilerName.GLSLANG]

    def versions(self) -> Versions:
        others = tuple((name, f"{name.value} {c.version}") for name, c in self.by_name.items()
                       if name is not CompilerName.GLSLANG)
        return Versions(self.default.version, self.default.optimizer_version, others)

    def manifest_facts(self) -> dict[CompilerName, Mapping[str, str]]:
        """What the manifest's toolchain records of each compiler besides the default, written
        when it built some variant (``genspirv.buildsys.render``)."""
        return {name: c.manifest_facts() for name, c in self.by_name.items()
                if name is not CompilerName.GLSLANG and hasattr(c, "manifest_facts")}

    def missing_required(self, variants: Sequence[Variant]) -> Optional[ToolchainError]:
        """The error for variants that are not optional and whose compiler is absent (None: none)."""
        hit = [v for v in variants if not v.optional and v.chain[0] in self.absent]
        if not hit:
            return None
        name = hit[0].chain[0]
        names = [v.name for v in hit if v.chain[0] is name]
        listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        return ToolchainError(f"variant{'s' if len(names) > 1 else ''} {listed} (not optional) need{'' if len(names) > 1 else 's'} "
                              f"compiler {name.value}: {self.absent[name]}")

    def lacks(self, variant: Variant, missing: Sequence[str], compiler: CompilerName) -> str:
        """Why an optional variant is unavailable, in words: what ``compiler`` lacks (or how to
        install it), and how to install a compiler later in its chain that might build it."""
        if compiler in self.absent and tuple(missing) == (compiler.value,):
            return self.absent[compiler]
        who = "the pinned compiler" if compiler is CompilerName.GLSLANG else f"compiler {compiler.value}"
        text = f"{who} lacks {', '.join(missing)}"
        chain = variant.chain
        later = [c for c in chain[chain.index(compiler) + 1:] if c in self.absent] if compiler in chain else []
        return text + (f"; {self.absent[later[0]]}" if later else "")

    def ships(self, variant: Variant) -> bool:
        """Can ``variant``'s compile run in a worker process? Each compiler of its chain that
        is here says so (``ships_to_workers``); an absent one is only the text of a refusal."""
        return all(getattr(self.by_name[name], "ships_to_workers", False)
                   for name in variant.chain if name in self.by_name)

    def shipped(self) -> "Compilers":
        """What a worker process is given: the compilers that ship, and why each absent one is."""
        return Compilers(self.default, {name: c for name, c in self.by_name.items()
                                        if name is not CompilerName.GLSLANG and getattr(c, "ships_to_workers", False)},
                         self.absent)

    def compile(self, job: Job) -> Built:
        """The variant built by the first compiler of its chain that can. When none can, the
        last refusal stands: an ``UnavailableError`` whose ``compiler`` names who lacked what."""
        refusal: Optional[UnavailableError] = None
        for name in job.variant.chain:
            compiler = self.by_name.get(name)
            if compiler is None:
                # Not installed: a refusal of its own only when nothing before it answered.
                if refusal is None:
                    refusal = UnavailableError(f"{job.variant.name}: {self.absent[name]}", missing=(name.value,),
                                               source=job.variant.source, compiler=name.value)
                continue
            try:
                return Built(name, compiler, compiler.compile(job))
            except UnavailableError as exc:
                exc.compiler = name.value
                refusal = exc
        assert refusal is not None      # a chain is never empty (the config refuses an empty one)
        raise refusal

    def close(self) -> None:
        for compiler in self.by_name.values():
            close = getattr(compiler, "close", None)
            if close is not None:
                close()

    def __enter__(self) -> "Compilers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_compilers(config: Config, *, jobs: Optional[int] = None, version_cache: Optional[Path] = None,
                   probe_cache: Optional[Path] = None, default: Optional[Compiler] = None) -> Compilers:
    """The default compiler (``default``, else the pinned glslang) and every other one a
    variant's chain names. ``probe_cache`` remembers what slang-glslang predefines (None: ask
    it again, as check does: it writes nothing under the project)."""
    default = default or find_compiler(config, version_cache=version_cache)
    others: dict[CompilerName, Compiler] = {}
    absent: dict[CompilerName, str] = {}
    if any(CompilerName.SLANG_GLSLANG in v.chain for v in config.variants):
        from .slang.adapter import SlangGlslangCompiler
        from .slang.slang_glslang import open_slang_glslang
        try:
            slang = open_slang_glslang(config.glslang, jobs=jobs, cache=probe_cache, version_cache=version_cache)
        except ToolchainError as exc:
            absent[CompilerName.SLANG_GLSLANG] = str(exc)
        else:
            others[CompilerName.SLANG_GLSLANG] = SlangGlslangCompiler(slang, default)
    return Compilers(default, others, absent)


@contextlib.contextmanager
def compilers_for(config: Config, given: Union[Compiler, Compilers, None], *, jobs: Optional[int] = None,
                  version_cache: Optional[Path] = None, probe_cache: Optional[Path] = None) -> Iterator[Compilers]:
    """``given`` when it is the build's ``Compilers`` (its caller closes it); else the compilers
    opened for ``config`` with ``given`` (or the pinned glslang) as the default, closed after."""
    if isinstance(given, Compilers):
        yield given
        return
    with open_compilers(config, jobs=jobs, version_cache=version_cache, probe_cache=probe_cache,
                        default=given) as compilers:
        yield compilers
