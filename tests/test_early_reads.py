"""A fresh clone's early reads (genspirv.buildsys.early): started in a forked child, taken by the
build only through the stat log's rules and the manifest's sha256.

Each safety case hands the build reads made before a file changed and asserts the
build saw the change; its control shows the reads did hold the old content, so a
build that trusted them blindly would have missed it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from genspirv.buildsys import committed, early, state, statlog
from genspirv.fsutil import forks_safely

pytestmark = pytest.mark.skipif(not forks_safely(), reason="early reads only where forking is safe")


@pytest.fixture
def clone(built_tiny, tmp_path, monkeypatch):
    """A fresh clone of the built tiny project (no .genspirv/), its files counted as settled."""
    monkeypatch.setattr("genspirv.buildsys.statlog.RACY_S", -1.0)
    root = tmp_path / "clone"
    shutil.copytree(built_tiny, root, ignore=shutil.ignore_patterns(".genspirv"))
    return root.resolve()


def _early(root) -> dict:
    early.start_early_reads(str(root))
    found = early.take_early_reads(str(root))
    assert found is not None
    return found


def test_the_state_file_is_the_builds_own():
    assert early.STATE_FILE == os.path.join(state.STATE_DIR, state.STATE_FILE)


def test_the_child_hashes_every_source_and_blob_and_keeps_the_manifests_build_facts(clone):
    found = _early(clone)
    assert {"glsl/neg.comp", "spirv/neg.spv", "manifests/shaders.json"} <= set(found["entries"])
    path, sha256, doc = found["manifest"]
    assert path == "manifests/shaders.json" and sha256 == found["entries"][path][4]
    entry = doc["shaders"][0]
    assert {"name", "inputs", "depends", "sha256"} <= set(entry) and "bindings" not in entry


def test_a_fresh_clone_builds_from_the_early_reads(clone, genspirv, monkeypatch):
    """The build parses no manifest and reads no file itself; control: without the child it does both."""
    control = clone.parent / "control"
    shutil.copytree(clone, control)
    runs = []
    for root, started in ((clone, True), (control, False)):
        parsed, read = [], []
        monkeypatch.setattr("genspirv.buildsys.builder.committed_manifest", _counted(parsed, committed.committed_manifest))
        monkeypatch.setattr("genspirv.buildsys.statlog._read", _counted(read, statlog._read))
        if started:
            early.start_early_reads(str(root))
        result = genspirv("build", "--root", root)
        assert result.code == 0 and result.out.startswith("genspirv build: 0 compiled, 3 up to date"), result.err
        runs.append((len(parsed), len(read), (root / ".genspirv/state.json").read_bytes()))
    assert runs[0][:2] == (0, 0) and runs[1][0] == 1 and runs[1][1] > 0
    assert runs[0][2] == runs[1][2]         # the same state either way
    assert not early._started


def _counted(calls: list, fn):
    def counted(*args, **kwargs):
        calls.append(args)
        return fn(*args, **kwargs)
    return counted


def test_a_blob_edited_after_the_early_reads_is_read_again(clone, genspirv, monkeypatch):
    found = _early(clone)
    blob = clone / "spirv/neg.spv"
    old = found["entries"]["spirv/neg.spv"][4]
    blob.write_bytes(blob.read_bytes() + b"\0\0\0\0")
    # Control: the reads hold the blob's old sha256, which a blind build would have taken.
    assert hashlib.sha256(blob.read_bytes()).hexdigest() != old
    monkeypatch.setattr("genspirv.buildsys.builder.take_early_reads", lambda root: found)
    result = genspirv("build", "--root", clone)
    assert result.code == 0 and "1 compiled, 2 up to date" in result.out, result.out + result.err
    assert hashlib.sha256(blob.read_bytes()).hexdigest() == old     # rebuilt as committed


def test_a_manifest_edited_after_the_early_reads_is_parsed_again(clone, genspirv, monkeypatch):
    found = _early(clone)
    manifest = clone / "manifests/shaders.json"
    doc = json.loads(manifest.read_text())
    old_inputs = doc["shaders"][0]["inputs"]
    doc["shaders"][0]["inputs"] = "0" * 64         # a key no input gives: that variant must rebuild
    manifest.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    monkeypatch.setattr("genspirv.buildsys.builder.take_early_reads", lambda root: found)
    result = genspirv("build", "--root", clone)
    assert result.code == 0 and "1 compiled, 2 up to date" in result.out, result.out + result.err
    assert json.loads(manifest.read_text())["shaders"][0]["inputs"] == old_inputs
    # Control: the early facts still said the old key, which a blind build would have taken.
    assert found["manifest"][2]["shaders"][0]["inputs"] == old_inputs


def test_racily_new_files_are_not_taken(built_tiny, tmp_path):
    """Files copied just now may change again within their timestamps' tick: the child logs none."""
    root = (tmp_path / "new").resolve()
    shutil.copytree(built_tiny, root, ignore=shutil.ignore_patterns(".genspirv"))
    found = _early(root)
    assert found == {"entries": {}, "manifest": None}


def test_no_child_where_there_is_state_or_no_safe_fork(built_tiny, clone, monkeypatch):
    early.start_early_reads(str(built_tiny.resolve()))          # it has .genspirv/state.json
    assert not early._started
    monkeypatch.setattr("genspirv.fsutil.forks_safely", lambda: False)
    early.start_early_reads(str(clone))
    assert not early._started and early.take_early_reads(str(clone)) is None


def test_a_child_that_fails_leaves_the_build_to_read_for_itself(clone, genspirv, monkeypatch):
    monkeypatch.setattr("genspirv.buildsys.early._read", lambda root: 1 / 0)      # the forked child inherits it
    early.start_early_reads(str(clone))
    assert early.take_early_reads(str(clone)) is None and not early._started
    early.start_early_reads(str(clone))
    result = genspirv("build", "--root", clone)
    assert result.code == 0 and result.out.startswith("genspirv build: 0 compiled, 3 up to date")
