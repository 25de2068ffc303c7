// Shared by the element-wise kernels (add, mul, scale, fill, copy).
//
// TYPE is the storage type of every buffer: float or float16_t. Arithmetic is
// done in float, so the f16 variants need only 16-bit storage
// (storageBuffer16BitAccess), not shaderFloat16, and round once on store.
#ifndef GENSPIRV_ELEMENTWISE_GLSL
#define GENSPIRV_ELEMENTWISE_GLSL

#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

#ifndef TYPE
#error "TYPE must be defined: float or float16_t"
#endif

// 256-wide workgroups: past the 128 invocations every Vulkan 1.2 device guarantees, within
// what the GPUs this library targets allow (1024 and more); a smaller device refuses it by name.
// genspirv: ignore-file[portability]
#define WORKGROUP_SIZE 256
layout(local_size_x = WORKGROUP_SIZE, local_size_y = 1, local_size_z = 1) in;

// Grid-stride loop: any group count covers any n, so a host may dispatch
// ceil(n / 256) groups or cap the count at the device limit.
#define FOR_EACH_ELEMENT(i, n) \
    for (uint i = gl_GlobalInvocationID.x; i < (n); i += gl_NumWorkGroups.x * WORKGROUP_SIZE)

#endif
