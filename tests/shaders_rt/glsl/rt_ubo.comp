#version 450
// Y[i] = X[i] * params.alpha, with the factor in a uniform buffer.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) uniform Params { float alpha; uint n; } params;
layout(set = 0, binding = 1) readonly buffer XBuf { float x[]; };
layout(set = 0, binding = 2) writeonly buffer YBuf { float y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < params.n) y[i] = params.alpha * x[i];
}
