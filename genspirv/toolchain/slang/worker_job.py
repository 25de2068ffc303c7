"""One unit of work for a worker: preprocess a source with the pinned glslang, compile it with slang-glslang.

Takes a ``WorkerJob`` (either a source file under a root with its preamble and
include folders, or text to compile as it is) and the two loaded libraries;
gives, from ``run_job``, a ``Reply``: the preprocessor's verdict and messages,
the files it included and, when it got that far, the compiler's ``RawResult``.
Runs inside a worker process (``workers.serve``); the parent only sends jobs and
reads replies. (Not the compiler seam's ``toolchain.compiler.Job``, a variant
to compile: adapter.py hands one of those to ``SlangGlslang.compile``, which
sends one of these.)
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .. import glslang_library
from . import library, pinned_glslang
from .preprocess import strip_preamble_echo


@dataclass(frozen=True)
class WorkerJob:
    spirv_version: tuple[int, int]
    name: str                               # the source's path relative to root, or what to call the text
    text: Optional[bytes] = None            # compile this as it is (probes) ...
    root: Optional[str] = None              # ... or read the source ``name`` under ``root`` and preprocess it
    source_text: Optional[bytes] = None     # ... or preprocess this text as the source ``name`` (a preamble's and its)
    preamble: str = ""
    include_dirs: tuple[str, ...] = ()
    include_preamble: bool = False          # the preamble ends with the #include extension (its echo is cut)
    compile: bool = True                    # False: preprocess only


@dataclass(frozen=True)
class Reply:
    preprocessed_ok: bool = True
    preprocess_messages: str = ""
    preprocessed: Optional[bytes] = None
    included: tuple[str, ...] = ()
    result: Optional[library.RawResult] = None
    read_error: str = ""                    # the source could not be read


@dataclass
class Handles:
    compiler: ctypes.CDLL
    preprocessor: glslang_library.Handle


def run_job(job: WorkerJob, handles: Handles) -> Reply:
    if job.text is not None:
        return Reply(result=library.compile_text(handles.compiler, job.text, job.name, job.spirv_version))
    root = Path(job.root)
    try:
        source = job.source_text if job.source_text is not None else (root / job.name).read_bytes()
    except OSError as exc:
        return Reply(preprocessed_ok=False, read_error=f"cannot read {job.name}: {exc.strerror}")
    pre = pinned_glslang.preprocess(handles.preprocessor, root=root, source=job.name, text=source,
                                    preamble=job.preamble, include_dirs=job.include_dirs)
    if not pre.ok:
        return Reply(False, pre.messages, None, pre.included)
    text = strip_preamble_echo(pre.text, job.name) if job.include_preamble else pre.text
    data = text.encode("utf-8")
    if not job.compile:
        return Reply(True, pre.messages, data, pre.included)
    result = library.compile_text(handles.compiler, data, job.name, job.spirv_version)
    return Reply(True, pre.messages, data, pre.included, result)
