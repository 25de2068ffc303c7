/* genspirv/vulkan/features.h -- what a device enabled, as the capability bits of the table.
 *
 * A part of genspirv/vulkan.h, which includes the parts in order (context, features, spec,
 * kernel, dispatch) inside its extern "C": include that header, not this one.
 * genspirv_vk_context_info's features chain (what vkCreateDevice enabled), extension
 * names and subgroup properties become the context's bits; genspirv_vk_kernel_create
 * refuses a module needing one it lacks. With a table older than the capability bits
 * (no GENSPIRV_HAS_CAPABILITIES), nothing here is checked.
 */
#ifndef GENSPIRV_VULKAN_FEATURES_H
#define GENSPIRV_VULKAN_FEATURES_H

#ifndef GENSPIRV_VULKAN_H
#error "include genspirv/vulkan.h, not its parts"
#endif

#ifdef GENSPIRV_HAS_CAPABILITIES
#define GENSPIRV_VKI_CAP(c, on) ((on) ? (UINT64_C(1) << (c)) : UINT64_C(0))

/* The capability bits the features chain enables (genspirv/runtime/limits.py holds the
 * same map for the Python runtime). */
static inline uint64_t genspirv_vki_enabled_capabilities(const VkPhysicalDeviceFeatures2 *f)
{
    const VkBaseInStructure *next;
    uint64_t caps = GENSPIRV_VKI_CAP(GENSPIRV_CAP_INT16, f->features.shaderInt16) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_INT64, f->features.shaderInt64) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_FLOAT64, f->features.shaderFloat64);
    for (next = (const VkBaseInStructure *)f->pNext; next != NULL; next = next->pNext) {
        if (next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES) {
            const VkPhysicalDeviceVulkan11Features *v = (const VkPhysicalDeviceVulkan11Features *)(const void *)next;
            caps |= GENSPIRV_VKI_CAP(GENSPIRV_CAP_STORAGEBUFFER16BITACCESS, v->storageBuffer16BitAccess) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_UNIFORMANDSTORAGEBUFFER16BITACCESS,
                                     v->uniformAndStorageBuffer16BitAccess) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_STORAGEPUSHCONSTANT16, v->storagePushConstant16);
        } else if (next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES) {
            const VkPhysicalDevice16BitStorageFeatures *v = (const VkPhysicalDevice16BitStorageFeatures *)(const void *)next;
            caps |= GENSPIRV_VKI_CAP(GENSPIRV_CAP_STORAGEBUFFER16BITACCESS, v->storageBuffer16BitAccess) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_UNIFORMANDSTORAGEBUFFER16BITACCESS,
                                     v->uniformAndStorageBuffer16BitAccess) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_STORAGEPUSHCONSTANT16, v->storagePushConstant16);
        } else if (next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
            const VkPhysicalDeviceVulkan12Features *v = (const VkPhysicalDeviceVulkan12Features *)(const void *)next;
            caps |= GENSPIRV_VKI_CAP(GENSPIRV_CAP_FLOAT16, v->shaderFloat16) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_INT8, v->shaderInt8) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_STORAGEBUFFER8BITACCESS, v->storageBuffer8BitAccess) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_UNIFORMANDSTORAGEBUFFER8BITACCESS,
                                     v->uniformAndStorageBuffer8BitAccess) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_STORAGEPUSHCONSTANT8, v->storagePushConstant8) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_INT64ATOMICS, v->shaderBufferInt64Atomics) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_VULKANMEMORYMODEL, v->vulkanMemoryModel) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_VULKANMEMORYMODELDEVICESCOPE, v->vulkanMemoryModelDeviceScope) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_PHYSICALSTORAGEBUFFERADDRESSES, v->bufferDeviceAddress);
        } else if (next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES) {
            const VkPhysicalDevice8BitStorageFeatures *v = (const VkPhysicalDevice8BitStorageFeatures *)(const void *)next;
            caps |= GENSPIRV_VKI_CAP(GENSPIRV_CAP_STORAGEBUFFER8BITACCESS, v->storageBuffer8BitAccess) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_UNIFORMANDSTORAGEBUFFER8BITACCESS,
                                     v->uniformAndStorageBuffer8BitAccess) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_STORAGEPUSHCONSTANT8, v->storagePushConstant8);
        } else if (next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES) {
            const VkPhysicalDeviceShaderFloat16Int8Features *v =
                (const VkPhysicalDeviceShaderFloat16Int8Features *)(const void *)next;
            caps |= GENSPIRV_VKI_CAP(GENSPIRV_CAP_FLOAT16, v->shaderFloat16) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_INT8, v->shaderInt8);
        } else if (next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES) {
            const VkPhysicalDeviceShaderAtomicInt64Features *v =
                (const VkPhysicalDeviceShaderAtomicInt64Features *)(const void *)next;
            caps |= GENSPIRV_VKI_CAP(GENSPIRV_CAP_INT64ATOMICS, v->shaderBufferInt64Atomics);
        } else if (next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES) {
            const VkPhysicalDeviceVulkanMemoryModelFeatures *v =
                (const VkPhysicalDeviceVulkanMemoryModelFeatures *)(const void *)next;
            caps |= GENSPIRV_VKI_CAP(GENSPIRV_CAP_VULKANMEMORYMODEL, v->vulkanMemoryModel) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_VULKANMEMORYMODELDEVICESCOPE, v->vulkanMemoryModelDeviceScope);
        } else if (next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES) {
            const VkPhysicalDeviceBufferDeviceAddressFeatures *v =
                (const VkPhysicalDeviceBufferDeviceAddressFeatures *)(const void *)next;
            caps |= GENSPIRV_VKI_CAP(GENSPIRV_CAP_PHYSICALSTORAGEBUFFERADDRESSES, v->bufferDeviceAddress);
#ifdef VK_VERSION_1_3
        } else if (next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES ||
                   next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES) {
            VkBool32 on = next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES
                              ? ((const VkPhysicalDeviceVulkan13Features *)(const void *)next)->shaderIntegerDotProduct
                              : ((const VkPhysicalDeviceShaderIntegerDotProductFeatures *)(const void *)next)
                                    ->shaderIntegerDotProduct;
            caps |= GENSPIRV_VKI_CAP(GENSPIRV_CAP_DOTPRODUCT, on) | GENSPIRV_VKI_CAP(GENSPIRV_CAP_DOTPRODUCTINPUTALL, on) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_DOTPRODUCTINPUT4X8BIT, on) |
                    GENSPIRV_VKI_CAP(GENSPIRV_CAP_DOTPRODUCTINPUT4X8BITPACKED, on);
#endif
#ifdef VK_KHR_cooperative_matrix
        } else if (next->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR) {
            const VkPhysicalDeviceCooperativeMatrixFeaturesKHR *v =
                (const VkPhysicalDeviceCooperativeMatrixFeaturesKHR *)(const void *)next;
            caps |= GENSPIRV_VKI_CAP(GENSPIRV_CAP_COOPERATIVEMATRIXKHR, v->cooperativeMatrix);
#endif
        }
    }
    return caps;
}

/* The subgroup capability bits that supportedOperations allows (all of them: ~0u). */
static inline uint64_t genspirv_vki_subgroup_capabilities(VkSubgroupFeatureFlags operations)
{
    static const genspirv_capability caps[] = {
        GENSPIRV_CAP_GROUPNONUNIFORM, GENSPIRV_CAP_GROUPNONUNIFORMVOTE, GENSPIRV_CAP_GROUPNONUNIFORMARITHMETIC,
        GENSPIRV_CAP_GROUPNONUNIFORMBALLOT, GENSPIRV_CAP_GROUPNONUNIFORMSHUFFLE,
        GENSPIRV_CAP_GROUPNONUNIFORMSHUFFLERELATIVE, GENSPIRV_CAP_GROUPNONUNIFORMCLUSTERED,
        GENSPIRV_CAP_GROUPNONUNIFORMQUAD, GENSPIRV_CAP_GROUPNONUNIFORMPARTITIONEDNV,
        GENSPIRV_CAP_GROUPNONUNIFORMROTATEKHR};      /* in VkSubgroupFeatureFlagBits order */
    uint64_t out = 0;
    size_t i;
    for (i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        if (operations & (1u << i)) out |= UINT64_C(1) << caps[i];
    }
    return out;
}
#endif

static inline void genspirv_vki_enabled(genspirv_vk_context *ctx, const genspirv_vk_context_info *info)
{
#ifdef GENSPIRV_HAS_CAPABILITIES
    if (info->features != NULL) {
        uint32_t e, k;
        ctx->check_features = 1;
        ctx->capabilities = genspirv_vki_enabled_capabilities(info->features);
        for (e = 0; e < GENSPIRV_EXT_COUNT; e++) {
            for (k = 0; k < info->extension_count; k++) {
                if (strcmp(info->extensions[k], genspirv_extension_needs((genspirv_extension)e)) == 0) {
                    ctx->extensions |= UINT64_C(1) << e;
                }
            }
        }
    }
    if (info->subgroup != NULL) {
        ctx->check_subgroup = 1;
        if (info->subgroup->supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) {
            ctx->capabilities |= genspirv_vki_subgroup_capabilities(info->subgroup->supportedOperations);
        }
    }
#else
    (void)ctx;
    (void)info;
#endif
}

#endif /* GENSPIRV_VULKAN_FEATURES_H */
