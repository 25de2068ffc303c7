"""The one atomic writer: staged files replace their targets all together or not at all."""

from __future__ import annotations

import os
import signal

import pytest

from genspirv.fsutil import StagedFiles, atomic_write, signals_deferred


def test_nothing_is_replaced_until_commit_and_discard_leaves_no_temp(tmp_path):
    a, b = tmp_path / "a", tmp_path / "sub" / "b"
    a.write_bytes(b"old a")
    with StagedFiles() as staged:
        staged.stage(a, b"new a")
        staged.stage(b, b"new b")
        assert a.read_bytes() == b"old a" and not b.exists() and len(staged) == 2
    assert a.read_bytes() == b"old a" and not b.exists()          # left the block uncommitted
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "sub"]


def test_a_file_staged_after_the_discard_is_removed_at_once(tmp_path):
    # A writer thread still running when an interrupt discarded the rest stages late: nothing of
    # it may stay beside its target. The control: staged before the discard, it is listed.
    a, late = tmp_path / "a", tmp_path / "late"
    staged = StagedFiles()
    staged.stage(a, b"new a")
    assert len(staged) == 1 and len(list(tmp_path.iterdir())) == 1
    staged.discard()
    staged.stage(late, b"late")
    assert len(staged) == 0 and list(tmp_path.iterdir()) == []


def test_a_target_that_cannot_be_staged_changes_no_other_target(tmp_path):
    """A real refusal (the folder is a regular file, ENOTDIR, which stops root too)."""
    a, blocked = tmp_path / "a", tmp_path / "blocked"
    a.write_bytes(b"old a")
    blocked.write_text("a file, not a folder")
    with pytest.raises(OSError) as info, StagedFiles() as staged:
        staged.stage(a, b"new a")
        staged.stage(blocked / "manifest.json", b"{}")
        staged.commit()
    assert info.value.filename == str(blocked / "manifest.json")
    assert a.read_bytes() == b"old a" and sorted(p.name for p in tmp_path.iterdir()) == ["a", "blocked"]


def test_commit_replaces_in_the_order_staged_with_ordinary_permissions(tmp_path, monkeypatch):
    order = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: order.append(os.path.basename(dst)) or real(src, dst))
    with StagedFiles() as staged:
        for name in ("blob1", "blob2", "manifest"):
            staged.stage(tmp_path / name, name.encode())
        staged.commit()
    assert order == ["blob1", "blob2", "manifest"]
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "manifest").stat().st_mode & 0o777 == 0o666 & ~umask
    atomic_write(tmp_path / "blob1", b"again")
    assert (tmp_path / "blob1").read_bytes() == b"again"


def test_signals_wait_for_the_end_of_a_deferred_block(tmp_path, monkeypatch):
    # Python's own Ctrl-C handler, even where the suite was started with SIGINT ignored (a
    # background job of a non-interactive shell): the test is about what the block does with it.
    monkeypatch.setattr(signal, "_test_sigint_saved", signal.signal(signal.SIGINT, signal.default_int_handler),
                        raising=False)
    done = []
    with pytest.raises(KeyboardInterrupt):
        with signals_deferred():
            signal.raise_signal(signal.SIGINT)
            done.append("the rest of the block ran")
    assert done == ["the rest of the block ran"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler      # put back
    signal.signal(signal.SIGINT, signal._test_sigint_saved)
