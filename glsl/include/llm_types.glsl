// Storage type of weight and table elements, chosen by WEIGHT_F16 (0 or 1):
// WEIGHT_TYPE is float, or float16_t. float16_t needs only 16-bit *storage*
// (StorageBuffer16BitAccess, not shaderFloat16): values are converted to float on
// load and all arithmetic stays float32. Include before any declaration.
#ifndef WEIGHT_F16
#define WEIGHT_F16 0
#endif
#if WEIGHT_F16
#extension GL_EXT_shader_16bit_storage : require
#define WEIGHT_TYPE float16_t
#else
#define WEIGHT_TYPE float
#endif
