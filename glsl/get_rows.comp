#version 450
#extension GL_GOOGLE_include_directive : require
// Embedding lookup: dst[r, c] = table[ids[r], c].
// Takes token ids (uint) and a row-major table of n_table_rows x n_cols elements
// (float, or float16_t with WEIGHT_F16=1); gives float rows. An id outside the
// table yields a row of zeros instead of reading out of bounds.
// Dispatch: groups = (ceil(n_cols / BLOCK_SIZE), n_rows, 1).
#include "include/llm_types.glsl"
#include "include/llm_common.glsl"

layout(binding = 0) readonly buffer Ids { uint ids[]; };
layout(binding = 1) readonly buffer Table { WEIGHT_TYPE table[]; };
layout(binding = 2) writeonly buffer Dst { float dst[]; };

layout(push_constant) uniform Params {
    uint n_cols;
    uint n_rows;
    uint n_table_rows;
} p;

void main() {
    const uint col = gl_GlobalInvocationID.x;
    const uint row = gl_WorkGroupID.y;
    if (col >= p.n_cols || row >= p.n_rows) {
        return;
    }
    const uint id = ids[row];
    float value = 0.0;
    if (id < p.n_table_rows) {
        value = float(table[id * p.n_cols + col]);
    }
    dst[row * p.n_cols + col] = value;
}
