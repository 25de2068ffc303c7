#version 450
#extension GL_GOOGLE_include_directive : require
// Gated activation of a SwiGLU feed-forward: out = silu(gate) * up,
// silu(g) = g / (1 + exp(-g)).
// Takes gate and up (n floats each); gives out (n floats).
// Dispatch: groups = (ceil(n / BLOCK_SIZE), 1, 1).
#include "include/llm_common.glsl"

layout(binding = 0) readonly buffer Gate { float gate[]; };
layout(binding = 1) readonly buffer Up { float up[]; };
layout(binding = 2) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Params {
    uint n;
} p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) {
        return;
    }
    const float g = gate[i];
    // For very negative g, exp(-g) is +inf and g / inf is -0: the right limit.
    o[i] = g / (1.0 + exp(-g)) * up[i];
}
