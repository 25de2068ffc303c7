#version 450
#include "activation.glsl"

// y = ACTIVATION(x): no extension either compiler lacks (the like-for-like timing baseline).
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        y[i] = ACTIVATION(x[i]);
    }
}
