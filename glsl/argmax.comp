#version 450
#extension GL_GOOGLE_include_directive : require
// Index of the largest of n floats (greedy sampling), one workgroup.
// Ties go to the smallest index, as numpy.argmax; NaNs are never chosen.
// Takes x (n floats); gives out[0] (uint).
// Dispatch: groups = (1, 1, 1).
#include "include/llm_common.glsl"

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Out { uint o[]; };

layout(push_constant) uniform Params {
    uint n;
} p;

shared uint best_index[BLOCK_SIZE];

// Does (v, i) beat (bv, bi)? Larger value first, then smaller index.
bool beats(float v, uint i, float bv, uint bi) {
    return v > bv || (v == bv && i < bi);
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    float bv = -1.0 / 0.0;
    uint bi = 0xFFFFFFFFu;
    for (uint i = tid; i < p.n; i += BLOCK_SIZE) {
        const float v = x[i];
        if (beats(v, i, bv, bi)) {
            bv = v;
            bi = i;
        }
    }
    llm_red[tid] = bv;
    best_index[tid] = bi;
    barrier();
    for (uint live = BLOCK_SIZE; live > 1; ) {
        const uint upper = (live + 1) / 2;
        const uint other = tid + upper;
        if (other < live && beats(llm_red[other], best_index[other], llm_red[tid], best_index[tid])) {
            llm_red[tid] = llm_red[other];
            best_index[tid] = best_index[other];
        }
        barrier();
        live = upper;
    }
    if (tid == 0) {
        o[0] = best_index[0];
    }
}
