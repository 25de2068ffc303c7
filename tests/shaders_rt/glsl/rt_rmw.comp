#version 450
// Y[i] = alpha * Y[i] + beta  (reads and writes one binding)
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) buffer YBuf { float y[]; };
layout(push_constant) uniform Push { uint n; float alpha; float beta; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) y[i] = p.alpha * y[i] + p.beta;
}
