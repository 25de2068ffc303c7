"""The build plan and the rebuild decisions, against a compiler in memory (tests/fake_compiler.py).

Each test builds a small project on disk with ``FakeCompiler`` behind the
compiler seam, so a build takes milliseconds, and asserts through the
report: which variants compiled, came from the cache or stayed, the plan's
``Reason`` for each and the ``--explain`` sentence, and the fake's own count
of compiles (the compiler really was, or was not, asked). The planner's pure
core is also driven with no file at all (``test_the_planner_reads_nothing_but_its_lookups``).
Real glslang runs in the end-to-end tests (test_build.py, test_interrupt.py, ...).
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Optional

import pytest

from fake_compiler import ERROR_MARK, INVALID_MARK, FakeCompiler
from genspirv.buildsys.builder import BuildInterrupted, build
from genspirv.buildsys.keys import KeyInputs, Record
from genspirv.buildsys.builder import check
from genspirv.project.config import Variant, load_config
from genspirv.errors import CompileError, ValidationError
from genspirv.buildsys.plan import Action, Found, Reason, decide, found_elsewhere, make_plan

ADD = """\
#version 450
#include "common.glsl"
void main() {}
"""
NEG = """\
#version 450
void main() {}
"""
COMMON = "// shared\n#define ONE 1\n"
TABLE = """\
[tool.genspirv.shaders."add.comp"]
matrix = { TYPE = { f32 = "float", i32 = "int" } }
"""
ALL = ("add_f32", "add_i32", "neg")


def make_project(root: Path, table: str = TABLE, top: str = "") -> Path:
    files = {"glsl/add.comp": ADD, "glsl/neg.comp": NEG, "glsl/include/common.glsl": COMMON}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    set_config(root, table, top)
    return root


def set_config(root: Path, table: str = TABLE, top: str = "") -> None:
    (root / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.genspirv]
        glsl_dir = "glsl"
        spirv_dir = "spirv"
        manifest = "manifests/shaders.json"
        target_env = "vulkan1.2"
        """) + top + "\n" + table)


def run(root: Path, compiler: FakeCompiler, **kw):
    lines: list[str] = []
    report = build(load_config(root), compiler=compiler, jobs=1, explain=lines.append, **kw)
    return report, lines


def reasons(report) -> dict[str, Reason]:
    return {s.name: s.reason for s in report.plan.steps if s.action is not Action.UP_TO_DATE}


def committed(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for d in ("spirv", "manifests") for p in sorted((root / d).rglob("*")) if p.is_file()}


@pytest.fixture
def built(tmp_path):
    """A project built once by a fake compiler; the fake counts only what comes after."""
    root = make_project(tmp_path / "proj")
    report, _ = run(root, FakeCompiler())
    assert sorted(report.compiled) == list(ALL)
    return root


# -- new, no-op, forced -----------------------------------------------------------


def test_a_first_build_compiles_every_variant_as_new(tmp_path):
    root = make_project(tmp_path / "proj")
    fake = FakeCompiler()
    report, lines = run(root, fake)
    assert sorted(report.compiled) == list(ALL) and report.up_to_date == ()
    assert set(reasons(report).values()) == {Reason.NEW_VARIANT}
    assert "explain: add_f32: compile: new variant (no earlier build of it)" in lines
    assert sorted(fake.compiles) == list(ALL) and set(fake.compiles.values()) == {1}
    assert (root / "spirv/neg.spv").is_file() and (root / "manifests/shaders.json").is_file()


def test_a_noop_build_asks_the_compiler_nothing_and_writes_nothing(built):
    fake = FakeCompiler()
    before = committed(built)
    report, lines = run(built, fake)
    assert report.compiled == () and report.cached == () and report.written == ()
    assert sorted(report.up_to_date) == list(ALL) and lines == [] and not fake.compiles
    assert committed(built) == before


def test_force_compiles_everything_and_says_so(built):
    fake = FakeCompiler()
    report, lines = run(built, fake, force=True)
    assert sorted(report.compiled) == list(ALL) and set(reasons(report).values()) == {Reason.FORCED}
    assert "explain: neg: compile: --force" in lines and sum(fake.compiles.values()) == 3


# -- what changed ------------------------------------------------------------------


def test_an_edited_source_recompiles_its_variants_and_names_the_file(built):
    (built / "glsl/add.comp").write_text(ADD + "// edited\n")
    fake = FakeCompiler()
    report, lines = run(built, fake)
    assert sorted(report.compiled) == ["add_f32", "add_i32"] and report.up_to_date == ("neg",)
    assert reasons(report) == {"add_f32": Reason.SOURCE_CHANGED, "add_i32": Reason.SOURCE_CHANGED}
    assert "explain: add_f32: compile: glsl/add.comp changed" in lines
    assert sorted(fake.compiles) == ["add_f32", "add_i32"]


def test_an_edited_include_recompiles_its_includers_and_names_the_include(built):
    (built / "glsl/include/common.glsl").write_text(COMMON + "#define TWO 2\n")
    report, lines = run(built, FakeCompiler())
    assert sorted(report.compiled) == ["add_f32", "add_i32"]
    assert set(reasons(report).values()) == {Reason.INCLUDE_CHANGED}
    assert "explain: add_i32: compile: glsl/include/common.glsl changed" in lines


def test_touching_a_file_without_changing_it_compiles_nothing(built):
    path = built / "glsl/include/common.glsl"
    path.write_text(path.read_text())
    assert run(built, FakeCompiler())[0].compiled == ()


@pytest.mark.parametrize("table, top, reason, said", [
    (TABLE.replace('"int"', '"uint"'), "", Reason.DEFINES_CHANGED, "defines changed: TYPE=int -> TYPE=uint"),
    (TABLE, 'flags = ["-DX=1"]', Reason.FLAGS_CHANGED, "flags changed: [] -> [-DX=1]"),
    (TABLE + 'target_env = "vulkan1.3"\n', "", Reason.TARGET_ENV_CHANGED,
     "target env changed: vulkan1.2 -> vulkan1.3"),
    (TABLE + "optimize = true\n", "", Reason.OPTIMIZE_CHANGED, "optimize changed: false -> true"),
    (TABLE + "validate = false\n", "", Reason.VALIDATE_CHANGED, "validate changed: true -> false"),
], ids=["defines", "flags", "target_env", "optimize", "validate"])
def test_a_changed_setting_recompiles_and_names_the_setting(built, table, top, reason, said):
    set_config(built, table, top)
    report, lines = run(built, FakeCompiler())
    stale = ["add_i32"] if reason is Reason.DEFINES_CHANGED else \
        list(ALL) if reason is Reason.FLAGS_CHANGED else ["add_f32", "add_i32"]
    assert sorted(report.compiled) == stale
    assert set(reasons(report).values()) == {reason}
    assert f"explain: add_i32: compile: {said}" in lines


def test_a_new_compiler_version_recompiles_everything(built):
    report, lines = run(built, FakeCompiler(version="fake 2"))
    assert sorted(report.compiled) == list(ALL) and set(reasons(report).values()) == {Reason.COMPILER_CHANGED}
    assert "explain: neg: compile: compiler version changed: fake 1 -> fake 2" in lines


def test_a_new_optimiser_version_recompiles_only_optimised_variants(tmp_path):
    root = make_project(tmp_path / "proj", TABLE + "optimize = true\n")
    run(root, FakeCompiler())
    fake = FakeCompiler(optimizer_version="fake-opt 2")
    report, lines = run(root, fake)
    assert sorted(report.compiled) == ["add_f32", "add_i32"] and report.up_to_date == ("neg",)
    assert set(reasons(report).values()) == {Reason.OPTIMIZER_CHANGED}
    assert "explain: add_f32: compile: optimiser version changed: fake-opt 1 -> fake-opt 2" in lines
    assert sorted(fake.optimizes) == ["add_f32", "add_i32"]


def test_an_include_that_is_gone_is_named(built):
    (built / "glsl/include/common.glsl").unlink()
    (built / "glsl/add.comp").write_text(NEG)
    report, lines = run(built, FakeCompiler())
    assert set(reasons(report).values()) == {Reason.FILE_GONE}
    assert "explain: add_f32: compile: glsl/include/common.glsl, which it read last time, is gone; " \
        "glsl/add.comp changed" in lines


# -- the cache ---------------------------------------------------------------------


def test_a_removed_blob_comes_from_the_cache_and_compiles_when_the_cache_lost_it_too(built):
    blob = built / "spirv/neg.spv"
    good = blob.read_bytes()
    blob.unlink()
    fake = FakeCompiler()
    report, lines = run(built, fake)
    assert report.cached == ("neg",) and report.compiled == () and not fake.compiles
    assert blob.read_bytes() == good
    assert "explain: neg: from cache: spirv/neg.spv is missing; its blob is in the cache" in lines
    blob.write_bytes(good[:-4])
    shutil.rmtree(built / ".genspirv/cache")
    report, lines = run(built, fake)
    assert report.compiled == ("neg",) and reasons(report) == {"neg": Reason.CACHE_MISSING}
    assert "explain: neg: compile: spirv/neg.spv differs from the blob its inputs give, and the cache " \
        "has no blob for it" in lines
    assert blob.read_bytes() == good and fake.compiles == {"neg": 1}


def test_an_edit_undone_takes_the_earlier_blob_from_the_cache(built):
    source = built / "glsl/neg.comp"
    source.write_text(NEG + "// for a while\n")
    assert run(built, FakeCompiler())[0].compiled == ("neg",)
    source.write_text(NEG)
    fake = FakeCompiler()
    report, lines = run(built, fake)
    assert report.cached == ("neg",) and not fake.compiles
    assert "explain: neg: from cache: glsl/neg.comp changed; its blob for these inputs is in the cache" in lines


# -- unavailable, failures, interrupts ---------------------------------------------


def test_an_unavailable_optional_variant_waits_until_its_inputs_change(tmp_path):
    root = make_project(tmp_path / "proj", TABLE + 'optional = true\n')
    (root / "glsl/add.comp").write_text(ADD.replace("#version 450\n", "#version 450\n#extension GL_X_new : require\n"))
    fake = FakeCompiler(missing=("GL_X_new",))
    report, _ = run(root, fake)
    assert report.unavailable == (("add_f32", ("GL_X_new",)), ("add_i32", ("GL_X_new",)))
    doc = json.loads((root / "manifests/shaders.json").read_text())
    assert [u["name"] for u in doc["unavailable"]] == ["add_f32", "add_i32"]
    fake.compiles.clear()
    report, _ = run(root, fake)
    assert report.compiled == () and not fake.compiles and len(report.unavailable) == 2
    assert {s.action for s in report.plan.steps if s.name.startswith("add")} == {Action.UNAVAILABLE}
    set_config(root, TABLE)        # no longer optional: it must build (and here it cannot)
    with pytest.raises(CompileError) as info:
        run(root, fake)
    assert {s.reason for s in info.value.report.plan.to_compile} == {Reason.NOW_REQUIRED}


def test_known_unavailable_variants_are_one_line_and_new_ones_each_one(tmp_path, genspirv):
    root = make_project(tmp_path / "proj", TABLE + 'optional = true\n')
    (root / "glsl/add.comp").write_text(ADD.replace("#version 450\n", "#version 450\n#extension GL_X_new : require\n"))
    fake = FakeCompiler(missing=("GL_X_new",))
    first, _ = run(root, fake)
    full = ["add_f32 unavailable: the pinned compiler lacks GL_X_new",
            "add_i32 unavailable: the pinned compiler lacks GL_X_new"]
    assert first.unavailable_lines() == full                   # found by this build: each in full
    noop, _ = run(root, fake)
    assert noop.unavailable_lines() == ["2 unavailable: GL_X_new; genspirv list --unavailable"]
    assert noop.unavailable_lines(verbose=True) == full
    # A change: add_i32's inputs change, it is found unavailable again and said in full.
    set_config(root, TABLE.replace('i32 = "int"', 'i32 = "int32_t"') + 'optional = true\n')
    changed, _ = run(root, fake)
    assert changed.unavailable_lines() == ["add_i32 unavailable: the pinned compiler lacks GL_X_new",
                                           "2 unavailable: GL_X_new; genspirv list --unavailable"]
    listed = genspirv("list", "--unavailable", "--root", root)
    assert listed.code == 0 and listed.out.splitlines() == [
        "name     lacks     source", "add_f32  GL_X_new  glsl/add.comp", "add_i32  GL_X_new  glsl/add.comp"]


def test_list_unavailable_says_so_when_there_is_none(built, genspirv):
    listed = genspirv("list", "--unavailable", "--root", built)
    assert listed.code == 0 and listed.out == "genspirv list: no variant is unavailable\n"


def test_a_failure_keeps_the_other_variants_work(built):
    (built / "glsl/include/common.glsl").write_text(COMMON + "// all of add changes\n")
    (built / "glsl/neg.comp").write_text(NEG + ERROR_MARK + "\n")
    before = committed(built)
    with pytest.raises(CompileError, match="glsl/neg.comp:3") as info:
        run(built, FakeCompiler())
    assert sorted(info.value.report.compiled) == ["add_f32", "add_i32"] and info.value.report.failed == ("neg",)
    assert committed(built) == before                     # nothing committed written
    (built / "glsl/neg.comp").write_text(NEG + "// fixed\n")
    fake = FakeCompiler()
    report, lines = run(built, fake)
    assert report.compiled == ("neg",) and sorted(report.cached) == ["add_f32", "add_i32"]
    assert fake.compiles == {"neg": 1}
    assert "explain: neg: compile: glsl/neg.comp changed" in lines      # its old record was kept


def test_an_interrupted_build_keeps_each_finished_compile(tmp_path):
    table = TABLE.replace('i32 = "int" }', 'i32 = "int", u32 = "uint", f16 = "float16_t" }')
    root = make_project(tmp_path / "proj", table)
    progress: list[str] = []

    def interrupt_after_two(line: str) -> None:
        progress.append(line)
        if len(progress) == 2:
            raise KeyboardInterrupt      # as SIGINT does, on the thread that collects the compiles

    with pytest.raises(BuildInterrupted) as info:
        build(load_config(root), compiler=FakeCompiler(), jobs=1, log=interrupt_after_two)
    assert (info.value.kept, info.value.total) == (2, 5)
    assert committed(root) == {}                        # nothing committed written
    finished = {line.split()[1] for line in progress}
    fake = FakeCompiler()
    report, lines = run(root, fake)
    assert set(report.cached) == finished and len(report.compiled) == 3
    assert set(fake.compiles) == {"add_f16", "add_f32", "add_i32", "add_u32", "neg"} - finished
    assert not (root / ".genspirv/journal.jsonl").exists()      # folded into the state


# -- the plan's pure core, and check ------------------------------------------------


class DictLookups:
    """The planner's ``Lookups`` on dictionaries, no file: each file's text by path, the
    committed blobs' sha256 by variant name, the cache's blobs by key, and the inputs the last
    build recorded by key. It holds the dictionaries it is given: a test edits them in place."""

    def __init__(self, files: dict, committed: dict, cache: Optional[dict] = None, recorded: Optional[dict] = None):
        self.files, self.committed = files, committed
        self.cache = {} if cache is None else cache
        self.recorded_inputs = {} if recorded is None else recorded

    def inputs(self, variant, deps):
        return KeyInputs(variant.source, variant.defines, "c1", variant.flags, variant.target_env, (), True,
                         variant.validate,
                         tuple((d, self.files.get(d)) for d in sorted(set(deps) | {variant.source})))

    def committed_sha(self, variant):
        return self.committed.get(variant.name)

    def cached(self, key, sha256):
        return self.cache.get(key)

    def blob_path(self, variant):
        return f"spirv/{variant.name}.spv"

    def recorded(self, name, key):
        return self.recorded_inputs.get(key)


def test_the_planner_reads_nothing_but_its_lookups():
    """A virtual project: files, committed blobs and cache are dictionaries."""
    files = {"a.comp": "1", "inc.glsl": "1"}
    v = Variant("a", "a.comp", (("T", "float"),))
    committed, cache = {"a": "sha-a"}, {}
    look = DictLookups(files, committed, cache)
    inputs = look.inputs

    then = inputs(v, ["inc.glsl"])
    record = Record.of(then, ("a.comp", "inc.glsl"), "sha-a")
    assert decide(v, record, look).action is Action.UP_TO_DATE
    assert decide(v, None, look).reason is Reason.NEW_VARIANT
    files["inc.glsl"] = "2"
    step = decide(v, record, look)
    assert (step.action, step.reason, step.detail) == (Action.COMPILE, Reason.INCLUDE_CHANGED, "inc.glsl changed")
    cache[inputs(v, ["inc.glsl"]).key] = b"blob"
    assert decide(v, record, look).action is Action.FROM_CACHE
    # A record read back from the state file: its inputs come from the recorded-inputs lookup.
    bare = Record(then.key, record.deps, "sha-a")
    remembered = DictLookups(files, committed, cache={}, recorded={then.key: then})
    assert decide(v, bare, remembered).detail == "inc.glsl changed"
    # A record from the committed manifest has only the key to compare with.
    assert decide(v, bare, look).reason is Reason.INPUTS_CHANGED
    plan = make_plan([v], {"a": record}, look, force=True)
    assert [s.reason for s in plan.steps] == [Reason.FORCED]


def test_found_elsewhere_turns_only_compile_steps_into_hits():
    """The remote cache's answers, planned: a compile step with a remote blob is a remote hit
    (its reason kept, explained as such), one whose blob the index found in the local cache is
    from the cache, and a step that was not going to compile is left as it was."""
    files = {"a.comp": "1", "b.comp": "1", "c.comp": "1", "inc.glsl": "1"}
    a, b, c = (Variant(n, f"{n}.comp", ()) for n in "abc")
    look = DictLookups(files, committed={n: "sha-c" for n in "abc"})
    inputs = look.inputs
    up_to_date = Record.of(inputs(c, ()), ("c.comp",), "sha-c")
    plan = make_plan([a, b, c], {"c": up_to_date}, look)
    assert [s.action for s in plan.steps] == [Action.COMPILE, Action.COMPILE, Action.UP_TO_DATE]
    found = {"a": Found(("a.comp", "inc.glsl"), b"remote blob"), "b": Found(("b.comp",), b"local", remote=False),
             "c": Found(("c.comp",), b"never asked for")}
    after = found_elsewhere(plan, found, look)
    ra, rb, rc = after.steps
    assert (ra.action, ra.reason, ra.blob) == (Action.FROM_REMOTE, Reason.NEW_VARIANT, b"remote blob")
    assert ra.record.key == inputs(a, ["inc.glsl"]).key and ra.record.deps == ("a.comp", "inc.glsl")
    assert ra.explain() == "a: remote hit: new variant (no earlier build of it); the remote cache has its blob"
    assert (rb.action, rb.blob) == (Action.FROM_CACHE, b"local") and rc == plan.steps[2]
    assert after.from_remote == (ra,) and len(after.explanations()) == 2
    assert found_elsewhere(plan, {}, look) == plan


def test_validate_false_reaches_the_optimiser(tmp_path):
    table = TABLE + "optimize = true\nvalidate = false\n"
    root = make_project(tmp_path / "proj", table)
    (root / "glsl/add.comp").write_text(ADD + INVALID_MARK + "\n")
    fake = FakeCompiler()
    report, _ = run(root, fake)
    assert sorted(report.compiled) == list(ALL) and "add_f32" not in fake.validates
    set_config(root, TABLE + "optimize = true\n")       # the negative control: validated, refused
    with pytest.raises(ValidationError, match="fake-opt refused"):
        run(root, FakeCompiler())


def test_check_runs_the_same_plan_forced_into_a_temporary_folder(built):
    fake = FakeCompiler()
    assert check(load_config(built), compiler=fake).ok and sorted(fake.compiles) == list(ALL)
    (built / "glsl/neg.comp").write_text(NEG + "// edited\n")
    report = check(load_config(built), compiler=FakeCompiler())
    assert [d.path for d in report.differences] == ["spirv/neg.spv", "manifests/shaders.json"]
    assert not list((built / ".genspirv").glob("compile-*"))


def test_the_cyclic_collector_is_off_while_a_build_decides_and_on_while_it_compiles(tmp_path, monkeypatch):
    """A build decides with gc off (no cycles to find among its records and keys) and compiles with
    it on; it leaves gc as it found it, also when a compile fails."""
    import gc
    import genspirv.buildsys.builder as builder_mod
    from genspirv.errors import GenspirvError
    root = make_project(tmp_path)
    seen = {}
    make_plan = builder_mod.make_plan

    def watched_plan(*args, **kwargs):
        seen["plan"] = gc.isenabled()
        return make_plan(*args, **kwargs)

    class Watching(FakeCompiler):
        def compile(self, job):
            seen["compile"] = gc.isenabled()
            if seen.get("fail"):
                raise GenspirvError("this compile fails")
            return super().compile(job)
    monkeypatch.setattr(builder_mod, "make_plan", watched_plan)
    assert gc.isenabled()
    build(load_config(root), compiler=Watching(), jobs=1)
    assert seen == {"plan": False, "compile": True} and gc.isenabled()
    seen["fail"] = True
    with pytest.raises(GenspirvError):
        build(load_config(root), compiler=Watching(), jobs=1, force=True)
    assert gc.isenabled()
    gc.disable()        # control: a caller's choice stands; the build does not switch gc on behind it
    try:
        build(load_config(root), compiler=Watching(), jobs=1)      # a no-op: nothing compiles
        assert not gc.isenabled()
    finally:
        gc.enable()
