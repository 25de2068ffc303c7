"""Handlers for the worker pool's own tests (tests/test_compile_workers.py), run in a worker process.

``open_echo(setup)`` answers each job ``(kind, arg)``: ``notes`` tells each item of
``arg`` and returns how many; ``raise`` raises ``arg`` (an exception that came
over the pipe); ``keyerror`` raises a plain KeyError; ``setup`` returns what the
worker was set up with; ``die`` kills its own process. ``open_broken`` refuses
to set up, as a library that does not load does; ``open_missing`` fails to set
up as a broken install does (an ImportError).
"""

from __future__ import annotations

import os
import signal

from genspirv.errors import ToolchainError


def open_echo(setup):
    def handle(job, tell):
        kind, arg = job
        if kind == "notes":
            for item in arg:
                tell(item)
            return len(arg)
        if kind == "raise":
            raise arg
        if kind == "keyerror":
            return {}[arg]
        if kind == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        return setup
    return handle


def open_broken(setup):
    raise ToolchainError(f"cannot set up: {setup}")


def open_missing(setup):
    import genspirv_no_such_module  # noqa: F401
