"""Named push constants on lavapipe: what the shader reads is what was named.

An echo kernel writes every push-constant scalar it sees (vector, row- and
column-major matrices, an array of arrays, an array of structs; 128 bytes, the
least maxPushConstantsSize Vulkan allows) to a buffer, compared with the
values passed by name. The negative control is the mistake
named push constants exist for: the library's scale_f32 declares
``{ uint n; float alpha; }``, ``genspirv init``'s scale.comp ``{ float alpha;
uint n; }``; bytes packed for one and pushed to the other give wrong numbers,
the same values by name give the right ones on both.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.errors import PushConstantError, PushConstantSizeError  # noqa: E402
from genspirv.runtime import Device  # noqa: E402

pytestmark = pytest.mark.skipif(not rt.device_present(), reason="no Vulkan device")

ECHO = """\
#version 450
layout(local_size_x = 1) in;
struct S { int i; float w; };
layout(push_constant, std430) uniform PC {
    uint n;
    vec3 v;
    layout(row_major) mat3x2 rm;
    mat2 cm;
    float arr[2][3];
    S s[2];
    ivec2 iv;
} pc;
layout(std430, binding = 0) writeonly buffer Out { uint o[]; };
void main() {
    uint k = 0;
    o[k++] = pc.n;
    for (int i = 0; i < 3; i++) o[k++] = floatBitsToUint(pc.v[i]);
    for (int c = 0; c < 3; c++) for (int r = 0; r < 2; r++) o[k++] = floatBitsToUint(pc.rm[c][r]);
    for (int c = 0; c < 2; c++) for (int r = 0; r < 2; r++) o[k++] = floatBitsToUint(pc.cm[c][r]);
    for (int a = 0; a < 2; a++) for (int b = 0; b < 3; b++) o[k++] = floatBitsToUint(pc.arr[a][b]);
    for (int j = 0; j < 2; j++) {
        o[k++] = uint(pc.s[j].i);
        o[k++] = floatBitsToUint(pc.s[j].w);
    }
    o[k++] = uint(pc.iv.x);
    o[k++] = uint(pc.iv.y);
}
"""


def _bits(values) -> list[int]:
    return np.asarray(values, dtype=np.float32).reshape(-1).view(np.uint32).tolist()


def _u32(value: int) -> int:
    return value & 0xFFFFFFFF


@pytest.fixture(scope="module")
def echo_manifest(tmp_path_factory):
    root = tmp_path_factory.mktemp("echo")
    (root / "glsl").mkdir()
    (root / "glsl" / "echo.comp").write_text(ECHO)
    (root / "pyproject.toml").write_text('[tool.genspirv]\nglslang = "13.1.1"\n')
    from genspirv.buildsys.builder import build
    from genspirv.project.config import load_config
    build(load_config(root))
    return root / "manifests" / "shaders.json"


def test_the_shader_reads_what_was_named(echo_manifest):
    rm = [[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]]             # mat3x2: rm[column][row]
    cm = np.array([[-1.0, -2.0], [-3.0, -4.0]])            # mat2 (std430: columns of 8 bytes)
    arr = [[0.25, 0.5, 0.75], [1.25, 1.5, 1.75]]
    s = [{"i": -9, "w": 10.0}, {"i": 12, "w": np.float32(13.0)}]
    push = {"iv": [-2, 3], "s": s, "arr": arr, "cm": cm, "rm": rm, "v": np.array([7.0, 8.0, 9.0]),
            "n": 4_000_000_000}                           # every member, in no declared order
    expected = ([4_000_000_000] + _bits([7.0, 8.0, 9.0]) + _bits(rm) + _bits(cm) + _bits(arr)
                + [_u32(-9)] + _bits([10.0]) + [12] + _bits([13.0]) + [_u32(-2), 3])
    with Device(manifest=echo_manifest, validation=True) as dev:
        out = dev.buffer(4 * len(expected))
        dev.dispatch("echo", [out], groups=1, push=push)
        assert dev.download(out, dtype="uint32").tolist() == expected
        # Control: the matrices given the other way round are read the other way round.
        dev.dispatch("echo", [out], groups=1, push=dict(push, rm=np.array(rm).T.reshape(3, 2)))
        assert dev.download(out, dtype="uint32").tolist()[4:10] != _bits(rm)
        assert [m for m in dev.validation_messages if m.severity == "error"] == []


@pytest.fixture(scope="module")
def scaffold_manifest(tmp_path_factory):
    """`genspirv init`'s project, built: its scale_f32 is { float alpha; uint n; }."""
    from genspirv.buildsys.builder import build
    from genspirv.project.config import load_config
    from genspirv.scaffold import init
    root = tmp_path_factory.mktemp("scaffold")
    init(root)
    build(load_config(root))
    return root / "manifests" / "shaders.json"


N = 4096
X = 1 + np.arange(N, dtype=np.float32) / N
# A power of two keeps alpha * X exact and normal; and read as a uint (the wrong layout's
# n) its bits are 8388608, not the 2**30 of 2.0's, which keeps the library kernel's
# grid-stride loop over the wrongly read n short.
ALPHA = 2.0 ** -126


def _scale(dev, push) -> np.ndarray:
    x, y = dev.buffer(X.nbytes), dev.buffer(X.nbytes)
    dev.upload(x, X)
    dev.upload(y, np.zeros_like(X))
    local = dev.kernel("scale_f32").entry.info.local_size[0]     # the library's 256, the scaffold's 128
    dev.dispatch("scale_f32", [x, y], groups=N // local, push=push)
    return dev.download(y)


def test_named_push_is_right_for_either_layout_where_bytes_are_not(scaffold_manifest):
    named = {"alpha": ALPHA, "n": N}
    library_order = struct.pack("<If", N, ALPHA)        # the library's { uint n; float alpha; }
    scaffold_order = struct.pack("<fI", ALPHA, N)        # the scaffold's { float alpha; uint n; }
    with Device() as library, Device(manifest=scaffold_manifest) as scaffold:
        assert [m.name for m in library.kernel("scale_f32").entry.info.push_constants] == ["n", "alpha"]
        assert [m.name for m in scaffold.kernel("scale_f32").entry.info.push_constants] == ["alpha", "n"]
        for dev, right, wrong in [(library, library_order, scaffold_order),
                                  (scaffold, scaffold_order, library_order)]:
            expected = np.float32(ALPHA) * X
            assert np.array_equal(_scale(dev, named), expected)
            assert np.array_equal(_scale(dev, right), expected)
            # The negative control: the other layout's bytes run without a word, wrongly.
            assert not np.array_equal(_scale(dev, wrong), expected)
            assert dev.stats["dispatches"] == 3


@pytest.mark.parametrize("push,error,message", [
    ({"alpha": 2.0}, PushConstantError,
     "kernel scale_f32: missing push member 'n' (its members: n: uint32, alpha: float32)"),
    ({"alpha": 2.0, "n": N, "beta": 1.0}, PushConstantError,
     "kernel scale_f32: unknown push member 'beta' (its members: n: uint32, alpha: float32)"),
    ({"alpha": 2.0, "n": -N}, PushConstantError,
     "kernel scale_f32: push member 'n' = -4096 is out of range for uint32 [0, 4294967295] "
     "(its members: n: uint32, alpha: float32)"),
    ({"alpha": "2", "n": N}, PushConstantError,
     "kernel scale_f32: push member 'alpha' (float32) needs a number, not '2' (str) "
     "(its members: n: uint32, alpha: float32)"),
    (struct.pack("<I", N), PushConstantSizeError,
     "kernel scale_f32: 4 byte(s) of push data, the kernel's push constants are 8 bytes"),
])
def test_a_refused_push_is_one_line_and_records_nothing(push, error, message):
    with Device() as dev:
        x, y = dev.buffer(X.nbytes), dev.buffer(X.nbytes)
        with pytest.raises(error) as raised:
            dev.dispatch("scale_f32", [x, y], groups=N // 256, push=push)
        assert str(raised.value) == message
        assert dev.stats["dispatches"] == 0
        dev.dispatch("scale_f32", [x, y], groups=N // 256, push={"n": N, "alpha": 1.0})
        assert dev.stats["dispatches"] == 1      # the device is fine after a refusal


def test_the_push_benchmark_runs_both_arms_and_records_every_sample():
    from benchmarks.harness import RunLog
    from benchmarks.runtime_micro import run_push_bench
    from benchmarks.runtime_suite import record_push
    with Device() as dev:
        res = run_push_bench(dev, samples=2, dispatches=4, calls=10)
        assert dev.stats["dispatches"] == 2 * 4 * (1 + 2)      # warm-up, then two samples
    rec = RunLog("push")
    record_push(rec, res)
    rows = {(r["case"], r["arm"]) for r in rec.runs}
    assert rows == {("push per dispatch, cpu", "bytes"), ("push per dispatch, cpu", "named"),
                    ("push packing, cpu", "struct.pack"), ("push packing, cpu", "named"),
                    ("push packing, cpu", "named, checked path")}
    assert len(rec.runs) == 2 * len(rows) and all(r["value"] > 0 for r in rec.runs)
