#version 450
// Spec constants of every scalar type, specialised workgroup dimensions, a spec-sized array.
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x_id = 10, local_size_y = 2, local_size_z_id = 12) in;
layout(constant_id = 0) const bool FLAG_T = true;
layout(constant_id = 1) const bool FLAG_F = false;
layout(constant_id = 2) const int I32 = -7;
layout(constant_id = 3) const uint U32 = 4000000000u;
layout(constant_id = 4) const float F32 = -0.25;
layout(constant_id = 5) const double F64 = 3.5e100;
layout(constant_id = 6) const int64_t I64 = -9000000000l;
layout(constant_id = 7) const uint64_t U64 = 18000000000000000000ul;
layout(constant_id = 8) const float16_t F16 = -1.5hf;
layout(constant_id = 9) const int16_t I16 = -300s;
layout(constant_id = 13) const uint16_t U16 = 65000us;
layout(constant_id = 14) const int8_t I8 = int8_t(-100);
layout(constant_id = 15) const uint8_t U8 = uint8_t(200);
layout(constant_id = 20) const uint LEN = 5;
layout(binding = 0) buffer Out { float v[]; } o;
shared float tile[LEN];

void main() {
    uint i = gl_LocalInvocationIndex;
    tile[i % LEN] = F32;
    barrier();
    float acc = float(FLAG_T) + float(FLAG_F) + float(I32) + float(U32) + float(F64) + float(I64)
              + float(U64) + float(F16) + float(I16) + float(U16) + float(I8) + float(U8);
    o.v[i] = acc + tile[0] + float(gl_WorkGroupSize.x);
}
