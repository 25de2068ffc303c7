#version 450
// S.total = sum of X[i] * X[i] over uint32 (wrapping: the sum is the same in any order).
// One workgroup: each invocation sums a strided share, then a tree in shared memory.
// Push constants: { uint n; } elements.
layout(local_size_x = 256) in;

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer S { uint total; };
layout(push_constant) uniform Push { uint n; } p;

shared uint partial[256];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint sum = 0u;
    for (uint i = t; i < p.n; i += 256u) {
        sum += x[i] * x[i];
    }
    partial[t] = sum;
    barrier();
    for (uint half_size = 128u; half_size > 0u; half_size >>= 1u) {
        if (t < half_size) {
            partial[t] += partial[t + half_size];
        }
        barrier();
    }
    if (t == 0u) {
        total = partial[0];
    }
}
