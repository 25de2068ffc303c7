"""slang-glslang's worker processes: both libraries loaded once per worker, one compile at a time.

Takes the two libraries' paths (slang-glslang's, and the pinned glslang's that
preprocesses, with its default resources), how many workers at most, and the
limits the default compiler has (GENSPIRV_COMPILER_TIMEOUT,
GENSPIRV_COMPILER_MEMORY_MB); gives a ``WorkerPool`` whose ``compile(job, what)``
runs a ``worker_job.WorkerJob`` and returns its ``worker_job.Reply``. The pool is
the shared one (``genspirv.toolchain.workers``): a worker that crashes, hits the
memory cap or runs past the timeout is killed and replaced, that one compile
failing with a ``CompilerCrashError`` naming the variant (docs/COMPILERS.md,
"Worker processes"). What is slang's own is here: the libraries loaded in the
worker (``open_handler``), under an address-space cap set before they load, and
a refusal of the worker's own (a library that did not load) that stops the build
as a ``ToolchainError``. Safe to call from the build's compile threads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .. import workers
from ...errors import GenspirvError, ToolchainError
from .worker_job import WorkerJob, Reply

LABEL = "slang-glslang"


class WorkerPool(workers.WorkerPool):
    """At most ``max_workers`` slang-glslang workers, started on demand and reused."""

    def __init__(self, libraries: tuple[Path, Path, Path], max_workers: int, timeout_s: float,
                 memory_bytes: int):
        # slang-glslang's, the pinned libglslang, its default resources
        super().__init__(f"{__name__}:open_handler", tuple(map(str, libraries)), max_workers, label=LABEL,
                         timeout_s=timeout_s, memory_bytes=memory_bytes)
        self.libraries = libraries

    def compile(self, job: WorkerJob, what: str) -> Reply:
        """Run ``job`` in a worker; a crash, a timeout or the memory cap costs this job only."""
        reply = self.run(job, what, job.name)
        if isinstance(reply, str):          # the worker's own refusal (a library did not load, ...)
            raise ToolchainError(f"{what}: {reply}")
        return reply


def open_handler(libraries: tuple[str, str, str]) -> Callable[[WorkerJob, Callable], object]:
    """In a worker: load both libraries once; each job then runs on them. A library that does
    not load, or a job the libraries refuse, is answered with the refusal's text."""
    from . import worker_job as jobs
    from .library import load
    from .pinned_glslang import open_handle
    compiler, glslang, resources = map(Path, libraries)
    try:
        handles = jobs.Handles(load(compiler), open_handle(glslang, resources))
    except GenspirvError as exc:
        refusal = str(exc)
        return lambda job, tell: refusal

    def handle(job: WorkerJob, tell: Callable) -> object:
        try:
            return jobs.run_job(job, handles)
        except GenspirvError as exc:
            return str(exc)
    return handle
