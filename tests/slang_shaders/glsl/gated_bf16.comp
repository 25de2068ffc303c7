#version 450
// Uses bfloat16 where the compiler has it: the extension line is guarded by the
// extension's own macro, as backends probe their compiler.
#ifdef GL_EXT_bfloat16
#extension GL_EXT_bfloat16 : enable
#endif
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#include "activation.glsl"

layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Y { bfloat16_t y[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        y[i] = bfloat16_t(ACTIVATION(x[i]));
    }
}
