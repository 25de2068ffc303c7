"""lint: findings about bindings, from the manifest plus each blob's code."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from corpus import tools
from genspirv.errors import BlobIntegrityError
from genspirv.lint.findings import Finding, identical_blobs, lint, lint_info
from genspirv.manifest import Manifest, ManifestEntry, Toolchain
from genspirv.reflect import reflect


def _manifest(tmp_path: Path, blobs: dict[str, bytes]) -> Manifest:
    (tmp_path / "spirv").mkdir()
    entries = []
    for name, blob in sorted(blobs.items()):
        (tmp_path / "spirv" / f"{name}.spv").write_bytes(blob)
        entries.append(ManifestEntry(name=name, source=f"glsl/{name}.comp", defines=(),
                                     spirv=f"spirv/{name}.spv",
                                     sha256=hashlib.sha256(blob).hexdigest(), size=len(blob),
                                     info=reflect(blob)))
    return Manifest(Toolchain("13.1.1", "vulkan1.2"), tuple(entries), root=tmp_path)


def _by_binding(findings):
    out = {}
    for f in findings:
        out.setdefault((f.set, f.binding), set()).add(f.kind)
    return out


def test_usage_findings(tmp_path):
    blob = tools.compile_glsl(tools.CORPUS / "usage.comp")
    findings = lint(_manifest(tmp_path, {"usage": blob}))
    portable = [f for f in findings if f.kind == "portability"]    # test_portability_findings
    assert len(portable) == 1 and "storage buffers in the compute stage" in portable[0].message
    findings = [f for f in findings if f.kind != "portability"]
    assert _by_binding(findings) == {
        (0, 1): {"never-written"},              # b: only read
        (0, 2): {"never-read"},                 # c: only written (in a callee)
        (0, 3): {"never-accessed"},             # d: only in a function never called
        (0, 5): {"never-written", "never-read"},  # f: only its length is asked
        (0, 6): {"never-accessed"},             # g: declared only
    }
    assert all(f.shader == "usage" for f in findings)


def test_finding_is_one_line_naming_shader_and_binding():
    f = Finding("add_f32", 2, "never-written", "storage_buffer 'C' is read_write but never written")
    text = str(f)
    assert "\n" not in text
    assert text.startswith("add_f32: set 0 binding 2:") and "[never-written]" in text
    assert str(Finding("k", None, "sparse-bindings", "gap", set=3)).startswith("k: set 3:")


def test_sparse_binding_numbers(tmp_path):
    blob = tools.compile_glsl(tools.CORPUS / "descriptors.comp")
    findings = lint(_manifest(tmp_path, {"descriptors": blob}))
    sparse = [f for f in findings if f.kind == "sparse-bindings"]
    assert [(f.set, f.binding) for f in sparse] == [(3, None)]
    assert "missing 0, 1, 2, 3, 4, 5, 6" in sparse[0].message
    # set 3's only binding is also never accessed; the read/write images are used as declared
    kinds = _by_binding(findings)
    assert kinds[(3, 7)] == {"never-accessed"}
    assert "never-written" in kinds[(0, 5)]      # rw_img: only imageLoad


def test_clean_shader_has_no_findings(tmp_path):
    blob = tools.assemble(tools.CORPUS / "nonwritable_var.spvasm")
    # ro is read, wo written, mixed (read_write) written and never read -> one finding
    findings = lint(_manifest(tmp_path, {"k": blob}))
    assert [(f.binding, f.kind) for f in findings] == [(2, "never-read")]
    blob = tools.assemble(tools.CORPUS / "local_size_id.spvasm")
    info = reflect(blob)
    # without usage, lint_info leaves the never-read check out (its 32 x 4 x 2 workgroup is a
    # portability finding: test_portability_findings_past_the_vulkan_1_2_minimums)
    assert [f.kind for f in lint_info("k", info)] == ["portability"]


def test_lint_refuses_a_tampered_blob(tmp_path):
    blob = tools.compile_glsl(tools.CORPUS / "usage.comp")
    manifest = _manifest(tmp_path, {"usage": blob})
    (tmp_path / "spirv" / "usage.spv").write_bytes(blob[:-4] + b"\0\0\0\0")
    with pytest.raises(BlobIntegrityError, match="usage"):
        lint(manifest)


def test_lint_of_the_committed_manifest_runs():
    path = Path(__file__).resolve().parent.parent / "manifests" / "shaders.json"
    if not path.exists():
        pytest.skip("no manifest committed yet")
    from genspirv.manifest import load_manifest
    findings = lint(load_manifest(path))
    assert all(isinstance(f, Finding) and f.kind in
               ("never-written", "never-read", "never-accessed", "sparse-bindings", "portability")
               for f in findings)
    # The library's kernels keep local_size_x equal to BLOCK_SIZE's default.
    assert not [f for f in findings if f.kind == "spec-defaults-disagree"]


def test_spec_ids_whose_constants_disagree(tmp_path):
    # dup_spec_id: id 3 is an unnamed constant (8) and N (4); id 4 a bool decorated twice.
    blob = tools.assemble(tools.CORPUS / "dup_spec_id.spvasm")
    findings = [f for f in lint(_manifest(tmp_path, {"dup": blob}))
                if f.kind == "spec-defaults-disagree"]
    assert [(f.spec_id, f.binding) for f in findings] == [(3, None)]
    assert str(findings[0]).startswith("dup: spec id 3: ")
    assert "unnamed = 8, N = 4" in findings[0].message


def test_spec_ids_whose_constants_agree_are_clean():
    # Negative control: the same shape with equal defaults is no finding.
    import dataclasses
    from genspirv.reflect import SpecConstant
    info = reflect(tools.assemble(tools.CORPUS / "dup_spec_id.spvasm"))
    agreeing = dataclasses.replace(info, spec_constants=(
        SpecConstant(3, "", "uint32", 4), SpecConstant(3, "N", "uint32", 4)))
    assert [f for f in lint_info("k", agreeing) if f.kind == "spec-defaults-disagree"] == []
    bool_vs_int = dataclasses.replace(info, spec_constants=(
        SpecConstant(5, "A", "bool", True), SpecConstant(5, "B", "uint32", 1)))
    assert [f.spec_id for f in lint_info("k", bool_vs_int)
            if f.kind == "spec-defaults-disagree"] == [5]


@pytest.mark.slow
def test_cli_lint_exits_1_on_findings_and_0_when_clean(tmp_path):
    import subprocess
    import sys
    from genspirv.manifest import dumps
    root = Path(__file__).resolve().parent.parent
    cases = {"dirty": tools.compile_glsl(tools.CORPUS / "usage.comp"),
             "clean": tools.assemble(tools.CORPUS / "workgroup_builtin.spvasm")}
    for name, blob in cases.items():
        project = tmp_path / name
        project.mkdir()
        (project / "manifests").mkdir()
        manifest = _manifest(project, {name: blob})
        (project / "manifests" / "shaders.json").write_bytes(dumps(manifest))
        done = subprocess.run([sys.executable, "-m", "genspirv", "lint", "--manifest",
                               str(project / "manifests" / "shaders.json")],
                              capture_output=True, text=True, timeout=120, cwd=root)
        if name == "dirty":
            assert done.returncode == 1, done.stderr
            assert "dirty: set 0 binding 1:" in done.stdout and "[never-written]" in done.stdout
        else:
            # a uniform buffer and a read-only storage buffer, both read, bindings 0 and 1
            assert done.returncode == 0, done.stdout + done.stderr


def _entry(name: str, source: str, blob: bytes, defines=(), depends=()) -> ManifestEntry:
    return ManifestEntry(name=name, source=source, defines=tuple(sorted(defines)), spirv=f"spirv/{name}.spv",
                         sha256=hashlib.sha256(blob).hexdigest(), size=len(blob), info=reflect(blob),
                         depends=tuple(depends))


def test_identical_blobs_of_one_source_are_named_together_with_the_defines_that_differ():
    blob = tools.assemble(tools.CORPUS / "workgroup_builtin.spvasm")
    other = tools.compile_glsl(tools.CORPUS / "usage.comp")
    entries = [
        _entry("scale_a", "glsl/scale.comp", blob, [("MODE", "1"), ("T", "float")]),
        _entry("scale_b", "glsl/scale.comp", blob, [("MODE", "2"), ("T", "float")]),
        _entry("scale_c", "glsl/scale.comp", blob, [("T", "float")]),
        # Negative controls: the same bytes from another source, another blob of the same source.
        _entry("copy", "glsl/copy.comp", blob, [("MODE", "1")]),
        _entry("scale_d", "glsl/scale.comp", other, [("MODE", "3"), ("T", "float")]),
    ]
    manifest = Manifest(Toolchain("13.1.1", "vulkan1.2"), tuple(sorted(entries, key=lambda e: e.name)))
    findings = identical_blobs(manifest.shaders)
    assert len(findings) == 1
    f = findings[0]
    assert (f.kind, f.shader, f.binding, f.set) == ("identical-blobs", "scale_a", None, None)
    assert str(f) == ("scale_a: scale_a, scale_b, scale_c are byte-identical blobs of glsl/scale.comp: their "
                      "defines differ (scale_a: MODE=1; scale_b: MODE=2; scale_c: no MODE), which changes "
                      "nothing in the bytes; one variant would serve them all [identical-blobs]")


def test_identical_blobs_with_the_same_defines_name_the_files_they_read():
    blob = tools.assemble(tools.CORPUS / "workgroup_builtin.spvasm")
    entries = (_entry("k_f16", "glsl/k.comp", blob, depends=["glsl/k.comp", "glsl/fp16.glsl"]),
               _entry("k_f32", "glsl/k.comp", blob, depends=["glsl/k.comp", "glsl/fp32.glsl"]))
    assert [f.message.split(": ", 1)[1] for f in identical_blobs(entries)] == [
        "the files they read differ (k_f16: glsl/fp16.glsl; k_f32: glsl/fp32.glsl), which changes nothing "
        "in the bytes; one variant would serve them all"]


def test_portability_findings_past_the_vulkan_1_2_minimums():
    """One finding per limit every Vulkan 1.2 device guarantees that the kernel is past, at the
    spec constants' defaults; none at the limits themselves (the negative control)."""
    import dataclasses

    from genspirv.reflect import Binding, ShaderInfo
    base = ShaderInfo(entry_point="main", local_size=(128, 1, 1), local_size_spec_ids=(None, None, None),
                      bindings=tuple(Binding(0, i, f"b{i}", "storage_buffer", 1, "read_write", True, True)
                                     for i in range(4)),
                      spec_constants=(), push_constant_size=128, shared_memory=16384,
                      capabilities=("CooperativeMatrixKHR", "Shader"))   # features: the device's business
    assert [f for f in lint_info("k", base) if f.kind == "portability"] == []
    past = dataclasses.replace(base, local_size=(16, 16, 1), push_constant_size=132, shared_memory=16388,
                               bindings=base.bindings + (Binding(1, 0, "u", "uniform_buffer", 13, "read",
                                                                 True, False),))
    found = [str(f) for f in lint_info("k", past) if f.kind == "portability"]
    assert found == [
        "k: 132 bytes of push constants, past the 128 every Vulkan 1.2 device allows (maxPushConstantsSize): "
        "a device allowing no more refuses it [portability]",
        "k: 13 uniform buffers in the compute stage (set 1: 13), past the 12 every Vulkan 1.2 device allows "
        "(maxPerStageDescriptorUniformBuffers): a device allowing no more refuses it [portability]",
        "k: workgroup of 16 x 16 x 1 = 256 invocations, past the 128 every Vulkan 1.2 device allows "
        "(maxComputeWorkGroupInvocations): a device allowing no more refuses it [portability]",
        "k: 16388 bytes of shared memory, past the 16384 every Vulkan 1.2 device allows "
        "(maxComputeSharedMemorySize): a device allowing no more refuses it [portability]",
    ]
