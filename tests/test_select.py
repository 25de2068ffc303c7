"""One shader at a time: ``genspirv build NAME_OR_SOURCE...`` and each command's own usage.

Builds run through the fake compiler (``fake_genspirv``, tests/fake_compiler.py):
what matters here is which variants compile and which committed bytes change.
"""

from __future__ import annotations

import json

import pytest

from genspirv.project.config import load_config
from genspirv.errors import UsageError
from genspirv.buildsys.selection import choose

from conftest import TINY_VARIANTS


def _entries(root) -> dict[str, dict]:
    doc = json.loads((root / "manifests/shaders.json").read_text())
    return {e["name"]: e for e in doc["shaders"]}


def _blobs(root) -> dict[str, bytes]:
    return {n: (root / f"spirv/{n}.spv").read_bytes() for n in TINY_VARIANTS}


def _summary(out: str) -> str:
    return [line for line in out.splitlines() if line.startswith("genspirv build:")][-1]


def test_building_one_variant_leaves_the_others_and_their_entries_as_committed(tiny_project, fake_genspirv):
    root = tiny_project()
    assert fake_genspirv("build", "--root", root).code == 0
    blobs, entries = _blobs(root), _entries(root)
    header = root / "glsl/include/common.glsl"          # both add_* variants include it
    header.write_text(header.read_text() + "#define TWO 2\n")

    result = fake_genspirv("build", "add_f32", "--root", root)
    assert result.code == 0, result.err
    assert [ln for ln in result.out.splitlines() if ln.startswith("[")] == ["[1/1] add_f32"]
    assert _summary(result.out) == ("genspirv build: 1 compiled, 1 up to date, 1 not selected, "
                                    "0 removed, 2 files written")
    after, now = _blobs(root), _entries(root)
    assert after["add_f32"] != blobs["add_f32"] and now["add_f32"] != entries["add_f32"]
    assert after["add_i32"] == blobs["add_i32"] and now["add_i32"] == entries["add_i32"]   # stale, kept
    assert sorted(now) == sorted(TINY_VARIANTS)                  # the manifest still lists every variant

    again = fake_genspirv("build", "add_f32", "--root", root)    # the selection is up to date: a no-op
    assert _summary(again.out) == "genspirv build: 0 compiled, 2 up to date, 1 not selected, 0 removed, 0 files written"
    stale = fake_genspirv("check", "-q", "--root", root)         # check still sees the one left stale
    assert stale.code == 1 and "spirv/add_i32.spv (add_i32): differs" in stale.err
    full = fake_genspirv("build", "--root", root)                # and a full build compiles only it
    assert _summary(full.out).startswith("genspirv build: 1 compiled, 2 up to date, 0 removed")
    assert fake_genspirv("check", "-q", "--root", root).code == 0


def test_a_source_path_or_a_glob_names_its_variants(tiny_project):
    root = tiny_project()
    config = load_config(root)
    assert choose(config, ["glsl/add.comp"], cwd=root) == {"add_f32", "add_i32"}
    assert choose(config, ["add.comp"], cwd=root) == {"add_f32", "add_i32"}           # relative to glsl_dir
    assert choose(config, ["../neg.comp"], cwd=root / "glsl" / "include") == {"neg"}   # to the folder
    assert choose(config, ["*_i32", "neg"], cwd=root) == {"add_i32", "neg"}
    assert choose(config, ["glsl/*.comp"], cwd=root) == set(TINY_VARIANTS)
    with pytest.raises(UsageError, match="close matches: add_f32"):
        choose(config, ["add_f32", "ad_f32"], cwd=root)


def test_an_unknown_name_is_one_line_with_the_close_matches(tiny_project, fake_genspirv):
    root = tiny_project()
    result = fake_genspirv("build", "add_f23", "--root", root)
    assert result.code == 2 and result.out == ""
    assert result.err.splitlines() == [
        "genspirv: error: no variant or source named 'add_f23' in pyproject.toml "
        "(close matches: add_f32, add_i32)"]
    assert not (root / "spirv").exists()                         # refused before any work


def test_a_variant_never_built_and_not_named_stays_out(tiny_project, fake_genspirv):
    root = tiny_project()
    result = fake_genspirv("build", "neg", "--root", root)
    assert _summary(result.out) == "genspirv build: 1 compiled, 0 up to date, 2 not selected, 0 removed, 2 files written"
    assert sorted(_entries(root)) == ["neg"] and not (root / "spirv/add_f32.spv").exists()


@pytest.mark.parametrize("argv, usage", [
    (["build", "--bogus"], "usage: genspirv build "),
    (["check", "--nope"], "usage: genspirv check "),
    (["list", "extra"], "usage: genspirv list "),
    (["cache", "stats", "--bogus"], "usage: genspirv cache stats "),
])
def test_a_bad_argument_prints_its_commands_usage(genspirv, argv, usage):
    result = genspirv(*argv)
    assert result.code == 2
    assert result.err.startswith(usage), result.err
    assert f"genspirv {' '.join(a for a in argv if not a.startswith('-') and a != 'extra')}: error: " \
           "unrecognized arguments" in result.err


def test_a_bad_argument_with_no_command_keeps_the_top_level_usage(genspirv):
    result = genspirv("--bogus")                                 # control: no command's own
    assert result.code == 2 and result.err.startswith("usage: genspirv [-h]")
