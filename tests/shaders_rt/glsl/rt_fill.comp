#version 450
// Y[i] = value
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) writeonly buffer YBuf { float y[]; };
layout(push_constant) uniform Push { uint n; float value; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) y[i] = p.value;
}
