#version 450
#extension GL_GOOGLE_include_directive : require
// Matrix product C = A B^T with shared-memory tiles (the weight layout of
// llama.cpp's mul_mm: B holds one output feature per row).
// Takes A (M x K floats, activations) and B (N x K, float or float16_t with
// WEIGHT_F16=1, weights); gives C (M x N floats). All row-major.
// Workgroup: TILE_N x TILE_M invocations (spec constants 0 and 1); each computes
// ROWS_PER_THREAD outputs of one column, so one workgroup covers
// TILE_N columns x (TILE_M * ROWS_PER_THREAD) rows; K advances TILE_K at a time.
// Dispatch: groups = (ceil(N / TILE_N), ceil(M / (TILE_M * ROWS_PER_THREAD)), 1).
#include "include/llm_types.glsl"

#ifndef ROWS_PER_THREAD
#define ROWS_PER_THREAD 4
#endif

// 16 x 16 = 256-invocation workgroups: past the 128 invocations every Vulkan 1.2 device guarantees, within
// what the GPUs this library targets allow (1024 and more); a smaller device refuses it by name.
// genspirv: ignore-file[portability]
layout(local_size_x = 16, local_size_y = 16, local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 0) const uint TILE_N = 16;
layout(constant_id = 1) const uint TILE_M = 16;
layout(constant_id = 2) const uint TILE_K = 16;

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { WEIGHT_TYPE b[]; };
layout(binding = 2) writeonly buffer C { float c[]; };

layout(push_constant) uniform Params {
    uint M;
    uint N;
    uint K;
} p;

shared float tile_a[TILE_M * ROWS_PER_THREAD * TILE_K];
shared float tile_b[TILE_N * TILE_K];

void main() {
    const uint tx = gl_LocalInvocationID.x;        // column within the tile
    const uint ty = gl_LocalInvocationID.y;        // first row within the tile
    const uint tid = ty * TILE_N + tx;
    const uint n_threads = TILE_N * TILE_M;
    const uint block_m = TILE_M * ROWS_PER_THREAD;
    const uint m0 = gl_WorkGroupID.y * block_m;
    const uint n0 = gl_WorkGroupID.x * TILE_N;

    float acc[ROWS_PER_THREAD];
    for (uint r = 0; r < ROWS_PER_THREAD; ++r) {
        acc[r] = 0.0;
    }

    for (uint k0 = 0; k0 < p.K; k0 += TILE_K) {
        // Out-of-range elements load as zero, so edge tiles need no special case below.
        for (uint i = tid; i < block_m * TILE_K; i += n_threads) {
            const uint gm = m0 + i / TILE_K;
            const uint gk = k0 + i % TILE_K;
            tile_a[i] = (gm < p.M && gk < p.K) ? a[gm * p.K + gk] : 0.0;
        }
        for (uint i = tid; i < TILE_N * TILE_K; i += n_threads) {
            const uint gn = n0 + i / TILE_K;
            const uint gk = k0 + i % TILE_K;
            tile_b[i] = (gn < p.N && gk < p.K) ? float(b[gn * p.K + gk]) : 0.0;
        }
        barrier();
        for (uint kk = 0; kk < TILE_K; ++kk) {
            const float bv = tile_b[tx * TILE_K + kk];
            for (uint r = 0; r < ROWS_PER_THREAD; ++r) {
                acc[r] += tile_a[(ty + r * TILE_M) * TILE_K + kk] * bv;
            }
        }
        barrier();
    }

    const uint gn = n0 + tx;
    for (uint r = 0; r < ROWS_PER_THREAD; ++r) {
        const uint gm = m0 + ty + r * TILE_M;
        if (gm < p.M && gn < p.N) {
            c[gm * p.N + gn] = acc[r];
        }
    }
}
