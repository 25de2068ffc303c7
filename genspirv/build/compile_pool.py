"""The compile workers' pool: how it is made, and started before the project's config loads.

Takes the number of workers (``--jobs``) and, for ``prestarted``, the project root and
whether the command will compile every variant; gives ``new_pool(setup, workers)``, the
``WorkerPool`` (``genspirv.toolchain.workers``) whose workers run
``genspirv.build.compile_workers.open_handler``, and ``prestarted(...)``, a context manager
yielding such a pool already starting, its setup ``PENDING``, or None.

Why: a worker's start (Python and the imports of a variant's pipeline: ~70 ms here, ~150 ms
on a slower host) was the last thing a first build or a check waited for before its first
compile, after the config (whose generator runs in a process of its own) and the plan.
Started first, the workers' start overlaps both. ``compile_workers.early_workers`` then
sets the pool up with the build's compilers, or it is closed: a worker never set up is
killed at once (it holds no job). The guess is made before the config loads, so it reads
only the pyproject table and the project's folders (``likely_compiles_everything``); the
build still decides from the loaded config. Imports nothing heavy: it runs first.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

from .. import settings
from ..errors import ToolchainError
from ..settings import SettingError
from ..toolchain import children
from ..toolchain.workers import PENDING, WorkerPool

HANDLER = "genspirv.build.compile_workers:open_handler"
STATE_FOLDER = ".genspirv"      # genspirv.build.state's STATE_DIR; kept equal by tests/test_compile_workers.py
DEFAULT_MANIFEST = "manifests/shaders.json"     # genspirv.project.config's default; kept equal there too

# Each job runs at most four tools (glslang, spirv-opt, spirv-val on a spirv-opt refusal,
# spirv-val), each within GENSPIRV_COMPILER_TIMEOUT in the worker; a worker past all of them
# and this margin is stuck in itself, and is stopped as a crashed one is.
TOOLS_PER_JOB = 4
MARGIN_S = 60.0


def job_count(jobs: Optional[int]) -> int:
    """How many compiles run at once: ``jobs``, else the CPUs."""
    return max(1, jobs or os.cpu_count() or 1)


def new_pool(setup: Any, max_workers: int) -> WorkerPool:
    """The compile workers' pool (``setup``: the shipped ``Compilers``, or ``PENDING``)."""
    return WorkerPool(HANDLER, setup, max_workers, label="compile", timeout_s=_backstop(),
                      memory_bytes=_memory_cap())


def can_start() -> bool:
    """Worker processes can run here: process groups (their tools are killed with them) and a
    Python that runs ``-c`` (a frozen app's executable does not)."""
    return children.CAN_GROUP and not getattr(sys, "frozen", False)


def likely_compiles_everything(root: Path, force: bool) -> bool:
    """Before the config loads: ``force``, or a first build (no build state, no committed
    manifest, no remote cache to fetch from). A fresh clone (a committed manifest) is not:
    its build is usually a no-op, which must not pay for workers."""
    if force:
        return True
    if os.path.exists(os.path.join(root, STATE_FOLDER)) or settings.get("GENSPIRV_REMOTE_CACHE") not in (None, "off"):
        return False
    # The pyproject's own table, read here without the config's module (it loads next, and
    # says what is wrong with a table this cannot read: then no guess is made).
    import tomllib
    try:
        with open(os.path.join(root, "pyproject.toml"), "rb") as f:
            table = tomllib.load(f)["tool"]["genspirv"]
        manifest = table.get("manifest", DEFAULT_MANIFEST)
        return "remote_cache" not in table and not os.path.exists(os.path.join(root, manifest))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


@contextlib.contextmanager
def prestarted(root: Path, jobs: Optional[int], force: bool) -> Iterator[Optional[WorkerPool]]:
    """``jobs`` compile workers (default: the CPUs) starting now, setup ``PENDING``, where the
    command will likely compile every variant (``likely_compiles_everything``) and workers can
    run here; closed when the block ends, set up or not."""
    wanted = can_start() and likely_compiles_everything(root, force)
    pool = new_pool(PENDING, job_count(jobs)) if wanted else None
    try:
        if pool is not None:
            try:
                pool.start()
            except ToolchainError:
                pool.close()        # the build starts its own, and says why if it cannot
                pool = None
        yield pool
    finally:
        if pool is not None:
            pool.close()


def _backstop() -> Optional[float]:
    try:
        return TOOLS_PER_JOB * settings.get("GENSPIRV_COMPILER_TIMEOUT") + MARGIN_S
    except SettingError:
        return None     # each tool run in the worker refuses the value, as on a thread


def _memory_cap() -> Optional[int]:
    # The worker validates in the SPIRV-Tools library (validator_library): capped as a tool is.
    try:
        return settings.get("GENSPIRV_COMPILER_MEMORY_MB") << 20
    except SettingError:
        return None     # each tool run in the worker refuses the value, as on a thread
