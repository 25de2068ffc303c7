// Shared by the LLM kernel library (get_rows, rms_norm, mul_mat_vec, matmul, rope,
// attention, silu_mul, argmax).
//
// The workgroup size is specialisation constant 0 (BLOCK_SIZE): the host picks it
// per device without a rebuild. `local_size_x` repeats its default because glslang
// emits a second, unnamed SpecId 0 for gl_WorkGroupSize whose default would
// otherwise be 1, and the two defaults must agree for a pipeline made without
// specialisation data. The reductions work for any BLOCK_SIZE, not only powers of two.

#ifndef LLM_BLOCK_SIZE
#define LLM_BLOCK_SIZE 128
#endif

layout(local_size_x = LLM_BLOCK_SIZE, local_size_x_id = 0) in;
layout(constant_id = 0) const uint BLOCK_SIZE = LLM_BLOCK_SIZE;

shared float llm_red[BLOCK_SIZE];

// Sum of `v` over the workgroup, returned to every invocation. Must be reached by
// every invocation of the workgroup (it contains barriers).
float block_sum(float v) {
    const uint tid = gl_LocalInvocationID.x;
    llm_red[tid] = v;
    barrier();
    // Fold the upper part of the live range onto the lower, rounding up.
    for (uint live = BLOCK_SIZE; live > 1; ) {
        const uint upper = (live + 1) / 2;
        if (tid + upper < live) {
            llm_red[tid] += llm_red[tid + upper];
        }
        barrier();
        live = upper;
    }
    const float total = llm_red[0];
    // Keep a following call from overwriting llm_red[0] before everyone read it.
    barrier();
    return total;
}

// Maximum of `v` over the workgroup, returned to every invocation.
float block_max(float v) {
    const uint tid = gl_LocalInvocationID.x;
    llm_red[tid] = v;
    barrier();
    for (uint live = BLOCK_SIZE; live > 1; ) {
        const uint upper = (live + 1) / 2;
        if (tid + upper < live) {
            llm_red[tid] = max(llm_red[tid], llm_red[tid + upper]);
        }
        barrier();
        live = upper;
    }
    const float m = llm_red[0];
    barrier();
    return m;
}

// Flat workgroup index over a 2-D grid, so that more than 65535 rows (the
// guaranteed maxComputeWorkGroupCount[0]) can be covered with groups=(x, y, 1).
uint flat_group_id() {
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}
