#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
// Writes its specialisation constants out, so a test can see what arrived.
layout(local_size_x = 1) in;
layout(constant_id = 1) const uint COUNT = 7u;
layout(constant_id = 2) const bool FLAG = false;
layout(constant_id = 3) const float SCALE = 1.5;
layout(constant_id = 4) const int OFFSET = -3;
layout(constant_id = 5) const uint64_t BIG = 5ul;
layout(set = 0, binding = 0) writeonly buffer Out { uint v[8]; };
void main() {
    if (gl_GlobalInvocationID.x == 0u) {
        v[0] = 1u;
        v[1] = COUNT;
        v[2] = FLAG ? 1u : 0u;
        v[3] = floatBitsToUint(SCALE);
        v[4] = uint(OFFSET);
        v[5] = uint(BIG & 0xFFFFFFFFul);
        v[6] = uint(BIG >> 32);
        v[7] = 0xC0FFEEu;
    }
}
