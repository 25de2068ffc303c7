#version 450
// Writes what it was specialised with. The workgroup's own constant (id 0, default 1)
// and BLOCK (id 0, default 64) disagree: unspecialised, the host must run 64.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint BLOCK = 64;
layout(constant_id = 1) const int OFFSET = -3;
layout(constant_id = 2) const float SCALE = 0.5;
layout(constant_id = 3) const bool FLAG = false;
layout(constant_id = 4) const uint WIDE = 7;
layout(set = 0, binding = 0) writeonly buffer Out { uint values[8]; };
layout(push_constant) uniform Push { uint tag; } p;
void main() {
    if (gl_LocalInvocationIndex == 0u) {
        values[0] = gl_WorkGroupSize.x;
        values[1] = BLOCK;
        values[2] = uint(OFFSET);
        values[3] = floatBitsToUint(SCALE);
        values[4] = FLAG ? 1u : 0u;
        values[5] = WIDE;
        values[6] = p.tag;
        values[7] = gl_NumWorkGroups.x;
    }
}
