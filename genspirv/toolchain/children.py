"""Child processes: every tool process running now, so an interrupt can end them all.

The build runs its compilers on worker threads, which a signal does not
reach. Every tool starts through ``start`` and leaves through ``finished``;
when the build is interrupted (SIGINT, SIGTERM), its main thread calls
``stop()``: each running process is killed and no new one starts (``start``
raises ``Stopped``) until ``resume()``, which the build calls once its
workers have returned. So no compiler outlives an interrupted build.
"""

from __future__ import annotations

import subprocess
import threading


class Stopped(Exception):
    """A process was not started: ``stop()`` was called (the build is being interrupted)."""


_lock = threading.Lock()
_running: set[subprocess.Popen] = set()
_stopped = False


def start(command: list[str], **popen) -> subprocess.Popen:
    """``subprocess.Popen(command, **popen)``, tracked until ``finished``; Stopped after ``stop()``.

    The lock is not held across Popen (a fork and exec, 1-3 ms: held, it made every compile
    thread's starts one at a time, the build's serial part at 16 jobs); a ``stop()`` that came
    while the process started is seen after it, and the process killed before it is tracked."""
    with _lock:
        if _stopped:
            raise Stopped()
    proc = subprocess.Popen(command, **popen)
    with _lock:
        if not _stopped:
            _running.add(proc)
            return proc
    _kill(proc)
    raise Stopped()


def _kill(proc: subprocess.Popen) -> None:
    try:
        proc.kill()
    except OSError:
        pass            # it has just exited
    proc.communicate()  # reaped, its pipes closed


def finished(proc: subprocess.Popen) -> None:
    with _lock:
        _running.discard(proc)


def stop() -> None:
    """Kill every tracked process; start none until ``resume()``."""
    global _stopped
    with _lock:
        _stopped = True
        for proc in _running:
            try:
                proc.kill()
            except OSError:
                pass        # it has just exited


def resume() -> None:
    global _stopped
    with _lock:
        _stopped = False
