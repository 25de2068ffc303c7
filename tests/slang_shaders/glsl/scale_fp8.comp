#version 450
#extension GL_EXT_float_e4m3 : require
#extension GL_EXT_float_e5m2 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require

// y = x * alpha with x stored as an 8-bit float (FP8_TYPE: floate4m3_t or floate5m2_t).
layout(local_size_x = 128) in;
layout(binding = 0) readonly buffer X { FP8_TYPE x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { uint n; float alpha; } p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        y[i] = float(x[i]) * p.alpha;
    }
}
