"""The one decider against a settled project: a no-op compiles, reads and writes nothing, and any
input that changed rebuilds exactly what it should (genspirv.buildsys.plan through the build loop).

Each case first settles the project (a build, then a no-op that writes nothing), then changes
one input. Against the fake compiler (tests/fake_compiler.py); the stat log's entries are
trusted at once (files written just now count as settled, as they would a moment later), so
a stat-only decision that missed a change would show here."""

from __future__ import annotations

import pytest

from fake_compiler import FakeCompiler
from genspirv.buildsys.builder import build
from genspirv.buildsys.statlog import StatLog
from genspirv.project.config import load_config
from test_plan import ALL, TABLE, make_project, set_config

GENERATOR = ('def variants():\n    return [{"name": "gen_a", "source": "neg.comp", "defines": {"A": "1"}},\n'
             '            {"name": "gen_b", "source": "neg.comp", "defines": {"B": "1"}}]\n')


@pytest.fixture
def plans(monkeypatch):
    """The files the builds read and hashed (a settled no-op reads none); files written just
    now count as settled, as they would a moment later."""
    monkeypatch.setattr("genspirv.buildsys.statlog.RACY_S", -1.0)
    read = []
    real = StatLog.note         # called only for a file that was read and hashed
    monkeypatch.setattr(StatLog, "note", lambda self, rel, st, digest: read.append(rel) or real(self, rel, st, digest))
    return read


def settle(root, plans, compiler=None):
    """Build, then no-op; the next build is a no-op that reads no file."""
    build(load_config(root), compiler=compiler or FakeCompiler(), jobs=1)
    build(load_config(root), compiler=compiler or FakeCompiler(), jobs=1)
    plans.clear()
    fake = compiler or FakeCompiler()
    report = build(load_config(root), compiler=fake, jobs=1)
    assert plans == [] and report.compiled == () and report.written == () and not fake.compiles
    return report


def rebuild(root, compiler=None):
    fake = compiler or FakeCompiler()
    report = build(load_config(root), compiler=fake, jobs=1)
    return report, fake


def test_a_no_op_reports_what_the_build_before_it_planned(tmp_path, plans):
    root = make_project(tmp_path / "p")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    full = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    short = settle(root, plans)
    assert sorted(short.up_to_date) == list(ALL) == sorted(full.up_to_date)
    assert short.summary() == full.summary() and short.plan.explanations() == [] == full.plan.explanations()
    assert [(s.name, s.action, s.reason, s.detail) for s in short.plan.steps] == \
        [(s.name, s.action, s.reason, s.detail) for s in full.plan.steps]


def test_a_touched_but_unchanged_include_rebuilds_nothing_and_is_read_once(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    inc = root / "glsl/include/common.glsl"
    inc.write_bytes(inc.read_bytes())
    report, fake = rebuild(root)
    assert plans == ["glsl/include/common.glsl"] and report.compiled == () and report.written == () \
        and not fake.compiles
    plans.clear()
    report, _ = rebuild(root)
    assert plans == [] and report.compiled == ()        # its new stat() logged by the build before


def test_a_changed_include_rebuilds_its_dependents(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    inc = root / "glsl/include/common.glsl"
    inc.write_bytes(inc.read_bytes() + b"// edited\n")
    report, _ = rebuild(root)
    assert sorted(report.compiled) == ["add_f32", "add_i32"]


def test_a_changed_define_rebuilds_that_variant(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    set_config(root, TABLE.replace('i32 = "int"', 'i32 = "uint"'))
    report, _ = rebuild(root)
    assert report.compiled == ("add_i32",)


def test_a_changed_flag_rebuilds_every_variant(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    set_config(root, TABLE, 'flags = ["-DX=1"]\n')
    report, _ = rebuild(root)
    assert sorted(report.compiled) == list(ALL)


def test_a_new_compiler_version_rebuilds_every_variant(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    report, _ = rebuild(root, FakeCompiler(version="fake 2"))
    assert sorted(report.compiled) == list(ALL)


def test_a_changed_generator_output_rebuilds_that_variant(tmp_path, plans):
    root = make_project(tmp_path / "p", top='generator = "variants.py"\n')
    (root / "variants.py").write_text(GENERATOR)
    settle(root, plans)
    (root / "variants.py").write_text(GENERATOR.replace('"B": "1"', '"B": "2"'))
    report, _ = rebuild(root)
    assert report.compiled == ("gen_b",)


def test_a_generator_reading_another_file_is_run_again(tmp_path, plans):
    # The generator's own file is unchanged; what it reads is not: its output decides.
    root = make_project(tmp_path / "p", top='generator = "variants.py"\n')
    (root / "table.txt").write_text("1")
    (root / "variants.py").write_text(
        "from pathlib import Path\n"
        "def variants():\n"
        "    n = (Path(__file__).parent / 'table.txt').read_text()\n"
        "    return [{'name': 'gen_a', 'source': 'neg.comp', 'defines': {'N': n}}]\n")
    settle(root, plans)
    (root / "table.txt").write_text("2")
    report, _ = rebuild(root)
    assert report.compiled == ("gen_a",)


def test_an_edited_blob_is_put_back_an_orphan_removed_and_a_stray_kept(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    blob = root / "spirv/neg.spv"
    good = blob.read_bytes()
    blob.write_bytes(good + b"\0\0\0\0")
    report, fake = rebuild(root)
    assert report.cached == ("neg",) and blob.read_bytes() == good and not fake.compiles
    settle(root, plans)
    # A blob no manifest or state of genspirv's listed is not genspirv's: reported, kept.
    (root / "spirv/stray.spv").write_bytes(good)
    report, _ = rebuild(root)
    assert report.removed == () and report.strays == ("spirv/stray.spv",) and (root / "spirv/stray.spv").exists()
    # One it listed (a variant taken out of the table) is an orphan: removed.
    set_config(root, TABLE.replace(', i32 = "int"', ''))
    report, _ = rebuild(root)
    assert report.removed == ("spirv/add_i32.spv",) and not (root / "spirv/add_i32.spv").exists()
    assert report.strays == ("spirv/stray.spv",)


def test_an_edited_manifest_is_written_again(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    manifest = root / "manifests/shaders.json"
    good = manifest.read_bytes()
    manifest.write_bytes(good + b"\n")
    report, _ = rebuild(root)
    assert "manifests/shaders.json" in report.written and manifest.read_bytes() == good


class EditsWhileCompiling(FakeCompiler):
    """Appends to the source of ``name`` once it has read it: an edit made while it compiled."""

    def __init__(self, name):
        super().__init__()
        self.name = name

    def compile(self, job):
        output = super().compile(job)
        if job.variant.name == self.name:
            source = job.root / job.variant.source
            source.write_bytes(source.read_bytes() + b"// edited while it compiled\n")
        return output


def test_a_source_edited_while_it_compiled_is_compiled_again(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    (root / "glsl/neg.comp").write_bytes((root / "glsl/neg.comp").read_bytes() + b"// edited\n")
    report, _ = rebuild(root, EditsWhileCompiling("neg"))
    assert report.compiled == ("neg",)
    report, fake = rebuild(root)
    assert report.compiled == ("neg",) and fake.compiles == {"neg": 1}


def test_an_output_changed_after_it_was_written_is_put_back(tmp_path, plans):
    root = make_project(tmp_path / "p")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    (root / "spirv/neg.spv").write_bytes(b"\0" * 20)     # another writer, after the build
    report, _ = rebuild(root)
    assert report.compiled == () and "spirv/neg.spv" in report.written


def test_an_edited_project_template_renders_again(tmp_path, plans):
    # What the generated files are rendered with is in the outputs' key: a project's template
    # edited re-renders its output, though no source or blob changed.
    root = make_project(tmp_path / "p", top='generate = [ { template = "t/x.j2", output = "x.txt" } ]\n')
    (root / "t").mkdir()
    (root / "t/x.j2").write_text("{% for s in shaders %}{{ s.name }}\n{% endfor %}")
    settle(root, plans)
    (root / "t/x.j2").write_text("{% for s in shaders %}- {{ s.name }}\n{% endfor %}")
    report, fake = rebuild(root)
    assert report.written == ("x.txt",) and not fake.compiles
    assert (root / "x.txt").read_text().startswith("- ")


def test_a_new_include_folder_rebuilds_every_variant(tmp_path, plans):
    # glsl/include joins the include path when it exists: every key changes, though no file a
    # variant read changed.
    root = make_project(tmp_path / "p")
    (root / "glsl/add.comp").write_text((root / "glsl/add.comp").read_text().replace('#include "common.glsl"\n', ""))
    (root / "glsl/include/common.glsl").unlink()
    (root / "glsl/include").rmdir()
    settle(root, plans)
    (root / "glsl/include").mkdir()
    report, _ = rebuild(root)
    assert sorted(report.compiled) == list(ALL)


# -- the records' keys stand unmade only while the settings they were made with do -----------------


@pytest.fixture
def keys_made(monkeypatch):
    """The variants whose content key the plan made (a settled one keeps its record's)."""
    import genspirv.buildsys.builder as builder_mod
    made = []
    real = builder_mod.key_inputs
    monkeypatch.setattr(builder_mod, "key_inputs", lambda v, *a: made.append(v.name) or real(v, *a))
    return made


def test_a_settled_no_op_makes_no_key_and_a_touched_file_makes_its_dependents(tmp_path, plans, keys_made):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    keys_made.clear()
    report, _ = rebuild(root)
    assert report.compiled == () and keys_made == []
    # Control: a touched include makes the keys of the variants that read it, and only theirs.
    inc = root / "glsl/include/common.glsl"
    inc.write_bytes(inc.read_bytes())
    report, _ = rebuild(root)
    assert report.compiled == () and sorted(keys_made) == ["add_f32", "add_i32"]


class FailsFor(FakeCompiler):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def compile(self, job):
        if job.variant.name == self.name:
            from genspirv.errors import CompileError
            raise CompileError(f"{job.variant.source}:1: error: no", source=job.variant.source)
        return super().compile(job)


def test_a_record_older_than_the_settings_is_never_taken_as_current(tmp_path, plans, keys_made):
    """Records a build keeps from before its settings changed (a variant that failed, the
    others of a build of named variants, an interrupted build's journal) are decided by their
    keys: each rebuild below compiles what its settings say, however its files' stat() stand."""
    from genspirv.errors import GenspirvError
    root = make_project(tmp_path / "p")
    settle(root, plans)
    changed = TABLE.replace('i32 = "int"', 'i32 = "uint"')
    set_config(root, changed)
    with pytest.raises(GenspirvError):
        build(load_config(root), compiler=FailsFor("add_i32"), jobs=1)      # keeps its old record
    report, _ = rebuild(root)
    assert report.compiled == ("add_i32",)
    set_config(root, TABLE)
    report = build(load_config(root), compiler=FakeCompiler(), jobs=1, only=["neg"])     # keeps add_i32's
    assert report.compiled == ()
    report, _ = rebuild(root)
    assert report.cached == ("add_i32",) and "add_i32" not in report.up_to_date     # its old blob, by key
    # An interrupted build's journal holds a record made with settings since put back.
    set_config(root, TABLE.replace('f32 = "float", i32 = "int"', 'f32 = "half", i32 = "long"'))
    with pytest.raises(KeyboardInterrupt):
        build(load_config(root), compiler=Interrupts(), jobs=1)
    assert (root / ".genspirv/journal.jsonl").read_text().count('"name":') == 1
    set_config(root, TABLE)
    report, _ = rebuild(root)
    assert "add_f32" not in report.up_to_date
    assert (root / "spirv/add_f32.spv").read_bytes() == build_bytes(tmp_path, TABLE, "add_f32")


class Interrupts(FakeCompiler):
    """Compiles the first variant (its record reaches the journal), then stops the build at the
    next as Ctrl-C does."""

    def compile(self, job):
        if self.compiles:
            raise KeyboardInterrupt
        return super().compile(job)


def build_bytes(tmp_path, table, name) -> bytes:
    """The blob a fresh project of ``table`` builds for ``name``."""
    root = make_project(tmp_path / f"fresh-{len(list(tmp_path.iterdir()))}", table)
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    return (root / f"spirv/{name}.spv").read_bytes()


# -- the no-op after a build, and a fresh clone's, read and render nothing they need not ------------


def _settled_project(root):
    """The test project, its files written long enough ago (past the racy window) that a build logs them."""
    import time
    from genspirv.buildsys.statlog import RACY_S
    make_project(root)
    time.sleep(RACY_S * 2)
    return root


@pytest.fixture
def hashed(monkeypatch):
    """The files each build read and hashed, at the real racy window (the stat log's ``note``)."""
    read = []
    real = StatLog.note
    monkeypatch.setattr(StatLog, "note", lambda self, rel, st, digest: read.append(rel) or real(self, rel, st, digest))
    return read


def test_the_no_op_right_after_a_build_reads_no_output(tmp_path, hashed, logs_after_a_build):
    root = _settled_project(tmp_path / "p")
    first = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert "spirv/neg.spv" in first.written and "spirv/neg.spv" in hashed    # read back once it settled
    hashed.clear()
    report, fake = rebuild(root)
    assert hashed == [] and report.written == () and not fake.compiles


def test_without_logging_after_the_build_its_no_op_reads_every_output(tmp_path, hashed):
    # The control of the test above: the same no-op, the outputs not logged by the build.
    root = _settled_project(tmp_path / "p")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    hashed.clear()
    report, _ = rebuild(root)
    assert {"spirv/neg.spv", "spirv/add_f32.spv", "manifests/shaders.json"} <= set(hashed) and report.written == ()


@pytest.fixture
def renders(monkeypatch):
    """How many times a build rendered its outputs."""
    import genspirv.buildsys.render as render_mod
    count = []
    real = render_mod.expected_outputs
    monkeypatch.setattr(render_mod, "expected_outputs", lambda *a, **k: count.append(1) or real(*a, **k))
    return count


def test_a_fresh_clones_no_op_renders_nothing_and_keeps_the_outputs_record(tmp_path, renders):
    import json
    import shutil
    root = make_project(tmp_path / "p")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".genspirv"))
    renders.clear()
    report, fake = rebuild(clone)
    assert renders == [] and report.written == () and not fake.compiles
    kept = json.loads((clone / ".genspirv/state.json").read_text())["outputs"]
    assert kept == json.loads((root / ".genspirv/state.json").read_text())["outputs"]
    # Control: a build fact the committed manifest gets wrong (a flag it says was used) renders
    # and writes the manifest again.
    shutil.rmtree(clone / ".genspirv")
    path = clone / "manifests/shaders.json"
    doc = json.loads(path.read_text())
    doc["toolchain"]["flags"] = ["-g"]
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    report, _ = rebuild(clone)
    assert renders == [1] and report.written == ("manifests/shaders.json",)
    assert path.read_bytes() == (root / "manifests/shaders.json").read_bytes()
    # So does a fact a build writes only where it holds, said of a variant where it does not.
    shutil.rmtree(clone / ".genspirv")
    doc = json.loads(path.read_text())
    next(e for e in doc["shaders"] if e["name"] == "neg")["stripped"] = True
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    report, _ = rebuild(clone)
    assert renders == [1, 1] and report.written == ("manifests/shaders.json",)
