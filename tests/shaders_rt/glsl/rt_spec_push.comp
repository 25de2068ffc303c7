#version 450
// A push-constant array and a buffer block sized by a spec constant: the shader writes out
// the N floats it reads from each, so a test sees what arrived at the kernel's spec values.
layout(local_size_x = 1) in;
layout(constant_id = 0) const uint N = 2u;
layout(push_constant) uniform P { float w[N]; } pc;
layout(set = 0, binding = 0) readonly buffer In { float a[N]; } inp;
layout(set = 0, binding = 1) writeonly buffer Out { float v[]; } o;
void main() {
    for (uint i = 0u; i < N; ++i) {
        o.v[i] = pc.w[i];
        o.v[N + i] = inp.a[i];
    }
}
