"""The SPIR-V tools: spirv-opt, spirv-val and spirv-dis run on a blob, their refusals made plain.

Takes a ``Tool`` (``genspirv.toolchain.tools.find_tool``) and a blob on disk; gives
the optimised blob (``optimize``: ``spirv-opt -O`` with bindings and spec
constants preserved, ``--skip-validation`` when the variant opts out of
validation), the blob without debug information (``strip_debug``: ``spirv-opt
--strip-debug``, byte for byte what glslang's ``-g0`` gives), nothing or a ``ValidationError`` (``validate``: in a worker process the
validator's own library answers, ``genspirv.toolchain.validator_library``), or the
disassembly (``disassemble``). A refusal names the variant, the instruction the
tool points at (not a disassembly line number) and what to set: an optimiser
refusal is checked against spirv-val, to tell a blob glslang made invalid from
an optimiser failure.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..errors import ToolchainError, ValidationError
from .tools import Tool, written_output

_TOOL_VERSION = re.compile(r"v(\d{4}\.\d+)")


def tool_version(tool: Tool) -> str:
    """'SPIRV-Tools v2025.5 ...' -> '2025.5' (the whole first line when it has no such number)."""
    proc = tool.run(["--version"], what=f"{tool.name} --version", timeout=30)
    # spirv-opt prints its version on stderr, spirv-val on stdout.
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace").strip()
    m = _TOOL_VERSION.search(text)
    if proc.returncode != 0 or not text:
        raise ToolchainError(f"{tool.path} ({tool.origin}): `{tool.name} --version` failed (exit {proc.returncode})")
    return m.group(1) if m else text.splitlines()[0]


# spirv-opt -O may drop bindings and spec constants nothing reads; the manifest's
# layout must not depend on the optimiser, so keep them.
OPTIMIZE_ARGS = ("-O", "--preserve-bindings", "--preserve-spec-constants")


_DISASSEMBLY_LINE = re.compile(r"^(error|warning): line \d+: ", re.M)


def tool_diagnostic(text: str) -> str:
    """spirv-val's or spirv-opt's refusal, indented, without its ``line N``: that counts lines of
    a disassembly nobody has, not of any file; the instruction line below it says where."""
    return "\n".join("  " + line.rstrip() for line in _DISASSEMBLY_LINE.sub(r"\1: ", text).splitlines()
                     if line.strip())


def optimize(spirv_opt: Tool, blob_path: Path, output: Path, target_env: str, what: str,
             on_command: Optional[Callable[[Sequence[str]], None]] = None, validate: bool = True,
             spirv_val: Optional[Tool] = None) -> bytes:
    """spirv-opt -O the blob into ``output``; its bytes. A refusal is a ValidationError naming ``what``.

    spirv-opt validates its input itself: ``validate=False`` (the variant's
    ``validate = false``) tells it not to, or the escape hatch would not reach it.
    A refusal of a validated input asks ``spirv_val`` whether the input is valid, to
    tell an invalid blob from glslang from an optimiser bug, and says what to set."""
    args = [*OPTIMIZE_ARGS, *(() if validate else ("--skip-validation",)),
            f"--target-env={target_env}", str(blob_path), "-o", str(output)]
    returncode, text = _run_opt(spirv_opt, args, output, f"{what}: spirv-opt", on_command)
    if returncode != 0:
        valid = None if not validate or spirv_val is None else _accepts(spirv_val, blob_path, target_env, what)
        raise ValidationError(optimizer_refusal(what, target_env, text, valid))
    return written_output(output, what, "spirv-opt", text)


def _run_opt(spirv_opt: Tool, args: Sequence[str], output: Path, what: str,
             on_command: Optional[Callable[[Sequence[str]], None]]) -> tuple[int, str]:
    """spirv-opt ``args`` writing ``output`` (an old one removed first): its exit status and text."""
    output.unlink(missing_ok=True)
    if on_command is not None:
        on_command([str(spirv_opt.path), *args])
    proc = spirv_opt.run(list(args), what=what)
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "replace").strip()


# glslang's -g0 runs SPIRV-Tools' strip-debug pass on its output: the same pass, run after
# reflection has read the names, gives the same bytes (tests/test_strip_debug.py holds it).
STRIP_ARGS = ("--strip-debug", "--skip-validation")


def strip_debug(spirv_opt: Tool, blob_path: Path, output: Path, what: str,
                on_command: Optional[Callable[[Sequence[str]], None]] = None) -> bytes:
    """``spirv-opt --strip-debug`` the blob into ``output``; its bytes. Bindings, decorations
    and spec constants stay; OpName, OpMemberName, OpSource, OpString, OpLine and
    OpModuleProcessed go. The input was validated already (or opted out): not again."""
    args = [*STRIP_ARGS, str(blob_path), "-o", str(output)]
    returncode, text = _run_opt(spirv_opt, args, output, f"{what}: spirv-opt --strip-debug", on_command)
    if returncode != 0:
        raise ValidationError(f"{what}: spirv-opt --strip-debug failed (exit {returncode}) on its blob "
                              f"(-g0):\n{tool_diagnostic(text)}\n  to keep the debug information, drop -g0 "
                              f"from the flags of variant {what}")
    return written_output(output, what, "spirv-opt", text)


def optimizer_refusal(what: str, target_env: str, text: str, valid: Optional[bool]) -> str:
    """The message of a blob spirv-opt refused; ``valid``: spirv-val's verdict on that blob
    (None: not asked, the variant has validate = false)."""
    if valid is False:
        return (f"{what}: glslang made invalid SPIR-V: spirv-opt -O refused it and spirv-val --target-env "
                f"{target_env} does too (an invalid input, not an optimiser bug):\n{tool_diagnostic(text)}\n"
                f"  to keep glslang's blob as it is, set validate = false and optimize = false for variant {what}")
    verdict = "spirv-val accepts" if valid else "validate = false kept from spirv-val"
    return (f"{what}: spirv-opt -O failed on a blob {verdict} (an optimiser failure, not a shader "
            f"error):\n{tool_diagnostic(text)}\n  to build it unoptimised, set optimize = false for variant {what}")


def _accepts(spirv_val: Tool, blob_path: Path, target_env: str, what: str) -> bool:
    proc = spirv_val.run(["--target-env", target_env, str(blob_path)], what=f"{what}: spirv-val")
    return proc.returncode == 0


def validate(spirv_val: Tool, blob_path: Callable[[], Path], blob: bytes, target_env: str, what: str,
             on_command: Optional[Callable[[Sequence[str]], None]] = None) -> None:
    """spirv-val ``blob``; a refusal is a ValidationError naming ``what``. In a worker process the
    validator runs in its library (``validator_library``), else in a spirv-val process given
    ``blob_path()`` (a file holding ``blob``, asked for only then or for ``-v``): the same verdict
    and text, and ``-v`` prints the same command line."""
    def command() -> list[str]:
        return ["--target-env", target_env, str(blob_path())]
    if on_command is not None:
        on_command([str(spirv_val.path), *command()])
    from . import validator_library      # at the first blob: a no-op build loads no library binding
    library = validator_library.for_tool(spirv_val)
    verdict = library.check(blob, target_env) if library is not None else None
    if verdict is None:
        proc = spirv_val.run(command(), what=f"{what}: spirv-val")
        verdict = proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace").strip()
    valid, text = verdict
    if not valid:
        raise ValidationError(f"{what}: spirv-val --target-env {target_env} refused the blob glslang made:\n"
                              f"{tool_diagnostic(text)}\n  to keep it as it is, set validate = false for variant {what}")


def disassemble(spirv_dis: Tool, blob: bytes, what: str) -> str:
    """spirv-dis text of ``blob`` (ids by their OpName where there is one); '' when it refuses it."""
    proc = spirv_dis.run(["--no-color", "-"], what=f"{what}: spirv-dis", stdin=blob, timeout=60)
    if proc.returncode != 0:
        return ""
    return proc.stdout.decode("utf-8", "replace")
