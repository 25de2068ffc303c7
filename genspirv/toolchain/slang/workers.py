"""Worker processes that call the slang-glslang library in-process, one compile at a time.

Takes the two libraries' paths (slang-glslang's, and the pinned glslang's that
preprocesses), how many workers at most, and the limits the default compiler has
(GENSPIRV_COMPILER_TIMEOUT, GENSPIRV_COMPILER_MEMORY_MB); gives a ``WorkerPool``
whose ``compile(job, what)`` runs a ``worker_job.WorkerJob`` and returns its ``worker_job.Reply``.
Each worker is a separate Python process that loads both libraries once and then
serves jobs over a pipe, so their start-up (built-in symbol tables) is paid once
per worker, not once per variant. A worker that
crashes, hits the memory cap or runs past the timeout is killed and replaced:
that one compile fails with a ``CompilerCrashError`` naming the variant, every
other compile goes on (docs/COMPILERS.md, "Worker processes"). Safe to call from
the build's compile threads.

Workers are started with ``subprocess`` (not ``multiprocessing``), so no
``__main__`` module is imported again in them and nothing is forked from a
process that runs threads; through ``genspirv.toolchain.children``, so an interrupted
build kills them with its other tool processes, a busy one included, instead
of waiting for its compile.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from multiprocessing.connection import Connection
from pathlib import Path

from .. import children
from ...errors import CompilerCrashError, GenspirvError, ToolchainError
from .worker_job import WorkerJob, Reply

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent.parent)


class _Worker:
    def __init__(self, libraries: tuple[Path, ...], memory_bytes: int):
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self.stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
        try:
            self.proc = children.start(
                [sys.executable, "-c", "from genspirv.toolchain.slang.workers import serve; serve()",
                 str(to_child_r), str(from_child_w), str(memory_bytes), *map(str, libraries)],
                pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=self.stderr, env=env)
        except (OSError, children.Stopped) as exc:
            for fd in (to_child_r, to_child_w, from_child_r, from_child_w):
                os.close(fd)
            self.stderr.close()
            why = "the build was interrupted" if isinstance(exc, children.Stopped) else exc.strerror
            raise ToolchainError(f"cannot start a slang-glslang worker ({sys.executable}): {why}") from None
        os.close(to_child_r)
        os.close(from_child_w)
        self.send = Connection(to_child_w, readable=False)
        self.recv = Connection(from_child_r, writable=False)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        children.finished(self.proc)
        self.send.close()
        self.recv.close()

    def stop(self) -> None:
        """Ask an idle worker to exit; kill it if it does not within a second."""
        try:
            self.send.send(None)
            self.proc.wait(timeout=1)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self.kill()
        self.stderr.close()

    def stderr_tail(self) -> str:
        try:
            self.stderr.seek(0)
            return self.stderr.read()[-2000:].decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""


class WorkerPool:
    """At most ``max_workers`` worker processes, started on demand and reused."""

    def __init__(self, libraries: tuple[Path, Path, Path], max_workers: int, timeout_s: float,
                 memory_bytes: int):
        self.libraries = libraries      # slang-glslang's, the pinned libglslang, its default resources
        self.timeout_s = timeout_s
        self.memory_bytes = memory_bytes
        self._slots = threading.BoundedSemaphore(max(1, max_workers))
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()      # idle and busy
        self._lock = threading.Lock()
        self._closed = False
        self.started = 0                # workers started so far (a replaced one counts again)

    def compile(self, job: WorkerJob, what: str) -> Reply:
        """Run ``job`` in a worker; a crash, a timeout or the memory cap costs this job only."""
        with self._slots:
            worker = self._take()
            try:
                reply = self._exchange(worker, job, what)
            except BaseException:
                self._retire(worker, busy=True)     # mid-compile: never hand this worker out again
                raise
            with self._lock:
                closed = self._closed
                if not closed:
                    self._idle.append(worker)
            if closed:
                self._retire(worker)
            return reply

    def _retire(self, worker: _Worker, busy: bool = False) -> None:
        if busy:
            worker.kill()
            worker.stderr.close()
        else:
            worker.stop()
        with self._lock:
            self._live.discard(worker)

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise ToolchainError("the slang-glslang worker pool is closed")
            if self._idle:
                return self._idle.pop()
            self.started += 1
        worker = _Worker(self.libraries, self.memory_bytes)
        with self._lock:
            self._live.add(worker)
        return worker

    def worker_pids(self) -> list[int]:
        """The process ids of the workers alive now, idle or busy."""
        with self._lock:
            return sorted(w.proc.pid for w in self._live)

    def _exchange(self, worker: _Worker, job: WorkerJob, what: str) -> Reply:
        try:
            worker.send.send(job)
            ready = worker.recv.poll(self.timeout_s)
            if not ready:
                raise CompilerCrashError(
                    f"{what}: slang-glslang did not finish within {self.timeout_s:g} s; the worker was "
                    "stopped and only this variant is lost (raise GENSPIRV_COMPILER_TIMEOUT if the shader "
                    "is just slow)", source=job.name)
            reply = worker.recv.recv()
        except (EOFError, OSError):
            raise self._died(worker, job, what) from None
        if isinstance(reply, str):          # the worker's own refusal (a library did not load, ...)
            raise ToolchainError(f"{what}: {reply}")
        return reply

    def _died(self, worker: _Worker, job: WorkerJob, what: str) -> CompilerCrashError:
        try:
            code = worker.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            worker.proc.kill()
            code = worker.proc.wait()
        tail = worker.stderr_tail()
        if code < 0:
            how = f"crashed (signal {-code}, {signal.Signals(-code).name})"
        else:
            how = f"exited with code {code}"
        memory = ""
        if "bad_alloc" in tail or "MemoryError" in tail or code == -signal.SIGABRT:
            memory = (f"; it may have run out of its {self.memory_bytes >> 20} MiB "
                      "(raise GENSPIRV_COMPILER_MEMORY_MB if the shader needs more)")
        return CompilerCrashError(f"{what}: the slang-glslang worker {how} compiling {job.name}"
                                  f"{memory}; only this variant is lost" + (f":\n{tail}" if tail else ""),
                                  source=job.name)

    def close(self) -> None:
        """Stop every idle worker; a busy one stops when its compile returns."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            self._retire(worker)


def serve() -> None:
    """A worker's main loop: argv = read fd, write fd, address-space cap in bytes, the three libraries."""
    read_fd, write_fd, memory, compiler, glslang, resources = sys.argv[1:7]
    # Ctrl-C reaches the whole process group: the parent decides what stops, not us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
    except (ImportError, ValueError, OSError):
        pass    # the timeout still applies
    requests = Connection(int(read_fd), writable=False)
    replies = Connection(int(write_fd), readable=False)
    from . import worker_job as jobs
    from .library import load
    from .pinned_glslang import Handle
    try:
        handles = jobs.Handles(load(Path(compiler)), Handle(Path(glslang), Path(resources)))
    except GenspirvError as exc:
        replies.send(str(exc))
        return
    while True:
        try:
            job = requests.recv()
        except EOFError:        # the parent is gone
            return
        if job is None:
            return
        try:
            reply = jobs.run_job(job, handles)
        except GenspirvError as exc:
            reply = str(exc)
        replies.send(reply)
