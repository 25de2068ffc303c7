#version 450
#extension GL_GOOGLE_include_directive : require
// Matrix-vector product y = W x, one workgroup per row of W (the layout of
// llama.cpp's Vulkan mul_mat_vec): each invocation accumulates a strided slice of
// the row, then a shared-memory reduction sums the slices.
// Takes W (n_rows x n_cols, row-major, float or float16_t with WEIGHT_F16=1) and
// x (n_cols floats); gives y (n_rows floats).
// Dispatch: groups = (min(n_rows, 65535), ceil(n_rows / 65535), 1).
#include "include/llm_types.glsl"
#include "include/llm_common.glsl"

layout(binding = 0) readonly buffer W { WEIGHT_TYPE w[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint n_cols;
    uint n_rows;
} p;

void main() {
    const uint row = flat_group_id();
    if (row >= p.n_rows) {
        return;  // uniform over the workgroup
    }
    const uint base = row * p.n_cols;
    float acc = 0.0;
    for (uint k = gl_LocalInvocationID.x; k < p.n_cols; k += BLOCK_SIZE) {
        acc += float(w[base + k]) * x[k];
    }
    const float total = block_sum(acc);
    if (gl_LocalInvocationID.x == 0) {
        y[row] = total;
    }
}
