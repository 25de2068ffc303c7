"""The SPIR-V binary reader: bytes in, a frozen ``Module`` out.

``parse(blob) -> Module`` checks the header (magic in either byte order,
version, bound, schema), splits the word stream into ``Instruction`` records
(opcode, word offset, operand words, result type and result id where the
opcode has them) and builds the id -> defining instruction map in the same
single pass.  ``capabilities(blob)`` gives the names of the module's
``OpCapability`` operands.

Pure Python, standard library only, no Vulkan.  Any malformed input raises
``SpirvError`` carrying the word offset where reading failed: a truncated
header or stream, a bad magic, a word count of 0 or one running past the end,
a result id of 0, at or past the bound, or defined twice, a literal string
without its terminating NUL.  Every loop advances by at least one word, so no
input makes it hang.

Opcode and enumerant numbers are those of the SPIR-V 1.6 specification
(unified1 grammar); only what genspirv reads is named here.
"""

from __future__ import annotations

import gc
import struct
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Mapping, NamedTuple

from ..errors import SpirvError

MAGIC = 0x07230203
HEADER_WORDS = 5
# The specification's universal limit on the id bound (Appendix "Universal Limits").
MAX_BOUND = 0x400000

# -- opcodes ------------------------------------------------------------------

OP_NOP = 0
OP_UNDEF = 1
OP_SOURCE = 3
OP_NAME = 5
OP_MEMBER_NAME = 6
OP_STRING = 7
OP_LINE = 8
OP_EXTENSION = 10
OP_EXT_INST_IMPORT = 11
OP_EXT_INST = 12
OP_MEMORY_MODEL = 14
OP_ENTRY_POINT = 15
OP_EXECUTION_MODE = 16
OP_CAPABILITY = 17
OP_TYPE_VOID = 19
OP_TYPE_BOOL = 20
OP_TYPE_INT = 21
OP_TYPE_FLOAT = 22
OP_TYPE_VECTOR = 23
OP_TYPE_MATRIX = 24
OP_TYPE_IMAGE = 25
OP_TYPE_SAMPLER = 26
OP_TYPE_SAMPLED_IMAGE = 27
OP_TYPE_ARRAY = 28
OP_TYPE_RUNTIME_ARRAY = 29
OP_TYPE_STRUCT = 30
OP_TYPE_OPAQUE = 31
OP_TYPE_POINTER = 32
OP_TYPE_FUNCTION = 33
OP_TYPE_FORWARD_POINTER = 39
OP_CONSTANT_TRUE = 41
OP_CONSTANT_FALSE = 42
OP_CONSTANT = 43
OP_CONSTANT_COMPOSITE = 44
OP_CONSTANT_NULL = 46
OP_SPEC_CONSTANT_TRUE = 48
OP_SPEC_CONSTANT_FALSE = 49
OP_SPEC_CONSTANT = 50
OP_SPEC_CONSTANT_COMPOSITE = 51
OP_SPEC_CONSTANT_OP = 52
OP_FUNCTION = 54
OP_FUNCTION_PARAMETER = 55
OP_FUNCTION_END = 56
OP_FUNCTION_CALL = 57
OP_VARIABLE = 59
OP_UNTYPED_VARIABLE_KHR = 4418      # SPV_KHR_untyped_pointers
OP_IMAGE_TEXEL_POINTER = 60
OP_LOAD = 61
OP_STORE = 62
OP_COPY_MEMORY = 63
OP_COPY_MEMORY_SIZED = 64
OP_ACCESS_CHAIN = 65
OP_IN_BOUNDS_ACCESS_CHAIN = 66
OP_PTR_ACCESS_CHAIN = 67
OP_ARRAY_LENGTH = 68
OP_IN_BOUNDS_PTR_ACCESS_CHAIN = 70
OP_DECORATE = 71
OP_MEMBER_DECORATE = 72
OP_DECORATION_GROUP = 73
OP_GROUP_DECORATE = 74
OP_GROUP_MEMBER_DECORATE = 75
OP_COPY_OBJECT = 83
OP_SAMPLED_IMAGE = 86
OP_IMAGE_SAMPLE_IMPLICIT_LOD = 87
OP_IMAGE_SAMPLE_PROJ_DREF_EXPLICIT_LOD = 94
OP_IMAGE_FETCH = 95
OP_IMAGE_GATHER = 96
OP_IMAGE_DREF_GATHER = 97
OP_IMAGE_READ = 98
OP_IMAGE_WRITE = 99
OP_IMAGE = 100
OP_IMAGE_QUERY_FORMAT = 101
OP_IMAGE_QUERY_SAMPLES = 107
OP_BITCAST = 124
OP_ATOMIC_LOAD = 227
OP_ATOMIC_STORE = 228
OP_ATOMIC_EXCHANGE = 229
OP_ATOMIC_XOR = 242
OP_PHI = 245
OP_LOOP_MERGE = 246
OP_SELECTION_MERGE = 247
OP_LABEL = 248
OP_BRANCH = 249
OP_BRANCH_CONDITIONAL = 250
OP_SWITCH = 251
OP_KILL = 252
OP_RETURN = 253
OP_RETURN_VALUE = 254
OP_UNREACHABLE = 255
OP_LIFETIME_START = 256
OP_LIFETIME_STOP = 257
OP_SELECT = 169
OP_CONTROL_BARRIER = 224
OP_MEMORY_BARRIER = 225
OP_IMAGE_SPARSE_SAMPLE_IMPLICIT_LOD = 305
OP_IMAGE_SPARSE_GATHER = 314
OP_IMAGE_SPARSE_DREF_GATHER = 315
OP_NO_LINE = 317
OP_ATOMIC_FLAG_TEST_AND_SET = 318
OP_ATOMIC_FLAG_CLEAR = 319
OP_IMAGE_SPARSE_READ = 320
OP_MODULE_PROCESSED = 330
OP_EXECUTION_MODE_ID = 331
OP_DECORATE_ID = 332
OP_TERMINATE_INVOCATION = 4416
OP_TYPE_RAY_QUERY_KHR = 4472
OP_RAY_QUERY_INITIALIZE_KHR = 4473
OP_COOPERATIVE_MATRIX_LOAD_KHR = 4457
OP_COOPERATIVE_MATRIX_STORE_KHR = 4458
OP_TYPE_COOPERATIVE_MATRIX_KHR = 4456
OP_TYPE_ACCELERATION_STRUCTURE_KHR = 5341
OP_ATOMIC_FMIN_EXT = 5614
OP_ATOMIC_FMAX_EXT = 5615
OP_DECORATE_STRING = 5632
OP_MEMBER_DECORATE_STRING = 5633
OP_ATOMIC_FADD_EXT = 6035

# Opcodes with a result id but no result type (types, labels, imports...).
_RESULT_ONLY = frozenset(
    [OP_STRING, OP_EXT_INST_IMPORT, OP_DECORATION_GROUP, OP_LABEL]
    + list(range(OP_TYPE_VOID, 39))          # OpTypeVoid .. OpTypePipe
    + [322, 327,                             # OpTypePipeStorage, OpTypeNamedBarrier
       OP_TYPE_COOPERATIVE_MATRIX_KHR, OP_TYPE_RAY_QUERY_KHR,
       OP_TYPE_ACCELERATION_STRUCTURE_KHR, 5358])  # 5358: OpTypeCooperativeMatrixNV

# Opcodes with both a result type and a result id.  Opcodes in neither set
# and not known to have no result are simply not entered into ``defs``:
# reflection never needs their results.
_TYPED_RESULT = frozenset(
    [OP_UNDEF, OP_EXT_INST]
    + list(range(41, 47)) + list(range(48, 53))                 # constants, spec constants
    + [OP_FUNCTION, OP_FUNCTION_PARAMETER, OP_FUNCTION_CALL]
    + list(range(59, 62)) + list(range(65, 71))                 # variable, texel ptr, load, chains
    + list(range(77, 85)) + list(range(86, 99)) + list(range(100, 108))  # composites, images
    + list(range(109, 125)) + list(range(126, 206))             # conversions, arithmetic
    + list(range(207, 216))                                     # derivatives
    + [OP_ATOMIC_LOAD] + list(range(229, 243)) + [OP_PHI]
    + list(range(305, 317)) + [OP_ATOMIC_FLAG_TEST_AND_SET, OP_IMAGE_SPARSE_READ]
    + list(range(333, 367))                                     # OpGroupNonUniform*
    + [OP_COOPERATIVE_MATRIX_LOAD_KHR, OP_ATOMIC_FMIN_EXT, OP_ATOMIC_FMAX_EXT, OP_ATOMIC_FADD_EXT])

_TYPED, _UNTYPED = 2, 1
_LAYOUT = {**{op: _UNTYPED for op in _RESULT_ONLY}, **{op: _TYPED for op in _TYPED_RESULT}}

# -- enumerants ---------------------------------------------------------------

EXECUTION_MODELS = {0: "Vertex", 1: "TessellationControl", 2: "TessellationEvaluation",
                    3: "Geometry", 4: "Fragment", 5: "GLCompute", 6: "Kernel",
                    5267: "TaskNV", 5268: "MeshNV", 5313: "RayGenerationKHR",
                    5314: "IntersectionKHR", 5315: "AnyHitKHR", 5316: "ClosestHitKHR",
                    5317: "MissKHR", 5318: "CallableKHR", 5364: "TaskEXT", 5365: "MeshEXT"}
EXECUTION_MODEL_GLCOMPUTE = 5

EXECUTION_MODE_LOCAL_SIZE = 17
EXECUTION_MODE_LOCAL_SIZE_ID = 38

STORAGE_UNIFORM_CONSTANT = 0
STORAGE_INPUT = 1
STORAGE_UNIFORM = 2
STORAGE_OUTPUT = 3
STORAGE_WORKGROUP = 4
STORAGE_PRIVATE = 6
STORAGE_FUNCTION = 7
STORAGE_PUSH_CONSTANT = 9
STORAGE_STORAGE_BUFFER = 12
STORAGE_PHYSICAL_STORAGE_BUFFER = 5349
STORAGE_NAMES = {STORAGE_UNIFORM_CONSTANT: "UniformConstant", STORAGE_UNIFORM: "Uniform",
                 STORAGE_WORKGROUP: "Workgroup", STORAGE_PUSH_CONSTANT: "PushConstant",
                 STORAGE_STORAGE_BUFFER: "StorageBuffer"}

DECORATION_SPEC_ID = 1
DECORATION_BLOCK = 2
DECORATION_BUFFER_BLOCK = 3
DECORATION_ROW_MAJOR = 4
DECORATION_COL_MAJOR = 5
DECORATION_ARRAY_STRIDE = 6
DECORATION_MATRIX_STRIDE = 7
DECORATION_BUILTIN = 11
DECORATION_ALIASED = 20
DECORATION_NON_WRITABLE = 24
DECORATION_NON_READABLE = 25
DECORATION_BINDING = 33
DECORATION_DESCRIPTOR_SET = 34
DECORATION_OFFSET = 35

BUILTIN_WORKGROUP_SIZE = 25

IMAGE_DIM_BUFFER = 5
IMAGE_DIM_SUBPASS_DATA = 6

CAPABILITIES = {
    0: "Matrix", 1: "Shader", 2: "Geometry", 3: "Tessellation", 4: "Addresses",
    5: "Linkage", 6: "Kernel", 7: "Vector16", 8: "Float16Buffer", 9: "Float16",
    10: "Float64", 11: "Int64", 12: "Int64Atomics", 13: "ImageBasic",
    14: "ImageReadWrite", 15: "ImageMipmap", 17: "Pipes", 18: "Groups",
    19: "DeviceEnqueue", 20: "LiteralSampler", 21: "AtomicStorage", 22: "Int16",
    23: "TessellationPointSize", 24: "GeometryPointSize", 25: "ImageGatherExtended",
    27: "StorageImageMultisample", 28: "UniformBufferArrayDynamicIndexing",
    29: "SampledImageArrayDynamicIndexing", 30: "StorageBufferArrayDynamicIndexing",
    31: "StorageImageArrayDynamicIndexing", 32: "ClipDistance", 33: "CullDistance",
    34: "ImageCubeArray", 35: "SampleRateShading", 36: "ImageRect", 37: "SampledRect",
    38: "GenericPointer", 39: "Int8", 40: "InputAttachment", 41: "SparseResidency",
    42: "MinLod", 43: "Sampled1D", 44: "Image1D", 45: "SampledCubeArray",
    46: "SampledBuffer", 47: "ImageBuffer", 48: "ImageMSArray",
    49: "StorageImageExtendedFormats", 50: "ImageQuery", 51: "DerivativeControl",
    52: "InterpolationFunction", 53: "TransformFeedback", 54: "GeometryStreams",
    55: "StorageImageReadWithoutFormat", 56: "StorageImageWriteWithoutFormat",
    57: "MultiViewport", 58: "SubgroupDispatch", 59: "NamedBarrier", 60: "PipeStorage",
    61: "GroupNonUniform", 62: "GroupNonUniformVote", 63: "GroupNonUniformArithmetic",
    64: "GroupNonUniformBallot", 65: "GroupNonUniformShuffle",
    66: "GroupNonUniformShuffleRelative", 67: "GroupNonUniformClustered",
    68: "GroupNonUniformQuad", 69: "ShaderLayer", 70: "ShaderViewportIndex",
    71: "UniformDecoration",
    4422: "FragmentShadingRateKHR", 4423: "SubgroupBallotKHR", 4427: "DrawParameters",
    4428: "WorkgroupMemoryExplicitLayoutKHR",
    4429: "WorkgroupMemoryExplicitLayout8BitAccessKHR",
    4430: "WorkgroupMemoryExplicitLayout16BitAccessKHR", 4431: "SubgroupVoteKHR",
    4433: "StorageBuffer16BitAccess", 4434: "UniformAndStorageBuffer16BitAccess",
    4435: "StoragePushConstant16", 4436: "StorageInputOutput16", 4437: "DeviceGroup",
    4439: "MultiView", 4441: "VariablePointersStorageBuffer", 4442: "VariablePointers",
    4445: "AtomicStorageOps", 4447: "SampleMaskPostDepthCoverage",
    4448: "StorageBuffer8BitAccess", 4449: "UniformAndStorageBuffer8BitAccess",
    4450: "StoragePushConstant8", 4464: "DenormPreserve", 4465: "DenormFlushToZero",
    4466: "SignedZeroInfNanPreserve", 4467: "RoundingModeRTE", 4468: "RoundingModeRTZ",
    4471: "RayQueryProvisionalKHR", 4472: "RayQueryKHR",
    4478: "RayTraversalPrimitiveCullingKHR", 4479: "RayTracingKHR",
    5009: "ImageGatherBiasLodAMD", 5013: "StencilExportEXT", 5015: "ImageReadWriteLodAMD",
    5016: "Int64ImageEXT", 5055: "ShaderClockKHR",
    5116: "BFloat16TypeKHR", 5117: "BFloat16DotProductKHR",
    5118: "BFloat16CooperativeMatrixKHR",
    5297: "GroupNonUniformPartitionedNV", 5301: "ShaderNonUniform",
    5302: "RuntimeDescriptorArray", 5303: "InputAttachmentArrayDynamicIndexing",
    5304: "UniformTexelBufferArrayDynamicIndexing",
    5305: "StorageTexelBufferArrayDynamicIndexing",
    5306: "UniformBufferArrayNonUniformIndexing",
    5307: "SampledImageArrayNonUniformIndexing",
    5308: "StorageBufferArrayNonUniformIndexing",
    5309: "StorageImageArrayNonUniformIndexing",
    5310: "InputAttachmentArrayNonUniformIndexing",
    5311: "UniformTexelBufferArrayNonUniformIndexing",
    5312: "StorageTexelBufferArrayNonUniformIndexing",
    5345: "VulkanMemoryModel", 5346: "VulkanMemoryModelDeviceScope",
    5347: "PhysicalStorageBufferAddresses", 5350: "ComputeDerivativeGroupLinearKHR",
    5357: "CooperativeMatrixNV", 5373: "ShaderSMBuiltinsNV",
    5379: "DemoteToHelperInvocation",
    5612: "AtomicFloat32MinMaxEXT", 5613: "AtomicFloat64MinMaxEXT",
    5616: "AtomicFloat16MinMaxEXT",
    6016: "DotProductInputAll", 6017: "DotProductInput4x8Bit",
    6018: "DotProductInput4x8BitPacked", 6019: "DotProduct",
    6022: "CooperativeMatrixKHR", 6024: "ReplicatedCompositesEXT",
    6026: "GroupNonUniformRotateKHR",
    6033: "AtomicFloat32AddEXT", 6034: "AtomicFloat64AddEXT", 6095: "AtomicFloat16AddEXT",
}


def capability_name(value: int) -> str:
    """The specification's name of a capability; ``Capability<N>`` when unknown here."""
    return CAPABILITIES.get(value, f"Capability{value}")


# -- the module ---------------------------------------------------------------


class Instruction(NamedTuple):
    """One instruction.  Immutable like a frozen dataclass; a NamedTuple because the
    reader builds one per instruction and this is about three times cheaper to build."""

    opcode: int
    offset: int                 # word offset of the instruction's first word in the module
    operands: tuple[int, ...]   # the words after the opcode/word-count word
    result_type: int = 0        # 0 when the opcode has none
    result: int = 0             # 0 when the opcode has none

    @property
    def word_count(self) -> int:
        return len(self.operands) + 1

    def operand(self, index: int) -> int:
        """Operand word ``index``; a ``SpirvError`` when the instruction is too short."""
        if index >= len(self.operands):
            raise SpirvError(f"opcode {self.opcode} has {len(self.operands)} operand words, "
                             f"needs at least {index + 1}", self.offset)
        return self.operands[index]

    def string(self, index: int) -> tuple[str, int]:
        """The literal string starting at operand ``index`` and the index after it."""
        return decode_string(self.operands, index, self.offset)


@dataclass(frozen=True)
class Module:
    version: tuple[int, int]    # (major, minor)
    generator: int
    bound: int
    schema: int
    big_endian: bool
    instructions: tuple[Instruction, ...]
    # result id -> the instruction defining it
    defs: Mapping[int, Instruction] = field(repr=False, compare=False)

    @property
    def generator_tool(self) -> int:
        """The registered tool id (upper 16 bits of the generator word)."""
        return self.generator >> 16

    def define(self, id_: int, user: Instruction) -> Instruction:
        """The instruction defining ``id_``; a ``SpirvError`` at ``user`` when there is none."""
        inst = self.defs.get(id_)
        if inst is None:
            what = "past the bound" if id_ >= self.bound else "never defined"
            raise SpirvError(f"id %{id_} used by opcode {user.opcode} is {what}", user.offset)
        return inst


def decode_string(words: tuple[int, ...], index: int, offset: int) -> tuple[str, int]:
    """A NUL-terminated UTF-8 literal packed little-end first into ``words[index:]``."""
    chunks = []
    for i in range(index, len(words)):
        chunk = words[i].to_bytes(4, "little")
        nul = chunk.find(0)
        if nul >= 0:
            chunks.append(chunk[:nul])
            try:
                return b"".join(chunks).decode("utf-8"), i + 1
            except UnicodeDecodeError:
                raise SpirvError("literal string is not valid UTF-8", offset) from None
        chunks.append(chunk)
    raise SpirvError("literal string has no terminating NUL inside its instruction", offset)


def words_of(blob: bytes) -> tuple[tuple[int, ...], bool]:
    """The module's words in host order, and whether it was stored big-endian."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise SpirvError(f"SPIR-V must be bytes, not {type(blob).__name__}", 0)
    blob = bytes(blob)
    if len(blob) % 4:
        raise SpirvError(f"size {len(blob)} bytes is not a multiple of 4", len(blob) // 4)
    if len(blob) < HEADER_WORDS * 4:
        raise SpirvError(f"truncated header: {len(blob)} bytes, need {HEADER_WORDS * 4}",
                         len(blob) // 4)
    count = len(blob) // 4
    (magic,) = struct.unpack_from("<I", blob)
    if magic == MAGIC:
        return struct.unpack(f"<{count}I", blob), False
    if magic == 0x03022307:
        return struct.unpack(f">{count}I", blob), True
    raise SpirvError(f"bad magic 0x{magic:08x} (SPIR-V starts with 0x{MAGIC:08x})", 0)


@contextmanager
def without_gc():
    """Pause the cyclic garbage collector (restored on exit, even on error).

    Reading a module allocates one tuple per instruction and makes no reference
    cycles; the collector's passes over that growing heap only made time grow
    faster than the module (measured: docs/BENCHMARKS.md, "Reflection").
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def parse(blob: bytes) -> Module:
    """Parse a SPIR-V module; ``SpirvError`` with a word offset on malformed input."""
    with without_gc():
        return _parse(blob)


def _parse(blob: bytes) -> Module:
    words, big_endian = words_of(blob)
    version_word, generator, bound, schema = words[1], words[2], words[3], words[4]
    major, minor = (version_word >> 16) & 0xFF, (version_word >> 8) & 0xFF
    if major != 1 or version_word & 0xFF0000FF:
        raise SpirvError(f"unsupported version word 0x{version_word:08x}", 1)
    if not 0 < bound <= MAX_BOUND:
        raise SpirvError(f"id bound {bound} outside 1..{MAX_BOUND}", 3)
    if schema != 0:
        raise SpirvError(f"reserved schema word is {schema}, not 0", 4)

    instructions = []
    defs: dict[int, Instruction] = {}
    total = len(words)
    pos = HEADER_WORDS
    while pos < total:
        first = words[pos]
        count, opcode = first >> 16, first & 0xFFFF
        if count == 0:
            raise SpirvError(f"word count 0 (opcode {opcode})", pos)
        end = pos + count
        if end > total:
            raise SpirvError(f"opcode {opcode} with word count {count} runs past the end "
                             f"of the module ({total} words)", pos)
        operands = words[pos + 1:end]
        layout = _LAYOUT.get(opcode)
        if layout is None:
            instructions.append(Instruction(opcode, pos, operands, 0, 0))
            pos = end
            continue
        if layout == _TYPED:
            if count < 3:
                raise SpirvError(f"opcode {opcode} needs a result type and id, has {count - 1} "
                                 "operand words", pos)
            result_type, result = operands[0], operands[1]
            if not 0 < result_type < bound:
                raise SpirvError(f"result type %{result_type} of opcode {opcode} is outside "
                                 f"1..{bound - 1}", pos)
        else:
            if count < 2:
                raise SpirvError(f"opcode {opcode} needs a result id", pos)
            result_type, result = 0, operands[0]
        if not 0 < result < bound:
            raise SpirvError(f"result id %{result} of opcode {opcode} is outside "
                             f"1..{bound - 1} (bound {bound})", pos)
        if result in defs:
            raise SpirvError(f"result id %{result} defined twice (first at word "
                             f"{defs[result].offset})", pos)
        inst = Instruction(opcode, pos, operands, result_type, result)
        defs[result] = inst
        instructions.append(inst)
        pos = end
    return Module(version=(major, minor), generator=generator, bound=bound, schema=schema,
                  big_endian=big_endian, instructions=tuple(instructions), defs=defs)


def capabilities(blob_or_module) -> frozenset[str]:
    """Names of the capabilities the module declares, e.g. ``{"Shader", "Float16"}``."""
    module = blob_or_module if isinstance(blob_or_module, Module) else parse(blob_or_module)
    return frozenset(capability_name(inst.operand(0))
                     for inst in module.instructions if inst.opcode == OP_CAPABILITY)


def extensions(blob_or_module) -> frozenset[str]:
    """Names of the ``OpExtension`` declarations, e.g. ``{"SPV_KHR_16bit_storage"}``."""
    module = blob_or_module if isinstance(blob_or_module, Module) else parse(blob_or_module)
    return frozenset(inst.string(0)[0]
                     for inst in module.instructions if inst.opcode == OP_EXTENSION)
