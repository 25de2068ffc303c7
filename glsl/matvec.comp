// y = A x: A is rows x cols, row-major; x has cols elements, y has rows.
//
// One workgroup per row (grid-stride over rows), BLOCK_SIZE invocations
// each summing a strided slice of the row, then a tree reduction in shared
// memory. The workgroup size is specialisation constant 0.
#version 450

// 256-wide workgroups: past the 128 invocations every Vulkan 1.2 device guarantees, within
// what the GPUs this library targets allow (1024 and more); a smaller device refuses it by name.
// genspirv: ignore-file[portability]
// local_size_x gives the default; local_size_x_id makes it specialisable (and must agree with BLOCK_SIZE).
layout(local_size_x = 256, local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 0) const uint BLOCK_SIZE = 256;

layout(std430, set = 0, binding = 0) readonly buffer ABuf { TYPE data[]; } A;
layout(std430, set = 0, binding = 1) readonly buffer XBuf { TYPE data[]; } X;
layout(std430, set = 0, binding = 2) writeonly buffer YBuf { TYPE data[]; } Y;
layout(push_constant) uniform Push { uint rows; uint cols; } pc;

shared float partial[BLOCK_SIZE];

void main() {
    uint tid = gl_LocalInvocationID.x;
    // row is the same for the whole workgroup, so the barriers below are in uniform control flow.
    for (uint row = gl_WorkGroupID.x; row < pc.rows; row += gl_NumWorkGroups.x) {
        uint base = row * pc.cols;
        float sum = 0.0;
        for (uint c = tid; c < pc.cols; c += BLOCK_SIZE) {
            sum += float(A.data[base + c]) * float(X.data[c]);
        }
        partial[tid] = sum;
        barrier();
        // Halve the live range each step, rounding up: works for any BLOCK_SIZE.
        for (uint live = BLOCK_SIZE; live > 1u; ) {
            uint upper = (live + 1u) / 2u;
            if (tid + upper < live) {
                partial[tid] += partial[tid + upper];
            }
            barrier();
            live = upper;
        }
        if (tid == 0u) {
            Y.data[row] = TYPE(partial[0]);
        }
        // partial[] is reused by the next row.
        barrier();
    }
}
