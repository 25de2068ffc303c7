#version 450
// Push-constant members of every width: 8/16/64-bit scalars and vectors, arrays of
// arrays (of structs), double matrices (one row-major array of them) and a
// buffer_reference (a 64-bit device address).
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 1) in;
layout(buffer_reference, std430) buffer Ref { float x[]; };
struct S { float16_t h; int8_t b; mat2 m[2]; };
layout(push_constant, std430) uniform PC {
    float a[2][3];
    uint64_t big;
    i16vec3 sv;
    S s[2][2];
    dmat2x3 dm;
    layout(row_major) dmat3x2 rdm[2];
    Ref ref;
    u8vec4 bytes;
    int64_t neg;
    uint16_t u16;
    ivec2 iv;
} pc;
layout(binding = 0) buffer Out { float v[]; } o;
void main() {
    o.v[0] = pc.a[1][2] + float(pc.big) + float(pc.s[1][0].h) + float(pc.dm[1][2]);
    pc.ref.x[0] = float(pc.bytes.w);
}
