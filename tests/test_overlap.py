"""What the build does while compiles run instead of after the last one: each blob staged and
its manifest entry rendered as its compile finishes, the longest compiles started first,
check comparing as it goes. The bytes must be the ones the serial path gave."""

from __future__ import annotations

import dataclasses
import json

import pytest

from fake_compiler import ERROR_MARK, FakeCompiler
from genspirv import manifest as manifest_mod
from genspirv.buildsys.builder import build
from genspirv.buildsys.keys import Record
from genspirv.buildsys.builder import check
from genspirv.buildsys.compile import longest_first
from genspirv.project.config import load_config
from genspirv.errors import CompileError
from test_plan import ALL, NEG, committed, make_project


@pytest.fixture
def built_manifest(tmp_path):
    root = make_project(tmp_path / "proj")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    return root, manifest_mod.load_manifest(root / "manifests/shaders.json", root)


def test_entries_rendered_apart_splice_into_the_same_bytes(built_manifest):
    root, man = built_manifest
    man = dataclasses.replace(man, unavailable=(manifest_mod.Unavailable("zz", "glsl/z.comp", ("GL_EXT_x",), "k",
                                                                          ("glsl/z.comp",)),))
    plain = (json.dumps(manifest_mod.manifest_to_dict(man), indent=2, sort_keys=True, ensure_ascii=False)
             + "\n").encode()
    texts = {e.name: (e, manifest_mod.render_entry(e)) for e in man.shaders}
    assert manifest_mod.dumps(man) == plain and manifest_mod.dumps(man, texts) == plain
    assert manifest_mod.dumps(dataclasses.replace(man, shaders=())) == (json.dumps(
        manifest_mod.manifest_to_dict(dataclasses.replace(man, shaders=())), indent=2, sort_keys=True) + "\n").encode()
    # Negative control: a text made for an entry that has changed since is not used.
    first = man.shaders[0]
    stale = {first.name: (dataclasses.replace(first, size=first.size + 1), '{"stale": true}')}
    assert manifest_mod.dumps(man, stale) == plain


def test_the_longest_compile_starts_first(tmp_path):
    root = make_project(tmp_path / "proj")
    config = load_config(root)
    by = {v.name: v for v in config.variants}
    assert [v.name for v in longest_first(config.variants, {"neg": 9.0, "add_f32": 1.0, "add_i32": 2.0})] == \
        ["neg", "add_i32", "add_f32"]
    # Never timed: the mean of the timed ones; none timed: the order stays.
    assert [v.name for v in longest_first(config.variants, {"add_f32": 1.0, "add_i32": 3.0})][0] in ("add_i32", "neg")
    assert [v.name for v in longest_first([by[n] for n in ALL], {})] == list(ALL)
    build(config, compiler=FakeCompiler(), jobs=1)
    state = json.loads((root / ".genspirv/state.json").read_bytes())
    assert all(isinstance(state["variants"][n]["seconds"], float) for n in ALL)   # each compile timed
    record = Record.from_doc(state["variants"]["neg"])
    assert record.seconds == state["variants"]["neg"]["seconds"] and Record.from_doc(record.to_doc()) == record
    state["variants"]["neg"]["seconds"] = 99.0      # the next build starts neg first
    (root / ".genspirv/state.json").write_text(json.dumps(state))
    fake = FakeCompiler()
    build(load_config(root), compiler=fake, jobs=1, force=True)
    assert list(fake.compiles)[0] == "neg"
    # check orders its compiles by the same records (and by nothing else of the state). The
    # control: with no state, the plan's order.
    state = json.loads((root / ".genspirv/state.json").read_bytes())
    state["variants"]["add_i32"]["seconds"] = 99.0
    (root / ".genspirv/state.json").write_text(json.dumps(state))
    fake = FakeCompiler()
    assert check(load_config(root), compiler=fake, jobs=1).ok
    assert list(fake.compiles)[0] == "add_i32"
    (root / ".genspirv/state.json").unlink()
    fake = FakeCompiler()
    assert check(load_config(root), compiler=fake, jobs=1).ok
    assert list(fake.compiles) == list(ALL)


def test_a_failed_build_leaves_no_staged_blob_and_check_compares_as_it_goes(tmp_path):
    root = make_project(tmp_path / "proj")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert check(load_config(root), compiler=FakeCompiler(), jobs=2).ok
    (root / "glsl/include/common.glsl").write_text("// changed\n#define ONE 1\n")
    (root / "glsl/neg.comp").write_text(NEG + ERROR_MARK + "\n")
    before = committed(root)
    with pytest.raises(CompileError):
        build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert committed(root) == before        # the add blobs were staged, then discarded: no temp left
    (root / "glsl/neg.comp").write_text(NEG)
    report = check(load_config(root), compiler=FakeCompiler(), jobs=2)
    assert sorted(d.variant for d in report.differences if d.variant) == ["add_f32", "add_i32"]
    assert {d.kind for d in report.differences} == {"differs"}


def test_processes_start_in_parallel_and_one_started_during_a_stop_is_killed(monkeypatch):
    import subprocess
    import sys
    import threading

    from genspirv.toolchain import children

    real = subprocess.Popen
    inside = threading.Event()
    made = []

    def popen_then_stop(*a, **kw):
        # Another thread may start a process while this one is in Popen (the lock is free) ...
        assert children._lock.acquire(blocking=False)
        children._lock.release()
        made.append(real(*a, **kw))
        inside.set()
        children.stop()             # ... and an interrupt may come while it starts
        return made[-1]

    monkeypatch.setattr(children.subprocess, "Popen", popen_then_stop)
    try:
        with pytest.raises(children.Stopped):
            children.start([sys.executable, "-c", "import time; time.sleep(30)"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        children.resume()
    assert inside.is_set() and made[0].returncode is not None      # killed and reaped, not left running
    assert made[0] not in children._running


def test_the_manifest_takes_an_entry_rendered_as_its_compile_finished_only_if_made_from_the_same_inputs(
        built_manifest):
    from genspirv.buildsys.render import entry_text, render_outputs
    from genspirv.buildsys.variant_compile import Compiled, reflect_blob
    root, man = built_manifest
    config = load_config(root)
    keys = {e.name: e.inputs for e in man.shaders}
    compiled = []
    for v in config.variants:
        if v.name in keys:
            blob = config.path(config.blob_relpath(v)).read_bytes()
            compiled.append(Compiled(v, blob, (v.source,), reflect_blob(v.name, v.source, blob)))
    plain = render_outputs(config, compiled, keys=keys)
    first = compiled[0]
    made = {c.variant.name: entry_text(config, c, keys[c.variant.name]) for c in compiled}
    assert render_outputs(config, compiled, keys=keys, texts=made) == plain
    # Negative controls: a text made for another key, or for other bytes, is not used.
    other_key = {**made, first.variant.name: entry_text(config, first, "another key")}
    assert render_outputs(config, compiled, keys=keys, texts=other_key) == plain
    other_blob = dataclasses.replace(first, blob=first.blob + b"\0\0\0\0")
    other_bytes = {**made, first.variant.name: entry_text(config, other_blob, keys[first.variant.name])}
    assert render_outputs(config, compiled, keys=keys, texts=other_bytes) == plain
