#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// RMS normalisation with a learned scale, one workgroup per row:
// y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * weight[i].
// Takes x (n_rows x n floats) and weight (n floats); gives y (same shape as x).
// Dispatch: groups = (n_rows, 1, 1) (or a 2-D grid for more than 65535 rows).
//
// In decode there is one row of a few thousand floats: the cost is the latency
// of its loads, not their bytes. So when n is a multiple of 4 (each row starts
// on a 16-byte boundary) every invocation reads 16 bytes at a time, UNROLL loads
// of x and of the weight issued together, x kept in registers between the sum and
// the scaling; other widths take an unrolled loop over scalars.
#include "include/llm_common.glsl"

layout(binding = 0) readonly buffer X { vec4 x4[]; };
layout(binding = 0) readonly buffer XScalar { float x[]; };
layout(binding = 1) readonly buffer Weight { vec4 weight4[]; };
layout(binding = 1) readonly buffer WeightScalar { float weight[]; };
layout(binding = 2) writeonly buffer Y { vec4 y4[]; };
layout(binding = 2) writeonly buffer YScalar { float y[]; };

layout(push_constant) uniform Params {
    uint n;
    uint n_rows;
    float eps;
} p;

const uint UNROLL = 8u;

// The row as vec4s: its first UNROLL * BLOCK_SIZE vectors (all of a decode row of up to
// 4 * UNROLL * BLOCK_SIZE floats) are loaded once, with their weights, all in flight
// together, and kept in registers for the scaling; any rest is read twice.
void rms_norm_vec4(const uint row) {
    const uint tid = gl_LocalInvocationID.x;
    const uint nv = p.n / 4u;
    const uint base = row * nv;
    vec4 xr[UNROLL];
    vec4 wr[UNROLL];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        const uint i = tid + u * BLOCK_SIZE;
        xr[u] = i < nv ? x4[base + i] : vec4(0.0);
        wr[u] = i < nv ? weight4[i] : vec4(0.0);
    }
    float s = 0.0;
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        s += dot(xr[u], xr[u]);
    }
    for (uint i = tid + UNROLL * BLOCK_SIZE; i < nv; i += BLOCK_SIZE) {
        const vec4 v = x4[base + i];
        s += dot(v, v);
    }
    const float inv_rms = inversesqrt(block_sum(s) / float(p.n) + p.eps);
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        const uint i = tid + u * BLOCK_SIZE;
        if (i < nv) {
            y4[base + i] = xr[u] * inv_rms * wr[u];
        }
    }
    for (uint i = tid + UNROLL * BLOCK_SIZE; i < nv; i += BLOCK_SIZE) {
        y4[base + i] = x4[base + i] * inv_rms * weight4[i];
    }
}

float sum_of_squares_scalar(const uint base, const uint n) {
    const uint tid = gl_LocalInvocationID.x;
    float s = 0.0;
    uint i = tid;
    for (; i + (UNROLL - 1u) * BLOCK_SIZE < n; i += UNROLL * BLOCK_SIZE) {
        float v[UNROLL];
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            v[u] = x[base + i + u * BLOCK_SIZE];
        }
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            s += v[u] * v[u];
        }
    }
    for (; i < n; i += BLOCK_SIZE) {
        const float v = x[base + i];
        s += v * v;
    }
    return s;
}

void main() {
    const uint row = flat_group_id();
    if (row >= p.n_rows) {
        return;  // uniform over the workgroup: no barrier is skipped by half of it
    }
    if (p.n % 4u == 0u) {
        rms_norm_vec4(row);
        return;
    }
    const uint base = row * p.n;
    const float inv_rms = inversesqrt(block_sum(sum_of_squares_scalar(base, p.n)) / float(p.n) + p.eps);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += BLOCK_SIZE) {
        y[base + i] = x[base + i] * inv_rms * weight[i];
    }
}
