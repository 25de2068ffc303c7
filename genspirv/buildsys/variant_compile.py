"""One variant's compile: a ``Job`` in, its compiled, optimised, validated and reflected blob out.

Takes the build's ``Compilers`` (``genspirv.toolchain.chain``) and one ``Job``
(``genspirv.toolchain.compiler``); gives a ``Compiled``: the blob, every file
the compile read, its ``ShaderInfo``, which compiler of the chain built it and
how long it took; or raises the variant's error. The same function runs on the
build's compile threads and in its worker processes
(``genspirv.buildsys.compile_workers``), which is why it lives apart from the
scheduling in ``genspirv.buildsys.compile``: a worker imports this and what it
needs, not the build. Files land in the job's own folder, gone when it returns.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from ..errors import ReflectError, SpirvError
from ..project.config import Variant
from ..project.variants import CompilerName
from ..toolchain.chain import Compilers
from ..toolchain.compiler import Job
from ..toolchain.preamble import refuse_byte_order_mark

if TYPE_CHECKING:
    from ..reflect import ShaderInfo


@dataclass(frozen=True)
class Compiled:
    variant: Variant
    blob: bytes
    deps: tuple[str, ...]        # every file the compile read, relative to the root where inside it
    info: ShaderInfo
    compiler: CompilerName = CompilerName.GLSLANG       # which compiler of its chain built it
    seconds: Optional[float] = field(default=None, compare=False)   # how long its compile took


def reflect_blob(name: str, where: str, blob: bytes) -> ShaderInfo:
    """reflect(), with the variant and file named in any refusal. The reader and reflection are
    imported here, at the first blob: a build that reflects nothing (a no-op) never loads them."""
    from ..reflect import reflect
    try:
        return reflect(blob)
    except SpirvError as exc:
        raise SpirvError(f"{name} ({where}): {exc}") from None
    except ReflectError as exc:
        raise ReflectError(f"{name} ({where}): {exc}") from None


def compile_variant(compilers: Compilers, job: Job) -> Compiled:
    """Compile (with the first compiler of its chain that can), optimise, validate and reflect
    one variant, then strip its debug information where its flags hold ``-g0`` (reflection
    reads the blob from before the strip, with its names); files land in ``job.workdir`` only, and it is gone
    when this returns."""
    v = job.variant
    read_first = {v.source: job.file(v.source), **({v.preamble: job.root / v.preamble} if v.preamble else {})}
    refuse_byte_order_mark(read_first, v.name, v.source)
    start = time.monotonic()
    job.workdir.mkdir(parents=True, exist_ok=True)
    try:
        built = compilers.compile(job)
        blob = built.compiler.optimize(job, built.output.blob) if v.optimize else built.output.blob
        if v.validate:
            built.compiler.validate(job, blob)
        named = blob        # what reflection reads: the names are gone from a stripped blob
        if v.strip_debug:
            blob = built.compiler.strip(job, blob)
    finally:
        shutil.rmtree(job.workdir, ignore_errors=True)
    seconds = time.monotonic() - start
    return Compiled(v, blob, built.output.deps, reflect_blob(v.name, v.source, named), built.name, seconds)
