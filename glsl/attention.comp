#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Attention of one decode step over a KV cache, fused: scores, softmax and the
// weighted sum of values, one workgroup per query head. Grouped-query attention:
// query head h reads KV head h / (n_head / n_kv_head).
// Takes q (n_head x head_dim floats, already rotated), the caches k and v
// (n_kv positions of n_kv_head x head_dim floats, position p starting at float
// p * kv_stride, so that each position's slot can be a buffer view at an offset
// the device allows); gives
// out (n_head x head_dim floats) = softmax(scale * q K^T) V per head.
// The scores of a head live in shared memory: n_kv must not exceed MAX_CTX
// (spec constant 1); the host refuses larger contexts, the kernel clamps so that
// a bad call cannot write outside shared memory.
// Dispatch: groups = (n_head, 1, 1).
//
// A decode step's context is short and its cache hot in L2, so the kernel is
// bound by load latency: the score of a position is the dot product of a few
// invocations (lanes) over 16-byte loads (when head_dim and kv_stride are
// multiples of 4), UNROLL of them in flight in each, added in shared memory
// (one invocation's scalar loop otherwise); the weighted sum of values splits
// the positions over BLOCK_SIZE / head_dim slices of the workgroup (when head_dim
// is below BLOCK_SIZE), UNROLL positions per step, the slices' sums added in
// shared memory.
#include "include/llm_common.glsl"

layout(constant_id = 1) const uint MAX_CTX = 1024;

layout(binding = 0) readonly buffer Q { vec4 q4[]; };
layout(binding = 0) readonly buffer QScalar { float q[]; };
layout(binding = 1) readonly buffer K { vec4 k4[]; };
layout(binding = 1) readonly buffer KScalar { float k[]; };
layout(binding = 2) readonly buffer V { float v[]; };
layout(binding = 3) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Params {
    uint n_head;
    uint n_kv_head;
    uint head_dim;
    uint n_kv;
    uint kv_stride;   // floats from one cached position to the next, >= n_kv_head * head_dim
    float scale;
} p;

shared float scores[MAX_CTX];

const uint UNROLL = 8u;

// Part of q . k[t]: the vec4 columns lane, lane + lanes, ... of the head (indices in
// vec4s, both rows starting on a 16-byte boundary), UNROLL loads in flight at once.
float dot_vec4(const uint q_at, const uint k_at, const uint nd, const uint lane, const uint lanes) {
    vec4 acc = vec4(0.0);
    uint d = lane;
    for (; d + (UNROLL - 1u) * lanes < nd; d += UNROLL * lanes) {
        vec4 kk[UNROLL];
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            kk[u] = k4[k_at + d + u * lanes];
        }
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            acc += q4[q_at + d + u * lanes] * kk[u];
        }
    }
    for (; d < nd; d += lanes) {
        acc += q4[q_at + d] * k4[k_at + d];
    }
    return (acc.x + acc.y) + (acc.z + acc.w);
}

float dot_scalar(const uint q_at, const uint k_at, const uint n) {
    float acc = 0.0;
    for (uint d = 0u; d < n; ++d) {
        acc += q[q_at + d] * k[k_at + d];
    }
    return acc;
}

// sum over t = first, first + step, ... < n_kv of scores[t] * v[t, d].
float weighted_values(const uint at, const uint first, const uint step, const uint n_kv) {
    float acc = 0.0;
    uint t = first;
    for (; t + (UNROLL - 1u) * step < n_kv; t += UNROLL * step) {
        float vv[UNROLL];
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            vv[u] = v[(t + u * step) * p.kv_stride + at];
        }
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            acc += scores[t + u * step] * vv[u];
        }
    }
    for (; t < n_kv; t += step) {
        acc += scores[t] * v[t * p.kv_stride + at];
    }
    return acc;
}

void main() {
    const uint head = gl_WorkGroupID.x;
    const uint hd = p.head_dim;
    if (head >= p.n_head || hd == 0u) {
        return;  // uniform over the workgroup
    }
    const uint tid = gl_LocalInvocationID.x;
    const uint n_kv = min(p.n_kv, MAX_CTX);
    const uint kv_head = head / max(p.n_head / max(p.n_kv_head, 1u), 1u);
    const uint q_base = head * hd;
    const uint kv_base = kv_head * hd;
    const bool vec = hd % 4u == 0u && p.kv_stride % 4u == 0u;

    float local_max = -1.0 / 0.0;
    if (vec) {
        // lanes invocations per position, each with at least UNROLL vec4 columns (when the
        // head has that many): one round of loads for a 128-wide head; their partial dot
        // products meet in llm_red. The loop's trip count is uniform (barriers inside).
        const uint nd = hd / 4u;
        uint lanes = 1u;
        while (lanes * 2u <= BLOCK_SIZE && nd >= lanes * 2u * UNROLL) {
            lanes *= 2u;
        }
        const uint per_pass = BLOCK_SIZE / lanes;
        const uint lane = tid % lanes;
        for (uint t0 = 0u; t0 < n_kv; t0 += per_pass) {
            const uint t = t0 + tid / lanes;
            const bool live = t < n_kv && tid < per_pass * lanes;
            llm_red[tid] = live ? dot_vec4(q_base / 4u, (t * p.kv_stride + kv_base) / 4u, nd, lane, lanes)
                                : 0.0;
            barrier();
            if (live && lane == 0u) {
                float dot_qk = 0.0;
                for (uint j = 0u; j < lanes; ++j) {
                    dot_qk += llm_red[tid + j];
                }
                const float s = dot_qk * p.scale;
                scores[t] = s;
                local_max = max(local_max, s);
            }
            barrier();
        }
    } else {
        for (uint t = tid; t < n_kv; t += BLOCK_SIZE) {
            const float s = dot_scalar(q_base, t * p.kv_stride + kv_base, hd) * p.scale;
            scores[t] = s;
            local_max = max(local_max, s);
        }
    }
    const float m = block_max(local_max);

    float local_sum = 0.0;
    for (uint t = tid; t < n_kv; t += BLOCK_SIZE) {
        const float e = exp(scores[t] - m);
        scores[t] = e;
        local_sum += e;
    }
    // block_sum's barriers also make every scores[t] visible to the loops below,
    // and its last barrier frees llm_red for the slices' partial sums.
    const float inv_sum = 1.0 / block_sum(local_sum);

    if (hd >= BLOCK_SIZE) {
        for (uint d = tid; d < hd; d += BLOCK_SIZE) {
            o[q_base + d] = weighted_values(kv_base + d, 0u, 1u, n_kv) * inv_sum;
        }
        return;
    }
    // Uniform branch: slices >= 1 whole copies of head_dim invocations.
    const uint slices = BLOCK_SIZE / hd;
    const uint slice = tid / hd;
    const uint d = tid - slice * hd;
    llm_red[tid] = slice < slices ? weighted_values(kv_base + d, slice, slices, n_kv) : 0.0;
    barrier();
    if (tid < hd) {
        float total = 0.0;
        for (uint s = 0u; s < slices; ++s) {
            total += llm_red[s * hd + tid];
        }
        o[q_base + tid] = total * inv_sum;
    }
}
