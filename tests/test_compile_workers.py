"""Compiles in worker processes (genspirv/buildsys/compile_workers.py) against compiles on threads.

The two paths must be one behaviour: the same blobs and manifest byte for byte,
the same ``-v`` command lines and progress lines, the same error (type, message,
attributes, exit code) for a shader that does not compile, an optional variant a
compiler lacks a feature for, a compiler that crashes or hangs; and an
interrupted or killed build leaves no worker and no tool running. Which path a
build takes is forced here by ``VARIANTS_PER_JOB`` (in-process builds) or by a
plan large enough for its ``--jobs`` (builds run as a user does). The pool's own
protocol (notes, errors over the pipe, a worker that dies) is tested on the
handlers of tests/worker_handlers.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

import pytest

from faults import (ADD_COMP, SCALE_COMP, SHADER_TABLE, alive, children_running, committed_files, fake_glslang,
                    start_hanging_build, write_project)
from genspirv.buildsys import compile as compile_mod
from genspirv.buildsys import compile_workers
import genspirv.buildsys.builder as builder_mod
import genspirv.buildsys.check as check_mod
from genspirv.buildsys.builder import build
from genspirv.buildsys.builder import check
from genspirv.errors import (CompileError, CompilerCrashError, GenspirvError, SpirvError, ToolchainError,
                             UnavailableError)
from genspirv.project.config import load_config
from genspirv.project.variants import CompilerName, Variant
from genspirv.toolchain.chain import Compilers
from genspirv.toolchain.compiler import Job
from genspirv.toolchain.workers import WorkerPool

TESTS = Path(__file__).resolve().parent


# -- which compiles go to worker processes ---------------------------------------------------


class _Shipping:
    """A compiler that says it ships (nothing is compiled: no worker is started here)."""

    ships_to_workers = True
    version = "13.1.1"
    optimizer_version = None


class _Staying:
    version = "other 1"
    optimizer_version = None


def _jobs(n: int, compilers: tuple[CompilerName, ...] = (CompilerName.GLSLANG,), optional: bool = False) -> list[Job]:
    return [Job(Variant(f"v{i}", "glsl/v.comp", (), optional=optional, compilers=compilers), Path("/p"), (), True,
                Path("/w") / f"v{i}") for i in range(n)]


def test_only_a_plan_of_more_than_two_compiles_per_job_whose_chain_ships_goes_to_workers():
    ships = Compilers(_Shipping())
    assert compile_workers.open_workers(ships, _jobs(4), 2) is None         # 2 per job: threads
    workers = compile_workers.open_workers(ships, _jobs(5), 2)
    assert workers is not None and workers.pool.started == 0                # started on demand only
    assert workers.takes(_jobs(1)[0])
    # A compiler that does not say it ships (the tests' fake, slang-glslang) stays on threads.
    assert compile_workers.open_workers(Compilers(_Staying()), _jobs(50), 2) is None
    slang = Compilers(_Shipping(), {CompilerName.SLANG_GLSLANG: _Staying()})
    chained = _jobs(50, (CompilerName.GLSLANG, CompilerName.SLANG_GLSLANG), optional=True)
    assert not slang.ships(chained[0].variant) and compile_workers.open_workers(slang, chained, 2) is None
    # Absent, a compiler of the chain is only a refusal's text: that ships.
    absent = Compilers(_Shipping(), absent={CompilerName.SLANG_GLSLANG: "pip install it"})
    assert absent.ships(chained[0].variant)
    assert set(absent.shipped().absent) == {CompilerName.SLANG_GLSLANG} and not slang.shipped().by_name.keys() - {
        CompilerName.GLSLANG}


# -- the pool's protocol ---------------------------------------------------------------------


@pytest.fixture
def echo_pool(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p))
    pool = WorkerPool("worker_handlers:open_echo", "set up", 1, label="echo", timeout_s=60)
    yield pool
    pool.close()
    assert pool.worker_pids() == []


def test_a_job_hears_its_notes_in_order_and_an_error_comes_back_as_raised(echo_pool):
    heard = []
    assert echo_pool.run(("notes", [["a", "1"], ["b"]]), "v", "v.comp", note=heard.append) == 2
    assert heard == [["a", "1"], ["b"]]
    assert echo_pool.run(("setup", None), "v", "v.comp") == "set up"
    sent = UnavailableError("v: needs X", missing=("X",), messages="v.comp:2: error: X", source="v.comp",
                            compiler="glslang")
    with pytest.raises(UnavailableError) as got:
        echo_pool.run(("raise", sent), "v", "v.comp")
    assert (str(got.value), got.value.missing, got.value.messages, got.value.source, got.value.compiler) == \
        (str(sent), sent.missing, sent.messages, sent.source, sent.compiler)
    with pytest.raises(SpirvError) as spirv:
        echo_pool.run(("raise", SpirvError("bad word", offset=7)), "v", "v.comp")
    assert str(spirv.value) == "bad word (at word 7)" and spirv.value.offset == 7
    with pytest.raises(KeyError) as plain:        # not one of ours: its worker traceback rides along
        echo_pool.run(("keyerror", "k"), "v", "v.comp")
    assert "in a worker process" in "".join(getattr(plain.value, "__notes__", []))
    assert echo_pool.started == 1                 # errors are answers: the one worker served them all


def test_a_worker_that_dies_costs_its_job_and_is_replaced(echo_pool):
    with pytest.raises(CompilerCrashError) as crash:
        echo_pool.run(("die", None), "v", "v.comp")
    assert str(crash.value).startswith("v: the echo worker crashed (signal 9, SIGKILL) compiling v.comp")
    assert not isinstance(crash.value, ToolchainError) and crash.value.source == "v.comp"
    assert echo_pool.run(("setup", None), "w", "w.comp") == "set up" and echo_pool.started == 2


@pytest.mark.parametrize("factory, said", [
    ("worker_handlers:open_broken", "cannot set up: no library"),
    ("worker_handlers:open_missing", "cannot set up worker_handlers:open_missing: ModuleNotFoundError: No module "
                                     "named 'genspirv_no_such_module'")])
def test_a_worker_that_cannot_set_up_answers_each_job_with_why(monkeypatch, factory, said):
    """A ToolchainError either way (it stops a build): the factory's own, or one naming what failed."""
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    pool = WorkerPool(factory, "no library", 1, label="echo", timeout_s=60)
    try:
        for _ in range(2):
            with pytest.raises(ToolchainError) as refusal:
                pool.run(("setup", None), "v", "v.comp")
            assert said in str(refusal.value)
        assert pool.started == 1
    finally:
        pool.close()


# -- one behaviour on both paths ---------------------------------------------------------------


def _processes(monkeypatch) -> list:
    """Force the build's compiles into worker processes; the list of the pools it opens."""
    opened: list = []
    monkeypatch.setattr(compile_workers, "VARIANTS_PER_JOB", 0)
    real = compile_mod.open_workers

    def spy(*args):
        workers = real(*args)
        if workers is not None:
            opened.append(workers)
        return workers

    monkeypatch.setattr(compile_mod, "open_workers", spy)
    return opened


def _run(root: Path, **kw):
    """Build ``root``, forced and at two jobs: (report or error, -v lines, progress lines)."""
    commands, progress = [], []
    try:
        got = build(load_config(root), jobs=2, force=True, log=progress.append,
                    on_command=lambda cmd: commands.append(" ".join(cmd)), **kw)
    except GenspirvError as exc:
        got = exc
    # Each build compiles in a temporary folder of its own: its name and the root are all that differ.
    lines = sorted(re.sub(r"/compile-[^/]+/", "/compile-X/", line.replace(str(root), "ROOT")) for line in commands)
    # The [n/N] count follows the order compiles finish in, which differs from run to run.
    return got, lines, sorted(re.sub(r"^\[\d+/", "[n/", line) for line in progress)


def _project(root: Path) -> Path:
    table = SHADER_TABLE + '\noptimize = true\n'        # scale.comp through spirv-opt too
    return write_project(root, shader_table=table)


@pytest.mark.slow
def test_both_paths_give_the_same_blobs_manifest_commands_and_progress(tmp_path, monkeypatch):
    results = {}
    for name, cutoff in (("threads", 10**6), ("processes", 0)):
        monkeypatch.setattr(compile_workers, "VARIANTS_PER_JOB", cutoff)
        root = _project(tmp_path / name)
        report, commands, progress = _run(root)
        assert not isinstance(report, Exception), report
        assert len(report.compiled) == 6 and not report.failed
        results[name] = (committed_files(root), commands, progress)
    threads, processes = results["threads"], results["processes"]
    assert processes[0] == threads[0]           # every blob and the manifest, byte for byte
    assert processes[1] == threads[1] and any("spirv-opt" in line for line in threads[1])
    assert processes[2] == threads[2] and len(threads[2]) == 6


@pytest.mark.slow
def test_a_build_that_compiles_everything_starts_its_workers_before_its_plan(tmp_path, monkeypatch):
    # A first build, --force and check compile every variant: their workers start before the plan
    # is made (their Python start overlaps it); a rebuild of what changed starts them on demand.
    monkeypatch.setattr(compile_workers, "VARIANTS_PER_JOB", 0)
    events: list[str] = []
    real_start, real_plan = WorkerPool.start, builder_mod.make_plan
    monkeypatch.setattr(WorkerPool, "start", lambda pool: events.append("workers") or real_start(pool))
    monkeypatch.setattr(builder_mod, "make_plan", lambda *a, **kw: events.append("plan") or real_plan(*a, **kw))
    root = _project(tmp_path / "p")
    assert len(build(load_config(root), jobs=2).compiled) == 6 and events == ["workers", "plan"]
    events.clear()
    (root / "glsl/add.comp").write_text(ADD_COMP.format() + "// edited\n")
    assert len(build(load_config(root), jobs=2).compiled) == 3 and events == ["plan"]
    events.clear()
    assert len(build(load_config(root), jobs=2, force=True).compiled) == 6 and events == ["workers", "plan"]
    events.clear()
    assert check(load_config(root), jobs=2).differences == () and events == ["workers", "plan"]


def test_workers_started_for_a_plan_that_fails_are_stopped(tmp_path, monkeypatch):
    # Only this build's workers: other tests' pools (slang-glslang's) may still run in this process.
    monkeypatch.setattr(compile_workers, "VARIANTS_PER_JOB", 0)
    started: list[int] = []
    real_start = WorkerPool.start
    monkeypatch.setattr(WorkerPool, "start", lambda pool: (real_start(pool), started.extend(pool.worker_pids())))

    def refuse(*a, **kw):
        assert len(started) == 2 and all(map(alive, started))       # they were started
        raise GenspirvError("the plan failed")
    monkeypatch.setattr(builder_mod, "make_plan", refuse)
    with pytest.raises(GenspirvError, match="the plan failed"):
        build(load_config(_project(tmp_path / "p")), jobs=2)
    assert started and not any(map(alive, started))


BAD = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undefined_thing = 1; }\n"
NEEDS = "#version 450\n#extension GL_EXT_float_e4m3 : require\nlayout(local_size_x = 1) in;\nvoid main() {}\n"
FAULTS_TABLE = SHADER_TABLE + """
[tool.genspirv.shaders."bad.comp"]
[tool.genspirv.shaders."needs.comp"]
optional = true
[tool.genspirv.shaders."bom.comp"]
"""


def _error_facts(exc: GenspirvError) -> tuple:
    def facts(e):
        return (type(e).__name__, str(e), getattr(e, "messages", None), getattr(e, "source", None),
                getattr(e, "missing", None), getattr(e, "compiler", None), e.exit_code)
    report = exc.report
    return (facts(exc), {name: facts(e) for name, e in exc.failures.items()},
            sorted(report.compiled), report.unavailable, report.unavailable_because, sorted(report.failed))


@pytest.mark.slow
def test_both_paths_fail_alike_on_a_broken_shader_a_missing_feature_and_a_byte_order_mark(tmp_path, monkeypatch):
    facts = {}
    for name, cutoff in (("threads", 10**6), ("processes", 0)):
        monkeypatch.setattr(compile_workers, "VARIANTS_PER_JOB", cutoff)
        root = write_project(tmp_path / name, shader_table=FAULTS_TABLE,
                             sources={"add.comp": ADD_COMP.format(), "scale.comp": SCALE_COMP.format(),
                                      "bad.comp": BAD, "needs.comp": NEEDS})
        (root / "glsl/bom.comp").write_bytes(b"\xef\xbb\xbf" + BAD.encode())
        error, commands, progress = _run(root)
        assert isinstance(error, CompileError), error
        facts[name] = (_error_facts(error), commands, progress)
    assert facts["processes"] == facts["threads"]
    (top, failures, compiled, unavailable, _, failed), _, progress = facts["threads"]
    assert failed == ["bad", "bom"] and len(compiled) == 6 and unavailable == (("needs", ("GL_EXT_float_e4m3",)),)
    assert failures["bad"][3] == "glsl/bad.comp" and "undefined_thing" in failures["bad"][2]
    assert sum(line.endswith(" FAILED") for line in progress) == 2


@pytest.mark.slow
@pytest.mark.parametrize("mode, said", [("segv", "crashed (signal 11)"), ("hang", "did not finish within 1 s")])
def test_both_paths_name_a_crashing_or_hanging_compiler_alike(tmp_path, monkeypatch, mode, said):
    """The compiler (not a worker) crashes or hangs: a ToolchainError naming the variant, exit 2,
    on either path; in the process path, from the worker that ran it."""
    monkeypatch.setenv("GENSPIRV_GLSLANG", str(fake_glslang(tmp_path / "bin", mode)))
    monkeypatch.setenv("GENSPIRV_COMPILER_TIMEOUT", "1")
    facts = {}
    for name, cutoff in (("threads", 10**6), ("processes", 0)):
        monkeypatch.setattr(compile_workers, "VARIANTS_PER_JOB", cutoff)
        root = write_project(tmp_path / name, shader_table=SHADER_TABLE.replace('"128", "256"', '"128"'))
        error, commands, _ = _run(root)
        assert isinstance(error, ToolchainError) and error.exit_code == 2, error
        assert said in str(error) and re.search(r"\b(add|scale)_\w+: ", str(error)), error
        # Which variants had started differs from run to run: the message of one, not which one.
        facts[name] = {re.sub(r"^\w+: |\bon glsl/\w+\.comp", "", str(e)) for e in error.failures.values()}
    assert facts["processes"] == facts["threads"]


WORKER_KILLING_GLSLANG = """\
#!/bin/sh
for arg in "$@"; do
    case "$arg" in --version) echo "Glslang Version: 11:13.1.1"; exit 0;; esac
done
case "$*" in *scale.comp*) echo $$ >> "{pids}"; kill -KILL $PPID; exec sleep 300;; esac
exec "{real}" "$@"
"""


@pytest.mark.slow
def test_a_worker_killed_mid_compile_costs_that_variant_only(tmp_path, monkeypatch):
    """A glslang that kills the process that started it, for scale.comp only: in a worker, that
    worker dies and its variant fails with a CompilerCrashError naming it, while every other
    variant builds in a new worker. (On a thread that process is the build itself.)"""
    opened = _processes(monkeypatch)
    from genspirv.toolchain.tools import find_tool
    real = find_tool("glslangValidator")
    pids = tmp_path / "pids"
    fake = tmp_path / "bin" / "glslangValidator"
    fake.parent.mkdir()
    fake.write_text(WORKER_KILLING_GLSLANG.format(real=real.path, pids=pids))
    fake.chmod(0o755)
    monkeypatch.setenv("GENSPIRV_GLSLANG", str(fake))
    monkeypatch.setenv("LD_LIBRARY_PATH", str(real.lib_dir))
    root = write_project(tmp_path / "p", shader_table=SHADER_TABLE.replace('"128", "256"', '"128"'))
    error, _, progress = _run(root)
    sleepers = [int(p) for p in pids.read_text().split()]
    try:
        assert isinstance(error, CompilerCrashError) and error.exit_code == 1, error
        assert sorted(error.failures) == ["scale_128", "scale_64"]
        for variant, exc in error.failures.items():
            assert str(exc).startswith(f"{variant}: the compile worker crashed (signal 9, SIGKILL) compiling "
                                       "glsl/scale.comp; only this variant is lost"), exc
        assert sorted(error.report.compiled) == ["add_f32", "add_i32", "add_u32"]
        assert opened and opened[0].pool.started >= 3 and opened[0].pool.worker_pids() == []
        # The dead worker's process group went with it: the compiler it started is not left running.
        assert len(sleepers) == 2 and _gone(sleepers), "a compiler outlived its worker"
    finally:
        for pid in sleepers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# -- interrupted or killed: nothing left running -----------------------------------------------

# 12 variants at --jobs 2: more than two compiles per job, so the build's own CLI takes the
# process path (at 3 variants, test_interrupt's same test takes the thread path).
TWELVE = """\
[tool.genspirv.shaders."add.comp"]
matrix = { TYPE = { f32 = "float", i32 = "int", u32 = "uint" }, K = ["1", "2", "3", "4"] }
"""


def _hanging_build(tmp_path: Path):
    root = write_project(tmp_path / "proj", salt="1", shader_table=TWELVE, sources={"add.comp": ADD_COMP.format()})
    return start_hanging_build(root, tmp_path)


def _gone(pids: list[int], within_s: float = 30) -> bool:
    deadline = time.monotonic() + within_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(alive(p) for p in pids)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_kills_every_worker_and_the_compilers_they_started(tmp_path, sig):
    proc, started, pids = _hanging_build(tmp_path)
    workers = children_running(proc.pid, "genspirv.buildsys.compile_workers")
    try:
        assert len(started) == 2 and all(alive(p) for p in started)
        assert len(workers) == 2 and all(alive(p) for p in workers), "not the process path"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert err.startswith("genspirv: interrupted: 0 of 12 compiles finished") and "Traceback" not in err, err
        assert not any(alive(p) for p in started), "a compiler outlived the build"
        assert not any(alive(p) for p in workers), "a worker outlived the build"
        assert len(pids.read_text().split()) == 2, "a compile started after the signal"
    finally:        # a failure here must not leave the build or its sleepers behind
        proc.kill()
        proc.wait()
        for pid in started + workers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_a_build_killed_outright_takes_its_workers_compilers_with_it(tmp_path):
    """SIGKILL gives the build no say: each worker sees its end of the job pipe close and kills
    its own process group, so the compilers do not run on for minutes."""
    proc, started, _ = _hanging_build(tmp_path)
    workers = children_running(proc.pid, "genspirv.buildsys.compile_workers")
    try:
        assert len(started) == 2 and len(workers) == 2
        proc.kill()
        proc.communicate(timeout=60)
        assert _gone(workers) and _gone(started), "a worker or its compiler outlived the killed build"
    finally:
        for pid in started + workers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
