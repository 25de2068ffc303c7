"""Compiles in worker processes: each variant's whole pipeline away from the build's own process.

Takes the build's ``Compilers`` and its compile jobs (``genspirv.toolchain.compiler.Job``);
gives, from ``open_workers``, ``CompileWorkers`` (or None when threads are the better
choice) whose ``compile(job)`` returns the ``Compiled`` that
``variant_compile.compile_variant`` returns on a thread, or raises the same error
(type, message, attributes), run in a worker process of the shared pool
(``genspirv.toolchain.workers``). ``-v``'s command lines come back over the pipe
as each tool starts and reach the job's ``on_command`` on the compile thread
that waits for it. The tools run and are bounded in the worker as they are on a
thread (GENSPIRV_COMPILER_TIMEOUT, GENSPIRV_COMPILER_MEMORY_MB, read from the
environment the worker inherits).

Why: on threads, every compile's Popen and pipe reads, depfile parsing and
reflection (about 6.5 ms of CPU a variant) run under the build's one GIL; at 16
jobs that is most of a build's wall time, and compile threads queue for the GIL
while cores idle. In a worker the build's process only pickles a job out and a
result back. Only a chain whose compilers ship (``Compilers.ships``: the pinned
glslang, a dataclass of tool paths) goes to a worker; the others stay on threads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from typing import Any, Callable, Iterator, Optional, Sequence

from .. import settings
from ..settings import SettingError
from ..toolchain import children
from ..toolchain.chain import Compilers
from ..project.config import Variant
from ..toolchain.compiler import Job
from .variant_compile import Compiled, compile_variant

# Processes only when the plan compiles more than this many variants per job. A worker costs
# ~60-100 ms of one core to start (Python and the imports below), and its first compile builds
# glslang's symbol tables as a glslangValidator process does (most of its ~95 ms), where a
# thread starts at once; each later compile in glslang's library then costs a few ms.
# Past two compiles per worker the start is paid back; below it (editing a shader or two: the
# usual rebuild) threads finish first.
VARIANTS_PER_JOB = 2

# Each job runs at most four tools (glslang, spirv-opt, spirv-val on a spirv-opt refusal,
# spirv-val), each within GENSPIRV_COMPILER_TIMEOUT in the worker; a worker past all of them
# and this margin is stuck in itself, and is stopped as a crashed one is.
TOOLS_PER_JOB = 4
MARGIN_S = 60.0


class CompileWorkers:
    """Worker processes that run ``compile_variant`` for the variants ``Compilers.ships``."""

    def __init__(self, compilers: Compilers, max_workers: int):
        from ..toolchain.workers import WorkerPool      # with the first pool: a no-op build starts none
        self.compilers = compilers
        self.pool = WorkerPool(f"{__name__}:open_handler", compilers.shipped(), max_workers, label="compile",
                               timeout_s=_backstop(), memory_bytes=_memory_cap())

    def takes(self, job: Job) -> bool:
        return self.compilers.ships(job.variant)

    def compile(self, job: Job) -> Compiled:
        v = job.variant
        # The callback stays here: the worker hears only whether to send command lines back.
        sent = job if job.on_command is None else dataclasses.replace(job, on_command=None)
        blob, deps, info, name, seconds = self.pool.run((sent, job.on_command is not None), v.name, v.source,
                                                        note=job.on_command)
        return Compiled(v, blob, deps, info, name, seconds)

    def close(self) -> None:
        self.pool.close()


def open_workers(compilers: Compilers, jobs: Sequence[Job], workers: int,
                 started: Optional[CompileWorkers] = None) -> Optional[CompileWorkers]:
    """Worker processes for ``jobs``, at most ``workers``; None when threads are the better
    choice: too few jobs ship to pay for the workers' start (``VARIANTS_PER_JOB``), or this
    platform cannot kill a worker with the tools it started (no process groups). ``started``
    (``early_workers``') is taken when processes are the choice, else closed. Otherwise no
    process starts here: each compile thread starts its worker with its first job, all at once."""
    shipping = sum(1 for job in jobs if compilers.ships(job.variant))
    if not _processes_pay(shipping, workers):
        if started is not None:
            started.close()
        return None
    return started or CompileWorkers(compilers, min(workers, shipping))


@contextlib.contextmanager
def early_workers(compilers: Compilers, variants: Sequence[Variant], workers: int) -> Iterator[Optional[CompileWorkers]]:
    """For a build that will compile all of ``variants`` (a first build, ``--force``, check):
    its worker processes started now, before its plan is made, so that their start overlaps
    the planning instead of delaying the first compiles (None where threads would run them);
    passed to ``open_workers`` through ``compile_all``, and closed when the block ends."""
    shipping = sum(1 for v in variants if compilers.ships(v))
    early = CompileWorkers(compilers, min(workers, shipping)) if _processes_pay(shipping, workers) else None
    try:
        if early is not None:
            early.pool.start()
        yield early
    finally:
        if early is not None:
            early.close()


def _processes_pay(shipping: int, workers: int) -> bool:
    if not children.CAN_GROUP or shipping <= VARIANTS_PER_JOB * workers:
        return False
    # A frozen app's executable is not a Python that runs ``-c``: threads.
    return not getattr(sys, "frozen", False)


def _backstop() -> Optional[float]:
    timeout = _tool_setting("GENSPIRV_COMPILER_TIMEOUT")
    return None if timeout is None else TOOLS_PER_JOB * timeout + MARGIN_S


def _memory_cap() -> Optional[int]:
    # The worker validates in the SPIRV-Tools library (validator_library): capped as a tool is.
    megabytes = _tool_setting("GENSPIRV_COMPILER_MEMORY_MB")
    return None if megabytes is None else megabytes << 20


def _tool_setting(name: str) -> Any:
    try:
        return settings.get(name)
    except SettingError:
        return None     # each tool run in the worker refuses the value, as on a thread


# -- in a worker --------------------------------------------------------------------


def open_handler(compilers: Compilers) -> Callable[[Any, Callable[[Any], None]], tuple]:
    """In a worker: each job is ``(Job, verbose)``; its reply the parts of a ``Compiled`` the
    build does not already hold (not the variant), its error raised as it is. Here glslang and
    spirv-val run in their libraries (``glslang_library``, ``validator_library``): a crash there
    costs this worker's one job."""
    from ..toolchain import glslang_library, validator_library
    validator_library.allow()
    glslang_library.allow()

    def handle(task: tuple[Job, bool], tell: Callable[[Any], None]) -> tuple:
        job, verbose = task
        if verbose:
            job = dataclasses.replace(job, on_command=lambda command: tell(list(command)))
        done = compile_variant(compilers, job)
        return done.blob, done.deps, done.info, done.compiler, done.seconds

    return handle
