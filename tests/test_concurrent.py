"""Concurrent builds of one tree serialise on .genspirv/lock and give one build's bytes.

The lock is observable: a build that finds it taken says so on stderr
("waiting for .../lock: another build or check of this project is running") before it
blocks, and a build that waited finds the other's work done (an incremental
build then compiles nothing). The outputs are byte-identical to a single
build's, with no temp file left.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from faults import (cli_command, cli_env, committed_files, run_cli, set_salt, stray_files,
                    write_project)

WAITING = "another build or check of this project is running"
# The first build writes 8 files at 0.5 s per fsync: it holds the lock for 4 s
# after its first progress line, long enough for a second build to start up.
SLOW_DISK = Path(__file__).parent / "faults" / "slow_disk.py"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A single clean build's outputs (salt 2)."""
    root = write_project(tmp_path_factory.mktemp("single") / "proj", salt="2")
    assert run_cli(["build"], root).returncode == 0
    return committed_files(root)


def start(root, *args, fsync_delay=None):
    """A build; with ``fsync_delay`` it runs on a slow disk and so holds the lock longer."""
    if fsync_delay is None:
        command, env = cli_command("build", *args, "--root", str(root)), cli_env()
    else:
        command = [sys.executable, str(SLOW_DISK), "build", *args, "--root", str(root)]
        env = cli_env({"GENSPIRV_TEST_FSYNC_DELAY": str(fsync_delay)})
    return subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.slow
def test_second_build_waits_for_the_first_and_finds_its_work_done(reference, tmp_path):
    root = write_project(tmp_path / "proj", salt="1")
    assert run_cli(["build"], root).returncode == 0
    set_salt(root, "2")
    first = start(root, "--force", fsync_delay=0.5)
    # The first progress line comes from inside the lock: the first build holds it now.
    first_line = first.stdout.readline()
    assert first_line.startswith("["), first_line + first.stderr.read()
    second = start(root)
    out2, err2 = second.communicate(timeout=120)
    second_done = time.monotonic()
    out1, err1 = first.communicate(timeout=120)
    first_done = time.monotonic()
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    assert WAITING in err2, f"the second build did not report waiting:\n{err2}"
    assert WAITING not in err1
    # The second build ran after the first: it found every variant up to date.
    assert "0 compiled, 6 up to date" in out2, out2
    assert first_done <= second_done + 1.0
    assert committed_files(root) == reference
    assert stray_files(root) == []


@pytest.mark.slow
def test_three_builds_started_together_equal_one_build(reference, tmp_path):
    root = write_project(tmp_path / "proj", salt="1")
    assert run_cli(["build"], root).returncode == 0
    set_salt(root, "2")
    procs = [start(root, "--force", fsync_delay=0.05) for _ in range(3)]
    results = [p.communicate(timeout=180) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        assert "Traceback" not in err
    waited = sum(WAITING in err for _, err in results)
    assert waited >= 1, "three builds at once, and none waited for the lock?"
    assert committed_files(root) == reference
    assert stray_files(root) == []
    assert run_cli(["check"], root).returncode == 0
