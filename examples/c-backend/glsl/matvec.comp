#version 450
// Y = W X over uint32 (wrapping): W is rows x cols, row-major; one workgroup per row
// sums a strided share of the row per invocation, then a tree in shared memory.
// Push constants: { uint rows; uint cols; }.
//
// The workgroup size is specialisation constant 0, BLOCK_SIZE (a power of two): the
// workgroup's own constant (local_size_x_id = 0) and BLOCK_SIZE share id 0, with the
// same default, so one value (the host's, by the name BLOCK_SIZE) sets both.
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(constant_id = 0) const uint BLOCK_SIZE = 64;

layout(set = 0, binding = 0) readonly buffer W { uint w[]; };
layout(set = 0, binding = 1) readonly buffer X { uint x[]; };
layout(set = 0, binding = 2) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } p;

shared uint partial[BLOCK_SIZE];

void main() {
    uint row = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint sum = 0u;
    for (uint c = t; c < p.cols; c += BLOCK_SIZE) {
        sum += w[row * p.cols + c] * x[c];
    }
    partial[t] = sum;
    barrier();
    for (uint half_size = BLOCK_SIZE / 2u; half_size > 0u; half_size >>= 1u) {
        if (t < half_size) {
            partial[t] += partial[t + half_size];
        }
        barrier();
    }
    if (t == 0u && row < p.rows) {
        y[row] = partial[0];
    }
}
