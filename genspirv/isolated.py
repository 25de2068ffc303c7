"""Isolated calls: a function run in a forked child process, stopped at a deadline.

Takes a function of one argument (``stage``, a callback it calls with the
name of each step it starts) and a time limit; gives what the function
returned, pickled back through a pipe. Past the limit the child is killed and
``Overran`` names the last stage it reported; a child that ends without an
answer (``os._exit``, a crash in an extension) is ``Died`` with its exit
status. Used for a project's own Python (a generator file), which may never
return: a thread cannot be stopped, a process can. The child also arms its
own alarm, so it dies at the deadline even if this process is killed first.
POSIX only (fork), as the build's lock (fcntl) already is.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys
import time
import warnings
from typing import Any, Callable, Optional

_HEAD = struct.Struct("<cI")        # a frame: its kind and its length, then the payload
_STAGE, _RESULT, _ERROR = b"S", b"R", b"E"
GRACE = 1.0                          # the child's own alarm rings this long after the parent's deadline


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


def call(fn: Callable[[Callable[[str], None]], Any], timeout: float) -> Any:
    """``fn(stage)`` in a forked child; its result, or Overran, Died or Raised."""
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
        _child(fn, write, timeout)
    os.close(write)
    try:
        return _wait(pid, read, timeout)
    finally:
        os.close(read)


def _child(fn, fd: int, timeout: float) -> None:
    try:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)       # ringing ends the process
        signal.setitimer(signal.ITIMER_REAL, timeout + GRACE)

        def send(kind: bytes, payload: bytes) -> None:
            data = _HEAD.pack(kind, len(payload)) + payload
            while data:
                data = data[os.write(fd, data):]

        try:
            result = fn(lambda name: send(_STAGE, name.encode("utf-8")))
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


def _wait(pid: int, fd: int, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    buffer, stage, answer, done = bytearray(), None, None, False
    try:
        while answer is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Overran(stage)
            if not select.select([fd], [], [], left)[0]:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= _HEAD.size:
                kind, size = _HEAD.unpack_from(buffer)
                if len(buffer) < _HEAD.size + size:
                    break
                payload = bytes(buffer[_HEAD.size:_HEAD.size + size])
                del buffer[:_HEAD.size + size]
                if kind == _STAGE:
                    stage = payload.decode("utf-8")
                else:
                    answer = (kind, payload)
                    break
        done = True
    finally:
        if not done:                  # overran or interrupted: the child goes too
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
    if answer is None:
        how = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"exit status {os.WEXITSTATUS(status)}")
        raise Died(how, stage)
    kind, payload = answer
    if kind == _ERROR:
        raise Raised(payload.decode("utf-8", "replace"))
    return pickle.loads(payload)
