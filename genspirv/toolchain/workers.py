"""Worker processes: long-lived Python processes that run one kind of job each, over pipes.

Takes a handler factory (``"module:function"``, imported in the worker), the
value it is set up with (sent once, pickled), a label for messages, how many
workers at most, a time limit per job and, optionally, an address-space cap for
the worker itself; gives a ``WorkerPool`` whose ``run(job, what, name)`` sends
``job`` to an idle worker (started on demand) and returns what the handler
returned, raises what it raised (the same type, message and attributes), or,
when the worker dies, runs past the time limit or hits its cap, raises a
``CompilerCrashError`` naming ``what`` and ``name``: that worker is killed and
replaced, every other job goes on. Safe to call from many threads at once, one
job per thread. A handler may send notes while it works (``tell``), which the
caller hears through ``run``'s ``note`` as they come.

Used by slang-glslang (``genspirv.toolchain.slang.workers``: the libraries loaded
once per worker) and by the build (``genspirv.buildsys.compile_workers``: each
variant's whole pipeline, so the build's own process, under one GIL, only hands
out jobs and collects results). docs/COMPILERS.md, "Worker processes".

Workers are started with ``subprocess`` (not ``multiprocessing``), so no
``__main__`` module is imported again in them and nothing is forked from a
process that runs threads; through ``genspirv.toolchain.children`` as process
group leaders, so an interrupted build kills them, busy or idle, with every
tool they started, instead of waiting for a job. A worker whose build is gone
(killed outright) kills its own group: no tool outlives the build.
"""

from __future__ import annotations

import importlib
import math
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable, Optional

from . import children
from ..errors import CompilerCrashError, GenspirvError, ToolchainError

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)

# What a worker sends back, the first item of each message: a note on the way, what the
# handler returned, what it raised.
NOTE, DONE, RAISED = "note", "done", "raised"

Handler = Callable[[Any, Callable[[Any], None]], Any]     # (job, tell) -> reply


class _Worker:
    def __init__(self, factory: str, setup: Any, memory_bytes: Optional[int], label: str):
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self.stderr = tempfile.TemporaryFile()
        env = children.child_environment(os.environ)       # the libraries a worker calls see zeroed memory
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
        try:
            # The factory is in the command line, so a worker's kind shows in ps.
            self.proc = children.start(
                [sys.executable, "-c", "from genspirv.toolchain.workers import serve; serve()",
                 str(to_child_r), str(from_child_w), str(memory_bytes or 0), factory],
                group=True, pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=self.stderr, env=env)
        except (OSError, children.Stopped) as exc:
            for fd in (to_child_r, to_child_w, from_child_r, from_child_w):
                os.close(fd)
            self.stderr.close()
            why = "the build was interrupted" if isinstance(exc, children.Stopped) else exc.strerror
            raise ToolchainError(f"cannot start a {label} worker ({sys.executable}): {why}") from None
        os.close(to_child_r)
        os.close(from_child_w)
        self.send = Connection(to_child_w, readable=False)
        self.recv = Connection(from_child_r, writable=False)
        # One poll object per worker: Connection.poll builds a selector each call, and a job
        # with -v's notes waits several times (this is the build's own CPU, per message).
        self._poller = select.poll()
        self._poller.register(from_child_r, select.POLLIN)
        # Queued in the pipe: the worker reads it once its imports are done, while the caller
        # goes on (starting the other workers, sending this one its first job).
        try:
            _send(self.send, setup)
        except OSError:
            pass        # it died at once: its first job finds out, and says how

    def ready(self, timeout: Optional[float]) -> bool:
        """Has the worker sent something (or gone) within ``timeout`` seconds (None: ever)?"""
        return bool(self._poller.poll(None if timeout is None else math.ceil(timeout * 1000)))

    def kill(self) -> None:
        """Kill the worker and every tool it started (its process group), and reap it."""
        children.kill(self.proc)
        children.finished(self.proc)
        self.send.close()
        self.recv.close()

    def ask_to_exit(self) -> None:
        try:
            _send(self.send, None)
        except (OSError, ValueError):
            pass

    def stop(self, deadline: float) -> None:
        """Once asked to exit: wait for it until ``deadline`` (monotonic), then kill it."""
        try:
            self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
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
    """At most ``max_workers`` worker processes, started on demand and reused.

    ``factory`` names the function a worker calls once with ``setup`` to get its handler;
    ``timeout_s`` bounds each job (None: no bound); ``memory_bytes`` caps the worker's
    own address space (None: no cap); ``label`` names the worker in messages."""

    def __init__(self, factory: str, setup: Any, max_workers: int, *, label: str,
                 timeout_s: Optional[float], memory_bytes: Optional[int] = None):
        self.factory = factory
        self.setup = setup
        self.label = label
        self.timeout_s = timeout_s
        self.memory_bytes = memory_bytes
        self._max = max(1, max_workers)
        self._slots = threading.BoundedSemaphore(self._max)
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()      # idle and busy
        self._lock = threading.Lock()
        self._closed = False
        self.started = 0                # workers started so far (a replaced one counts again)

    def run(self, job: Any, what: str, name: str, note: Optional[Callable[[Any], None]] = None) -> Any:
        """Run ``job`` in a worker: the handler's reply, or what it raised. A crash, the time
        limit or the memory cap costs this job only (``what``: whose job, ``name``: of what)."""
        with self._slots:
            worker = self._take()
            try:
                kind, payload = self._exchange(worker, job, what, name, note)
            except BaseException:
                self._retire(worker, busy=True)     # mid-job: never hand this worker out again
                raise
            with self._lock:
                closed = self._closed
                if not closed:
                    self._idle.append(worker)
            if closed:
                self._retire(worker)
            if kind == RAISED:
                raise payload
            return payload

    def start(self) -> None:
        """Start every worker now, idle, without waiting for them: their Python start and imports
        then overlap what the caller does next (planning) instead of delaying the first jobs."""
        while True:
            with self._lock:
                if self._closed or len(self._live) >= self._max:
                    return
                self.started += 1
            worker = self._new_worker()
            with self._lock:
                self._idle.append(worker)

    def _retire(self, worker: _Worker, busy: bool = False) -> None:
        if busy:
            worker.kill()
            worker.stderr.close()
        else:
            worker.ask_to_exit()
            worker.stop(time.monotonic() + 1)
        with self._lock:
            self._live.discard(worker)

    def _take(self) -> _Worker:
        # A worker is started by the thread that needs it, so the pool's first jobs start
        # theirs at once, in parallel: each pays its own Python start and imports.
        with self._lock:
            if self._closed:
                raise ToolchainError(f"the {self.label} worker pool is closed")
            if self._idle:
                return self._idle.pop()
            self.started += 1
        return self._new_worker()

    def _new_worker(self) -> _Worker:
        """A worker started (counted in ``started`` by the caller, under the lock) and live."""
        worker = _Worker(self.factory, self.setup, self.memory_bytes, self.label)
        with self._lock:
            self._live.add(worker)
        return worker

    def worker_pids(self) -> list[int]:
        """The process ids of the workers alive now, idle or busy."""
        with self._lock:
            return sorted(w.proc.pid for w in self._live)

    def _exchange(self, worker: _Worker, job: Any, what: str, name: str,
                  note: Optional[Callable[[Any], None]]) -> tuple[str, Any]:
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        try:
            _send(worker.send, job)
            while True:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not worker.ready(left):
                    raise CompilerCrashError(
                        f"{what}: {self.label} did not finish within {self.timeout_s:g} s; the worker was "
                        "stopped and only this variant is lost (raise GENSPIRV_COMPILER_TIMEOUT if the shader "
                        "is just slow)", source=name)
                kind, payload = _receive(worker.recv)
                if kind != NOTE:
                    return kind, payload
                if note is not None:
                    note(payload)
        except (EOFError, OSError):
            raise self._died(worker, what, name) from None

    def _died(self, worker: _Worker, what: str, name: str) -> CompilerCrashError:
        # Its group goes too: a tool it was running must not run on without it.
        code = children.end(worker.proc, wait_s=5)
        tail = worker.stderr_tail()
        if code < 0:
            how = f"crashed (signal {-code}, {signal.Signals(-code).name})"
        else:
            how = f"exited with code {code}"
        memory = ""
        if self.memory_bytes and ("bad_alloc" in tail or "MemoryError" in tail or code == -signal.SIGABRT):
            memory = (f"; it may have run out of its {self.memory_bytes >> 20} MiB "
                      "(raise GENSPIRV_COMPILER_MEMORY_MB if the shader needs more)")
        return CompilerCrashError(f"{what}: the {self.label} worker {how} compiling {name}"
                                  f"{memory}; only this variant is lost" + (f":\n{tail}" if tail else ""),
                                  source=name)

    def close(self) -> None:
        """Stop every idle worker (asked together, waited for together: a build's end waits
        for the slowest, not their sum); a busy one stops when its job returns."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.ask_to_exit()
        deadline = time.monotonic() + 1
        for worker in idle:
            worker.stop(deadline)
            with self._lock:
                self._live.discard(worker)


# -- in the worker ------------------------------------------------------------------


def serve() -> None:
    """A worker's main loop: argv = read fd, write fd, address-space cap in bytes (0: none),
    the handler factory ("module:function"); the first message is the factory's argument."""
    read_fd, write_fd, memory, factory = sys.argv[1:5]
    # The build decides what stops (it kills this process group), not a Ctrl-C.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if int(memory):
        try:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
        except (ImportError, ValueError, OSError):
            pass    # the time limit still applies
    requests = Connection(int(read_fd), writable=False)
    replies = Connection(int(write_fd), readable=False)
    _watch_parent(int(read_fd))
    try:
        setup = _receive(requests)
    except EOFError:
        return
    module, _, function = factory.partition(":")
    try:
        handle: Handler = getattr(importlib.import_module(module), function)(setup)
    except GenspirvError as exc:
        handle = _refusing(exc)         # every job is told why
    except Exception as exc:            # noqa: BLE001 - a broken install: a broken toolchain
        handle = _refusing(ToolchainError(f"a worker process cannot set up {factory}: "
                                          f"{type(exc).__name__}: {exc}"))

    def tell(payload: Any) -> None:
        _send(replies, (NOTE, payload))

    while True:
        try:
            job = _receive(requests)
        except EOFError:        # the parent is gone
            return
        if job is None:
            os._exit(0)         # nothing to flush or close: skip the interpreter's teardown
        try:
            reply = (DONE, handle(job, tell))
        except Exception as exc:        # noqa: BLE001 - raised again in the parent
            reply = (RAISED, _portable(exc))
        try:
            _send(replies, reply)
        except OSError:         # the parent is gone
            return


def _send(connection: Connection, message: Any) -> None:
    # pickle itself: Connection.send's ForkingPickler costs more per message, for reducers
    # (sockets, file descriptors) no message here holds.
    connection.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))


def _receive(connection: Connection) -> Any:
    return pickle.loads(connection.recv_bytes())


def _refusing(exc: Exception) -> Handler:
    def refuse(job: Any, tell: Callable[[Any], None]) -> Any:
        raise exc
    return refuse


def _portable(exc: Exception) -> Exception:
    """``exc`` as the parent can rebuild it: genspirv's errors as they are (type, message and
    attributes); any other with this worker's traceback, which the parent cannot show."""
    if not isinstance(exc, GenspirvError):
        exc.add_note("in a worker process:\n" + "".join(traceback.format_exception(exc)).rstrip())
    try:
        pickle.dumps(exc)
        return exc
    except Exception:                   # noqa: BLE001 - an error that does not pickle
        return RuntimeError("".join(traceback.format_exception(exc)).rstrip())


def _watch_parent(fd: int) -> None:
    """When the build's end of the job pipe closes (it exited, or was killed outright), kill this
    worker's process group: the tools it runs go with it instead of finishing a job nobody reads."""
    if not children.CAN_GROUP or os.getpgid(0) != os.getpid():
        return      # not a group of our own: leave it to the build
    poller = select.poll()
    poller.register(fd, 0)      # only POLLHUP and POLLERR, which poll reports unasked

    def watch() -> None:
        while True:
            events = 0
            for _, happened in poller.poll():
                events |= happened
            if events & select.POLLNVAL:
                return      # the worker closed its end: it is exiting anyway
            if events & (select.POLLHUP | select.POLLERR):
                os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
