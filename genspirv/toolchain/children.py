"""Child processes: every tool process running now, so an interrupt can end them all.

The build runs its compilers on worker threads, which a signal does not
reach. Every tool starts through ``start`` and leaves through ``finished``;
when the build is interrupted (SIGINT, SIGTERM), its main thread calls
``stop()``: each running process is killed and no new one starts (``start``
raises ``Stopped``) until ``resume()``, which the build calls once its
workers have returned. So no compiler outlives an interrupted build.

A process started with ``group=True`` (a worker process, ``genspirv.toolchain.workers``)
leads a process group of its own, in which the tools it starts run too: killing
it (``kill``, ``stop()``) kills the whole group, so no tool a worker started is
left running when the worker goes.

Every child starts with its heap's allocations zeroed (``zeroed_heap``): the pinned
glslang reads memory it never wrote, so its bytes for a shader can depend on what the
heap held (docs/COMPILERS.md, "A zeroed heap"); and without the remote cache's
credentials, which no tool needs (``child_environment``, docs/SECURITY.md).
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import threading
import time

from ..settings import credentials_removed


class Stopped(Exception):
    """A process was not started: ``stop()`` was called (the build is being interrupted)."""


_lock = threading.Lock()
_running: set[subprocess.Popen] = set()
_groups: set[subprocess.Popen] = set()     # those of _running that lead a process group of their own
_stopped = False
# A new session per group leader: POSIX only (elsewhere a worker's tools are not killed with it).
CAN_GROUP = hasattr(os, "killpg")

# glibc fills each allocation with the complement of this byte (and each freed block with it):
# 255 hands out zeroed memory, as a fresh process's first pages are. glslang 13.1.1 reads
# memory it never wrote (llama.cpp's float16_t(0) constants come out 0, +Inf or NaN by what
# the heap held); any other value, inherited (a test runner may set one), changes its bytes.
ZEROED_HEAP = ("MALLOC_PERTURB_", "255")
_TUNABLES = "GLIBC_TUNABLES"


def zeroed_heap(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a child whose every allocation starts zeroed (``ZEROED_HEAP``), whatever the
    caller's environment says of it (a perturb tunable in GLIBC_TUNABLES would win: dropped)."""
    env = dict(env)
    env[ZEROED_HEAP[0]] = ZEROED_HEAP[1]
    tunables = [t for t in env.get(_TUNABLES, "").split(":") if t and not t.startswith("glibc.malloc.perturb=")]
    if tunables:
        env[_TUNABLES] = ":".join(tunables)
    else:
        env.pop(_TUNABLES, None)
    return env


def child_environment(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a tool or a worker: ``zeroed_heap``, and no credential (``settings.CREDENTIALS``)."""
    return zeroed_heap(credentials_removed(env))


def heap_zeroed() -> bool:
    """Was this process started as ``zeroed_heap`` starts a child (glibc reads it at start), with
    glibc's own malloc? Another allocator (an LD_PRELOAD one, another libc's) ignores the setting."""
    return (os.environ.get(ZEROED_HEAP[0]) == ZEROED_HEAP[1]
            and "glibc.malloc.perturb=" not in os.environ.get(_TUNABLES, "")
            and not os.environ.get("LD_PRELOAD") and _libc() == "glibc")


@functools.lru_cache(maxsize=None)
def _libc() -> str:
    import platform         # only here: a module that every tool run imports stays light
    return platform.libc_ver()[0]


def start(command: list[str], *, group: bool = False, **popen) -> subprocess.Popen:
    """``subprocess.Popen(command, **popen)``, tracked until ``finished``; Stopped after ``stop()``.
    ``group``: the process leads a new session and process group, which ``kill`` ends whole;
    a terminal's Ctrl-C does not reach it either (the build decides what stops).

    The lock is not held across Popen (a fork and exec, 1-3 ms: held, it made every compile
    thread's starts one at a time, the build's serial part at 16 jobs); a ``stop()`` that came
    while the process started is seen after it, and the process killed before it is tracked."""
    with _lock:
        if _stopped:
            raise Stopped()
    group = group and CAN_GROUP
    proc = subprocess.Popen(command, start_new_session=group, **popen)
    with _lock:
        if not _stopped:
            _running.add(proc)
            if group:
                _groups.add(proc)
            return proc
    _kill(proc, group)
    raise Stopped()


def _signal(proc: subprocess.Popen, group: bool) -> None:
    """SIGKILL ``proc``, and with ``group`` every process of its group (the tools it started)."""
    try:
        if group and proc.returncode is None:
            # Not yet reaped, so its pid is still its group's id and names no other process.
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:
        pass            # it has just exited


def _kill(proc: subprocess.Popen, group: bool = False) -> None:
    _signal(proc, group)
    proc.communicate()  # reaped, its pipes closed


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL a tracked process (its whole group when it leads one) and reap it; still tracked
    until ``finished``."""
    with _lock:
        group = proc in _groups
    _signal(proc, group)
    proc.wait()


def end(proc: subprocess.Popen, wait_s: float) -> int:
    """A group leader that stopped answering (its pipe closed): wait up to ``wait_s`` for it to
    exit on its own, then kill what is left of its group (the tools it started) and it, and
    reap it; its exit status, its own when it exited in time.

    The wait does not reap it (WNOWAIT): while it is a zombie its pid, its group's id, names
    no other process, so the group can still be killed after it died."""
    deadline = time.monotonic() + wait_s
    while hasattr(os, "waitid"):
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                break
        except ChildProcessError:
            break           # reaped already
        if time.monotonic() >= deadline:
            break
        time.sleep(0.005)
    with _lock:
        group = proc in _groups
    _signal(proc, group)
    return proc.wait()


def finished(proc: subprocess.Popen) -> None:
    with _lock:
        _running.discard(proc)
        _groups.discard(proc)


def stop() -> None:
    """Kill every tracked process (a group leader with its group); start none until ``resume()``."""
    global _stopped
    with _lock:
        _stopped = True
        for proc in _running:
            _signal(proc, proc in _groups)


def resume() -> None:
    global _stopped
    with _lock:
        _stopped = False
