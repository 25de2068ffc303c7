"""Group counts and variant choice for ``mul_mat_vec``, as pure functions.

Takes a matrix's row count and the kernel's rows-per-workgroup (spec constant
``ROWS_PER_GROUP``), or a device's subgroup properties; gives the dispatch's
group counts, or the variant (kernel name and spec constants) to use. No Vulkan
here: the runtime query that feeds ``pick_mul_mat_vec`` lives with the caller.

Variants (glsl/mul_mat_vec.comp): ``mul_mat_vec_{f32,f16}`` reduce with
``GL_KHR_shader_subgroup_arithmetic``; ``mul_mat_vec_{f32,f16}_noshuffle``
reduce through shared memory only, for devices without subgroup arithmetic in
compute shaders. Each has fused siblings of the same reduction that the decode
driver binds: ``mul_mat_vec_norm_*`` (input rms_norm(x) * weight),
``mul_mat_vec_rope_norm_*`` (that, and the output rotated; ``ROWS_PER_GROUP``
counts row pairs, so its groups are ``mul_mat_vec_groups(n_rows, 2 *
rows_per_group)``), ``mul_mat_vec_add_*`` (output plus a residual) and
``mul_mat_vec_glu_norm_*`` (gate and up at once over the normed input, output
silu(gate) * up; ``ROWS_PER_GROUP`` counts pairs of their rows, groups
``mul_mat_vec_groups(n_rows, rows_per_group)`` over the output's rows);
``mul_mat_vec_silu_*`` and ``mul_mat_vec_rope_*`` have one fusion each.
"""

from __future__ import annotations

from dataclasses import dataclass

# The guaranteed minimum of maxComputeWorkGroupCount[0]; past it, a 2-D grid.
MAX_GROUPS_X = 65535

# Defaults measured on an NVIDIA H200 (docs/bench/kernel_h200.json, `python -m benchmarks kernel`): invocations
# per workgroup and rows per workgroup; the spec constants' defaults in the shader agree.
GPU_BLOCK_SIZE = 128
ROWS_PER_GROUP = 1
# Rows per workgroup by weight type, what ``pick_mul_mat_vec`` gives when not told: a
# parameter per type, since a row of f16 weights is half the bytes of an f32 one for the
# same reads of x (and of the norm's weight) per workgroup. f16: 4, measured on the
# H200 in the fused decode at 8 x 4096 x 11008 (docs/bench/decode_profile_h200_rows.json,
# replayed µs per token, one process: 1141 at 1 row, 1073 at 2, 1053 at 4); f32 keeps
# the kernel suite's 1 (not re-measured in the fused decode).
ROWS_PER_GROUP_BY_WEIGHTS = {"f32": ROWS_PER_GROUP, "f16": 4}
# A CPU implementation (lavapipe) runs a workgroup as a loop over SIMD lanes: small groups.
CPU_BLOCK_SIZE = 32

# VkSubgroupFeatureFlagBits and VkShaderStageFlagBits, as the Vulkan headers number them.
SUBGROUP_FEATURE_BASIC = 0x1
SUBGROUP_FEATURE_ARITHMETIC = 0x4
SHADER_STAGE_COMPUTE = 0x20


@dataclass(frozen=True)
class MatVecVariant:
    """Which ``mul_mat_vec`` kernel to bind, with which spec constants."""

    name: str
    block_size: int
    rows_per_group: int

    @property
    def spec(self) -> dict:
        return {"BLOCK_SIZE": self.block_size, "ROWS_PER_GROUP": self.rows_per_group}


def mul_mat_vec_groups(n_rows: int, rows_per_group: int = ROWS_PER_GROUP,
                       max_groups: int | None = None) -> tuple[int, int, int]:
    """Group counts for ``n_rows`` rows: ``g = ceil(n_rows / rows_per_group)`` groups (at
    most ``max_groups``: the kernel then loops over the blocks of rows), as
    ``(min(g, 65535), ceil(g / 65535), 1)``; the kernel skips the surplus groups of the
    grid's last row."""
    if n_rows < 1 or rows_per_group < 1 or (max_groups is not None and max_groups < 1):
        raise ValueError(f"mul_mat_vec: n_rows ({n_rows}), rows_per_group ({rows_per_group}) "
                         f"and max_groups ({max_groups}) must be at least 1")
    groups = -(-n_rows // rows_per_group)
    if max_groups is not None:
        groups = min(groups, max_groups)
    return (min(groups, MAX_GROUPS_X), -(-groups // MAX_GROUPS_X), 1)


def has_subgroup_arithmetic(supported_operations: int, supported_stages: int) -> bool:
    """True when compute shaders get subgroupAdd: ``VkPhysicalDeviceSubgroupProperties``'
    ``supportedOperations`` holds BASIC and ARITHMETIC and ``supportedStages`` COMPUTE."""
    needed = SUBGROUP_FEATURE_BASIC | SUBGROUP_FEATURE_ARITHMETIC
    return (supported_operations & needed) == needed and bool(supported_stages & SHADER_STAGE_COMPUTE)


def pick_mul_mat_vec(weights: str, *, supported_operations: int, supported_stages: int,
                     subgroup_size: int, is_cpu: bool = False, max_invocations: int = 1024,
                     rows_per_group: int | None = None) -> MatVecVariant:
    """The ``mul_mat_vec`` variant for a device.

    Inputs, all from the physical device: ``weights`` "f32" or "f16";
    ``supported_operations``, ``supported_stages`` and ``subgroup_size`` from
    ``VkPhysicalDeviceSubgroupProperties``; ``is_cpu`` when deviceType is CPU;
    ``max_invocations`` = ``maxComputeWorkGroupInvocations``; ``rows_per_group``
    (default ``ROWS_PER_GROUP_BY_WEIGHTS[weights]``). The subgroup variant when
    compute shaders have subgroup arithmetic, else ``_noshuffle``; the workgroup
    is a whole number of subgroups (at least one), capped by the device's limit.
    """
    if weights not in ("f32", "f16"):
        raise ValueError(f"mul_mat_vec: weights must be 'f32' or 'f16', not {weights!r}")
    if rows_per_group is None:
        rows_per_group = ROWS_PER_GROUP_BY_WEIGHTS[weights]
    if subgroup_size < 1 or max_invocations < 1 or rows_per_group < 1:
        raise ValueError(f"mul_mat_vec: subgroup_size ({subgroup_size}), max_invocations "
                         f"({max_invocations}) and rows_per_group ({rows_per_group}) must be at least 1")
    block = CPU_BLOCK_SIZE if is_cpu else GPU_BLOCK_SIZE
    block = max(subgroup_size, block - block % subgroup_size)
    block = min(block, max_invocations)
    subgroups = has_subgroup_arithmetic(supported_operations, supported_stages)
    name = f"mul_mat_vec_{weights}" + ("" if subgroups else "_noshuffle")
    return MatVecVariant(name=name, block_size=block, rows_per_group=rows_per_group)
