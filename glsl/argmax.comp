#version 450
#extension GL_GOOGLE_include_directive : require
// Index of the largest of n floats (greedy sampling), one workgroup.
// Ties go to the smallest index, as numpy.argmax; NaNs are never chosen.
// Takes x (n floats); gives out[0] (uint).
// Dispatch: groups = (1, 1, 1).
//
// One workgroup over a vocabulary's logits is bound by load latency: when n is a
// multiple of 4 every invocation reads 16 bytes at a time, UNROLL loads issued
// before any is compared.
#extension GL_EXT_control_flow_attributes : require
#include "include/llm_common.glsl"

layout(binding = 0) readonly buffer X { vec4 x4[]; };
layout(binding = 0) readonly buffer XScalar { float x[]; };
layout(binding = 1) writeonly buffer Out { uint o[]; };

layout(push_constant) uniform Params {
    uint n;
} p;

shared uint best_index[BLOCK_SIZE];

// Does (v, i) beat (bv, bi)? Larger value first, then smaller index.
bool beats(float v, uint i, float bv, uint bi) {
    return v > bv || (v == bv && i < bi);
}

const uint UNROLL = 8u;

float bv = -1.0 / 0.0;
uint bi = 0xFFFFFFFFu;

void consider(const float v, const uint i) {
    if (beats(v, i, bv, bi)) {
        bv = v;
        bi = i;
    }
}

void consider4(const vec4 v, const uint i) {
    consider(v.x, i);
    consider(v.y, i + 1u);
    consider(v.z, i + 2u);
    consider(v.w, i + 3u);
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    if (p.n % 4u == 0u) {
        const uint nv = p.n / 4u;
        uint i = tid;
        for (; i + (UNROLL - 1u) * BLOCK_SIZE < nv; i += UNROLL * BLOCK_SIZE) {
            vec4 v[UNROLL];
            [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
                v[u] = x4[i + u * BLOCK_SIZE];
            }
            [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
                consider4(v[u], 4u * (i + u * BLOCK_SIZE));
            }
        }
        for (; i < nv; i += BLOCK_SIZE) {
            consider4(x4[i], 4u * i);
        }
    } else {
        for (uint i = tid; i < p.n; i += BLOCK_SIZE) {
            consider(x[i], i);
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
