"""The toolchain where POSIX-only modules are missing, as on Windows.

The wheel is ``py3-none-any``: it must import and build where ``fcntl`` and
``resource`` do not exist. A ``sitecustomize`` on PYTHONPATH makes both
unimportable in every Python the test starts and, in their place, gives
``msvcrt`` with Windows' ``locking`` semantics (one byte at the file position,
LK_NBLCK raises EACCES while another process holds it), built on ``lockf`` taken
before the block: the build's lock then runs through the code path Windows
takes. Each check carries a control that shows the stand-in would be caught.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from genspirv import fsutil
from genspirv.statedir import project_lock
from genspirv.errors import LockError

REPO = Path(__file__).resolve().parent.parent

SITECUSTOMIZE = textwrap.dedent('''\
    import errno, os, sys, types
    import fcntl as _fcntl
    # These stdlib modules decide "is this Windows?" by importing msvcrt: let them decide first.
    import getpass, subprocess

    def _locking(fd, mode, nbytes):
        # msvcrt.locking: nbytes from the current position; LK_NBLCK fails with EACCES when held.
        with open(os.environ["MSVCRT_LOG"], "a") as log:
            log.write(f"locking {mode}\\n")
        start = os.lseek(fd, 0, os.SEEK_CUR)
        cmd = _fcntl.LOCK_UN if mode == 0 else _fcntl.LOCK_EX | _fcntl.LOCK_NB
        try:
            _fcntl.lockf(fd, cmd, nbytes, start, 0)
        except OSError:
            raise OSError(errno.EACCES, "Permission denied") from None

    msvcrt = types.ModuleType("msvcrt")
    msvcrt.LK_UNLCK, msvcrt.LK_LOCK, msvcrt.LK_NBLCK = 0, 1, 2
    msvcrt.locking = _locking
    sys.modules["msvcrt"] = msvcrt

    class _Missing:
        """fcntl and resource do not exist here."""
        def find_spec(self, name, path=None, target=None):
            if name in ("fcntl", "resource"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    for _name in ("fcntl", "resource"):
        sys.modules.pop(_name, None)
    sys.meta_path.insert(0, _Missing())
''')

IMPORT_ALL = textwrap.dedent('''\
    import importlib, pkgutil, sys
    import genspirv
    failed = []
    names = [m.name for m in pkgutil.walk_packages(genspirv.__path__, "genspirv.")
             if not m.name.endswith("__main__")]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed.append(f"{name}: {exc!r}")
    assert not failed, failed
    assert "fcntl" not in sys.modules and "resource" not in sys.modules
    print(len(names), "modules")
''')


@pytest.fixture
def windows_like(tmp_path) -> dict[str, str]:
    """The environment of a Python without fcntl and resource, with msvcrt."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    env["MSVCRT_LOG"] = str(tmp_path / "msvcrt.log")
    return env


def genspirv(env, *args, cwd, ok=True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "genspirv", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    if ok:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.mark.slow
def test_every_module_imports_without_fcntl_and_resource(windows_like, tmp_path):
    proc = subprocess.run([sys.executable, "-c", IMPORT_ALL], cwd=tmp_path, env=windows_like,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert int(proc.stdout.split()[0]) >= 50, proc.stdout
    # Control: the stand-in really hides fcntl.
    blocked = subprocess.run([sys.executable, "-c", "import fcntl"], env=windows_like, capture_output=True,
                             text=True, timeout=60)
    assert blocked.returncode == 1 and "No module named 'fcntl'" in blocked.stderr


@pytest.mark.slow
def test_a_project_builds_and_checks_without_fcntl_and_resource(windows_like, tmp_path):
    genspirv(windows_like, "init", "p", cwd=tmp_path)
    project = tmp_path / "p"
    out = genspirv(windows_like, "build", cwd=project).stdout
    assert out.splitlines()[-1] == "genspirv build: 1 compiled, 0 up to date, 0 removed, 2 files written", out
    checked = genspirv(windows_like, "check", cwd=project).stdout
    assert checked.splitlines()[-1] == "genspirv check: 2 files up to date", checked
    # The lock went through msvcrt: taken (LK_NBLCK) and released (LK_UNLCK).
    calls = Path(windows_like["MSVCRT_LOG"]).read_text().split("\n")
    assert "locking 2" in calls and "locking 0" in calls, calls


HOLD = textwrap.dedent('''\
    import sys
    from pathlib import Path
    from genspirv.statedir import project_lock
    with project_lock(Path(sys.argv[1])):
        print("held", flush=True)
        sys.stdin.read()
''')


@pytest.mark.slow
def test_the_msvcrt_lock_keeps_a_second_build_out(windows_like, tmp_path):
    genspirv(windows_like, "init", "p", cwd=tmp_path)
    project = tmp_path / "p"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(project)], env=windows_like, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == "held\n"
        env = dict(windows_like, GENSPIRV_LOCK_TIMEOUT="0.3")
        waited = genspirv(env, "build", cwd=project, ok=False)
        assert waited.returncode == 2, waited.stdout + waited.stderr
        assert "is still held by another build or check after 0.3 s" in waited.stderr, waited.stderr
    finally:
        holder.communicate("", timeout=60)
    # Control: once the holder has let go, the same build goes through.
    assert genspirv(env, "build", cwd=project).returncode == 0


def test_without_flock_or_msvcrt_locking_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(fsutil, "fcntl", None)
    monkeypatch.setattr(fsutil, "msvcrt", None)
    with pytest.raises(LockError, match=r"cannot lock .*lock: this platform has neither fcntl.flock nor msvcrt"):
        with project_lock(tmp_path):
            pass


def test_try_lock_reports_a_lock_held_elsewhere(tmp_path):
    """Control for the flock path: a second open file description is refused, then let in."""
    path = tmp_path / "lock"
    with open(path, "a+b") as first, open(path, "a+b") as second:
        assert fsutil.try_lock(first)
        assert not fsutil.try_lock(second)
        fsutil.unlock(first)
        assert fsutil.try_lock(second)
        fsutil.unlock(second)


def test_try_lock_passes_on_other_errors(tmp_path, monkeypatch):
    class Broken:
        LOCK_EX = LOCK_NB = LOCK_UN = 0

        @staticmethod
        def flock(fd, op):
            raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(fsutil, "fcntl", Broken)
    with open(tmp_path / "lock", "a+b") as f, pytest.raises(OSError, match="Bad file descriptor"):
        fsutil.try_lock(f)
