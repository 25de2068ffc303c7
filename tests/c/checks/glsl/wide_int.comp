#version 450
// Needs shaderInt64 (OpCapability Int64) and subgroup arithmetic in compute shaders.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) buffer Out { uint v[]; };
void main() {
    uint64_t wide = uint64_t(v[gl_GlobalInvocationID.x]) << 1;
    v[gl_GlobalInvocationID.x] = subgroupAdd(uint(wide >> 1));
}
