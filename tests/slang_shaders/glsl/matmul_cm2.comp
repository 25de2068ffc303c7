#version 450
#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_KHR_cooperative_matrix : enable
#extension GL_NV_cooperative_matrix2 : enable
#extension GL_EXT_buffer_reference : enable

// D = A * B^T with cooperative matrix 2 tensor loads. A is fp16 (A_F16) or
// 4-bit blocks decoded on load (A_Q4); ACC_TYPE is float or float16_t.
#if defined(A_Q4)
#include "decode_q4.glsl"
#define A_ELEM block_q4
#define A_BLOCK_K 32
#define DECODE_A , decode_q4
#else
#define A_ELEM float16_t
#define A_BLOCK_K 1
#define DECODE_A
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 32;

layout(binding = 0) readonly buffer A { A_ELEM data_a[]; };
layout(binding = 1) readonly buffer B { float16_t data_b[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };
layout(push_constant) uniform Params { uint M; uint N; uint K; } p;

void main() {
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> layout_a = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> layout_b = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> layout_d = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    layout_a = setTensorLayoutBlockSizeNV(layout_a, 1, A_BLOCK_K);
    layout_a = setTensorLayoutDimensionNV(layout_a, p.M, p.K);
    layout_b = setTensorLayoutDimensionNV(layout_b, p.N, p.K);
    layout_d = setTensorLayoutDimensionNV(layout_d, p.N, p.M);
    tensorViewNV<2, false, 1, 0> transpose = createTensorViewNV(2, false, 1, 0);

    const uint row = gl_WorkGroupID.x * BM, col = gl_WorkGroupID.y * BN;
    coopmat<ACC_TYPE, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> acc =
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);
    [[dont_unroll]]
    for (uint k = 0; k < p.K; k += BK) {
        coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> a;
        coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> b;
        coopMatLoadTensorNV(a, data_a, 0, sliceTensorLayoutNV(layout_a, row, BM, k, BK) DECODE_A);
        coopMatLoadTensorNV(b, data_b, 0, sliceTensorLayoutNV(layout_b, col, BN, k, BK), transpose);
        acc = coopMatMulAdd(a, b, acc);
    }
    coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> d =
        coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(acc);
    coopMatStoreTensorNV(d, data_d, 0, sliceTensorLayoutNV(layout_d, col, BN, row, BM), transpose);
}
