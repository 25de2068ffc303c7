#version 450
// A push-constant array and a buffer block sized by a spec constant (default 2): writes out
// the N words it read from each, so genspirv/vulkan.h's sizes at spec values can be seen.
layout(local_size_x = 1) in;
layout(constant_id = 0) const uint N = 2u;
layout(push_constant) uniform P { uint w[N]; } pc;
layout(set = 0, binding = 0) readonly buffer In { uint a[N]; } inp;
layout(set = 0, binding = 1) writeonly buffer Out { uint v[]; } o;
void main() {
    for (uint i = 0u; i < N; ++i) {
        o.v[i] = pc.w[i];
        o.v[N + i] = inp.a[i];
    }
}
