#version 450
#extension GL_GOOGLE_include_directive : require
// Rotary position embedding of one token's heads at position `pos`.
// Pair j of a head (j < head_dim / 2) is rotated by pos * theta_base^(-2j / head_dim).
// ROPE_NEOX = 0 pairs adjacent elements (2j, 2j + 1), llama.cpp's "normal" mode;
// ROPE_NEOX = 1 pairs the two halves (j, j + head_dim / 2), the GPT-NeoX mode.
// Takes src (n_heads x head_dim floats; head_dim even); gives dst (same shape).
// Dispatch: groups = (ceil(n_heads * head_dim / 2 / BLOCK_SIZE), 1, 1).
#include "include/llm_common.glsl"

#ifndef ROPE_NEOX
#define ROPE_NEOX 0
#endif

layout(binding = 0) readonly buffer Src { float src[]; };
layout(binding = 1) writeonly buffer Dst { float dst[]; };

layout(push_constant) uniform Params {
    uint n_heads;
    uint head_dim;
    uint pos;
    float theta_base;
} p;

void main() {
    const uint half_dim = p.head_dim / 2;
    const uint i = gl_GlobalInvocationID.x;
    if (i >= p.n_heads * half_dim) {
        return;
    }
    const uint head = i / half_dim;
    const uint j = i % half_dim;
#if ROPE_NEOX
    const uint i0 = head * p.head_dim + j;
    const uint i1 = i0 + half_dim;
#else
    const uint i0 = head * p.head_dim + 2 * j;
    const uint i1 = i0 + 1;
#endif
    const float freq = pow(p.theta_base, -float(2 * j) / float(p.head_dim));
    const float angle = float(p.pos) * freq;
    const float c = cos(angle);
    const float s = sin(angle);
    const float x0 = src[i0];
    const float x1 = src[i1];
    dst[i0] = x0 * c - x1 * s;
    dst[i1] = x0 * s + x1 * c;
}
