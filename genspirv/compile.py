"""Compile: variants in, compiled, optimised, validated and reflected blobs out.

Takes a ``Config``, the ``Tools`` (pinned glslang, spirv-val, and spirv-opt when
some variant is optimised) and the variants to compile; gives a
``CompileOutcome``: the ``Compiled`` blobs (with the files each read), the
optional variants the compiler cannot build, and the failures. One failure
does not stop the others (a broken toolchain does). ``failure_message`` prints
each distinct error once with every variant it hit. Shared by build and check;
nothing here writes outside the work folder it is given.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from . import reflect as reflect_mod
from .buildstate import Versions, include_dirs
from .config import Config, Variant
from .errors import CompileError, GenspirvError, ReflectError, SpirvError, ToolchainError, UnavailableError
from .reflect import ShaderInfo
from .toolchain import (Compiler, Tool, cached_version, compile_glsl, find_glslang, find_tool, optimize,
                        tool_version, uses_include, validate)

Log = Optional[Callable[[str], None]]
CommandLog = Optional[Callable[[Sequence[str]], None]]


# -- compiling ----------------------------------------------------------------


@dataclass(frozen=True)
class Tools:
    compiler: Compiler
    spirv_val: Tool
    spirv_opt: Optional[Tool] = None        # only when some variant is optimised
    optimizer_version: Optional[str] = None

    @property
    def versions(self) -> Versions:
        return Versions(self.compiler.version, self.optimizer_version)


def find_tools(config: Config, version_cache: Optional[Path] = None) -> Tools:
    """The pinned tools; ``version_cache`` (a JSON file) remembers their versions between builds."""
    spirv_opt = version = None
    if any(v.optimize for v in config.variants):
        spirv_opt = find_tool("spirv-opt")
        version = cached_version(spirv_opt, tool_version, version_cache)
    return Tools(compiler=find_glslang(config.glslang, version_cache), spirv_val=find_tool("spirv-val"),
                 spirv_opt=spirv_opt, optimizer_version=version)


@dataclass(frozen=True)
class Compiled:
    variant: Variant
    blob: bytes
    deps: tuple[str, ...]        # every file the compile read, relative to the root where inside it
    info: ShaderInfo


def _dep_path(root: Path, dep: str) -> str:
    # glslang names dependencies relative to its working directory, the root.
    path = Path(os.path.normpath(root / dep))
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def reflect_blob(name: str, where: str, blob: bytes) -> ShaderInfo:
    """reflect(), with the variant and file named in any refusal."""
    try:
        return reflect_mod.reflect(blob)
    except SpirvError as exc:
        raise SpirvError(f"{name} ({where}): {exc}") from None
    except ReflectError as exc:
        raise ReflectError(f"{name} ({where}): {exc}") from None


def _include_preamble(config: Config, variant: Variant) -> bool:
    if not config.include_directive:
        return False
    try:
        return uses_include(config.path(variant.source).read_bytes())
    except OSError:
        return False        # glslang names the missing source


def compile_variant(config: Config, tools: Tools, variant: Variant, workdir: Path,
                    on_command: CommandLog = None) -> Compiled:
    """Compile, optimise, validate and reflect one variant; files land in ``workdir`` only."""
    out = workdir / f"{variant.name}.spv"
    result = compile_glsl(tools.compiler, source=variant.source, output=out,
                          depfile=workdir / f"{variant.name}.d", cwd=config.root,
                          target_env=variant.target_env, defines=variant.defines_dict,
                          include_dirs=include_dirs(config), flags=variant.flags,
                          what=variant.name, include_preamble=_include_preamble(config, variant),
                          on_command=on_command)
    blob = result.blob
    if variant.optimize:
        if tools.spirv_opt is None:
            raise ToolchainError(f"{variant.name}: optimize = true but spirv-opt was not looked up")
        final = workdir / f"{variant.name}.opt.spv"
        blob = optimize(tools.spirv_opt, out, final, variant.target_env, variant.name, on_command)
        out = final
    if variant.validate:
        validate(tools.spirv_val, out, variant.target_env, variant.name, on_command)
    deps = [variant.source] + [_dep_path(config.root, d) for d in result.deps]
    info = reflect_blob(variant.name, variant.source, blob)
    return Compiled(variant, blob, tuple(dict.fromkeys(deps)), info)


@dataclass
class CompileOutcome:
    """What one round of compiles gave: blobs, unavailable optional variants, failures."""

    compiled: dict = field(default_factory=dict)       # name -> Compiled
    unavailable: dict = field(default_factory=dict)    # name -> UnavailableError
    failures: dict = field(default_factory=dict)       # name -> GenspirvError


def compile_all(config: Config, tools: Tools, variants: Sequence[Variant], workdir: Path,
                jobs: Optional[int] = None, log: Log = None, on_command: CommandLog = None) -> CompileOutcome:
    """Compile ``variants`` in parallel; a failure of one does not stop the others (a broken
    toolchain does: a compiler that hangs or crashes once will do it again)."""
    outcome = CompileOutcome()
    if not variants:
        return outcome
    jobs = max(1, jobs or os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=min(jobs, len(variants))) as pool:
        futures = {pool.submit(compile_variant, config, tools, v, workdir, on_command): v for v in variants}
        try:
            for n, future in enumerate(as_completed(futures), 1):
                variant = futures[future]
                if future.cancelled():
                    continue
                status = ""
                try:
                    outcome.compiled[variant.name] = future.result()
                except UnavailableError as exc:
                    if variant.optional:
                        outcome.unavailable[variant.name] = exc
                        status = f" unavailable (glslang {tools.compiler.version} lacks {', '.join(exc.missing)})"
                    else:
                        outcome.failures[variant.name] = exc
                        status = " FAILED"
                except GenspirvError as exc:
                    outcome.failures[variant.name] = exc
                    status = " FAILED"
                    if isinstance(exc, ToolchainError):
                        for other in futures:
                            other.cancel()
                if log:
                    log(f"[{n}/{len(variants)}] {variant.name}{status}")
        except BaseException:
            # Ctrl-C: leave without starting every queued compile first (the
            # running ones finish; nothing has been written yet).
            for other in futures:
                other.cancel()
            raise
    return outcome


def failure_message(failures: Mapping[str, GenspirvError]) -> str:
    """Each distinct error once, naming every variant it hit (glslang's text is the same for
    every variant of a source whose defines do not matter to the error)."""
    groups: dict[tuple, list[str]] = {}
    texts: dict[tuple, str] = {}
    for name, exc in sorted(failures.items()):
        if isinstance(exc, CompileError) and exc.messages:
            key = (type(exc).__name__, exc.source, exc.messages)
            text = str(exc).split("\n", 1)
            texts.setdefault(key, (text[0].split(": ", 1)[-1] + "\n" + exc.messages) if len(text) > 1 else str(exc))
        else:
            key = (type(exc).__name__, str(exc).split(": ", 1)[-1])
            texts.setdefault(key, str(exc))
        groups.setdefault(key, []).append(name)
    parts = []
    for key, names in groups.items():
        hit = f"in {len(names)} variants: {', '.join(names)}" if len(names) > 1 else f"in variant {names[0]}"
        parts.append(f"{texts[key]}\n  ({hit})")
    return "\n".join(parts)


def raise_failures(failures: Mapping[str, GenspirvError], summary: str = "") -> None:
    message = failure_message(failures)
    if summary:
        message += f"\n{summary}"
    # A broken toolchain outranks a broken shader: it is exit 2, not 1.
    errors = list(failures.values())
    worst = next((f for f in errors if isinstance(f, ToolchainError)), errors[0])
    raise (type(worst) if type(worst) is not UnavailableError else CompileError)(message)


def compile_variants(config: Config, tools: Tools, variants: Sequence[Variant], workdir: Path,
                     jobs: Optional[int] = None, log: Log = None) -> list[Compiled]:
    """Compile ``variants``; any failure fails the lot. Unavailable optional variants are left out."""
    outcome = compile_all(config, tools, variants, workdir, jobs=jobs, log=log)
    if outcome.failures:
        raise_failures(outcome.failures)
    return [outcome.compiled[v.name] for v in variants if v.name in outcome.compiled]
