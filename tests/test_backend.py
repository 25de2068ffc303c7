"""A real backend's shape (tests/backend_project.py): generator variants, optional and
unavailable variants, builds that keep their good work, provenance, optimised blobs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from backend_project import COPY_VARIANTS, write_backend
from genspirv.buildsys.builder import build
from genspirv.buildsys.builder import check
from genspirv.project.config import load_config
from genspirv.errors import CompileError
from genspirv.manifest import load_manifest

# Every test but one shares a backend of ~2,000 lines built from scratch (about 10 s): a long trial.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def _built_backend(tmp_path_factory):
    root = tmp_path_factory.mktemp("backend")
    names = write_backend(root)
    commands = []
    report = build(load_config(root), on_command=commands.append)
    return root, names, report, commands


@pytest.fixture
def backend(_built_backend, tmp_path):
    """A fresh copy of the built backend (state and cache included) and its variants by source."""
    root, names, _, _ = _built_backend
    copy = tmp_path / "backend"
    shutil.copytree(root, copy)
    return copy, names


def built_names(names) -> set[str]:
    return {n for src, ns in names.items() for n in ns if src != "glsl/coopmat2.comp"}


@pytest.mark.slow
def test_backend_builds_checks_and_rebuilds_as_a_noop(_built_backend, backend):
    _, names, first, _ = _built_backend
    root, _ = backend
    assert set(first.compiled) == built_names(names)
    assert first.unavailable == (("matmul_cm2", ("GL_NV_cooperative_matrix2",)),)
    config = load_config(root)
    again = build(config)
    assert again.compiled == () and again.cached == () and again.written == ()
    assert set(again.up_to_date) == built_names(names)

    manifest = load_manifest(root / "manifests/shaders.json")
    entries = {e.name: e for e in manifest.shaders}
    assert set(entries) == built_names(names)                 # the excluded source built nothing
    # Coupled defines with an axis-built name, two prefixes on one source.
    assert entries["matmul_id_u32"].defines_dict == {"A_TYPE": "uint", "DATA_A_U32": "1", "MUL_MAT_ID": "1"}
    assert entries["matmul_id_u32"].info.binding_count == 4 and entries["matmul_u32"].info.binding_count == 3
    assert entries["copy_v13"].target_env == "vulkan1.3" and entries["copy_0"].target_env is None
    assert not entries["norm_noval"].validated and entries["copy_0"].validated
    assert entries["matmul_f32"].optimized and not entries["matmul_f32_noopt"].optimized
    assert manifest.toolchain.spirv_opt == "2025.5" and manifest.toolchain.flags == ("--quiet",)
    [missing] = manifest.unavailable
    assert (missing.name, missing.source, missing.missing) == \
        ("matmul_cm2", "glsl/coopmat2.comp", ("GL_NV_cooperative_matrix2",))
    # Bare-name includes without the extension line, recorded as provenance.
    assert entries["matmul_f32"].depends == ("glsl/matmul.comp", "glsl/include/dequant.glsl",
                                             "glsl/include/types.glsl")

    # check rebuilds every blob (the optimised ones too) and compares byte for byte: one flipped
    # byte in an optimised blob is the only difference it finds.
    blob = root / entries["matmul_id_f32"].spirv
    data = bytearray(blob.read_bytes())
    data[-8] ^= 1
    blob.write_bytes(bytes(data))
    report = check(config)
    assert [(d.kind, d.variant) for d in report.differences] == [("differs", "matmul_id_f32")]
    assert len(report.checked) == len(built_names(names)) + 1      # every blob and the manifest


def test_validation_opt_out_skips_spirv_val_for_that_variant_only(_built_backend):
    commands = _built_backend[3]
    validated = {Path(c[-1]).name.split(".")[0] for c in commands if Path(c[0]).name == "spirv-val"}
    assert "norm_noval" not in validated and "copy_0" in validated and "matmul_f32" in validated
    optimised = {Path(c[-3]).stem for c in commands if Path(c[0]).name == "spirv-opt"}
    assert optimised == {"matmul_f32", "matmul_i32", "matmul_u32", "matmul_id_f32", "matmul_id_i32",
                         "matmul_id_u32"}


def test_a_non_optional_variant_needing_a_missing_extension_fails_naming_it(backend):
    root, _ = backend
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("optional = true", "optional = false"))
    with pytest.raises(CompileError) as info:
        build(load_config(root))
    text = str(info.value)
    assert "GL_NV_cooperative_matrix2" in text and "glslang 13.1.1" in text and "matmul_cm2" in text
    assert info.value.exit_code == 1 and info.value.report.failed == ("matmul_cm2",)


@pytest.mark.slow
def test_a_broken_source_fails_once_and_the_fix_compiles_only_its_variants(backend):
    root, names = backend
    copy_comp = root / "glsl/copy.comp"
    good = copy_comp.read_text()
    copy_comp.write_text(good.replace("src[i] * SCALE + OFFSET;", "src[i] * SCALE + OFFSET +;"))
    # A header edit in the same build: those variants compile and wait in the cache.
    dequant = root / "glsl/include/dequant.glsl"
    dequant.write_text(dequant.read_text().replace("* 0.5", "* 0.25"))
    manifest_before = (root / "manifests/shaders.json").read_bytes()
    with pytest.raises(CompileError) as info:
        build(load_config(root))
    text = str(info.value)
    copy_names = names["glsl/copy.comp"]
    assert len(copy_names) == COPY_VARIANTS + 1
    assert text.count("syntax error") == 1, text                # the one error, printed once
    assert f"in {len(copy_names)} variants: " + ", ".join(copy_names) in text
    assert "glsl/copy.comp:8: error:" in text
    report = info.value.report
    assert set(report.failed) == set(copy_names)
    assert set(report.compiled) == set(names["glsl/matmul.comp"])
    assert "0 compiled" not in text and f"{len(copy_names)} failed" in text
    assert (root / "manifests/shaders.json").read_bytes() == manifest_before   # all or nothing

    copy_comp.write_text(good.replace("SCALE + OFFSET;", "SCALE + OFFSET + 1u;"))     # the fix
    fixed = build(load_config(root))
    assert set(fixed.compiled) == set(copy_names)            # only what failed
    # Kept from the failed build: the blobs the header edit changed come from the cache; the
    # f32 ones (the edit does not reach their code) compiled to the committed bytes.
    matmul = set(names["glsl/matmul.comp"])
    assert set(fixed.cached) == {n for n in matmul if "f32" not in n}
    assert {n for n in matmul if "f32" in n} <= set(fixed.up_to_date)


def test_a_fresh_clone_builds_nothing_and_a_header_edit_rebuilds_exactly_its_dependents(backend, tmp_path):
    root, names = backend
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".genspirv"))
    report = build(load_config(clone))
    assert report.compiled == () and report.cached == () and report.written == ()
    assert set(report.up_to_date) == built_names(names)
    dequant = clone / "glsl/include/dequant.glsl"
    dequant.write_text(dequant.read_text().replace("* 0.5", "* 0.125"))
    edited = build(load_config(clone))
    assert set(edited.compiled) == set(names["glsl/matmul.comp"]) and edited.cached == ()


def test_a_shared_cache_serves_a_clone_without_outputs(backend, tmp_path, monkeypatch):
    root, names = backend
    # A build's local cache has the shared cache's layout: share the one the first build filled.
    shared = tmp_path / "shared"
    shutil.copytree(root / ".genspirv/cache", shared)
    monkeypatch.setenv("GENSPIRV_CACHE_DIR", str(shared))
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".genspirv", "spirv"))
    report = build(load_config(clone))
    assert report.compiled == () and set(report.cached) == built_names(names)
    assert (clone / "manifests/shaders.json").read_bytes() == (root / "manifests/shaders.json").read_bytes()
    assert all((clone / "spirv" / p.name).read_bytes() == p.read_bytes() for p in (root / "spirv").iterdir())


def test_the_cache_is_trimmed_least_recently_used_first(tmp_path):
    from genspirv.buildsys.blob_cache import BlobCache
    import os
    cache = BlobCache([tmp_path / "c"])
    for i in range(10):
        cache.put(f"{i:02d}" + "0" * 62, bytes(1000))
        path = tmp_path / "c" / f"{i:02d}" / f"{i:02d}{'0' * 62}.spv"
        os.utime(path, ns=(i * 10**9, i * 10**9))
    assert cache.get("03" + "0" * 62) is not None           # a hit refreshes its mtime
    assert cache.trim(limit=5000) == 6                       # down to 80% of the cap: 4 stay
    left = sorted(p.stem[:2] for p in (tmp_path / "c").glob("??/*.spv"))
    assert left == ["03", "07", "08", "09"]


def test_an_optimised_blob_is_smaller_and_keeps_every_binding_and_spec_constant(backend):
    root, _ = backend
    manifest = load_manifest(root / "manifests/shaders.json")
    opt, plain = manifest.entry("matmul_id_f32"), manifest.entry("matmul_id_f32_noopt")
    assert opt.size < plain.size
    assert opt.info.bindings == plain.info.bindings and opt.info.binding_count == 4
    assert opt.info.spec_constants == plain.info.spec_constants
    assert {s.name for s in opt.info.spec_constants} >= {"BLOCK"}
    assert opt.info.push_constant_size == plain.info.push_constant_size == 12


def test_provenance_in_the_manifest_is_the_content_key(backend):
    root, _ = backend
    doc = json.loads((root / "manifests/shaders.json").read_text())
    entry = next(e for e in doc["shaders"] if e["name"] == "copy_3")
    state = json.loads((root / ".genspirv/state.json").read_text())
    assert entry["inputs"] == state["variants"]["copy_3"]["key"]
    assert entry["depends"] == ["glsl/copy.comp", "glsl/include/types.glsl"]


def test_a_fresh_clone_repairs_a_manifest_whose_build_facts_are_off(backend, tmp_path):
    root, names = backend
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".genspirv"))
    path = clone / "manifests/shaders.json"
    good = path.read_bytes()
    doc = json.loads(good)
    del doc["unavailable"]                                   # the optional variant forgotten
    next(e for e in doc["shaders"] if e["name"] == "norm_noval")["validated"] = True
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    report = build(load_config(clone))
    assert report.compiled == () and report.written == ("manifests/shaders.json",)
    assert path.read_bytes() == good
