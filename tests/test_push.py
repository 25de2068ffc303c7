"""Named push constants packed from the reflected members (genspirv.runtime.push), no device.

The bytes are read back at offsets worked out by hand (std430, as in
tests/test_reflect_push.py), not with the packer's own layout; every refusal
is one PushConstantError naming the kernel, the member and the members.
tests/test_push_runtime.py runs the same packing on lavapipe.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from corpus import tools
from genspirv.errors import GenspirvError, PushConstantError, RuntimeCheckError
from genspirv.manifest import ManifestEntry, load_manifest
from genspirv.reflect import PushMember, ShaderInfo, reflect
from genspirv.runtime.push import Packer, pack_push, packer_for

REPO = Path(__file__).resolve().parent.parent


def _entry(info: ShaderInfo, name: str = "k") -> ManifestEntry:
    return ManifestEntry(name=name, source="glsl/k.comp", defines=(), spirv="spirv/k.spv",
                         sha256="0" * 64, size=20, info=info)


@pytest.fixture(scope="module")
def scale():
    """The shipped library's scale_f32: push { uint n; float alpha; }."""
    return load_manifest(REPO / "manifests" / "shaders.json", verify_blobs=False).entry("scale_f32")


@pytest.fixture(scope="module")
def layouts():
    return _entry(reflect(tools.compile_glsl(tools.CORPUS / "push.comp")), "layouts")


def _info(*members: PushMember, size: int | None = None) -> ShaderInfo:
    end = max((m.offset + m.size for m in members), default=0)
    return ShaderInfo("main", (1, 1, 1), (None, None, None), (), (),
                      end if size is None else size, push_constants=members)


def test_named_in_any_order(scale):
    expected = struct.pack("<If", 1000, 2.0)
    assert pack_push(scale, {"n": 1000, "alpha": 2.0}) == expected
    assert pack_push(scale, {"alpha": 2.0, "n": 1000}) == expected
    assert pack_push(scale, {"alpha": np.float32(2.0), "n": np.uint32(1000)}) == expected


def test_the_packer_is_made_once_per_entry(scale):
    assert packer_for(scale) is packer_for(scale)


def test_every_shape_lands_at_its_offset(layouts):
    inner = {"dir": [4.0, 5.0, 6.0], "w": 7.5, "ext": [[1, 2], [3, 4]]}
    arr_m = np.arange(32, dtype=np.float32).reshape(2, 4, 4)     # [matrix][column][row]
    data = pack_push(layouts, {
        "tail": (9.0, 8.0, 7.0), "n": 7, "pad3": np.array([1.0, 2.0, 3.0]), "inner": inner,
        "inners": [inner, {"dir": [0.5, 0.25, 0.125], "w": -1.0, "ext": [[5, 6], [7, 8]]}],
        "rm": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],      # mat3x2: 3 columns of 2 rows
        "cm": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],        # mat2x3: 2 columns of 3 rows
        "arr_m": arr_m, "spec_sized": [0.0, 1.0, 2.0]})
    assert len(data) == 348

    def f(offset, count=1):
        return list(struct.unpack_from(f"<{count}f", data, offset))

    assert struct.unpack_from("<I", data, 0) == (7,)
    assert data[4:16] == bytes(12)                        # padding stays zero
    assert f(16, 3) == [1.0, 2.0, 3.0]
    assert f(32, 4) == [4.0, 5.0, 6.0, 7.5] and struct.unpack_from("<4I", data, 48) == (1, 2, 3, 4)
    assert f(96, 4) == [0.5, 0.25, 0.125, -1.0] and struct.unpack_from("<4I", data, 112) == (5, 6, 7, 8)
    # row-major mat3x2: row r at 128 + 16 r holds columns 0..2; column-major: column c at 160 + 16 c
    assert f(128, 3) == [1.0, 3.0, 5.0] and f(144, 3) == [2.0, 4.0, 6.0]
    assert f(160, 3) == [1.0, 2.0, 3.0] and f(176, 3) == [4.0, 5.0, 6.0]
    for i in range(2):
        for c in range(4):
            assert f(192 + 64 * i + 16 * c, 4) == list(arr_m[i, c])
    assert f(320, 3) == [0.0, 1.0, 2.0] and f(336, 3) == [9.0, 8.0, 7.0]


def test_every_scalar_width():
    info = reflect(tools.compile_glsl(tools.CORPUS / "push_types.comp"))
    s = {"h": 0.5, "b": -3, "m": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]}
    data = pack_push(_entry(info), {
        "a": [[1, 2, 3], [4, 5, 6]], "big": 2 ** 64 - 1, "sv": [-1, 2, -32768],
        "s": [[s, s], [s, dict(s, h=-2.0, b=127)]], "dm": np.ones((2, 3)),
        "rdm": np.arange(12.0).reshape(2, 3, 2), "ref": 0xDEADBEEF00, "bytes": [0, 1, 254, 255],
        "neg": -2 ** 63, "u16": 65535, "iv": [-7, 7]})
    assert struct.unpack_from("<6f", data, 0) == (1, 2, 3, 4, 5, 6)
    assert struct.unpack_from("<Q3h", data, 24) == (2 ** 64 - 1, -1, 2, -32768)
    # s[1][1] at 40 + 80 + 40: float16 h, int8 b, then mat2 m[2] (stride 16, columns of 8)
    assert struct.unpack_from("<eb", data, 160) == (-2.0, 127)
    assert struct.unpack_from("<8f", data, 168) == (1, 2, 3, 4, 5, 6, 7, 8)
    # row-major dmat3x2 rdm[1]: row r at 288 + 64 + 32 r; value [1][c][r] = 6 + 2c + r
    assert struct.unpack_from("<3d", data, 352) == (6.0, 8.0, 10.0)
    assert struct.unpack_from("<3d", data, 384) == (7.0, 9.0, 11.0)
    assert struct.unpack_from("<Q4B4xq", data, 416) == (0xDEADBEEF00, 0, 1, 254, 255, -2 ** 63)
    assert struct.unpack_from("<H", data, 440) == (65535,) and struct.unpack_from("<2i", data, 448) == (-7, 7)


def test_no_members_pads_to_the_size():
    assert pack_push(_entry(_info(size=16)), {}) == bytes(16)


def test_a_bool_member_is_a_32_bit_zero_or_one():
    entry = _entry(_info(PushMember("on", 0, 4, "bool"), PushMember("n", 4, 4, "uint32")))
    assert pack_push(entry, {"on": True, "n": 3}) == struct.pack("<II", 1, 3)
    with pytest.raises(PushConstantError, match=r"push member 'on' = 2 is out of range for bool \[0, 1\]"):
        pack_push(entry, {"on": 2, "n": 3})


def test_non_finite_floats_are_values():
    entry = _entry(_info(PushMember("x", 0, 4, "float32"), PushMember("y", 4, 8, "float64")))
    x, y = struct.unpack("<fd", pack_push(entry, {"x": math.inf, "y": math.nan}))
    assert x == math.inf and math.isnan(y)


# -- refusals ----------------------------------------------------------------------

MEMBERS = ("(its members: n: uint32, pad3: float32 vec3, inner: struct, inners: struct[2], "
           "rm: float32 3x2 matrix, cm: float32 2x3 matrix, arr_m: float32 4x4 matrix[2], "
           "spec_sized: float32[3], tail: float32 vec3)")


def _good() -> dict:
    inner = {"dir": [4.0, 5.0, 6.0], "w": 7.5, "ext": [[1, 2], [3, 4]]}
    return {"n": 7, "pad3": [1, 2, 3], "inner": inner, "inners": [inner, inner],
            "rm": np.zeros((3, 2)), "cm": np.zeros((2, 3)), "arr_m": np.zeros((2, 4, 4)),
            "spec_sized": [0, 1, 2], "tail": [0, 0, 0]}


def _with(**changes) -> dict:
    d = _good()
    for k, v in changes.items():
        if v is None:
            del d[k]
        else:
            d[k] = v
    return d


REFUSED = [
    ("unknown", dict(m=1), "unknown push member 'm'"),
    ("missing", dict(tail=None), "missing push member 'tail'"),
    ("misspelt", dict(tail=None, tial=[0, 0, 0]), "unknown push member 'tial', missing push member 'tail'"),
    ("negative uint", dict(n=-1), "push member 'n' = -1 is out of range for uint32 [0, 4294967295]"),
    ("too big uint", dict(n=2 ** 32), "push member 'n' = 4294967296 is out of range for uint32"),
    ("float for uint", dict(n=2.0), "push member 'n' (uint32) needs an integer, not 2.0 (float)"),
    ("str for float", dict(tail=[0, "1", 0]), "push member 'tail[1]' (float32) needs a number, not '1' (str)"),
    ("float32 overflow", dict(tail=[0, 0, 1e39]), "push member 'tail[2]' = 1e+39 is out of range for float32"),
    ("short vector", dict(pad3=[1, 2]), "push member 'pad3' (float32 vec3) needs shape (3,): 3 items here, got 2"),
    ("scalar for vector", dict(pad3=1.0), "push member 'pad3' (float32 vec3) needs shape (3,): a sequence of 3"),
    ("numpy shape", dict(rm=np.zeros((2, 3))),
     "push member 'rm' (float32 3x2 matrix) needs shape (3, 2), got an array of shape (2, 3)"),
    ("nested shape", dict(arr_m=[np.zeros((4, 4)).tolist(), np.zeros((4, 3)).tolist()]),
     "push member 'arr_m[1][0]' (float32 4x4 matrix[2]) needs shape (2, 4, 4): 4 items here, got 3"),
    ("struct not a dict", dict(inner=[1, 2, 3]), "push member 'inner' is a struct: it needs a dict of dir, w, ext"),
    ("struct field missing", dict(inners=[_good()["inner"], {"dir": [0, 0, 0], "w": 1.0}]),
     "push member 'inners[1]' needs exactly the fields dir, w, ext (unknown: none; missing: ext)"),
    ("deep value", dict(inners=[_good()["inner"], dict(_good()["inner"], ext=[[1, 2], [3, -4]])]),
     "push member 'inners[1].ext[1][1]' = -4 is out of range for uint32"),
]


@pytest.mark.parametrize("what,values,message", [(w, _with(**c), m) for w, c, m in REFUSED],
                         ids=[r[0] for r in REFUSED])
def test_refusals_name_kernel_member_and_members(layouts, what, values, message):
    with pytest.raises(PushConstantError) as raised:
        pack_push(layouts, values)
    text = str(raised.value)
    assert text.startswith(f"kernel layouts: {message}"), text
    assert text.endswith(MEMBERS) and "\n" not in text
    assert isinstance(raised.value, RuntimeCheckError) and isinstance(raised.value, GenspirvError)


def test_the_good_values_pack(layouts):
    # Positive control for the refusals: the values they spoil pack as they are.
    assert len(pack_push(layouts, _good())) == 348


def test_unnamed_members_take_bytes_only():
    blob = tools.corpus_blob(tools.CORPUS / "push_layouts.spvasm")
    entry = _entry(reflect(blob, "main"), "unnamed")
    with pytest.raises(PushConstantError, match=r"kernel unnamed: its push-constant member at offset 68 "
                                                r"has no name; pass the push data as bytes or a numpy array"):
        pack_push(entry, {"later": 1, "inner": {}})
    # The other entry point's block is named; the bytes span the module's push size (72).
    other = _entry(reflect(blob, "other"), "other")
    assert pack_push(other, {"x": 1, "y": [1, 2, 3, 4]}) == struct.pack("<I12x4f40x", 1, 1, 2, 3, 4)


def test_duplicate_names_take_bytes_only():
    entry = _entry(_info(PushMember("a", 0, 4, "uint32"), PushMember("a", 4, 4, "uint32")), "dup")
    with pytest.raises(PushConstantError, match="two of its push-constant members are named 'a'"):
        pack_push(entry, {"a": 1})


# -- the fast path and the checked path agree --------------------------------------

_values = st.one_of(st.integers(-2 ** 33, 2 ** 33), st.floats(allow_nan=False, width=64),
                    st.booleans(), st.text(max_size=2), st.none())


@given(n=_values, alpha=_values)
def test_fast_and_checked_paths_agree(scale, n, alpha):
    packer = packer_for(scale)
    assert packer._fast is not None                     # scale_f32 takes the fast path
    values = {"n": n, "alpha": alpha}
    try:
        fast = packer.pack(values)
    except PushConstantError as error:
        with pytest.raises(PushConstantError) as checked:
            packer._checked(values)
        assert str(checked.value) == str(error)
        return
    assert packer._checked(values) == fast
    assert fast == struct.pack("<If", n, alpha)


def test_a_packer_without_a_fast_path_is_still_exact():
    members = (PushMember("v", 0, 8, "float32", vector=2), PushMember("n", 8, 4, "uint32"))
    packer = Packer("k", members, 16)
    assert packer._fast is None
    assert packer.pack({"n": 5, "v": [1.0, 2.0]}) == struct.pack("<2fI4x", 1.0, 2.0, 5)


def _loaded_by(module: str) -> set[str]:
    import json
    import subprocess
    import sys
    code = (f"import json, sys\nsys.modules['vulkan'] = None\nimport {module}\n"
            "print(json.dumps(sorted(m for m, v in sys.modules.items() if v is not None)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout))


def test_the_packer_imports_without_vulkan_or_numpy():
    loaded = _loaded_by("genspirv.runtime.push")
    assert "genspirv.runtime.push" in loaded
    assert not {"vulkan", "numpy", "genspirv.runtime._vk", "genspirv.runtime.device"} & loaded
    assert "numpy" in _loaded_by("genspirv.runtime.push, numpy")   # control: the probe sees numpy
