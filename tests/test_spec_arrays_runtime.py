"""Arrays sized by a spec constant, at the kernel's spec values (lavapipe here, and a real
GPU through tools/gpu_run.sh).

``rt_spec_push`` (tests/shaders_rt) has ``float w[N]`` in its push block and a readonly
block ``float a[N]``, N a spec constant of default 2, and writes out the N floats it read
from each. Created with ``spec={"N": 8}`` the kernel packs, checks and pushes 8 floats and
needs 32 bytes bound to the block; a 2-item push and a 2-float buffer are refused, each in
one line naming the kernel, the member or binding and the size expected.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.errors import BufferRangeError, PushConstantError  # noqa: E402


@pytest.fixture(scope="module")
def dev():
    if not rt.device_present():
        pytest.skip("no Vulkan device")
    from genspirv.runtime import Device
    d = Device(manifest=rt.MANIFEST)
    yield d
    d.close()


def _run(dev, kernel, n: int, push, inputs=None) -> np.ndarray:
    a = np.arange(100, 100 + n, dtype=np.float32) if inputs is None else inputs
    src, out = dev.buffer(4 * len(a)), dev.buffer(4 * 2 * n)
    dev.upload(src, a)
    dev.upload(out, np.full(2 * n, -1, np.float32))
    dev.dispatch(kernel, [src, out], groups=1, push=push)
    return dev.download(out, dtype="float32")


def test_a_specialised_kernel_takes_and_reads_all_its_push_array(dev):
    k = dev.kernel("rt_spec_push", spec={"N": 8})
    w = [0.5 * i + 1 for i in range(8)]
    got = _run(dev, k, 8, {"w": w})
    assert got[:8].tolist() == w                                   # every pushed float read
    assert got[8:].tolist() == list(range(100, 108))               # and the 8-float block
    got = _run(dev, k, 8, {"w": np.arange(8, dtype=np.float32)})   # a numpy array too
    assert got[:8].tolist() == list(range(8))


def test_the_default_kernel_still_takes_two(dev):
    got = _run(dev, dev.kernel("rt_spec_push"), 2, {"w": [3.0, 4.0]})
    assert got.tolist() == [3.0, 4.0, 100.0, 101.0]


def test_a_push_of_the_default_length_is_refused_at_the_kernels_values(dev):
    k = dev.kernel("rt_spec_push", spec={"N": 8})
    with pytest.raises(PushConstantError) as exc:
        _run(dev, k, 8, {"w": [1.0, 2.0]})
    message = str(exc.value)
    assert "\n" not in message
    assert "rt_spec_push" in message and "'w'" in message and "8 items" in message


def test_a_buffer_sized_for_the_defaults_is_refused_by_a_specialised_kernel(dev):
    k = dev.kernel("rt_spec_push", spec={"N": 8})
    push = {"w": [0.0] * 8}
    with pytest.raises(BufferRangeError) as exc:
        _run(dev, k, 8, push, inputs=np.zeros(2, np.float32))      # 8 bytes: N=2's size
    message = str(exc.value)
    assert "rt_spec_push" in message and "inp" in message and "32 bytes" in message
    # Negative control: the size N=8 needs passes.
    assert _run(dev, k, 8, push, inputs=np.ones(8, np.float32))[8:].tolist() == [1.0] * 8


def test_a_push_array_grown_into_the_next_member_or_to_nothing_is_refused():
    from corpus import tools
    from genspirv.errors import SpecConstantError
    from genspirv.manifest import ManifestEntry
    from genspirv.reflect import reflect
    from genspirv.runtime.kernel import pack_spec, specialised_entry
    # push.comp: float spec_sized[N] at byte 320, then vec3 tail at 336.
    info = reflect(tools.corpus_blob(tools.CORPUS / "push.comp"))
    entry = ManifestEntry("push", "glsl/push.comp", (), "spirv/push.spv", "0" * 64, 0, info)
    with pytest.raises(PushConstantError, match=r"kernel push: .*'spec_sized'.*runs into 'tail'"):
        specialised_entry(entry, pack_spec(entry, {"N": 5}))
    with pytest.raises(SpecConstantError, match="kernel push: .*positive"):
        specialised_entry(entry, pack_spec(entry, {"N": 0}))
    assert specialised_entry(entry, pack_spec(entry, {"N": 4})).info.push_constant_size == 348
