"""The no-op stamp (genspirv.buildsys.noopstamp): a build that repeats the last no-op is decided from
stat() alone, and any input that changed still rebuilds exactly what it should.

Each case first settles the project (a build, then a no-op that writes the stamp) and checks
that the next build would take the shortcut (it makes no plan), then changes one input: had
the stamp been trusted, nothing would rebuild, so each case fails if the shortcut is too eager
(``test_a_stamp_trusted_blindly_would_miss_the_change`` shows it on one of them). Against the
fake compiler (tests/fake_compiler.py)."""

from __future__ import annotations

import pytest

import genspirv.buildsys.builder as build_mod
from fake_compiler import FakeCompiler
from genspirv.buildsys import noopstamp
from genspirv.buildsys.builder import build
from genspirv.project.config import load_config
from test_plan import ALL, TABLE, make_project, set_config

GENERATOR = ('def variants():\n    return [{"name": "gen_a", "source": "neg.comp", "defines": {"A": "1"}},\n'
             '            {"name": "gen_b", "source": "neg.comp", "defines": {"B": "1"}}]\n')


@pytest.fixture
def plans(monkeypatch):
    """How many full plans the builds made (the shortcut makes none); files written just now
    count as settled, as they would a moment later."""
    monkeypatch.setattr("genspirv.buildsys.statlog.RACY_S", -1.0)
    made = []
    real = build_mod.make_plan
    monkeypatch.setattr(build_mod, "make_plan", lambda *a, **kw: made.append(1) or real(*a, **kw))
    return made


def settle(root, plans, compiler=None):
    """Build, then no-op (which writes the stamp); the next build takes the shortcut."""
    build(load_config(root), compiler=compiler or FakeCompiler(), jobs=1)
    build(load_config(root), compiler=compiler or FakeCompiler(), jobs=1)
    assert (root / ".genspirv" / noopstamp.STAMP_FILE).is_file()
    plans.clear()
    fake = compiler or FakeCompiler()
    report = build(load_config(root), compiler=fake, jobs=1)
    assert plans == [] and report.compiled == () and report.written == () and not fake.compiles
    return report


def rebuild(root, compiler=None):
    fake = compiler or FakeCompiler()
    report = build(load_config(root), compiler=fake, jobs=1)
    return report, fake


def test_the_shortcut_reports_what_the_full_plan_did(tmp_path, plans):
    root = make_project(tmp_path / "p")
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    full = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    short = settle(root, plans)
    assert sorted(short.up_to_date) == list(ALL) == sorted(full.up_to_date)
    assert short.summary() == full.summary() and short.plan.explanations() == [] == full.plan.explanations()
    assert [(s.name, s.action, s.reason, s.detail) for s in short.plan.steps] == \
        [(s.name, s.action, s.reason, s.detail) for s in full.plan.steps]


def test_a_touched_but_unchanged_include_rebuilds_nothing_and_stamps_again(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    inc = root / "glsl/include/common.glsl"
    inc.write_bytes(inc.read_bytes())
    report, fake = rebuild(root)
    assert plans == [1] and report.compiled == () and report.written == () and not fake.compiles
    plans.clear()
    report, _ = rebuild(root)
    assert plans == [] and report.compiled == ()        # stamped again by the build before


def test_a_changed_include_rebuilds_its_dependents(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    inc = root / "glsl/include/common.glsl"
    inc.write_bytes(inc.read_bytes() + b"// edited\n")
    report, _ = rebuild(root)
    assert sorted(report.compiled) == ["add_f32", "add_i32"]


def test_a_stamp_trusted_blindly_would_miss_the_change(tmp_path, plans, monkeypatch):
    # The negative control of the cases here: a stamp that held whatever changed rebuilds nothing.
    root = make_project(tmp_path / "p")
    settle(root, plans)
    inc = root / "glsl/include/common.glsl"
    inc.write_bytes(inc.read_bytes() + b"// edited\n")
    monkeypatch.setattr(noopstamp, "holds", lambda *a: True)
    report, _ = rebuild(root)
    assert report.compiled == ()


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


def test_an_edited_blob_is_put_back_and_an_orphan_removed(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    blob = root / "spirv/neg.spv"
    good = blob.read_bytes()
    blob.write_bytes(good + b"\0\0\0\0")
    report, fake = rebuild(root)
    assert report.cached == ("neg",) and blob.read_bytes() == good and not fake.compiles
    settle(root, plans)
    (root / "spirv/stray.spv").write_bytes(good)
    report, _ = rebuild(root)
    assert report.removed == ("spirv/stray.spv",) and not (root / "spirv/stray.spv").exists()


def test_an_edited_manifest_is_written_again(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    manifest = root / "manifests/shaders.json"
    good = manifest.read_bytes()
    manifest.write_bytes(good + b"\n")
    report, _ = rebuild(root)
    assert "manifests/shaders.json" in report.written and manifest.read_bytes() == good


def test_a_journal_or_a_forced_or_named_build_plans_in_full(tmp_path, plans):
    root = make_project(tmp_path / "p")
    settle(root, plans)
    report = build(load_config(root), compiler=FakeCompiler(), jobs=1, only=["neg"])
    assert plans == [1] and report.compiled == ()
    plans.clear()
    report = build(load_config(root), compiler=FakeCompiler(), jobs=1, force=True)
    assert plans == [1] and sorted(report.compiled) == list(ALL)
    settle(root, plans)
    (root / ".genspirv/journal.jsonl").write_text("")      # an interrupted build's
    rebuild(root)
    assert plans == [1]


# -- the stamp a build leaves for the no-op after it ------------------------------------------


def stamp_of(root):
    return (root / ".genspirv" / noopstamp.STAMP_FILE).read_bytes()


@pytest.mark.parametrize("table", [TABLE, f'generator = "gen.py"\n{TABLE}'])
def test_a_build_stamps_the_no_op_that_follows_it(tmp_path, plans, table):
    # The stamp a build leaves is byte for byte the one a full no-op after it would leave (the
    # same digest, the same files with the same stat()), so the next build takes the shortcut.
    root = make_project(tmp_path / "p", table)
    (root / "gen.py").write_text(GENERATOR)
    first = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert first.compiled and first.stamped is not None and first.stamped.did_nothing
    left = stamp_of(root)
    (root / ".genspirv" / noopstamp.STAMP_FILE).unlink()
    plans.clear()
    full = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert plans == [1] and full.did_nothing and stamp_of(root) == left
    assert first.stamped.summary() == full.summary() and first.stamped.up_to_date == full.up_to_date
    plans.clear()
    report, fake = rebuild(root)
    assert plans == [] and report.did_nothing and not fake.compiles


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
    assert report.compiled == ("neg",) and report.stamped is not None
    report, fake = rebuild(root)
    assert report.compiled == ("neg",) and fake.compiles == {"neg": 1}


def test_a_stamp_that_read_its_inputs_again_would_miss_that_edit(tmp_path, plans, monkeypatch):
    # The negative control of the case above: stat() the inputs at the build's end, not when they
    # were read, and the stamp holds over the edit made while the variant compiled.
    root = make_project(tmp_path / "p")
    settle(root, plans)
    (root / "glsl/neg.comp").write_bytes((root / "glsl/neg.comp").read_bytes() + b"// edited\n")
    real = noopstamp.save

    def save(config, versions, stats):
        for rel, sig in stats.consulted.items():
            stats.consulted[rel] = noopstamp.signature((config.root / rel).stat()) if sig else sig
        return real(config, versions, stats)
    monkeypatch.setattr(noopstamp, "save", save)
    rebuild(root, EditsWhileCompiling("neg"))
    report, fake = rebuild(root)
    assert report.compiled == () and not fake.compiles


def test_an_output_changed_after_it_was_written_is_not_stamped(tmp_path, plans, monkeypatch):
    root = make_project(tmp_path / "p")
    real = noopstamp.save_after_build

    def changed_first(config, versions, stats, outputs, written_ns):
        (root / "spirv/neg.spv").write_bytes(b"\0" * 20)     # another writer, before the stamp
        return real(config, versions, stats, outputs, written_ns)
    monkeypatch.setattr(noopstamp, "save_after_build", changed_first)
    report = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert report.stamped is None and not (root / ".genspirv" / noopstamp.STAMP_FILE).exists()
    report, _ = rebuild(root)
    assert report.compiled == () and "spirv/neg.spv" in report.written      # put back by the full plan


def test_an_edited_project_template_renders_again(tmp_path, plans):
    # What the generated files are rendered with is in the stamp (and the seal): a project's
    # template edited re-renders its output, though no source or blob changed.
    root = make_project(tmp_path / "p", top='generate = [ { template = "t/x.j2", output = "x.txt" } ]\n')
    (root / "t").mkdir()
    (root / "t/x.j2").write_text("{% for s in shaders %}{{ s.name }}\n{% endfor %}")
    settle(root, plans)
    (root / "t/x.j2").write_text("{% for s in shaders %}- {{ s.name }}\n{% endfor %}")
    report, fake = rebuild(root)
    assert report.written == ("x.txt",) and not fake.compiles
    assert (root / "x.txt").read_text().startswith("- ")


def test_a_new_include_folder_rebuilds_every_variant(tmp_path, plans):
    # glsl/include joins the include path when it exists: every key changes, as the full plan
    # sees, though no file a variant read changed.
    root = make_project(tmp_path / "p")
    (root / "glsl/add.comp").write_text((root / "glsl/add.comp").read_text().replace('#include "common.glsl"\n', ""))
    (root / "glsl/include/common.glsl").unlink()
    (root / "glsl/include").rmdir()
    settle(root, plans)
    (root / "glsl/include").mkdir()
    report, _ = rebuild(root)
    assert sorted(report.compiled) == list(ALL)
