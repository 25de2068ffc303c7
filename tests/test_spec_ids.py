"""Spec constants sharing one id: listed apart, linted, and given one value at run time.

The shape real backends have: ``layout(local_size_x_id = 0)`` with no
``local_size_x`` (an unnamed constant, default 1) beside ``layout(constant_id
= 0) const uint BLOCK_SIZE = 64``.  Kernel: tests/shaders_rt/glsl/rt_shared_id.comp.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.errors import SpecConstantError  # noqa: E402
from genspirv.lint.findings import lint  # noqa: E402
from genspirv.manifest import load_manifest  # noqa: E402
from genspirv.runtime.kernel import pack_spec, specialised_local_size  # noqa: E402

GROUPS = 3
WIDTH = 64


@pytest.fixture(scope="module")
def entry():
    return load_manifest(rt.MANIFEST).entry("rt_shared_id")


def test_manifest_lists_both_constants(entry):
    specs = [(s.id, s.name, s.type, s.default) for s in entry.info.spec_constants]
    assert specs == [(0, "", "uint32", 1), (0, "BLOCK_SIZE", "uint32", 64)]
    assert entry.info.local_size == (1, 1, 1) and entry.info.local_size_spec_ids == (0, None, None)


def test_lint_reports_disagreeing_defaults():
    findings = [f for f in lint(load_manifest(rt.MANIFEST)) if f.kind == "spec-defaults-disagree"]
    assert [(f.shader, f.spec_id) for f in findings] == [("rt_shared_id", 0)]
    text = str(findings[0])
    assert text.startswith("rt_shared_id: spec id 0:")
    assert "local_size_x_id) = 1" in text and "BLOCK_SIZE = 64" in text


def test_unspecialised_pack_gives_the_named_default(entry):
    spec = pack_spec(entry, None)
    assert spec.entries == ((0, 0, 4),) and spec.data == struct.pack("<I", WIDTH)
    assert spec.key == () and dict(spec.values) == {0: WIDTH}
    assert specialised_local_size(entry, spec) == (WIDTH, 1, 1)
    given = pack_spec(entry, {"BLOCK_SIZE": 32})
    assert given.data == struct.pack("<I", 32) and specialised_local_size(entry, given) == (32, 1, 1)


def test_agreeing_defaults_pack_nothing():
    # The library's kernels keep local_size_x and BLOCK_SIZE equal: nothing to fix up.
    lib = load_manifest(Path(__file__).resolve().parent.parent / "manifests" / "shaders.json")
    matvec = lib.entry("matvec_f32")
    assert [s.name for s in matvec.info.spec_constants] == ["", "BLOCK_SIZE"]
    spec = pack_spec(matvec, None)
    assert spec.entries == () and dict(spec.values) == {0: 256}


def test_two_names_of_one_id_must_agree():
    from dataclasses import replace
    from genspirv.reflect import SpecConstant
    base = load_manifest(rt.MANIFEST).entry("rt_shared_id")
    info = replace(base.info, spec_constants=base.info.spec_constants
                   + (SpecConstant(0, "WIDTH", "uint32", 64),))
    e = replace(base, info=info)
    assert pack_spec(e, {"BLOCK_SIZE": 8, "WIDTH": 8}).data == struct.pack("<I", 8)
    with pytest.raises(SpecConstantError, match="BLOCK_SIZE and WIDTH share spec id 0 but were "
                                                r"given different values \(8 and 16\)"):
        pack_spec(e, {"BLOCK_SIZE": 8, "WIDTH": 16})


# -- on a Vulkan device (lavapipe here) -----------------------------------------------


@pytest.fixture(scope="module")
def rt_dev():
    if not rt.device_present():
        pytest.skip("no Vulkan device")
    from genspirv.runtime import Device
    d = Device(manifest=rt.MANIFEST)
    yield d
    d.close()


def _run(dev, kernel) -> np.ndarray:
    out = dev.buffer(4 * GROUPS * WIDTH)
    dev.upload(out, np.zeros(GROUPS * WIDTH, np.uint32))
    dev.dispatch(kernel, [out], groups=GROUPS)
    return dev.download(out, dtype="uint32")


def test_unspecialised_dispatch_runs_whole_workgroups(rt_dev):
    got = _run(rt_dev, rt_dev.kernel("rt_shared_id"))
    np.testing.assert_array_equal(got, np.tile(np.arange(1, WIDTH + 1, dtype=np.uint32), GROUPS))


def test_specialised_dispatch_uses_the_callers_value(rt_dev):
    got = _run(rt_dev, rt_dev.kernel("rt_shared_id", spec={"BLOCK_SIZE": 16}))
    expected = np.zeros(GROUPS * WIDTH, np.uint32)
    expected[:GROUPS * 16] = np.tile(np.arange(1, 17, dtype=np.uint32), GROUPS)
    np.testing.assert_array_equal(got, expected)


def test_without_the_fix_up_vulkan_runs_one_wide_workgroups(rt_dev):
    # Negative control: the pipeline Vulkan builds when nothing is specialised.  Each
    # constant keeps its own default, so workgroups are 1 wide and write one value each.
    from genspirv.runtime.kernel import BoundKernel, SpecData
    kernel = rt_dev.kernel("rt_shared_id").kernel
    raw = BoundKernel(kernel, SpecData(entries=(), data=b"", key=(("unspecialised", True),)))
    got = _run(rt_dev, raw)
    expected = np.zeros(GROUPS * WIDTH, np.uint32)
    expected[np.arange(GROUPS) * WIDTH] = 1
    np.testing.assert_array_equal(got, expected)


def test_constants_of_one_id_in_different_sizes_cannot_share_a_value():
    from dataclasses import replace
    from genspirv.reflect import SpecConstant
    base = load_manifest(rt.MANIFEST).entry("rt_shared_id")
    info = replace(base.info, spec_constants=(SpecConstant(0, "", "uint64", 1),
                                              SpecConstant(0, "BLOCK_SIZE", "uint32", 64)))
    e = replace(base, info=info)
    with pytest.raises(SpecConstantError, match=r"kernel rt_shared_id: the constants of spec id 0 "
                                                r"differ in size \(\[4, 8\] bytes\)"):
        pack_spec(e, {"BLOCK_SIZE": 8})
