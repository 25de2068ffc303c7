#version 450
// Elementwise over uint32 (wrapping, so every device and the C reference agree bit for bit).
//   add  (default): C[i] = A[i] + B[i]
//   axpy (OP_AXPY): Y[i] = A[i] + B[i] * (S.total | 1), S.total written by reduce.comp
// Push constants: { uint n; } elements.
layout(local_size_x = 256) in;

layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) readonly buffer B { uint b[]; };
#ifdef OP_AXPY
layout(set = 0, binding = 2) readonly buffer S { uint total; };
layout(set = 0, binding = 3) writeonly buffer Y { uint y[]; };
#else
layout(set = 0, binding = 2) writeonly buffer C { uint c[]; };
#endif
layout(push_constant) uniform Push { uint n; } p;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) {
        return;
    }
#ifdef OP_AXPY
    y[i] = a[i] + b[i] * (total | 1u);
#else
    c[i] = a[i] + b[i];
#endif
}
