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
// issued back to back before any is used; other widths take the same shape of
// loop over scalars.
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

const uint UNROLL = 4u;

float sum_of_squares_vec4(const uint base, const uint nv) {
    const uint tid = gl_LocalInvocationID.x;
    float s = 0.0;
    uint i = tid;
    for (; i + (UNROLL - 1u) * BLOCK_SIZE < nv; i += UNROLL * BLOCK_SIZE) {
        vec4 v[UNROLL];
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            v[u] = x4[base + i + u * BLOCK_SIZE];
        }
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            s += dot(v[u], v[u]);
        }
    }
    for (; i < nv; i += BLOCK_SIZE) {
        const vec4 v = x4[base + i];
        s += dot(v, v);
    }
    return s;
}

void scale_vec4(const uint base, const uint nv, const float inv_rms) {
    const uint tid = gl_LocalInvocationID.x;
    uint i = tid;
    for (; i + (UNROLL - 1u) * BLOCK_SIZE < nv; i += UNROLL * BLOCK_SIZE) {
        vec4 v[UNROLL];
        vec4 w[UNROLL];
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            v[u] = x4[base + i + u * BLOCK_SIZE];
            w[u] = weight4[i + u * BLOCK_SIZE];
        }
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            y4[base + i + u * BLOCK_SIZE] = v[u] * inv_rms * w[u];
        }
    }
    for (; i < nv; i += BLOCK_SIZE) {
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
    const bool vec = p.n % 4u == 0u;
    float sum_sq;
    if (vec) {
        sum_sq = sum_of_squares_vec4(row * (p.n / 4u), p.n / 4u);
    } else {
        sum_sq = sum_of_squares_scalar(row * p.n, p.n);
    }
    const float inv_rms = inversesqrt(block_sum(sum_sq) / float(p.n) + p.eps);
    if (vec) {
        scale_vec4(row * (p.n / 4u), p.n / 4u, inv_rms);
    } else {
        const uint base = row * p.n;
        for (uint i = gl_LocalInvocationID.x; i < p.n; i += BLOCK_SIZE) {
            y[base + i] = x[base + i] * inv_rms * weight[i];
        }
    }
}
