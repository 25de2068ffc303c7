#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// A residual add fused with the RMS normalisation that follows it, one workgroup per row:
// h[r, i] = x[r, i] + residual[r, i]; y[r, i] = h[r, i] / sqrt(mean_i(h[r, i]^2) + eps) * weight[i].
// Takes x and residual (n_rows x n floats each) and weight (n floats); gives h (the sum,
// the next residual stream) and y (its normalisation), both the shape of x.
// Dispatch: groups = (n_rows, 1, 1) (or a 2-D grid for more than 65535 rows).
//
// In decode the add and the norm were two dependent steps with a barrier between;
// here they are one. As in rms_norm.comp, when n is a multiple of 4 every invocation
// reads 16 bytes at a time and keeps up to UNROLL vectors of h in registers between
// the sum of squares and the scaling; other widths take a loop over scalars.
#include "include/llm_common.glsl"

// Five storage buffers: one past the 4 every Vulkan 1.2 device guarantees per stage, within what
// the GPUs this library targets allow (32 and more); a smaller device refuses it by name.
// genspirv: ignore-file[portability]
layout(binding = 0) readonly buffer X { vec4 x4[]; };
layout(binding = 0) readonly buffer XScalar { float x[]; };
layout(binding = 1) readonly buffer Residual { vec4 r4[]; };
layout(binding = 1) readonly buffer ResidualScalar { float r[]; };
layout(binding = 2) readonly buffer Weight { vec4 weight4[]; };
layout(binding = 2) readonly buffer WeightScalar { float weight[]; };
layout(binding = 3) writeonly buffer H { vec4 h4[]; };
layout(binding = 3) writeonly buffer HScalar { float h[]; };
layout(binding = 4) writeonly buffer Y { vec4 y4[]; };
layout(binding = 4) writeonly buffer YScalar { float y[]; };

layout(push_constant) uniform Params {
    uint n;
    uint n_rows;
    float eps;
} p;

const uint UNROLL = 8u;

// The row as vec4s: the first UNROLL * BLOCK_SIZE vectors of h stay in registers;
// any rest is recomputed from x and residual for the scaling (h is write-only here).
void add_rms_norm_vec4(const uint row) {
    const uint tid = gl_LocalInvocationID.x;
    const uint nv = p.n / 4u;
    const uint base = row * nv;
    vec4 hr[UNROLL];
    float s = 0.0;
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        const uint i = tid + u * BLOCK_SIZE;
        hr[u] = i < nv ? x4[base + i] + r4[base + i] : vec4(0.0);
    }
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        s += dot(hr[u], hr[u]);
    }
    for (uint i = tid + UNROLL * BLOCK_SIZE; i < nv; i += BLOCK_SIZE) {
        const vec4 v = x4[base + i] + r4[base + i];
        h4[base + i] = v;
        s += dot(v, v);
    }
    const float inv_rms = inversesqrt(block_sum(s) / float(p.n) + p.eps);
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        const uint i = tid + u * BLOCK_SIZE;
        if (i < nv) {
            h4[base + i] = hr[u];
            y4[base + i] = hr[u] * inv_rms * weight4[i];
        }
    }
    for (uint i = tid + UNROLL * BLOCK_SIZE; i < nv; i += BLOCK_SIZE) {
        y4[base + i] = (x4[base + i] + r4[base + i]) * inv_rms * weight4[i];
    }
}

void main() {
    const uint row = flat_group_id();
    if (row >= p.n_rows) {
        return;  // uniform over the workgroup: no barrier is skipped by half of it
    }
    if (p.n % 4u == 0u) {
        add_rms_norm_vec4(row);
        return;
    }
    const uint base = row * p.n;
    float s = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += BLOCK_SIZE) {
        const float v = x[base + i] + r[base + i];
        h[base + i] = v;
        s += v * v;
    }
    const float inv_rms = inversesqrt(block_sum(s) / float(p.n) + p.eps);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += BLOCK_SIZE) {
        y[base + i] = (x[base + i] + r[base + i]) * inv_rms * weight[i];
    }
}
