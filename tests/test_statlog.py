"""The stat log (genspirv.buildsys.statlog) and the build's use of it: a no-op decided from stat() results,
with content hashes as the fallback, against the fake compiler (tests/fake_compiler.py)."""

from __future__ import annotations

import hashlib
import json
import os

from fake_compiler import FakeCompiler
from genspirv.buildsys.builder import build
from genspirv.project.config import load_config
from genspirv.buildsys.statlog import StatLog
from test_plan import ALL, make_project


def test_a_logged_file_is_not_read_again_and_a_changed_stat_is(tmp_path, monkeypatch):
    f = tmp_path / "a.txt"
    f.write_bytes(b"one")
    log = StatLog(tmp_path, tmp_path / "stats.json")
    monkeypatch.setattr("genspirv.buildsys.statlog.RACY_S", -1.0)     # log even a file written just now
    assert log.sha256("a.txt") == hashlib.sha256(b"one").hexdigest() and log.changed
    (tmp_path / "stats.json").write_bytes(log.data())
    again = StatLog(tmp_path, tmp_path / "stats.json")
    entry = json.loads(log.data())["files"]["a.txt"]
    again._entries["a.txt"] = entry[:4] + ["forged"]
    assert again.sha256("a.txt") == "forged" and not again.changed    # the stat matched: not read
    st = os.stat(f)
    f.write_bytes(b"two")                                             # same size, mtime put back:
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))                  # the ctime still moved
    if os.stat(f).st_ctime_ns != st.st_ctime_ns:
        assert again.sha256("a.txt") == hashlib.sha256(b"two").hexdigest() and again.changed
    assert StatLog(tmp_path, None).sha256("gone.txt") is None


def test_a_racily_new_file_is_hashed_but_not_logged(tmp_path):
    (tmp_path / "new.txt").write_bytes(b"x")
    log = StatLog(tmp_path, None)
    assert log.sha256("new.txt") == hashlib.sha256(b"x").hexdigest()
    assert json.loads(log.data())["files"] == {} and not log.changed


def test_a_noop_build_reads_no_logged_file_and_a_touched_one_rebuilds_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr("genspirv.buildsys.statlog.RACY_S", -1.0)     # files written just now count as settled
    root = make_project(tmp_path / "proj")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    first = build(load_config(root), compiler=FakeCompiler(), jobs=1)     # logs what it hashed
    assert first.compiled == () and (root / ".genspirv/stats.json").is_file()
    logged = json.loads((root / ".genspirv/stats.json").read_bytes())["files"]
    assert {"glsl/add.comp", "spirv/neg.spv", "manifests/shaders.json"} <= set(logged)

    read = []
    real = StatLog.note         # called only for a file that was read and hashed
    monkeypatch.setattr(StatLog, "note", lambda self, rel, st, digest: read.append(rel) or real(self, rel, st, digest))
    report = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert report.compiled == () and sorted(report.up_to_date) == list(ALL) and read == []

    src = root / "glsl/add.comp"
    src.write_bytes(src.read_bytes())           # touched, not changed: hashed, nothing rebuilt
    fake = FakeCompiler()
    report = build(load_config(root), compiler=fake, jobs=1)
    assert report.compiled == () and report.written == () and not fake.compiles and read == ["glsl/add.comp"]
    # Negative control: a real edit of the same file still recompiles its variants.
    src.write_bytes(src.read_bytes() + b"// edited\n")
    report = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert sorted(report.compiled) == ["add_f32", "add_i32"]


def test_a_file_is_read_whole_whatever_size_stat_gave(tmp_path):
    from genspirv.buildsys.statlog import RealDisk
    _read = RealDisk.read
    for size in (0, 1, 7730, (1 << 20) + 3):
        f = tmp_path / f"f{size}"
        data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        f.write_bytes(data)
        assert _read(str(f), size) == data
        assert _read(str(f), 0) == data and _read(str(f), max(size - 5, 0)) == data    # grew since stat()


class MemoryDisk:
    """The stat log's ``Disk`` over a dictionary: path -> bytes, each with a stat() of its own."""

    def __init__(self, now_ns: int = 10**18):
        self.files: dict[str, bytes] = {}
        self.stats: dict[str, tuple] = {}
        self.reads: list[str] = []
        self.now = now_ns

    def write(self, path: str, data: bytes, mtime_ns: int) -> None:
        from genspirv.buildsys.statlog import FileStat
        self.files[path] = data
        self.stats[path] = FileStat(len(data), mtime_ns, mtime_ns, hash(path) & 0xFFFF)

    def stat(self, path):
        return self.stats.get(path)

    def read(self, path, size):
        self.reads.append(path)
        return self.files[path]

    def now_ns(self):
        return self.now


def test_the_log_decides_in_memory_through_its_disk(tmp_path):
    """The stat log over a dictionary (ninja's DiskInterface): a settled file is hashed once, a
    racily new one every time, a changed stat() hashes again; nothing touches the file system."""
    disk = MemoryDisk()
    root = tmp_path / "nowhere"                         # never created: only the Disk answers
    settled, fresh = str(root / "a.glsl"), str(root / "b.glsl")
    disk.write(settled, b"one", mtime_ns=disk.now - 10**9 + 12345)     # not a whole second: fine timestamps
    disk.write(fresh, b"two", mtime_ns=disk.now)        # racily new: within RACY_S of now
    log = StatLog(root, None, disk)
    assert log.sha256("a.glsl") == hashlib.sha256(b"one").hexdigest()
    assert log.sha256("a.glsl") == hashlib.sha256(b"one").hexdigest()
    assert log.sha256("b.glsl") == log.sha256("b.glsl") == hashlib.sha256(b"two").hexdigest()
    assert disk.reads == [settled, fresh, fresh]
    disk.write(settled, b"ONE", mtime_ns=disk.now - 5 * 10**8 + 12345)      # edited: its stat() moved
    assert log.sha256("a.glsl") == hashlib.sha256(b"ONE").hexdigest() and disk.reads[-1] == settled
    assert log.sha256("gone.glsl") is None and not (tmp_path / "nowhere").exists()


def test_only_regular_files_are_read(tmp_path):
    """A FIFO (which would block the read) and a device (``/dev/zero``, which never ends) at a
    path the build reads are absent to it, through a symlink too; negative control: a regular
    file beside them is hashed."""
    os.mkfifo(tmp_path / "fifo.glsl")
    (tmp_path / "zero.glsl").symlink_to("/dev/zero")
    (tmp_path / "dir.glsl").mkdir()
    (tmp_path / "ok.glsl").write_bytes(b"ok")
    log = StatLog(tmp_path, None)
    assert [log.sha256(n) for n in ("fifo.glsl", "zero.glsl", "dir.glsl")] == [None, None, None]
    assert log.read("fifo.glsl") is None and log.read("zero.glsl") is None
    assert log.sha256("ok.glsl") == hashlib.sha256(b"ok").hexdigest()
