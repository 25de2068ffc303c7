"""Modules whose resources reflection cannot see are refused, naming the extension.

A module declaring SPV_EXT_descriptor_heap, or using SPV_KHR_untyped_pointers for a
descriptor, push block or shared memory (OpUntypedVariableKHR), used to reflect to 0
bindings with no error, so the hazard tracker saw nothing. Hand-assembled with the
pinned spirv-as (which knows untyped pointers; the descriptor heap extension needs only
its OpExtension line here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import tools
from genspirv.buildsys.compile import reflect_blob
from genspirv.errors import ReflectError
from genspirv.reflect import reflect

HEADER = """
               OpCapability Shader
{capabilities}
{extensions}
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" {interface}
               OpExecutionMode %main LocalSize 1 1 1
{decorations}
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
     %struct = OpTypeStruct %uint
{types}
       %main = OpFunction %void None %fn
      %entry = OpLabel
{body}
               OpReturn
               OpFunctionEnd
"""

UNTYPED = dict(capabilities="OpCapability UntypedPointersKHR",
               extensions='OpExtension "SPV_KHR_untyped_pointers"')


def _blob(tmp_path: Path, **parts) -> bytes:
    fields = dict(capabilities="", extensions="", interface="", decorations="", types="", body="")
    fields.update(parts)
    source = tmp_path / "m.spvasm"
    source.write_text(HEADER.format(**fields))
    return tools.assemble(source, "spv1.6")


def test_a_descriptor_heap_module_is_refused_naming_the_extension(tmp_path):
    blob = _blob(tmp_path, extensions='OpExtension "SPV_EXT_descriptor_heap"')
    with pytest.raises(ReflectError) as exc:
        reflect_blob("heaped", "spirv/heaped.spv", blob)
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith("heaped (spirv/heaped.spv): ") and "SPV_EXT_descriptor_heap" in message


def test_an_untyped_storage_buffer_is_refused_naming_the_extension(tmp_path):
    blob = _blob(tmp_path, **UNTYPED, interface="%heap",
                 decorations="OpDecorate %heap DescriptorSet 0\nOpDecorate %heap Binding 0\n"
                             "OpDecorate %struct Block\nOpMemberDecorate %struct 0 Offset 0",
                 types="%ptr = OpTypeUntypedPointerKHR StorageBuffer\n"
                       "%heap = OpUntypedVariableKHR %ptr StorageBuffer %struct")
    with pytest.raises(ReflectError, match=r"SPV_KHR_untyped_pointers: OpUntypedVariableKHR %\d+ at word "
                                           r"\d+ is a StorageBuffer variable"):
        reflect(blob)


def test_untyped_pointers_in_function_memory_still_reflect(tmp_path):
    # Negative control: an untyped Function variable holds no resource.
    blob = _blob(tmp_path, **UNTYPED, types="%ptr = OpTypeUntypedPointerKHR Function",
                 body="%local = OpUntypedVariableKHR %ptr Function %uint")
    assert reflect(blob).bindings == ()
