"""Interrupted builds: SIGKILL at random moments, SIGINT and SIGTERM that keep finished work.

SIGINT / SIGTERM (``test_an_interrupted_build_keeps_its_finished_compiles``,
``test_sigterm_kills_a_compiler_that_would_run_for_minutes``,
``test_ctrl_c_during_compiles_stops_promptly_and_writes_nothing``): exit 130
with one line, every compiler process killed, nothing committed written, and
the next build compiles only what had not finished.

SIGKILL a `genspirv build --force` at random moments.

After every kill:

- each output file is the complete version it had before the build or the
  complete version the build was making, never a prefix or a mix; the only
  other files are temp files of an interrupted atomic write (``.NAME.*.tmp``);
- the manifest loads (schema, paths) and names every variant;
- the manifest is written after every blob: if it changed, every blob is its
  new version and the manifest verifies against them.

What does *not* hold after a kill: that the manifest's sha256s match the
blobs. Blobs are written before the manifest, so a kill between the two leaves
new blobs under the old manifest (``load_manifest`` then refuses them with a
BlobIntegrityError, and ``genspirv check`` reports them). Every few kills, and
at the end, an ordinary incremental build must repair the tree to exactly a
clean build's bytes with no temp file left, and ``genspirv check`` must pass.

One kill in three falls anywhere in the build; the others fall at a random
moment after the build's first fsync, that is among its writes, which run on a
slow disk (tests/faults/slow_disk.py: every fsync takes 30 ms and is announced
on stderr) so that a kill can land between one atomic write and the next. GENSPIRV_KILLS sets the number of kills (30 here; the longer run in
docs/RELIABILITY.md uses 300), GENSPIRV_KILL_SEED the random seed.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from faults import (ADD_COMP, alive, cli_env, committed_files, default_sigint, run_cli, set_salt,
                    start_hanging_build, stray_files, write_project)
from genspirv.manifest import load_manifest

KILLS = int(os.environ.get("GENSPIRV_KILLS", "30"))
SEED = int(os.environ.get("GENSPIRV_KILL_SEED", str(random.SystemRandom().randrange(1 << 30))))
REPAIR_EVERY = 10
SLOW_DISK = Path(__file__).parent / "faults" / "slow_disk.py"
# From the first fsync on: 3 blobs, manifest, .c, .h and state file at 30 ms each, and a margin.
WRITE_PHASE_S = 0.25
MANIFEST = "manifests/shaders.json"
SALTS = ("1", "2")
# Three variants keep each of the many builds short; the writes are what the kills aim at.
SHADER_TABLE = """\
[tool.genspirv.shaders."add.comp"]
matrix = { TYPE = { f32 = "float", i32 = "int", u32 = "uint" } }
"""
VARIANTS = ("add_f32", "add_i32", "add_u32")


# Generated C code too (shaders.c/.h, written after the manifest): it must be whole as well.
GENERATE = 'generate = [ { target = "c", output = "manifests/shaders" } ]\n'


def make_project(root: Path, salt: str) -> Path:
    return write_project(root, salt=salt, shader_table=SHADER_TABLE, extra_config=GENERATE,
                         sources={"add.comp": ADD_COMP.format()})


def build_reference(root: Path, salt: str) -> tuple[dict[str, bytes], float]:
    make_project(root, salt)
    start = time.monotonic()
    proc = run_cli(["build", "--force"], root)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    files = committed_files(root)
    assert MANIFEST in files and all(f"spirv/{v}.spv" in files for v in VARIANTS), sorted(files)
    assert any(p.startswith("manifests/shaders.") and p != MANIFEST for p in files), sorted(files)
    return files, took


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """A clean build's outputs for each salt, and how long a forced build takes."""
    refs, took = {}, []
    for salt in SALTS:
        refs[salt], t = build_reference(tmp_path_factory.mktemp(f"ref{salt}"), salt)
        took.append(t)
    for path in refs[SALTS[0]]:
        if path.startswith("spirv/") or path in (MANIFEST, "manifests/shaders.c"):
            assert refs[SALTS[0]][path] != refs[SALTS[1]].get(path), f"{path} must differ between salts"
    return refs, max(took)


def classify(before: dict[str, bytes], after: dict[str, bytes], new: dict[str, bytes]) -> str:
    """Where the kill fell, judged by the committed files only (temp files aside)."""
    after = {path: data for path, data in after.items() if path in new}
    before = {path: data for path, data in before.items() if path in new}
    if after == before:
        return "untouched"
    if after == new:
        return "finished"
    return "mid-write (some files new, some old)"


def check_after_kill(root: Path, before: dict[str, bytes], new: dict[str, bytes], label: str) -> None:
    """The invariants after one kill of a build from ``before`` towards ``new``."""
    after = committed_files(root)
    strays = stray_files(root)
    for rel in strays:
        name = rel.rsplit("/", 1)[-1]
        assert name.startswith(".") and name.endswith(".tmp"), f"{label}: unexpected file {rel}"
    for path, data in after.items():
        if path in strays:
            continue        # an interrupted atomic write's temp file; the next build removes it
        assert data == before.get(path) or data == new.get(path), \
            f"{label}: {path} is neither its complete old nor its complete new version ({len(data)} bytes)"
    for path in new:
        assert path in after, f"{label}: {path} vanished"
    # The manifest always loads (its blobs may be newer than it: see the module docstring).
    manifest = load_manifest(root / MANIFEST, root=root, verify_blobs=False)
    assert {e.spirv for e in manifest.shaders} == {f"spirv/{v}.spv" for v in VARIANTS}
    # The manifest is written after every blob: a new manifest means every blob is new.
    if after[MANIFEST] != before[MANIFEST]:
        for entry in manifest.shaders:
            assert after[entry.spirv] == new[entry.spirv], \
                f"{label}: the new manifest was written while {entry.spirv} was still old"
        load_manifest(root / MANIFEST, root=root)


def repair_and_compare(root: Path, refs, salt: str, label: str) -> None:
    proc = run_cli(["build"], root)
    assert proc.returncode == 0, f"{label}: repair build failed\n{proc.stderr}"
    assert committed_files(root) == refs[salt], f"{label}: repair build left outputs that differ"
    assert stray_files(root) == [], f"{label}: repair build left {stray_files(root)}"
    load_manifest(root / MANIFEST, root=root)


def start_build(root: Path) -> subprocess.Popen:
    """`genspirv build --force` on a slow disk (each fsync 30 ms), stdout and stderr as pipes."""
    return subprocess.Popen([sys.executable, str(SLOW_DISK), "build", "--force", "--root", str(root)],
                            cwd=root, env=cli_env({"GENSPIRV_TEST_FSYNC_DELAY": "0.03"}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def kill_at_random(proc: subprocess.Popen, rng: random.Random, build_s: float, mode: str) -> str:
    """SIGKILL ``proc``: anywhere in the build, or among its writes. Returns where it aimed."""
    if mode == "anywhere":
        time.sleep(rng.uniform(0.0, build_s))
        aim = "anywhere"
    else:
        # The slow disk announces each fsync: wait for the first, then kill among the writes.
        for line in proc.stderr:
            if line.startswith(b"slow-disk: fsync"):
                break
        delay = rng.uniform(0.0, WRITE_PHASE_S)
        time.sleep(delay)
        aim = f"{delay * 1000:.0f} ms into the writes"
    proc.send_signal(signal.SIGKILL)
    return aim


@pytest.mark.slow
def test_sigkill_during_build_never_leaves_a_partial_output(references, tmp_path):
    refs, build_s = references
    print(f"GENSPIRV_KILL_SEED={SEED} kills={KILLS} forced build {build_s:.2f} s")
    rng = random.Random(SEED)
    root = tmp_path / "work"
    make_project(root, SALTS[0])
    assert run_cli(["build", "--force"], root).returncode == 0
    assert committed_files(root) == refs[SALTS[0]]

    outcomes = Counter()
    salt = SALTS[0]
    for i in range(KILLS):
        target = SALTS[(SALTS.index(salt) + 1) % 2]
        set_salt(root, target)
        before = committed_files(root)
        proc = start_build(root)
        # One kill in three anywhere (start-up, compiles, writes); the rest among the writes.
        aim = kill_at_random(proc, rng, build_s, "anywhere" if i % 3 == 0 else "writes")
        _, err = proc.communicate(timeout=60)
        label = f"kill #{i} ({aim}, seed {SEED})"
        if proc.returncode not in (0, -signal.SIGKILL):
            pytest.fail(f"{label}: build failed on its own (exit {proc.returncode}): {err.decode()}")
        outcome = classify(before, committed_files(root), refs[target])
        outcomes[outcome] += 1
        check_after_kill(root, before, refs[target], label)
        salt = target
        if (i + 1) % REPAIR_EVERY == 0:
            repair_and_compare(root, refs, salt, f"after {label}")
    print("outcomes:", dict(outcomes))
    repair_and_compare(root, refs, salt, "final")
    check = run_cli(["check"], root)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.slow
def test_ctrl_c_during_compiles_stops_promptly_and_writes_nothing(tmp_path):
    """SIGINT once the first variant compiled: exit 130, no traceback, no output
    touched, and the queued compiles are dropped rather than run on the way out."""
    from faults import logging_glslang
    table = SHADER_TABLE.replace('i32 = "int", u32 = "uint" }', 'i32 = "int", u32 = "uint" }, K = ["1", "2", "3", "4"]')
    root = write_project(tmp_path / "proj", salt="1", shader_table=table, sources={"add.comp": ADD_COMP.format()})
    assert run_cli(["build"], root).returncode == 0
    set_salt(root, "2")
    before = committed_files(root)
    log = tmp_path / "compiles.log"
    fake = logging_glslang(tmp_path / "bin", log)
    proc = subprocess.Popen([sys.executable, "-m", "genspirv", "build", "--jobs", "2", "--root", str(root)],
                            preexec_fn=default_sigint, cwd=root, env=cli_env({"GENSPIRV_GLSLANG": str(fake)}),
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("[1/12]")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "genspirv: interrupted" in err and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert committed_files(root) == before and stray_files(root) == []
    compiles = [ln for ln in log.read_text().splitlines() if "--version" not in ln]
    assert len(compiles) <= 6, f"{len(compiles)} of 12 compiles ran after Ctrl-C"


# -- SIGINT and SIGTERM keep every finished compile -----------------------------------

# 48 variants: a build at 2 jobs takes long enough to be stopped a quarter of the way in.
MANY = SHADER_TABLE.replace('u32 = "uint" }', 'u32 = "uint" }, K = ' + str([str(k) for k in range(16)]).replace("'", '"'))
MANY_COUNT = 48
STOP_AFTER = 12
PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (\S+)$")


def _processes_naming(path: Path) -> list[str]:
    """Command lines of running processes that name ``path`` (a compiler working on the project)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if str(path) in cmdline:
                found.append(cmdline)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_build_keeps_its_finished_compiles(tmp_path, sig):
    """A real build of 48 variants stopped after 12 finished: exit 130 with one line, no
    compiler left running, nothing committed written; the next build takes every variant
    whose progress line was printed from the cache and compiles only the others."""
    from genspirv.buildsys.builder import build
    from genspirv.project.config import load_config
    root = write_project(tmp_path / "proj", salt="1", shader_table=MANY, sources={"add.comp": ADD_COMP.format()})
    assert run_cli(["build", "--quiet"], root).returncode == 0
    set_salt(root, "2")                 # every variant stale again
    before = committed_files(root)
    proc = subprocess.Popen([sys.executable, "-m", "genspirv", "build", "--jobs", "2", "--root", str(root)],
                            preexec_fn=default_sigint, cwd=root, env=cli_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    printed = []
    for line in proc.stdout:
        m = PROGRESS.match(line.strip())
        assert m and m.group(2) == str(MANY_COUNT), line
        printed.append(m.group(3))
        if len(printed) == STOP_AFTER:
            proc.send_signal(sig)
            break
    rest, err = proc.communicate(timeout=60)
    printed += [m.group(3) for m in map(PROGRESS.match, rest.splitlines()) if m]
    assert proc.returncode == 130, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("genspirv: interrupted: ") and "nothing committed was written" in err, err
    assert _processes_naming(root) == [], "a compiler outlived the build"
    assert committed_files(root) == before and stray_files(root) == []
    assert STOP_AFTER <= len(printed) < MANY_COUNT, f"{len(printed)} compiles finished: too late to stop"

    report = build(load_config(root))
    everything = set(report.compiled) | set(report.cached)
    assert len(everything) == MANY_COUNT and not set(report.compiled) & set(report.cached)
    assert set(printed) <= set(report.cached), "a compile that finished before the signal was lost"
    assert len(report.compiled) == MANY_COUNT - len(report.cached) <= MANY_COUNT - len(printed)
    # Taken from the cache because their inputs match a blob there, not for any other reason.
    assert {s.reason.name for s in report.plan.from_cache} == {"BLOB_CHANGED"}
    load_manifest(root / MANIFEST, root=root)           # every blob the manifest's


@pytest.mark.slow
def test_sigterm_kills_a_compiler_that_would_run_for_minutes(tmp_path):
    """Without the kill, the build would wait for its compilers (GENSPIRV_COMPILER_TIMEOUT,
    120 s here) before it could exit: it must exit 130 within seconds, their processes gone."""
    root = write_project(tmp_path / "proj", salt="1", shader_table=SHADER_TABLE,
                         sources={"add.comp": ADD_COMP.format()})
    proc, started, pids = start_hanging_build(root, tmp_path)
    try:
        assert len(started) == 2 and all(alive(p) for p in started)
        stopped_at = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130 and time.monotonic() - stopped_at < 10, err
        assert err.startswith("genspirv: interrupted: 0 of 3 compiles finished"), err
        assert not any(alive(p) for p in started), "a compiler outlived the build"
        assert len(pids.read_text().split()) == 2, "a compile started after the signal"
    finally:        # a failure here must not leave the build or its sleepers behind
        proc.kill()
        proc.wait()
        for pid in started:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
