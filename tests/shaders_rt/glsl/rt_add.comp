#version 450
// C[i] = A[i] + B[i]
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer ABuf { float a[]; };
layout(set = 0, binding = 1) readonly buffer BBuf { float b[]; };
layout(set = 0, binding = 2) writeonly buffer CBuf { float c[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) c[i] = a[i] + b[i];
}
