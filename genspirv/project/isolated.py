"""Isolated calls: a function run in a child process, stopped at a deadline.

Takes a module-level function, its arguments, a time limit and optionally a
memory allowance; the child calls ``fn(stage, *args)``, ``stage`` a callback
the function calls with the name of each step it starts. Gives
(``call_in_child``) what the function returned, pickled back through a pipe.
Past the limit the child is killed and ``Overran`` names the last stage it
reported; a child that ends without an answer (``os._exit``, a crash in an
extension) is ``Died`` with its exit status. Used for a project's own code (a
generator file, a project template), which may never return: a thread cannot
be stopped, a process can. The child also arms its own alarm, so it dies at
the deadline even if this process is killed first. With ``memory`` its address
space is capped at what it maps when it starts plus that many bytes, where the
platform lets it be (``RLIMIT_AS``, and ``/proc`` to read what it maps: Linux),
so a runaway allocation is a ``MemoryError`` inside it, not the machine's memory.

The child leads a process group of its own (a new session, on POSIX): once it
has answered and exited, or at the deadline, the whole group is killed, so a
program it started and left running (a helper holding the build's stdout
open) does not outlive it. It may run programs (``git describe``) while it runs;
neither it nor they are given the remote cache's credentials
(``settings.CREDENTIALS``, docs/SECURITY.md).

Two ways to start the child (``fsutil.forks_safely``), with the same frames, answers and errors:

- fork, on Linux and the other POSIX systems but macOS: the child is this
  process's copy and calls ``fn`` at once.
- a fresh interpreter (``sys.executable -c``), on Windows, which has no fork,
  and on macOS, where the fork of a process whose system frameworks have
  started threads can crash (why CPython's multiprocessing stopped forking
  there). The function and its arguments travel pickled (``fn`` by name, hence
  module-level) on the child's stdin with this process's ``sys.path``; frames
  come back on its stdout, so what the function prints goes to stderr.
  Not multiprocessing's spawn: it runs the caller's main script again in the
  child, which a script calling the build without a ``__main__`` guard would
  not survive.

Linux keeps fork because it is cheaper: a trivial generator costs ~5 ms forked
and ~100 ms in a fresh Python (which must start and import
``genspirv.project.generator``), on every build and check.

Either way a thread of this process reads the frames and the caller waits on a
queue with the deadline: ``select()`` does not wait on pipes on Windows. The
POSIX-only calls (``os.fork``, ``SIGKILL``, ``setitimer``) are reached only on
the fork path or where they exist.
"""

from __future__ import annotations

import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
import time
import warnings
from typing import Any, BinaryIO, Callable, Optional

from ..fsutil import forks_safely
from ..settings import CREDENTIALS, credentials_removed

_HEAD = struct.Struct("<cI")        # a frame: its kind and its length, then the payload
_STAGE, _RESULT, _ERROR = b"S", b"R", b"E"
GRACE = 1.0                          # the child's own alarm rings this long after the parent's deadline
RUNG = 124                           # the exit status of a child whose alarm thread (no setitimer) ended it

# The fresh interpreter's first step: this process's import path, then the call (``_serve``).
_BOOT = ("import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
         "import genspirv.project.isolated as i; i._serve()")


class Overran(Exception):
    """The child did not answer within the limit; it was killed."""

    def __init__(self, stage: Optional[str]):
        super().__init__(stage)
        self.stage = stage


class Died(Exception):
    """The child ended without an answer; ``how`` says how (its exit code or signal)."""

    def __init__(self, how: str, stage: Optional[str]):
        super().__init__(how)
        self.how, self.stage = how, stage


class Raised(Exception):
    """The function raised in the child, or its result could not be sent back; the text says what."""


def call_in_child(fn: Callable[..., Any], args: tuple, timeout: float, memory: Optional[int] = None,
                  per_stage: bool = False) -> Any:
    """``fn(stage, *args)`` in a child process (``memory``: bytes it may map past what it maps at
    its start); its result, or Overran, Died or Raised. ``per_stage``: ``timeout`` bounds each
    stage, not the whole call (each stage reported restarts the clock, the child's own alarm too):
    several items in one child, each with the time one would have alone."""
    frames: queue.Queue = queue.Queue()
    kill, wait = (_fork if forks_safely() else _spawn)(fn, args, timeout, memory, frames, per_stage)
    answer, stage, answered = None, None, False
    try:
        answer, stage = _wait(frames, timeout, per_stage)
        answered = True
    finally:
        if not answered:              # overran or interrupted: the child goes too
            kill()
        code = wait()
    if answer is None:
        raise Died(f"killed by signal {-code}" if code < 0 else f"exit status {code}", stage)
    kind, payload = answer
    if kind == _ERROR:
        raise Raised(payload.decode("utf-8", "replace"))
    return pickle.loads(payload)


def _wait(frames: queue.Queue, timeout: float,
          per_stage: bool) -> tuple[Optional[tuple[bytes, bytes]], Optional[str]]:
    """The child's answer (None if it ended without one) and the last stage it reported."""
    stage, deadline = None, time.monotonic() + timeout
    while True:
        try:
            frame = frames.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise Overran(stage) from None
        if frame is None:
            return None, stage
        if frame[0] != _STAGE:
            return frame, stage
        stage = frame[1].decode("utf-8")
        if per_stage:
            deadline = time.monotonic() + timeout


def _read(stream: BinaryIO, frames: queue.Queue, before: Callable[[], None] = lambda: None) -> None:
    """Put each frame from the child on ``frames`` up to its answer, then None. Runs in its own
    thread and owns ``stream``: closing a pipe another thread is reading from is not safe."""
    try:
        with stream:
            before()
            while True:
                head = stream.read(_HEAD.size)
                if len(head) < _HEAD.size:
                    break
                kind, size = _HEAD.unpack(head)
                payload = stream.read(size)
                if len(payload) < size:
                    break
                frames.put((kind, payload))
                if kind != _STAGE:
                    break
    finally:
        frames.put(None)


def _reader(stream: BinaryIO, frames: queue.Queue, before: Callable[[], None] = lambda: None) -> None:
    threading.Thread(target=_read, args=(stream, frames, before), daemon=True,
                     name="genspirv-isolated-reader").start()


def _kill_group(pid: int) -> None:
    """SIGKILL the process group the child ``pid`` leads: the child and every program it started.
    Also once the child is reaped: while a program it left running lives, the group keeps the
    id, so no other process can be given it (POSIX); with none left, there is nothing to kill."""
    import signal
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _fork(fn, args, timeout, memory, frames, per_stage):
    read, write = os.pipe()
    for stream in (sys.stdout, sys.stderr):     # the child must not print this process's pending text again
        stream.flush()
    with warnings.catch_warnings():
        # Python 3.12 warns of fork in a threaded process: the child only runs ``fn`` and
        # writes to its pipe; it never touches the locks other threads may hold.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:                                 # pragma: no cover - the child's own coverage is not collected
        os.close(read)
        os.setsid()                              # its own group: it ends with whatever it started
        for name in CREDENTIALS:
            os.environ.pop(name, None)
        _arm(timeout + GRACE)
        _cap_memory(memory)
        _run(fn, args, write, timeout + GRACE if per_stage else None)
    os.close(write)
    _reader(os.fdopen(read, "rb"), frames)

    def wait() -> int:
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        _kill_group(pid)            # what it left running
        return code

    return (lambda: _kill_group(pid)), wait


def _spawn(fn, args, timeout, memory, frames, per_stage):
    request = pickle.dumps((fn, args, timeout, memory, per_stage), pickle.HIGHEST_PROTOCOL)
    group = hasattr(os, "killpg")              # POSIX (macOS); Windows has no process groups to kill
    try:
        child = subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 start_new_session=group, env=credentials_removed(os.environ))
    except OSError as exc:
        raise Died(f"no Python could be started from sys.executable {sys.executable!r}: {exc}", None) from None

    def send() -> None:
        # In the reader's thread, so a child that never reads its stdin cannot hold the caller past the deadline.
        try:
            with child.stdin:
                pickle.dump(sys.path, child.stdin, pickle.HIGHEST_PROTOCOL)
                child.stdin.write(request)
        except OSError:
            pass                      # the child has gone already: how it ended is the answer

    _reader(child.stdout, frames, send)
    if not group:
        return child.kill, child.wait

    def wait() -> int:
        code = child.wait()
        _kill_group(child.pid)      # what it left running
        return code

    return (lambda: _kill_group(child.pid)), wait


def _serve() -> None:                   # pragma: no cover - runs in the fresh interpreter
    """The fresh interpreter's side of ``_spawn``: read the call, run it, answer on the old stdout."""
    fn, args, timeout, memory, per_stage = pickle.load(sys.stdin.buffer)
    out = os.dup(1)
    os.dup2(2, 1)                        # the function's own prints go to stderr, not into the frames
    if sys.platform == "win32":
        import msvcrt
        msvcrt.setmode(out, os.O_BINARY)
    _arm(timeout + GRACE)
    _cap_memory(memory)
    _run(fn, args, out, timeout + GRACE if per_stage else None)


_ALARM_AT: list[float] = []     # Windows: when the child's alarm thread ends it (``_arm`` moves it)


def _arm(seconds: float) -> None:
    """The child's own deadline, ``seconds`` from now (again: moved), so it ends even when no
    parent is left to kill it."""
    import signal
    if hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, signal.SIG_DFL)       # ringing ends the process
        signal.setitimer(signal.ITIMER_REAL, seconds)
        return
    # Windows: a thread, which gets its turn between the function's bytecodes (a pure-Python
    # loop lets it in every few ms; a long C call holds it off); one thread, its time moved.
    first = not _ALARM_AT
    _ALARM_AT[:] = [time.monotonic() + seconds]

    def ring() -> None:
        while (left := _ALARM_AT[0] - time.monotonic()) > 0:
            time.sleep(left)
        os._exit(RUNG)
    if first:
        threading.Thread(target=ring, daemon=True).start()


def _cap_memory(memory: Optional[int]) -> None:
    """Cap this (child) process's address space at what it maps now plus ``memory`` bytes: a fork
    maps all its parent did, so a fixed cap would mean nothing (and the heap its parent had
    mapped but left free is the child's to use besides). Where there is no ``RLIMIT_AS`` or no
    ``/proc/self/statm`` to read the start from, the deadline alone bounds the child."""
    if not memory:
        return
    try:
        import resource
        with open("/proc/self/statm", "rb") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = min(x for x in (mapped + memory, soft, hard) if x != resource.RLIM_INFINITY)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):
        pass


def _run(fn, args, fd: int, rearm: Optional[float]) -> None:    # pragma: no cover - runs in the child
    """Call ``fn`` and write its stages and its answer to ``fd`` as frames; the process then ends.
    ``rearm``: each stage sets the child's alarm this far ahead again (``per_stage``)."""
    import gc
    # The project's code runs with the collector on, whatever the caller had (a build turns it
    # off while it writes): a child rendering many outputs frees each one's cycles as it goes.
    gc.enable()
    try:
        def send(kind: bytes, payload: bytes) -> None:
            os.write(fd, _HEAD.pack(kind, len(payload)))
            data = memoryview(payload)      # a write may take part of it: no copy of the rest each time
            while data:
                data = data[os.write(fd, data):]

        def stage(name: str) -> None:
            if rearm is not None:
                _arm(rearm)
            send(_STAGE, name.encode("utf-8"))

        try:
            result = fn(stage, *args)
            try:
                send(_RESULT, pickle.dumps(result, pickle.HIGHEST_PROTOCOL))
            except Exception as exc:             # noqa: BLE001 - named to the caller, in one line
                send(_ERROR, f"its result cannot be sent back ({type(exc).__name__}: {exc})".encode("utf-8"))
        except BaseException as exc:             # noqa: BLE001 - the caller's fn turns its own errors into results
            send(_ERROR, f"{type(exc).__name__}: {exc}".encode("utf-8", "replace"))
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    finally:
        os._exit(0)
