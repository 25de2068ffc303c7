"""Compile workers started before the config loads (genspirv/build/compile_pool.py).

A first build, ``build --force`` and ``check`` compile every variant, so the command
line starts their workers first (``PENDING``: Python and the imports, no setup yet)
and the build sets them up; a guess before the config, so a wrong one (a fresh
clone's no-op) must not be made, and an unused pool is killed, not waited for.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from faults import alive, write_project
from genspirv.build import compile_pool, compile_workers
from genspirv.build.compile_pool import likely_compiles_everything as likely
from genspirv.build.state import STATE_DIR
from genspirv.errors import ToolchainError
from genspirv.project.config import DEFAULTS
from genspirv.toolchain.workers import PENDING, WorkerPool

TESTS = Path(__file__).resolve().parent


def test_its_names_are_the_builds():
    assert compile_pool.STATE_FOLDER == STATE_DIR and compile_pool.DEFAULT_MANIFEST == DEFAULTS["manifest"]


def test_the_guess_before_the_config(tmp_path, monkeypatch):
    monkeypatch.delenv("GENSPIRV_REMOTE_CACHE", raising=False)
    root = write_project(tmp_path / "p")
    assert likely(root, force=False)                    # a first build: nothing to reuse
    pyproject = (root / "pyproject.toml").read_text()
    (root / "manifests").mkdir()
    (root / "manifests/shaders.json").write_text("{}")
    assert not likely(root, force=False) and likely(root, force=True)      # a fresh clone: a no-op
    (root / "pyproject.toml").write_text(pyproject.replace('manifest = "manifests/shaders.json"', 'manifest = "m.json"'))
    assert likely(root, force=False)                    # the manifest named in the table is not there
    (root / "pyproject.toml").write_text(pyproject.replace(
        'manifest = "manifests/shaders.json"', 'manifest = "m.json"\nremote_cache = "http://127.0.0.1:1/c"'))
    assert not likely(root, force=False)                # a remote cache may hold every blob
    (root / "pyproject.toml").write_text(pyproject.replace('manifest = "manifests/shaders.json"', 'manifest = "m.json"'))
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE", "http://127.0.0.1:1/c")
    assert not likely(root, force=False)
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE", "off")
    assert likely(root, force=False)
    (root / STATE_DIR).mkdir()
    assert not likely(root, force=False)                # built before
    shutil.rmtree(root / STATE_DIR)
    (root / "pyproject.toml").write_text("[tool.genspirv\n")
    assert not likely(root, force=False)                # the config's loading says what is wrong


@pytest.fixture
def handlers(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p))


def test_a_pending_pool_starts_its_workers_and_serves_once_set_up(handlers):
    pool = WorkerPool("worker_handlers:open_echo", PENDING, 2, label="echo", timeout_s=60)
    try:
        pool.start()
        assert len(pool.worker_pids()) == 2
        with pytest.raises(ToolchainError, match="not set up"):
            pool.run(("setup", None), "v", "v.comp")
        pool.set_up("set up late")
        assert pool.run(("setup", None), "v", "v.comp") == "set up late"
        assert pool.started == 2                        # the workers started before, not new ones
    finally:
        pool.close()
    assert pool.worker_pids() == []


def test_a_pending_pool_closed_unused_leaves_no_worker(handlers):
    pool = WorkerPool("worker_handlers:open_echo", PENDING, 2, label="echo", timeout_s=60)
    pool.start()
    pids = pool.worker_pids()
    assert len(pids) == 2 and all(map(alive, pids))
    pool.close()
    assert pool.worker_pids() == [] and not any(map(alive, pids))


def _pools(monkeypatch) -> list:
    """Every compile pool made (prestarted or by the build), in order."""
    made: list = []
    real = compile_pool.new_pool

    def spy(setup, workers):
        pool = real(setup, workers)
        made.append((setup is PENDING, pool))
        return pool
    monkeypatch.setattr(compile_pool, "new_pool", spy)
    monkeypatch.setattr(compile_workers, "new_pool", spy)
    monkeypatch.setattr(compile_workers, "VARIANTS_PER_JOB", 0)     # six variants are enough for workers
    monkeypatch.delenv("GENSPIRV_REMOTE_CACHE", raising=False)
    return made


def test_the_first_build_and_check_use_the_workers_started_before_their_config(tmp_path, monkeypatch, genspirv):
    made = _pools(monkeypatch)
    root = write_project(tmp_path / "p")
    assert genspirv("build", "--root", root, "-j", "2").code == 0
    assert [pending for pending, _ in made] == [True]           # one pool, started before the config
    assert made[0][1].started == 2                              # and it compiled: no worker started late
    made.clear()
    assert genspirv("check", "--root", root, "-j", "2").code == 0
    assert [pending for pending, _ in made] == [True] and made[0][1].started == 2
    made.clear()
    assert genspirv("build", "--root", root, "-j", "2", "--force").code == 0
    assert [pending for pending, _ in made] == [True]
    # The control: an edit's rebuild starts workers as it always did, after its plan.
    made.clear()
    (root / "glsl/add.comp").write_text((root / "glsl/add.comp").read_text() + "// edited\n")
    assert genspirv("build", "--root", root, "-j", "2").code == 0
    assert [pending for pending, _ in made] == [False]


def test_a_fresh_clone_starts_no_worker_for_its_no_op(tmp_path, monkeypatch, genspirv):
    made = _pools(monkeypatch)
    root = write_project(tmp_path / "p")
    assert genspirv("build", "--root", root, "-j", "2").code == 0
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(STATE_DIR))
    made.clear()
    result = genspirv("build", "--root", clone, "-j", "2")
    assert result.code == 0 and "0 compiled" in result.out and made == []
