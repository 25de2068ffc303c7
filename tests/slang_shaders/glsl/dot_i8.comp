#version 450
#extension GL_EXT_integer_dot_product : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_8bit_storage : require

// y[i] = dot(a[i], b[i]) * scale over int8x4 lanes: the integer dot product
// instructions (dotPacked4x8EXT on packed words, dotEXT on i8vec4).
layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer A { uint a_packed[]; };
layout(binding = 1) readonly buffer B { i8vec4 b[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { uint n; float scale; } p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) {
        return;
    }
    const uint packed_dot = dotPacked4x8EXT(a_packed[i], a_packed[i]);
    const i8vec4 av = unpack8(int(a_packed[i]));
    const int lane_dot = dotEXT(av, b[i]);
    y[i] = (float(packed_dot) + float(lane_dot)) * p.scale;
}
