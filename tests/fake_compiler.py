"""A compiler that runs in memory, for the build's tests: genspirv.toolchain.compiler's protocol without glslang.

``FakeCompiler.compile`` reads the source and follows its ``#include "x"``
lines (beside the including file, then on the include path) to list every
file it read, and makes a small valid SPIR-V compute module whose
``OpSourceExtension`` carries a digest of everything real bytes depend on
(each file's text, the defines, flags and target env): a changed input gives
changed bytes. A variant's preamble is read as glslang's compile reads it
(``genspirv.toolchain.preamble.compose``: a ``#version`` in both is refused), listed
after the source, and in the digest. A line ``// fake: error`` in the source,
its preamble or a file it includes is a CompileError at that file and line,
followed by a follow-on line as glslang's; a line
``#extension NAME : require`` with NAME in ``missing`` is an UnavailableError;
a line ``// fake: invalid`` makes a blob that ``validate`` refuses and that
``optimize`` refuses too unless the variant has ``validate = false`` (as
spirv-opt validates its own input). Every call is counted, by variant name.
"""

from __future__ import annotations

import hashlib
import re
import struct
import threading
from collections import Counter
from pathlib import Path
from typing import Callable, Optional

from genspirv.toolchain.compiler import CompilerOutput, Job, dep_path
from genspirv.errors import CompileError, UnavailableError, ValidationError
from genspirv.toolchain.preamble import compose

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
EXTENSION = re.compile(r"^\s*#\s*extension\s+(\w+)\s*:\s*require", re.M)
ERROR_MARK = "// fake: error"         # (not #error, which real sources hold under #if)
INVALID_MARK = "// fake: invalid"


def _string_words(text: str) -> list[int]:
    data = text.encode() + b"\0"
    data += b"\0" * (-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def _op(opcode: int, *operands: int) -> list[int]:
    return [(len(operands) + 1) << 16 | opcode, *operands]


def spirv_module(note: str) -> bytes:
    """A compute shader that does nothing, local size 1x1x1, with ``note`` in an OpSourceExtension."""
    main, void, fn, label = 1, 2, 3, 4
    words = [0x07230203, 0x00010000, 0, 5, 0]
    words += _op(17, 1)                                   # OpCapability Shader
    words += _op(14, 0, 1)                                # OpMemoryModel Logical GLSL450
    words += _op(15, 5, main, *_string_words("main"))     # OpEntryPoint GLCompute %main "main"
    words += _op(16, main, 17, 1, 1, 1)                   # OpExecutionMode %main LocalSize 1 1 1
    words += _op(4, *_string_words(note))                 # OpSourceExtension "note"
    words += _op(19, void)                                # OpTypeVoid
    words += _op(33, fn, void)                            # OpTypeFunction %void
    words += _op(54, void, main, 0, fn)                   # OpFunction %void None %fn
    words += _op(248, label)                              # OpLabel
    words += _op(253)                                     # OpReturn
    words += _op(56)                                      # OpFunctionEnd
    return struct.pack(f"<{len(words)}I", *words)


class FakeCompiler:
    """The ``Compiler`` protocol in memory; ``on_compile(job)`` runs at each compile's start."""

    def __init__(self, version: str = "fake 1", optimizer_version: Optional[str] = "fake-opt 1",
                 missing: tuple[str, ...] = (), on_compile: Optional[Callable[[Job], None]] = None):
        self.version = version
        self.optimizer_version = optimizer_version
        self.missing = missing
        self.on_compile = on_compile
        self.compiles: Counter = Counter()
        self.optimizes: Counter = Counter()
        self.validates: Counter = Counter()
        self._lock = threading.Lock()

    def compile(self, job: Job) -> CompilerOutput:
        v = job.variant
        with self._lock:
            self.compiles[v.name] += 1
        if self.on_compile is not None:
            self.on_compile(job)
        read: dict[str, str] = {}
        self._read(job, job.file(v.source), read)
        if v.preamble:
            self._read(job, job.root / v.preamble, read)
            compose(v.preamble, read[v.preamble], v.source, read[v.source], v.name)
            read = {v.source: read[v.source], v.preamble: read[v.preamble], **read}     # the seam's order
        text = read[v.source]
        for rel, body in read.items():
            for n, line in enumerate(body.splitlines(), 1):
                if line.strip() == ERROR_MARK:
                    # As glslang does, a follow-on line after the real error.
                    messages = (f"{rel}:{n}: error: '{ERROR_MARK}' : the fake refuses this line\n"
                                f"{v.source}:1: error: '' : compilation terminated")
                    raise CompileError(f"{v.name}: {v.source} does not compile:\n{messages}",
                                       messages=messages, source=v.source)
        lacking = [x for x in EXTENSION.findall("\n".join(read.values())) if x in self.missing]
        if lacking:
            messages = f"{v.source}:1: error: extension not supported: {lacking[0]}"
            raise UnavailableError(f"{v.name}: {v.source} needs {lacking[0]}", missing=tuple(lacking),
                                   messages=messages, source=v.source)
        digest = hashlib.sha256(repr((sorted(read.items()), v.defines, v.flags, v.target_env)).encode())
        mark = " invalid" if INVALID_MARK in text else ""
        return CompilerOutput(spirv_module(f"fake:{digest.hexdigest()[:16]}{mark}"), tuple(read))

    def _read(self, job: Job, path: Path, read: dict[str, str]) -> None:
        rel = dep_path(job.root, job.named(str(path)))
        if rel in read:
            return
        text = path.read_text()
        read[rel] = text
        for name in INCLUDE.findall(text):
            for folder in (path.parent, *(job.file(d) for d in job.include_dirs)):
                if (folder / name).is_file():
                    self._read(job, folder / name, read)
                    break
            else:
                messages = f"{rel}:1: error: cannot find include file {name}"
                raise CompileError(f"{job.variant.name}: {rel} does not compile:\n{messages}",
                                   messages=messages, source=job.variant.source)

    def optimize(self, job: Job, blob: bytes) -> bytes:
        with self._lock:
            self.optimizes[job.variant.name] += 1
        if job.variant.validate and b" invalid" in blob:
            raise ValidationError(f"{job.variant.name}: fake-opt refused the blob: invalid")
        return spirv_module(f"fake-opt:{hashlib.sha256(blob).hexdigest()[:16]}")

    def validate(self, job: Job, blob: bytes) -> None:
        with self._lock:
            self.validates[job.variant.name] += 1
        if b" invalid" in blob:
            raise ValidationError(f"{job.variant.name}: fake-val refused the blob: invalid")
