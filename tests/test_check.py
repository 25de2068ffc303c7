"""Check: passes on a fresh build, and names the file for every kind of staleness."""

from __future__ import annotations

import shutil

import json

import pytest

from genspirv.buildsys.builder import check
from genspirv.buildsys.check import first_difference
from genspirv.project.config import load_config


@pytest.fixture
def built(built_tiny):
    return built_tiny


@pytest.mark.slow
def test_fresh_build_checks_clean_and_check_writes_nothing(built, genspirv, snapshot):
    state = built / ".genspirv"
    shutil.rmtree(state)
    before = snapshot(built)
    result = genspirv("check", "--root", built)
    assert result.code == 0, result
    assert "4 files up to date" in result.out
    assert genspirv("--check", "--root", built).code == 0
    # Nothing in the working tree; in genspirv's own folder only the project's lock (which check
    # holds as a build does) and the folder's .gitignore: no cache, no state.
    assert snapshot(built) == before
    assert sorted(p.name for p in state.iterdir()) == [".gitignore", "lock"]


@pytest.mark.slow
def test_one_flipped_byte_is_found_at_its_offset(built, genspirv):
    blob = built / "spirv/add_i32.spv"
    data = bytearray(blob.read_bytes())
    data[101] ^= 0x01
    blob.write_bytes(bytes(data))
    result = genspirv("check", "--root", built)
    assert result.code == 1, result
    assert "spirv/add_i32.spv (add_i32): differs" in result.err
    assert "first difference at byte 101 (word 25)" in result.err
    assert "--- committed/spirv/add_i32.spv" in result.err      # the spirv-dis diff
    assert "add_f32" not in result.err


@pytest.mark.slow
def test_an_edited_shader_makes_its_blobs_and_manifest_stale(built, genspirv):
    src = built / "glsl/neg.comp"
    src.write_text(src.read_text().replace("-X.data", "2.0 * X.data"))
    result = genspirv("check", "--root", built)
    assert result.code == 1
    assert "spirv/neg.spv (neg): differs" in result.err
    assert "manifests/shaders.json: differs" in result.err
    assert "+    %float_2 = OpConstant %float 2" in result.err     # the spirv-dis diff


@pytest.mark.slow
def test_a_deleted_blob_is_reported_missing(built, genspirv):
    (built / "spirv/neg.spv").unlink()
    result = genspirv("check", "--root", built)
    assert result.code == 1 and "spirv/neg.spv (neg): missing" in result.err


@pytest.mark.slow
def test_an_orphan_blob_is_reported(built, genspirv):
    # A blob of a variant the project no longer has: genspirv's own (its manifest listed it).
    (built / "glsl/neg.comp").unlink()
    result = genspirv("check", "--root", built)
    assert result.code == 1 and "spirv/neg.spv: orphan blob" in result.err
    assert "no variant neg any more; `genspirv build` removes it" in result.err


@pytest.mark.slow
def test_a_stray_blob_is_reported_by_check_and_kept_by_build(built, genspirv):
    """A blob no manifest or state of genspirv's listed is not genspirv's: check names it a
    stray, and a build reports it too and leaves it (negative control: the build still
    removes an orphan of its own, above)."""
    stray = built / "spirv/old_kernel.spv"
    stray.write_bytes((built / "spirv/neg.spv").read_bytes())
    result = genspirv("check", "--root", built)
    assert result.code == 1 and "spirv/old_kernel.spv: stray blob" in result.err
    assert "not genspirv's" in result.err and "delete it or move it out of spirv/" in result.err
    result = genspirv("build", "--root", built)
    assert result.code == 0 and stray.read_bytes() == (built / "spirv/neg.spv").read_bytes()
    assert "genspirv build: warning: spirv/old_kernel.spv: not genspirv's" in result.err
    assert ", 0 removed," in result.out


@pytest.mark.slow
def test_an_edited_manifest_is_reported_with_its_line(built, genspirv):
    path = built / "manifests/shaders.json"
    doc = json.loads(path.read_text())
    doc["shaders"][0]["local_size"] = [65, 1, 1]
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    result = genspirv("check", "--root", built)
    assert result.code == 1
    assert "manifests/shaders.json: differs from a fresh build" in result.err
    assert "(line " in result.err
    assert "-        65," in result.err and "+        64," in result.err
    assert "spirv/" not in result.err


@pytest.mark.slow
def test_check_report_lists_every_difference(built):
    (built / "spirv/neg.spv").unlink()
    (built / "spirv/extra.spv").write_bytes(b"\x03\x02\x23\x07")
    report = check(load_config(built))
    assert not report.ok
    assert sorted((d.kind, d.path) for d in report.differences) == [
        ("missing", "spirv/neg.spv"), ("stray", "spirv/extra.spv")]


def test_first_difference():
    assert first_difference(b"abc", b"abd") == 2
    assert first_difference(b"ab", b"abc") == 2
