"""A generator run where fork is missing (Windows) or unsafe (macOS): in a fresh interpreter.

Each test takes fork away in this process (``os.fork`` deleted, as on Windows,
or ``sys.platform`` set to ``darwin``) and runs a generator through the build's
own entry points. The generator says whether it runs in a copy of this process
(pytest loaded) or in a fresh Python, so the path taken is asserted, not
assumed; with fork present (Linux) it is the copy, the control. The faults are
those the fork path already meets (tests/test_reliability_inputs.py): a
generator that never returns, one whose process ends, one that raises, each
one line naming the file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from genspirv.project import isolated
from genspirv.project.config import load_config
from genspirv.errors import ConfigError

COMP = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"


def project(root: Path, generator: str) -> Path:
    (root / "glsl").mkdir(parents=True)
    (root / "glsl/a.comp").write_text(COMP)
    (root / "tools").mkdir()
    (root / "tools/gen.py").write_text(textwrap.dedent(generator))
    (root / "pyproject.toml").write_text('[tool.genspirv]\ngenerator = "tools/gen.py"\n')
    return root


@pytest.fixture
def no_fork(monkeypatch):
    """This Python as Windows has it: no os.fork."""
    monkeypatch.delattr(os, "fork")


WHERE = """\
    import sys
    import helper
    def variants():
        print("printed by the generator")
        where = "copy" if "_pytest" in sys.modules else "fresh"
        return [{"name": where, "source": "a.comp", "defines": {"N": helper.N}}]
    """


@pytest.mark.parametrize("platform, fork, where", [("linux", True, "copy"), ("darwin", True, "fresh"),
                                                   ("win32", False, "fresh")])
def test_a_generator_runs_in_a_fresh_interpreter_where_fork_is_missing_or_unsafe(tmp_path, monkeypatch, capfd,
                                                                                 platform, fork, where):
    root = project(tmp_path, WHERE)
    (root / "tools/helper.py").write_text("N = '3'\n")
    monkeypatch.setattr(sys, "platform", platform)
    if not fork:
        monkeypatch.delattr(os, "fork")
    assert [(v.name, v.defines) for v in load_config(root).variants] == [(where, (("N", "3"),))]
    assert not (root / "tools/__pycache__").exists()
    # What the generator prints reaches the user; in a fresh Python, on stderr (its stdout carries the answer).
    out, err = capfd.readouterr()
    assert "printed by the generator" in (out if where == "copy" else err)


@pytest.mark.slow
def test_without_fork_a_generator_that_never_returns_is_killed_at_the_deadline(tmp_path, no_fork, genspirv):
    root = project(tmp_path, """\
        import os, pathlib
        def variants():
            pathlib.Path(__file__).with_name("pid").write_text(str(os.getpid()))
            while True:
                pass
        """)
    # 1 s, not the fork test's 0.5: a fresh Python must start and import genspirv before variants() runs.
    result = genspirv("build", "--root", root, env={"GENSPIRV_GENERATOR_TIMEOUT": "1"})
    assert result.code == 2
    assert result.err.splitlines() == [
        "genspirv: error: tools/gen.py: the generator did not finish in variants() within 1 s and was stopped: "
        "make it quicker (it runs on every build and check), or raise GENSPIRV_GENERATOR_TIMEOUT"]
    pid = int((root / "tools/pid").read_text())
    assert pid != os.getpid()
    with pytest.raises(ProcessLookupError):     # killed and reaped, not left running
        os.kill(pid, 0)


@pytest.mark.parametrize("body, message", [
    ("return [1 / 0]", "tools/gen.py:3: the generator failed in variants(): ZeroDivisionError: division by zero"),
    ("raise KeyboardInterrupt('stop')", "tools/gen.py: the generator failed: KeyboardInterrupt: stop"),
    ("os._exit(3)", "tools/gen.py: the generator's process ended in variants() without giving its variants "
                    "(exit status 3)"),
    ("os.kill(os.getpid(), signal.SIGKILL)", "tools/gen.py: the generator's process ended in variants() without "
                                             "giving its variants (killed by signal 9)"),
], ids=["raises", "interrupted", "exits", "crashes"])
def test_without_fork_a_generator_that_raises_or_dies_is_one_line_naming_it(tmp_path, no_fork, body, message):
    root = project(tmp_path, f"import os, signal\ndef variants():\n    {body}\n")
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert str(info.value) == message


def test_without_fork_a_python_that_cannot_start_is_one_line(tmp_path, no_fork, monkeypatch):
    root = project(tmp_path, "def variants():\n    return []\n")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    with pytest.raises(ConfigError, match=r"^tools/gen.py: the generator's process ended while loading without "
                                          r"giving its variants \(no Python could be started from sys.executable "
                                          r"'.*no-python': .*No such file"):
        load_config(root)


ARM = "import signal, sys, time\n{}from genspirv.project import isolated\nisolated._arm(0.05)\ntime.sleep(30)\n"


@pytest.mark.slow
def test_the_childs_own_alarm_ends_it_with_setitimer_and_without():
    """Windows has no setitimer: a thread ends the child at its deadline instead (exit status RUNG)."""
    for hide, code in (("del signal.setitimer\n", isolated.RUNG), ("", -signal.SIGALRM)):
        proc = subprocess.run([sys.executable, "-c", ARM.format(hide)], capture_output=True, text=True, timeout=20)
        assert proc.returncode == code, proc.stderr


# -- programs a generator starts ---------------------------------------------------------------------

HELPER = """\
    import os, pathlib
    def variants():
        # A helper left running with the build's stdout and stderr (a server, a watcher, a
        # daemonised tool): it says it started, then sleeps past any test's patience.
        marker = pathlib.Path(__file__).with_name("helper-started")
        os.system(f"sh -c 'echo $$ > {marker}; exec sleep 30' &")
        while not marker.exists() or not marker.read_text().strip():
            pass
        return [{"name": "a", "source": "a.comp"}]
    """
# The build as a user's script or CI step sees it: its stdout and stderr pipes, read to their end.
NO_FORK = "import os, sys; del os.fork; from genspirv.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("fork", [True, False], ids=["fork", "fresh-python"])
def test_a_helper_a_generator_leaves_running_does_not_hold_the_builds_output_open(tmp_path, fork):
    """Was: the build exited, but its stdout stayed open until the helper's ``sleep 30`` ended,
    so a caller reading the output to its end waited 30 s. The generator's process group is
    ended once it has answered. Control: the helper did start (it wrote its pid), and is gone."""
    root = project(tmp_path, HELPER)
    command = ["-m", "genspirv"] if fork else ["-c", NO_FORK]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, *command, "build", "--root", str(root)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=20)     # both pipes at EOF: no process holds them
    finally:
        proc.kill()
    assert time.monotonic() - start < 20 and proc.returncode == 0, err
    helper = int((root / "tools/helper-started").read_text())
    assert helper != proc.pid
    deadline = time.monotonic() + 5
    while _alive(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(helper)


def _alive(pid: int) -> bool:
    """A process that is running (a zombie waiting for its parent to reap it is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
def test_a_generator_that_never_returns_is_ended_with_the_programs_it_started(tmp_path, genspirv):
    """At the deadline the whole group goes: the generator and the helper it started."""
    root = project(tmp_path, HELPER.replace('return [{"name": "a", "source": "a.comp"}]', "while True: pass"))
    result = genspirv("build", "--root", root, env={"GENSPIRV_GENERATOR_TIMEOUT": "1"})
    assert result.code == 2 and "did not finish in variants() within 1 s" in result.err
    helper = int((root / "tools/helper-started").read_text())
    deadline = time.monotonic() + 5
    while _alive(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(helper)


def test_a_generator_may_run_programs(tmp_path):
    """``git describe`` and the like: a generator's own programs run and finish within it."""
    root = project(tmp_path, """\
        import subprocess, sys
        def variants():
            subprocess.run(["true"], check=True)
            out = subprocess.run([sys.executable, "-c", "print('v1.2')"], capture_output=True, text=True,
                                 check=True).stdout.strip()
            return [{"name": "a", "source": "a.comp", "defines": {"VERSION": out}}]
        """)
    assert [(v.name, v.defines) for v in load_config(root).variants] == [("a", (("VERSION", "v1.2"),))]


# -- a deadline a stage ----------------------------------------------------------------------------

def _stages(stage, n: int, seconds: float) -> int:
    for i in range(n):
        stage(str(i))
        time.sleep(seconds)
    return n


@pytest.mark.slow
@pytest.mark.parametrize("fork", [True, False], ids=["fork", "fresh-python"])
def test_per_stage_the_deadline_bounds_each_stage_not_the_whole_call(monkeypatch, fork):
    """Several outputs in one child, each with the time one would have alone: four stages of
    0.4 s under 1 s pass; the control, the same call with one deadline for all, is stopped."""
    if not fork:
        monkeypatch.delattr(os, "fork")
    assert isolated.call_in_child(_stages, (4, 0.4), 1.0, per_stage=True) == 4
    with pytest.raises(isolated.Overran) as info:
        isolated.call_in_child(_stages, (4, 0.4), 1.0)
    assert info.value.stage in {"1", "2"}
    with pytest.raises(isolated.Overran) as info:        # one stage past the deadline still is
        isolated.call_in_child(_stages, (2, 3.0), 1.0, per_stage=True)
    assert info.value.stage == "0"
