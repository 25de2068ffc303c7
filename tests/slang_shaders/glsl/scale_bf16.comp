#version 450
#extension GL_EXT_bfloat16 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require

// y = x * alpha with x and y stored as bfloat16, computed in float.
layout(local_size_x = 128) in;
layout(binding = 0) readonly buffer X { bfloat16_t x[]; };
layout(binding = 1) writeonly buffer Y { bfloat16_t y[]; };
layout(push_constant) uniform Params { uint n; float alpha; } p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        y[i] = bfloat16_t(float(x[i]) * p.alpha);
    }
}
