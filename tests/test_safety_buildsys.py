"""The build loop against what it does not own or cannot trust (docs/SECURITY.md): blobs it never
wrote, a running build beside a check, and a ``.genspirv/`` folder a CI cache handed over.

Against the fake compiler (tests/fake_compiler.py); each case has its negative control."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from fake_compiler import FakeCompiler
from genspirv.buildsys.builder import build, check
from genspirv.project.config import load_config
from test_plan import ALL, make_project


def test_the_first_build_keeps_a_blob_it_never_wrote(tmp_path):
    """A project whose spirv/ already holds a .spv genspirv never wrote (no manifest, no state):
    the first build names it and keeps it. Control: a blob of a variant that the build's own
    manifest listed is removed once the variant is gone."""
    root = make_project(tmp_path / "p")
    (root / "spirv").mkdir()
    theirs = root / "spirv/vendor_kernel.spv"
    theirs.write_bytes(b"\x03\x02\x23\x07 not ours")
    report = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert sorted(report.compiled) == list(ALL) and report.removed == ()
    assert report.strays == ("spirv/vendor_kernel.spv",) and theirs.read_bytes().endswith(b"not ours")
    (root / "glsl/neg.comp").unlink()
    report = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert report.removed == ("spirv/neg.spv",) and not (root / "spirv/neg.spv").exists()
    assert theirs.is_file() and report.strays == ("spirv/vendor_kernel.spv",)


def test_build_and_check_agree_on_a_stray_blob(tmp_path):
    """After a no-op the stray is still named (the no-op decides through the same loop); check
    names it too, as a stray, not an orphan a build would remove."""
    root = make_project(tmp_path / "p")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    (root / "spirv/theirs.spv").write_bytes(b"x")
    noop = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert noop.compiled == () and noop.written == () and noop.strays == ("spirv/theirs.spv",)
    assert [(d.kind, d.path) for d in check(load_config(root), compiler=FakeCompiler()).differences] == \
        [("stray", "spirv/theirs.spv")]
    assert (root / "spirv/theirs.spv").is_file()


class Holds(FakeCompiler):
    """Compiles its first variant at once and the next only once ``release`` is set, telling
    ``holding`` when it waits: the build stays inside its run, the first blob already staged
    beside its target."""

    def __init__(self):
        super().__init__()
        self.holding, self.release = threading.Event(), threading.Event()
        self.started = 0

    def compile(self, job):
        self.started += 1
        if self.started > 1:
            self.holding.set()
            assert self.release.wait(30)
        return super().compile(job)


@pytest.mark.slow
def test_check_waits_for_a_running_build_instead_of_calling_its_staged_files_leftovers(tmp_path, monkeypatch):
    root = make_project(tmp_path / "p")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    for source in ("glsl/add.comp", "glsl/neg.comp"):
        (root / source).write_text((root / source).read_text() + "// edited\n")
    holding = Holds()
    thread = threading.Thread(target=build, args=(load_config(root),), kwargs={"compiler": holding, "jobs": 1})
    thread.start()
    try:
        assert holding.holding.wait(30)
        time.sleep(0.2)                     # the writers have staged add_*'s blobs by now
        staged = [p.name for p in (root / "spirv").iterdir() if p.name.endswith(".tmp")]
        assert staged, "the running build staged nothing: this case would prove nothing"
        # Negative control: with no time to wait, the check is refused, naming the lock.
        monkeypatch.setenv("GENSPIRV_LOCK_TIMEOUT", "0.2")
        with pytest.raises(Exception, match="still held by another build or check"):
            check(load_config(root), compiler=FakeCompiler())
        monkeypatch.setenv("GENSPIRV_LOCK_TIMEOUT", "30")
        threading.Timer(0.5, holding.release.set).start()
        report = check(load_config(root), compiler=FakeCompiler())     # waits for the build
    finally:
        holding.release.set()
        thread.join(30)
    assert report.ok, [str(d) for d in report.differences]


@pytest.mark.parametrize("hostile", ["nested", "huge", "fifo", "dev_zero", "wrong_types"])
def test_a_hostile_state_folder_is_a_cold_cache(tmp_path, hostile):
    """Every file of .genspirv/ a CI cache may hand over (state, inputs, journal, stat log):
    deeply nested JSON, a file past the size bound, a FIFO, a symlink to /dev/zero, wrong types.
    Each is a cold cache: the build plans from the committed manifest and writes nothing, at once
    (the subprocess of a FIFO or /dev/zero would never return otherwise: pytest's own timeout is
    the bound). Control: the same build after the folder is repaired is a no-op too."""
    root = make_project(tmp_path / "p")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    state = root / ".genspirv"
    names = ("state.json", "inputs.json", "journal.jsonl", "stats.json")
    for name in names:
        path = state / name
        if path.exists():
            path.unlink()
        if hostile == "nested":
            path.write_text("[" * 100_000 + "]" * 100_000)
        elif hostile == "huge":
            with open(path, "wb") as f:
                f.truncate(300 << 20)           # sparse: past the bound without taking the disk
        elif hostile == "fifo":
            os.mkfifo(path)
        elif hostile == "dev_zero":
            path.symlink_to("/dev/zero")
        else:
            path.write_text(json.dumps({"schema": "genspirv-state/1", "variants": {"neg": {"deps": 5, "key": []}},
                                        "files": [1], "outputs": {"key": 3}}))
    fake = FakeCompiler()
    report = build(load_config(root), compiler=fake, jobs=1)
    assert report.compiled == () and not fake.compiles and sorted(report.up_to_date) == list(ALL)
    assert [p for p in report.written if not p.startswith(".genspirv")] == []


@pytest.mark.parametrize("dep", ["../outside-fifo", "glsl/../../outside-fifo", "glsl/a\nb.glsl"])
def test_a_record_naming_a_file_no_compile_read_is_a_cold_cache(tmp_path, dep):
    """A record of .genspirv/state.json whose files climb out of the project (or hold a control
    character) is no record genspirv wrote: dropped, its variant decided from the committed
    manifest, nothing it names opened (a FIFO there would hang the build). Control: the same
    record naming its own files is taken (the build plans from it, reading nothing)."""
    root = make_project(tmp_path / "p")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    os.mkfifo(tmp_path / "outside-fifo")
    state = root / ".genspirv/state.json"
    doc = json.loads(state.read_text())
    doc["variants"]["neg"]["deps"] = ["glsl/neg.comp", dep]
    state.write_text(json.dumps(doc))
    fake = FakeCompiler()
    report = build(load_config(root), compiler=fake, jobs=1)
    assert report.compiled == () and not fake.compiles and "neg" in report.up_to_date
    from genspirv.buildsys.keys import Record
    assert Record.from_doc(doc["variants"]["neg"]) is None
    assert Record.from_doc(dict(doc["variants"]["neg"], deps=["glsl/neg.comp", "/usr/include/x.h"])) is not None
