#version 450
#extension GL_GOOGLE_include_directive : require
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
#include "include/llm_common.glsl"

layout(constant_id = 1) const uint MAX_CTX = 1024;

layout(binding = 0) readonly buffer Q { float q[]; };
layout(binding = 1) readonly buffer K { float k[]; };
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

void main() {
    const uint head = gl_WorkGroupID.x;
    if (head >= p.n_head) {
        return;  // uniform over the workgroup
    }
    const uint tid = gl_LocalInvocationID.x;
    const uint n_kv = min(p.n_kv, MAX_CTX);
    const uint kv_head = head / max(p.n_head / max(p.n_kv_head, 1u), 1u);
    const uint q_base = head * p.head_dim;
    const uint kv_stride = p.kv_stride;
    const uint kv_base = kv_head * p.head_dim;

    float local_max = -1.0 / 0.0;
    for (uint t = tid; t < n_kv; t += BLOCK_SIZE) {
        float dot_qk = 0.0;
        for (uint d = 0; d < p.head_dim; ++d) {
            dot_qk += q[q_base + d] * k[t * kv_stride + kv_base + d];
        }
        const float s = dot_qk * p.scale;
        scores[t] = s;
        local_max = max(local_max, s);
    }
    const float m = block_max(local_max);

    float local_sum = 0.0;
    for (uint t = tid; t < n_kv; t += BLOCK_SIZE) {
        const float e = exp(scores[t] - m);
        scores[t] = e;
        local_sum += e;
    }
    // block_sum's barriers also make every scores[t] visible to the loop below.
    const float inv_sum = 1.0 / block_sum(local_sum);

    for (uint d = tid; d < p.head_dim; d += BLOCK_SIZE) {
        float acc = 0.0;
        for (uint t = 0; t < n_kv; ++t) {
            acc += scores[t] * v[t * kv_stride + kv_base + d];
        }
        o[q_base + d] = acc * inv_sum;
    }
}
