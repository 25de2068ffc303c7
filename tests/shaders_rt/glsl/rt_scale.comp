#version 450
// Y[i] = alpha * X[i]
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer XBuf { float x[]; };
layout(set = 0, binding = 1) writeonly buffer YBuf { float y[]; };
layout(push_constant) uniform Push { uint n; float alpha; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) y[i] = p.alpha * x[i];
}
