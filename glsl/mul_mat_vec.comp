#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Matrix-vector product y = W x, ROWS_PER_GROUP rows of W per workgroup.
// Takes W (n_rows x n_cols, row-major, float or float16_t with WEIGHT_F16=1) and
// x (n_cols floats); gives y (n_rows floats). Arithmetic is float32 throughout.
//
// Decode is bound by reading W once, so the loads are what matters: when a row
// starts on a 16-byte boundary (n_cols a multiple of 4 for f32, of 8 for f16)
// every invocation reads 16 bytes at a time (vec4, or uvec4 = 8 packed halves),
// four such loads per row issued back to back, and each x vector loaded once
// serves all ROWS_PER_GROUP rows. Other widths take a scalar loop over the same
// rows. The per-invocation sums are then reduced per row: with subgroup
// arithmetic (MMV_SUBGROUP=1, the default; used when BLOCK_SIZE is a whole number
// of subgroups) by subgroupAdd plus one shared-memory pass over the subgroups,
// otherwise (and always with MMV_SUBGROUP=0, for devices without
// GL_KHR_shader_subgroup_arithmetic) by a shared-memory fold.
//
// Spec constants: 0 = BLOCK_SIZE (invocations per workgroup, any value),
// 1 = ROWS_PER_GROUP (rows per workgroup, at least 1).
// Dispatch: any (x, y, 1) grid covers every row (blocks of rows are grid-strided over
// the flat group id); ceil(n_rows / ROWS_PER_GROUP) groups, as (min(g, 65535),
// ceil(g / 65535), 1), give one block per group (genspirv.kernel_groups.mul_mat_vec_groups);
// extra groups do nothing.
// Fused variants, by define (each explained where it acts): MMV_SILU_X and MMV_NORM_X
// make the input (silu(gate) * up; rms_norm(x) * weight), MMV_ROPE and MMV_ADD_Y the
// output (rotated; plus a residual). One of each kind at most, MMV_ADD_Y alone. MMV_GLU makes two
// products at once, a SwiGLU's gate and up, and gives silu(gate) * up.
#ifndef MMV_SUBGROUP
#define MMV_SUBGROUP 1
#endif
#ifndef MMV_SILU_X
#define MMV_SILU_X 0
#endif
#ifndef MMV_ROPE
#define MMV_ROPE 0
#endif
#ifndef MMV_NORM_X
#define MMV_NORM_X 0
#endif
#ifndef MMV_ADD_Y
#define MMV_ADD_Y 0
#endif
#ifndef MMV_GLU
#define MMV_GLU 0
#endif
#if MMV_GLU && (MMV_SILU_X || MMV_ROPE || MMV_ADD_Y)
#error "MMV_GLU takes MMV_NORM_X at most"
#endif
#if MMV_NORM_X && MMV_SILU_X
#error "MMV_NORM_X and MMV_SILU_X both transform the input: pick one"
#endif
#if MMV_ADD_Y && (MMV_ROPE || MMV_SILU_X || MMV_NORM_X)
#error "MMV_ADD_Y goes alone (no variant needs it with another fusion)"
#endif
#if MMV_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "include/llm_types.glsl"
#include "include/llm_common.glsl"

layout(constant_id = 1) const uint ROWS_PER_GROUP = 1;

// Rows per workgroup. With MMV_ROPE=1 (the mul_mat_vec_rope_* variants: a query or
// key projection with its rotary embedding, llama.cpp's "normal" mode, applied to the
// result) ROWS_PER_GROUP counts pairs of adjacent rows, so that the two rows a
// rotation mixes are always reduced by the same workgroup.
//
// With MMV_GLU=1 (the mul_mat_vec_glu_* variants: a SwiGLU's gate and up projections
// in one dispatch) W is gate, binding 3 (4 with MMV_NORM_X) holds up, of the same
// shape, and y gets silu(gate x) * (up x): n_rows counts y's rows, ROWS_PER_GROUP
// counts pairs, and block row r is gate's row for even r, up's for odd. Each x loaded
// serves both matrices, and neither the separate silu_mul nor the down projection
// recomputing it per row (an exp per input element per row) is needed.
#if MMV_ROPE || MMV_GLU
#define MMV_ROWS (2u * ROWS_PER_GROUP)
#else
#define MMV_ROWS ROWS_PER_GROUP
#endif

// Block row r's row of its matrix (rows past the end re-read the last one: uniform
// control flow; never stored), and whether it is up's (MMV_GLU; after unrolling a
// constant, so the choice of buffer costs nothing).
#if MMV_GLU
#define MMV_N_ROWS (2u * p.n_rows)
#define BLOCK_ROW(row0, r) min(((row0) >> 1) + ((r) >> 1), p.n_rows - 1u)
#define IS_UP(r) (((r) & 1u) != 0u)
#else
#define MMV_N_ROWS p.n_rows
#define BLOCK_ROW(row0, r) min((row0) + (r), p.n_rows - 1u)
#endif

// Sums reduced per block: one per row, and with MMV_NORM_X one more, the input's sum
// of squares (its index is MMV_ROWS).
#if MMV_NORM_X
#define MMV_SUMS (MMV_ROWS + 1u)
#else
#define MMV_SUMS MMV_ROWS
#endif

// Each buffer is seen twice, as vectors for the aligned path and as scalars for
// the rest (aliased views of one binding; a scalar access never reaches past the
// buffer's end, whatever its length). Block names differ per view; reflection reports
// the binding under one of them.
#if WEIGHT_F16
#define VEC 8u
layout(binding = 0) readonly buffer W { uvec4 w8[]; };
layout(binding = 0) readonly buffer WScalar { WEIGHT_TYPE w[]; };
#else
#define VEC 4u
layout(binding = 0) readonly buffer W { vec4 w4[]; };
layout(binding = 0) readonly buffer WScalar { WEIGHT_TYPE w[]; };
#endif
#if MMV_GLU
#if MMV_NORM_X
// With MMV_NORM_X, five storage buffers: one past the 4 every Vulkan 1.2 device guarantees
// per stage, within what the GPUs this library targets allow; a smaller device refuses it by name.
// genspirv: ignore-file[portability]
#define MMV_UP_BINDING 4
#else
#define MMV_UP_BINDING 3
#endif
#if WEIGHT_F16
layout(binding = MMV_UP_BINDING) readonly buffer Wup { uvec4 up_w8[]; };
#define W8(r, i) (IS_UP(r) ? up_w8[i] : w8[i])
#else
layout(binding = MMV_UP_BINDING) readonly buffer Wup { vec4 up_w4[]; };
#define W4(r, i) (IS_UP(r) ? up_w4[i] : w4[i])
#endif
layout(binding = MMV_UP_BINDING) readonly buffer WupScalar { WEIGHT_TYPE up_w[]; };
#define WS(r, i) (IS_UP(r) ? up_w[i] : w[i])
#else
#define W8(r, i) w8[i]
#define W4(r, i) w4[i]
#define WS(r, i) w[i]
#endif
layout(binding = 1) readonly buffer X { vec4 x4[]; };
layout(binding = 1) readonly buffer XScalar { float x[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

// The input vector element by element. With MMV_SILU_X=1 (the mul_mat_vec_silu_*
// variants, a SwiGLU's down projection) binding 1 holds gate and binding 3 up, and
// the input is silu(gate) * up, computed where it is loaded, as silu_mul.comp computes
// it: the separate silu_mul dispatch, and the dependent step before it, go away.
#if MMV_SILU_X
layout(binding = 3) readonly buffer Up { vec4 up4[]; };
layout(binding = 3) readonly buffer UpScalar { float up[]; };
// For very negative g, exp(-g) is +inf and g / inf is -0: the right limit.
vec4 load_x4(const uint i) { const vec4 g = x4[i]; return g / (1.0 + exp(-g)) * up4[i]; }
float load_x(const uint k) { const float g = x[k]; return g / (1.0 + exp(-g)) * up[k]; }
#define LOAD_X4(i) load_x4(i)
#define LOAD_X(k) load_x(k)
#elif MMV_NORM_X
// With MMV_NORM_X=1 (the mul_mat_vec_norm_* variants) the input is rms_norm(x) * weight,
// the weight at binding 3 and eps a push constant. The norm's 1 / rms is a factor of
// every row's dot product: each x is loaded once, times its weight into the products,
// squared into one more sum that is reduced with the rows', and the row's total is
// scaled at the end. The separate rms_norm dispatch, and its step, go away.
layout(binding = 3) readonly buffer NormWeight { vec4 norm_w4[]; };
layout(binding = 3) readonly buffer NormWeightScalar { float norm_w[]; };
#define LOAD_X4(i) load_x4(i)
#define LOAD_X(k) load_x(k)
#else
#define LOAD_X4(i) x4[i]
#define LOAD_X(k) x[k]
#endif

// With MMV_ADD_Y=1 (the mul_mat_vec_add_* variants, a residual add) the output is
// resid + W x, resid at binding 3: the residual stream's update without an add
// dispatch of its own.
#if MMV_ADD_Y
layout(binding = 3) readonly buffer Resid { float resid[]; };
#endif

layout(push_constant) uniform Params {
    uint n_cols;
    uint n_rows;
#if MMV_ROPE
    uint head_dim;      // even; n_rows a multiple of it
    uint pos;
    float theta_base;
#endif
#if MMV_NORM_X
    float eps;
    uint y_offset;      // y's first row is y[y_offset]
#endif
} p;

// With MMV_NORM_X=1 y's rows start at float y_offset of binding 2: the decode binds a
// whole KV cache, or its logits, and writes one position's row through the same plan
// at every position (a view per position would make a plan, and a descriptor set,
// per position).
#if MMV_NORM_X
#define Y_ROW(i) y[p.y_offset + (i)]
#else
#define Y_ROW(i) y[i]
#endif

#if MMV_ROPE
// Rows `row` and `row + 1` (`row` even) are pair j of their head: rotated by
// pos * theta_base^(-2j / head_dim), as rope.comp rotates them.
void store_rotated(const uint row, const float x0, const float x1) {
    const uint j = (row % p.head_dim) / 2u;
    const float freq = pow(p.theta_base, -float(2u * j) / float(p.head_dim));
    const float angle = float(p.pos) * freq;
    const float c = cos(angle);
    const float s = sin(angle);
    Y_ROW(row) = x0 * c - x1 * s;
    Y_ROW(row + 1u) = x0 * s + x1 * c;
}
#endif

#if MMV_GLU
// Pair `row0 + 2 * t` of a block: gate's and up's products for y's row row0 / 2 + t, as
// silu_mul.comp combines them.
void store_glu(const uint row, const float g, const float u) {
    Y_ROW(row >> 1) = g / (1.0 + exp(-g)) * u;
}
#define STORE_PAIR store_glu
#elif MMV_ROPE
#define STORE_PAIR store_rotated
#endif

shared float mmv_partial[MMV_SUMS * BLOCK_SIZE];

float acc[MMV_SUMS];

#if MMV_NORM_X
// x times the norm's weight; x squared into acc[MMV_ROWS] on the way.
vec4 load_x4(const uint i) {
    const vec4 v = x4[i];
    acc[MMV_ROWS] += dot(v, v);
    return v * norm_w4[i];
}
float load_x(const uint k) {
    const float v = x[k];
    acc[MMV_ROWS] += v * v;
    return v * norm_w[k];
}
#define NORMED(d) ((d) * inv_rms)
#else
#define NORMED(d) (d)
#endif

// Row `row`'s output from its reduced dot product `d` (scaled by the norm, plus the
// residual, as the variant says).
#if MMV_ADD_Y
#define STORE_Y(row, d) Y_ROW(row) = resid[row] + NORMED(d)
#else
#define STORE_Y(row, d) Y_ROW(row) = NORMED(d)
#endif

// One vector column c (VEC weights) of every row of the group.
void accumulate_vec(const uint c, const uint nv, const uint row0) {
#if WEIGHT_F16
    const vec4 xa = LOAD_X4(2u * c);
    const vec4 xb = LOAD_X4(2u * c + 1u);
#else
    const vec4 xv = LOAD_X4(c);
#endif
    [[unroll]] for (uint r = 0; r < MMV_ROWS; ++r) {
        const uint row = BLOCK_ROW(row0, r);
#if WEIGHT_F16
        const uvec4 q = W8(r, row * nv + c);
        acc[r] += dot(vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y)), xa)
                + dot(vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w)), xb);
#else
        acc[r] += dot(W4(r, row * nv + c), xv);
#endif
    }
}

#if MMV_SUBGROUP
// Per row: one sum per subgroup, then the first ROWS_PER_GROUP invocations add the
// gl_NumSubgroups partial sums of their row and store it.
void reduce_by_subgroups(const uint row0) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0; r < MMV_SUMS; ++r) {
        const float s = subgroupAdd(acc[r]);
        if (gl_SubgroupInvocationID == 0u) {
            mmv_partial[r * BLOCK_SIZE + gl_SubgroupID] = s;
        }
    }
    barrier();
#if MMV_NORM_X
    float sum_sq = 0.0;
    for (uint s = 0; s < gl_NumSubgroups; ++s) {
        sum_sq += mmv_partial[MMV_ROWS * BLOCK_SIZE + s];
    }
    const float inv_rms = inversesqrt(sum_sq / float(p.n_cols) + p.eps);
#endif
#if MMV_ROPE || MMV_GLU
    if (2u * tid < MMV_ROWS && row0 + 2u * tid < MMV_N_ROWS) {
        float t0 = 0.0;
        float t1 = 0.0;
        for (uint s = 0; s < gl_NumSubgroups; ++s) {
            t0 += mmv_partial[2u * tid * BLOCK_SIZE + s];
            t1 += mmv_partial[(2u * tid + 1u) * BLOCK_SIZE + s];
        }
        STORE_PAIR(row0 + 2u * tid, NORMED(t0), NORMED(t1));
    }
#else
    if (tid < MMV_ROWS && row0 + tid < p.n_rows) {
        float total = 0.0;
        for (uint s = 0; s < gl_NumSubgroups; ++s) {
            total += mmv_partial[tid * BLOCK_SIZE + s];
        }
        STORE_Y(row0 + tid, total);
    }
#endif
}
#endif

// Shared-memory fold of every row at once; any BLOCK_SIZE (rounds the live range up).
void reduce_in_shared_memory(const uint row0) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0; r < MMV_SUMS; ++r) {
        mmv_partial[r * BLOCK_SIZE + tid] = acc[r];
    }
    barrier();
    for (uint live = BLOCK_SIZE; live > 1u; ) {
        const uint upper = (live + 1u) / 2u;
        if (tid + upper < live) {
            [[unroll]] for (uint r = 0; r < MMV_SUMS; ++r) {
                mmv_partial[r * BLOCK_SIZE + tid] += mmv_partial[r * BLOCK_SIZE + tid + upper];
            }
        }
        barrier();
        live = upper;
    }
#if MMV_NORM_X
    const float inv_rms = inversesqrt(mmv_partial[MMV_ROWS * BLOCK_SIZE] / float(p.n_cols) + p.eps);
#endif
#if MMV_ROPE || MMV_GLU
    if (2u * tid < MMV_ROWS && row0 + 2u * tid < MMV_N_ROWS) {
        STORE_PAIR(row0 + 2u * tid, NORMED(mmv_partial[2u * tid * BLOCK_SIZE]),
                   NORMED(mmv_partial[(2u * tid + 1u) * BLOCK_SIZE]));
    }
#else
    if (tid < MMV_ROWS && row0 + tid < p.n_rows) {
        STORE_Y(row0 + tid, mmv_partial[tid * BLOCK_SIZE]);
    }
#endif
}

// The dot products of rows row0 .. row0 + ROWS_PER_GROUP - 1, reduced and stored.
void rows_block(const uint row0) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0; r < MMV_SUMS; ++r) {
        acc[r] = 0.0;
    }
    if (p.n_cols % VEC == 0u) {
        const uint nv = p.n_cols / VEC;
        uint c = tid;
        // Four columns per pass: four independent 16-byte loads per row in flight.
        for (; c + 3u * BLOCK_SIZE < nv; c += 4u * BLOCK_SIZE) {
            [[unroll]] for (uint u = 0; u < 4u; ++u) {
                accumulate_vec(c + u * BLOCK_SIZE, nv, row0);
            }
        }
        for (; c < nv; c += BLOCK_SIZE) {
            accumulate_vec(c, nv, row0);
        }
    } else {
        for (uint k = tid; k < p.n_cols; k += BLOCK_SIZE) {
            const float xk = LOAD_X(k);
            [[unroll]] for (uint r = 0; r < MMV_ROWS; ++r) {
                const uint row = BLOCK_ROW(row0, r);
                acc[r] += float(WS(r, row * p.n_cols + k)) * xk;
            }
        }
    }
#if MMV_SUBGROUP
    // A workgroup of whole subgroups only: partial subgroups are where implementations
    // differ (lavapipe's sums come out wrong), and the fold below handles any size.
    if (BLOCK_SIZE % gl_SubgroupSize == 0u) {
        reduce_by_subgroups(row0);
        return;
    }
#endif
    reduce_in_shared_memory(row0);
}

void main() {
    // Blocks of rows, grid-stride: the usual ceil(n_rows / ROWS_PER_GROUP) groups take
    // one block each; fewer groups (a grid sized to the device) loop; more do nothing.
    const uint n_groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint g = flat_group_id(); g * MMV_ROWS < MMV_N_ROWS; g += n_groups) {
        rows_block(g * MMV_ROWS);
        barrier();  // the next block's partial sums overwrite this one's
    }
}
