#version 450
#extension GL_GOOGLE_include_directive : require
// RMS normalisation with a learned scale, one workgroup per row:
// y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * weight[i].
// Takes x (n_rows x n floats) and weight (n floats); gives y (same shape as x).
// Dispatch: groups = (n_rows, 1, 1) (or a 2-D grid for more than 65535 rows).
#include "include/llm_common.glsl"

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer Weight { float weight[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint n;
    uint n_rows;
    float eps;
} p;

void main() {
    const uint row = flat_group_id();
    if (row >= p.n_rows) {
        return;  // uniform over the workgroup: no barrier is skipped by half of it
    }
    const uint base = row * p.n;
    float sum_sq = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += BLOCK_SIZE) {
        const float v = x[base + i];
        sum_sq += v * v;
    }
    const float inv_rms = inversesqrt(block_sum(sum_sq) / float(p.n) + p.eps);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += BLOCK_SIZE) {
        y[base + i] = x[base + i] * inv_rms * weight[i];
    }
}
