"""Kernels are checked against the device they are created on (lavapipe here, a GPU in tools/gpu_run.sh).

- A kernel with more storage buffers than the device allows per stage (300 on
  lavapipe, whose limit is 32) used to build, reflect, be accepted by
  ``dispatch`` and crash the process with SIGSEGV in the fence wait of the
  download; it is now a ``DeviceLimitError`` at ``dev.kernel`` naming the
  kernel, ``maxPerStageDescriptorStorageBuffers``, 300 and the device's
  figure. Run in a subprocess, so a regression fails the test instead of
  killing the run. The negative control: a kernel with exactly the device's
  number (at most 32) is accepted and sums its buffers exactly.
- A 512-byte push-constant block is refused by a device allowing fewer bytes
  (lavapipe 128, NVIDIA 256), and by any device's limits with
  ``maxPushConstantsSize`` set to 128; a 128-byte block is accepted and read
  exactly.

- A kernel declaring the integer dot product (``OpSDot`` on packed 4x8-bit
  vectors, SPV_KHR_integer_dot_product) runs where the device has the
  feature: the Device enables VK_KHR_shader_integer_dot_product and the
  feature (lavapipe and NVIDIA have them), the result is exact and the
  validation layer silent; with the feature taken away it is refused by name.

The shaders are generated and compiled here with the pinned glslang and
spirv-as (the tests skip where they are missing); the limits are the
device's own, so the same tests hold on lavapipe and on a GPU.
"""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "shaders_rt"))
import rt  # noqa: E402

from corpus import tools  # noqa: E402
from genspirv.errors import DeviceFeatureError, DeviceLimitError  # noqa: E402
from genspirv.manifest import Manifest, ManifestEntry, Toolchain  # noqa: E402
from genspirv.reflect import reflect  # noqa: E402
from genspirv.runtime import Device  # noqa: E402
from genspirv.runtime.limits import check_device  # noqa: E402

pytestmark = pytest.mark.skipif(not rt.device_present(), reason="no Vulkan device")

REPO = Path(__file__).resolve().parent.parent


def wide_source(n: int) -> str:
    """A kernel over ``n`` storage buffers: b0.v = b1.v + ... + b(n-1).v."""
    lines = ["#version 450", "layout(local_size_x = 1) in;"]
    lines += [f"layout(set = 0, binding = {i}) buffer B{i} {{ uint v; }} b{i};" for i in range(n)]
    lines += ["void main() {", "    uint s = 0u;"]
    lines += [f"    s += b{i}.v;" for i in range(1, n)]
    lines += ["    b0.v = s;", "}"]
    return "\n".join(lines) + "\n"


def push_source(words: int) -> str:
    """A kernel whose push block is ``words`` uints; out.v = their sum."""
    return textwrap.dedent(f"""\
        #version 450
        layout(local_size_x = 1) in;
        layout(push_constant) uniform P {{ uint p[{words}]; }} pc;
        layout(set = 0, binding = 0) writeonly buffer O {{ uint v; }} o;
        void main() {{
            uint s = 0u;
            for (int i = 0; i < {words}; i++) s += pc.p[i];
            o.v = s;
        }}
        """)


def make_manifest(root: Path, name: str, source: str, suffix: str = "comp") -> Manifest:
    """A one-kernel manifest of ``source`` (GLSL, or SPIR-V assembly for ``suffix="spvasm"``),
    compiled with the pinned glslang (spirv-as), under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{name}.{suffix}").write_text(source)
    blob = tools.corpus_blob(root / f"{name}.{suffix}")
    (root / f"{name}.spv").write_bytes(blob)
    entry = ManifestEntry(name=name, source=f"{name}.{suffix}", defines=(), spirv=f"{name}.spv",
                          sha256=hashlib.sha256(blob).hexdigest(), size=len(blob), info=reflect(blob))
    return Manifest(toolchain=Toolchain("13.1.1", "vulkan1.2"), shaders=(entry,), root=root)


@pytest.fixture(scope="module")
def limits():
    with Device(manifest=rt.MANIFEST) as d:
        return d.device_limits


# Run as a script: the dispatch and download that crashed before the check existed.
_WIDE_SCRIPT = """
import hashlib, sys
from pathlib import Path
import numpy as np
from genspirv.manifest import Manifest, ManifestEntry, Toolchain
from genspirv.reflect import reflect
from genspirv.runtime import Device
root = Path(sys.argv[1]); n = int(sys.argv[2])
blob = (root / "wide.spv").read_bytes()
entry = ManifestEntry(name="wide", source="wide.comp", defines=(), spirv="wide.spv",
                      sha256=hashlib.sha256(blob).hexdigest(), size=len(blob), info=reflect(blob))
with Device(manifest=Manifest(Toolchain("13.1.1", "vulkan1.2"), (entry,), root=root)) as dev:
    bufs = [dev.buffer(4) for _ in range(n)]
    for i, b in enumerate(bufs):
        dev.upload(b, np.array([i], np.uint32))
    try:
        dev.dispatch("wide", bufs, groups=1)
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}")
        sys.exit(3)
    print("sum", int(dev.download(bufs[0], dtype="uint32")[0]))
"""


@pytest.mark.slow
def test_more_storage_buffers_than_the_device_allows_are_refused_not_a_crash(tmp_path, limits):
    most = limits.max_per_stage_descriptor_storage_buffers
    n = 300 if most < 300 else most + 1
    if n > 4096:     # NVIDIA allows about a million: the same kernel against lavapipe's figure
        entry = make_manifest(tmp_path, "wide", wide_source(300)).shaders[0]
        with pytest.raises(DeviceLimitError, match="kernel wide: 300 storage buffers in the compute stage, "
                                                   r"the device allows at most 32 \(maxPerStage"):
            check_device("wide", entry.info,
                         dataclasses.replace(limits, max_per_stage_descriptor_storage_buffers=32))
        return
    make_manifest(tmp_path, "wide", wide_source(n))
    done = subprocess.run([sys.executable, "-c", _WIDE_SCRIPT, str(tmp_path), str(n)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 3, (f"exit {done.returncode} (a negative number is the signal that "
                                  f"killed it):\n{done.stdout}\n{done.stderr[-2000:]}")
    assert done.stdout.strip() == (
        f"DeviceLimitError: kernel wide: {n} storage buffers in the compute stage, the device allows "
        f"at most {most} (maxPerStageDescriptorStorageBuffers)")


@pytest.mark.slow
def test_storage_buffers_at_the_device_limit_are_accepted_and_exact(tmp_path, limits):
    n = min(limits.max_per_stage_descriptor_storage_buffers, 32)
    manifest = make_manifest(tmp_path, f"wide{n}", wide_source(n))
    with Device(manifest=manifest) as dev:
        bufs = [dev.buffer(4, name=f"b{i}") for i in range(n)]
        values = np.arange(n, dtype=np.uint32) * 7 + 3
        for b, v in zip(bufs, values):
            dev.upload(b, np.array([v], np.uint32))
        dev.dispatch(f"wide{n}", bufs, groups=1)
        assert int(dev.download(bufs[0], dtype="uint32")[0]) == int(values[1:].sum())


@pytest.mark.slow
def test_a_push_block_past_the_limit_is_refused_and_one_at_it_exact(tmp_path, limits):
    big = make_manifest(tmp_path / "big", "push512", push_source(128))
    entry = big.shaders[0]
    assert entry.info.push_constant_size == 512
    tight = dataclasses.replace(limits, max_push_constants_size=128)
    with pytest.raises(DeviceLimitError) as caught:
        check_device(entry.name, entry.info, tight)
    assert str(caught.value) == ("kernel push512: 512 bytes of push constants, the device allows at "
                                 "most 128 (maxPushConstantsSize)")
    most = limits.max_push_constants_size
    if most < 512:               # lavapipe (128), NVIDIA (256): the device itself refuses it
        with Device(manifest=big) as dev:
            with pytest.raises(DeviceLimitError, match=f"512 bytes of push constants, the device "
                                                       f"allows at most {most} "):
                dev.kernel("push512")
    fits = make_manifest(tmp_path / "fits", "push128", push_source(32))
    check_device("push128", fits.shaders[0].info, tight)
    with Device(manifest=fits) as dev:
        out = dev.buffer(4, name="out")
        words = np.arange(32, dtype=np.uint32) * 3 + 1
        dev.dispatch("push128", [out], groups=1, push=words.tobytes())
        assert int(dev.download(out, dtype="uint32")[0]) == int(words.sum())


# r = dot(a, b) of two uints read as 4 signed 8-bit lanes (glslang 13 has no GL_EXT_integer_dot_product).
DOT_ASM = """\
               OpCapability Shader
               OpCapability DotProduct
               OpCapability DotProductInput4x8BitPacked
               OpExtension "SPV_KHR_integer_dot_product"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %buf
               OpExecutionMode %main LocalSize 1 1 1
               OpName %buf "buf"
               OpDecorate %B Block
               OpMemberDecorate %B 0 Offset 0
               OpMemberDecorate %B 1 Offset 4
               OpMemberDecorate %B 2 Offset 8
               OpDecorate %buf DescriptorSet 0
               OpDecorate %buf Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
        %int = OpTypeInt 32 1
          %B = OpTypeStruct %uint %uint %int
      %ptr_B = OpTypePointer StorageBuffer %B
      %ptr_u = OpTypePointer StorageBuffer %uint
      %ptr_i = OpTypePointer StorageBuffer %int
        %buf = OpVariable %ptr_B StorageBuffer
         %c0 = OpConstant %int 0
         %c1 = OpConstant %int 1
         %c2 = OpConstant %int 2
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %pa = OpAccessChain %ptr_u %buf %c0
         %pb = OpAccessChain %ptr_u %buf %c1
          %a = OpLoad %uint %pa
          %b = OpLoad %uint %pb
          %d = OpSDot %int %a %b PackedVectorFormat4x8Bit
         %pr = OpAccessChain %ptr_i %buf %c2
               OpStore %pr %d
               OpReturn
               OpFunctionEnd
"""


@pytest.mark.slow
def test_the_integer_dot_product_runs_where_the_device_has_it_and_is_refused_without(tmp_path):
    manifest = make_manifest(tmp_path, "sdot", DOT_ASM, suffix="spvasm")
    assert manifest.shaders[0].info.capabilities == ("DotProduct", "DotProductInput4x8BitPacked", "Shader")
    a = np.array([1, -2, 3, -4], np.int8)
    b = np.array([5, 6, -7, 8], np.int8)
    with Device(manifest=manifest, validation=True) as dev:
        if not dev.features["shader_integer_dot_product"]:
            pytest.skip("the device has no shaderIntegerDotProduct")
        buf = dev.buffer(12, name="buf")
        dev.upload(buf, np.concatenate([a.view(np.uint32), b.view(np.uint32), np.zeros(1, np.uint32)]))
        dev.dispatch("sdot", [buf], groups=1)
        assert int(dev.download(buf, dtype="int32")[2]) == int(np.dot(a.astype(np.int32), b))
        dev.synchronize()
        assert [m.text[:200] for m in dev.validation_messages if m.severity == "error"] == []
    with Device(manifest=manifest) as dev:
        dev.features["shader_integer_dot_product"] = False
        with pytest.raises(DeviceFeatureError, match="kernel sdot needs device feature shader_integer_dot_product "
                                                     r"\(shaderIntegerDotProduct, for OpCapability DotProduct\)"):
            dev.kernel("sdot")


def test_a_spec_sized_push_block_is_checked_at_the_kernels_values():
    """rt_spec_push has ``float w[N]`` in its push block (N a spec constant, default 2): the
    block at N, not at the default, is what the device must hold."""
    with Device(manifest=rt.MANIFEST) as dev:
        most = dev.device_limits.max_push_constants_size
        fits = dev.kernel("rt_spec_push", spec={"N": most // 4})
        assert fits.push_constant_size == most          # exactly at the limit: accepted
        with pytest.raises(DeviceLimitError) as caught:
            dev.kernel("rt_spec_push", spec={"N": most // 4 + 1})
        assert str(caught.value) == (
            f"kernel rt_spec_push (with spec values {{'N': {most // 4 + 1}}}): {most + 4} bytes of push "
            f"constants, the device allows at most {most} (maxPushConstantsSize)")
