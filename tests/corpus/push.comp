#version 450
// Push-constant layouts: vec3 padding, nested structs, arrays (one spec-sized), row/column-major
// matrices. The same body declared as a storage buffer gives spirv-cross's block_size to compare.
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1) in;
layout(constant_id = 0) const uint N = 3;
struct Inner { vec3 dir; float w; uvec2 ext[2]; };
#define BODY \
    uint n; \
    vec3 pad3; \
    Inner inner; \
    Inner inners[2]; \
    layout(row_major) mat3x2 rm; \
    layout(column_major) mat2x3 cm; \
    mat4 arr_m[2]; \
    float spec_sized[N]; \
    vec3 tail;
layout(push_constant, std430) uniform PC { BODY } pc;
layout(binding = 0, std430) buffer Mirror { BODY } mirror;
layout(binding = 1) buffer Out { float v[]; } o;
void main() {
    o.v[0] = float(pc.n) + pc.tail.x + pc.rm[0][0] + pc.spec_sized[1] + mirror.tail.y;
}
