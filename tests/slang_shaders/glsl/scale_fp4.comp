#version 450
#extension GL_EXT_float_e2m1 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require

// y = x * alpha with x stored as 4-bit floats (e2m1), two to a byte.
layout(local_size_x = 128) in;
layout(binding = 0) readonly buffer X { floate2m1x2_t x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { uint n; float alpha; } p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        y[i] = float(x[i].x) * p.alpha;
    }
}
