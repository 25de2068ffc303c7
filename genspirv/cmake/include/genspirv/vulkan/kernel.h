/* genspirv/vulkan/kernel.h -- kernels from table entries, and the descriptor-set cache.
 *
 * A part of genspirv/vulkan.h, which includes the parts in order (context, spec,
 * kernel, dispatch) inside its extern "C": include that header, not this one.
 */
#ifndef GENSPIRV_VULKAN_KERNEL_H
#define GENSPIRV_VULKAN_KERNEL_H

#ifndef GENSPIRV_VULKAN_H
#error "include genspirv/vulkan.h, not its parts"
#endif

/* -- kernels ------------------------------------------------------------------- */

static inline void genspirv_vk_kernel_destroy(genspirv_vk_context *ctx, genspirv_vk_kernel *k)
{
    uint32_t s;
    if (k->pipeline != VK_NULL_HANDLE) ctx->vk->DestroyPipeline(ctx->device, k->pipeline, ctx->allocator);
    if (k->layout != VK_NULL_HANDLE) ctx->vk->DestroyPipelineLayout(ctx->device, k->layout, ctx->allocator);
    for (s = 0; s < GENSPIRV_VK_MAX_SETS; s++) {
        if (k->set_layouts[s] != VK_NULL_HANDLE) {
            ctx->vk->DestroyDescriptorSetLayout(ctx->device, k->set_layouts[s], ctx->allocator);
        }
    }
    memset(k, 0, sizeof *k);
}

static inline genspirv_vk_result genspirv_vki_vulkan_failed(genspirv_vk_context *ctx, genspirv_vk_kernel *k,
                                                            const char *call, VkResult r)
{
    const char *name = k->module->name;
    genspirv_vk_kernel_destroy(ctx, k);
    return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_VULKAN, "genspirv: kernel %s: %s failed (VkResult %d)", name,
                             call, (int)r);
}

/* m against the device: push constants, storage and uniform buffers per stage and per
 * layout, all descriptors per stage, descriptor sets; then the capabilities and extensions
 * the blob declares against what the context was told the device enabled. */
static inline genspirv_vk_result genspirv_vki_device_limits(genspirv_vk_context *ctx, const genspirv_module *m)
{
    uint32_t i, storage = 0, uniform = 0, other = 0, sets = 0;
    for (i = 0; i < m->binding_count; i++) {
        const genspirv_binding *b = &m->bindings[i];
        uint32_t n = b->count ? b->count : 1u;      /* a runtime-sized array counts one */
        if (b->type == GENSPIRV_DESCRIPTOR_STORAGE_BUFFER) storage += n;
        else if (b->type == GENSPIRV_DESCRIPTOR_UNIFORM_BUFFER) uniform += n;
        else other += n;
        if (b->set + 1 > sets) sets = b->set + 1;
    }
    if (m->push_constant_size > ctx->max_push_constants) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_LIMIT, "genspirv: kernel %s: %u bytes of push constants, "
                                 "the device allows at most %u (maxPushConstantsSize)", m->name,
                                 (unsigned)m->push_constant_size, (unsigned)ctx->max_push_constants);
    }
    if (storage > ctx->max_stage_storage || storage > ctx->max_set_storage) {
        int stage = storage > ctx->max_stage_storage;
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_LIMIT, "genspirv: kernel %s: %u storage buffers in the %s, "
                                 "the device allows at most %u (%s)", m->name, (unsigned)storage,
                                 stage ? "compute stage" : "pipeline layout",
                                 (unsigned)(stage ? ctx->max_stage_storage : ctx->max_set_storage),
                                 stage ? "maxPerStageDescriptorStorageBuffers" : "maxDescriptorSetStorageBuffers");
    }
    if (uniform > ctx->max_stage_uniform || uniform > ctx->max_set_uniform) {
        int stage = uniform > ctx->max_stage_uniform;
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_LIMIT, "genspirv: kernel %s: %u uniform buffers in the %s, "
                                 "the device allows at most %u (%s)", m->name, (unsigned)uniform,
                                 stage ? "compute stage" : "pipeline layout",
                                 (unsigned)(stage ? ctx->max_stage_uniform : ctx->max_set_uniform),
                                 stage ? "maxPerStageDescriptorUniformBuffers" : "maxDescriptorSetUniformBuffers");
    }
    if (storage + uniform + other > ctx->max_resources) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_LIMIT, "genspirv: kernel %s: %u descriptors in the compute "
                                 "stage, the device allows at most %u (maxPerStageResources)", m->name,
                                 (unsigned)(storage + uniform + other), (unsigned)ctx->max_resources);
    }
    if (sets > ctx->max_bound_sets) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_LIMIT, "genspirv: kernel %s: descriptor sets 0 to %u (%u "
                                 "sets), the device allows at most %u (maxBoundDescriptorSets)", m->name,
                                 (unsigned)(sets - 1), (unsigned)sets, (unsigned)ctx->max_bound_sets);
    }
#ifdef GENSPIRV_HAS_CAPABILITIES
    {
        uint64_t subgroup = genspirv_vki_subgroup_capabilities(~(VkSubgroupFeatureFlags)0);
        uint64_t checked = (ctx->check_features ? ~subgroup : 0) | (ctx->check_subgroup ? subgroup : 0);
        uint64_t missing = m->capabilities & checked & ~ctx->capabilities;
        uint64_t missing_ext = ctx->check_features ? m->extensions & ~ctx->extensions : 0;
        for (i = 0; i < GENSPIRV_CAP_COUNT; i++) {
            if (missing & (UINT64_C(1) << i)) {
                genspirv_capability c = (genspirv_capability)i;
                int op = (int)((subgroup >> i) & 1u);
                return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_FEATURE, "genspirv: kernel %s needs %s %s (for "
                                         "OpCapability %s), which this device %s", m->name,
                                         op ? "subgroup operation" : "device feature", genspirv_capability_needs(c),
                                         genspirv_capability_name(c),
                                         op ? "lacks in compute shaders" : "does not enable");
            }
        }
        for (i = 0; i < GENSPIRV_EXT_COUNT; i++) {
            if (missing_ext & (UINT64_C(1) << i)) {
                genspirv_extension e = (genspirv_extension)i;
                return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_FEATURE, "genspirv: kernel %s needs device extension "
                                         "%s (for OpExtension %s), which this device does not enable", m->name,
                                         genspirv_extension_needs(e), genspirv_extension_name(e));
            }
        }
    }
#endif
    return GENSPIRV_VK_OK;
}

/* Create *k from module m with the spec overrides given (spec may be NULL when
 * spec_count is 0). On a refusal *k holds nothing to destroy. */
static inline genspirv_vk_result genspirv_vk_kernel_create(genspirv_vk_context *ctx, genspirv_vk_kernel *k,
                                                           const genspirv_module *m, const genspirv_vk_spec *spec,
                                                           size_t spec_count, VkPipelineCache cache)
{
    VkDescriptorSetLayoutBinding bindings[GENSPIRV_VK_MAX_BINDINGS];
    VkDescriptorSetLayoutCreateInfo set_info;
    VkPushConstantRange push;
    VkPipelineLayoutCreateInfo layout_info;
    VkShaderModuleCreateInfo module_info;
    VkSpecializationInfo spec_info;
    VkComputePipelineCreateInfo pipeline_info;
    VkShaderModule shader = VK_NULL_HANDLE;
    genspirv_vki_packed packed;
    genspirv_vk_result result;
    VkResult r;
    uint32_t i, s, n;
    memset(k, 0, sizeof *k);
    k->module = m;
    result = genspirv_vki_device_limits(ctx, m);   /* before any Vulkan object, and before the header's own bounds */
    if (result != GENSPIRV_VK_OK) return result;
    if (m->binding_count > GENSPIRV_VK_MAX_BINDINGS) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_UNSUPPORTED, "genspirv: kernel %s has %u bindings; define "
                                 "GENSPIRV_VK_MAX_BINDINGS to at least that before including genspirv/vulkan.h",
                                 m->name, (unsigned)m->binding_count);
    }
    for (i = 0; i < m->binding_count; i++) {
        const genspirv_binding *b = &m->bindings[i];
        if (b->type == GENSPIRV_DESCRIPTOR_STORAGE_BUFFER) {
            k->types[i] = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        } else if (b->type == GENSPIRV_DESCRIPTOR_UNIFORM_BUFFER) {
            k->types[i] = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
        } else {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_UNSUPPORTED, "genspirv: kernel %s: binding %s is a %s; "
                                     "genspirv/vulkan.h binds storage and uniform buffers only", m->name, b->name,
                                     genspirv_descriptor_type_name(b->type));
        }
        if (b->count != 1) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_UNSUPPORTED, "genspirv: kernel %s: binding %s is an "
                                     "array of %u (0: runtime-sized); genspirv/vulkan.h binds single buffers",
                                     m->name, b->name, (unsigned)b->count);
        }
        if (b->set >= GENSPIRV_VK_MAX_SETS) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_UNSUPPORTED, "genspirv: kernel %s: binding %s is in "
                                     "set %u; define GENSPIRV_VK_MAX_SETS above it", m->name, b->name,
                                     (unsigned)b->set);
        }
        if (b->set + 1 > k->set_count) k->set_count = b->set + 1;
    }
    result = genspirv_vki_pack(ctx, m, spec, spec_count, &packed);
    if (result != GENSPIRV_VK_OK) return result;
    result = genspirv_vki_workgroup(ctx, m, &packed, k->local_size);
    if (result != GENSPIRV_VK_OK) return result;
    result = genspirv_vki_sizes(ctx, m, &packed, k);
    if (result != GENSPIRV_VK_OK) return result;
    if (k->push_constant_size > ctx->max_push_constants) {      /* a spec-sized push array grown past it */
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_LIMIT, "genspirv: kernel %s: %u bytes of push constants at "
                                 "its spec values, the device allows at most %u (maxPushConstantsSize)", m->name,
                                 (unsigned)k->push_constant_size, (unsigned)ctx->max_push_constants);
    }

    for (s = 0; s < k->set_count; s++) {       /* sets with no binding get an empty layout */
        for (i = 0, n = 0; i < m->binding_count; i++) {
            if (m->bindings[i].set != s) continue;
            bindings[n].binding = m->bindings[i].binding;
            bindings[n].descriptorType = k->types[i];
            bindings[n].descriptorCount = 1;
            bindings[n].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
            bindings[n].pImmutableSamplers = NULL;
            n++;
        }
        memset(&set_info, 0, sizeof set_info);
        set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
        set_info.bindingCount = n;
        set_info.pBindings = n ? bindings : NULL;
        r = ctx->vk->CreateDescriptorSetLayout(ctx->device, &set_info, ctx->allocator, &k->set_layouts[s]);
        if (r != VK_SUCCESS) {
            k->set_layouts[s] = VK_NULL_HANDLE;
            return genspirv_vki_vulkan_failed(ctx, k, "vkCreateDescriptorSetLayout", r);
        }
    }
    push.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    push.offset = 0;
    push.size = k->push_constant_size;
    memset(&layout_info, 0, sizeof layout_info);
    layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    layout_info.setLayoutCount = k->set_count;
    layout_info.pSetLayouts = k->set_count ? k->set_layouts : NULL;
    layout_info.pushConstantRangeCount = k->push_constant_size ? 1u : 0u;
    layout_info.pPushConstantRanges = k->push_constant_size ? &push : NULL;
    r = ctx->vk->CreatePipelineLayout(ctx->device, &layout_info, ctx->allocator, &k->layout);
    if (r != VK_SUCCESS) {
        k->layout = VK_NULL_HANDLE;
        return genspirv_vki_vulkan_failed(ctx, k, "vkCreatePipelineLayout", r);
    }
    memset(&module_info, 0, sizeof module_info);
    module_info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    module_info.codeSize = m->word_count * 4;
    module_info.pCode = m->words;
    r = ctx->vk->CreateShaderModule(ctx->device, &module_info, ctx->allocator, &shader);
    if (r != VK_SUCCESS) return genspirv_vki_vulkan_failed(ctx, k, "vkCreateShaderModule", r);
    spec_info.mapEntryCount = packed.entry_count;
    spec_info.pMapEntries = packed.entries;
    spec_info.dataSize = packed.size;
    spec_info.pData = packed.data;
    memset(&pipeline_info, 0, sizeof pipeline_info);
    pipeline_info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipeline_info.stage.module = shader;
    pipeline_info.stage.pName = m->entry_point;
    pipeline_info.stage.pSpecializationInfo = packed.entry_count ? &spec_info : NULL;
    pipeline_info.layout = k->layout;
    pipeline_info.basePipelineIndex = -1;
    r = ctx->vk->CreateComputePipelines(ctx->device, cache, 1, &pipeline_info, ctx->allocator, &k->pipeline);
    ctx->vk->DestroyShaderModule(ctx->device, shader, ctx->allocator);   /* the pipeline keeps what it needs */
    if (r != VK_SUCCESS) {
        k->pipeline = VK_NULL_HANDLE;
        return genspirv_vki_vulkan_failed(ctx, k, "vkCreateComputePipelines", r);
    }
    return GENSPIRV_VK_OK;
}

/* -- descriptor sets ----------------------------------------------------------- */

static inline uint64_t genspirv_vki_mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static inline int genspirv_vki_same_views(const genspirv_vk_sets *e, const genspirv_vk_view *views, uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; i++) {
        if (e->views[i].buffer != views[i].buffer || e->views[i].offset != views[i].offset ||
            e->views[i].size != views[i].size) {
            return 0;
        }
    }
    return 1;
}

/* The cached sets of k's layout for these views; allocated and written at a miss. */
static inline genspirv_vk_result genspirv_vki_sets_for(genspirv_vk_context *ctx, const genspirv_vk_kernel *k,
                                                       const genspirv_vk_view *views, uint32_t n,
                                                       const genspirv_vk_sets **out)
{
    const genspirv_module *m = k->module;
    VkDescriptorSetAllocateInfo alloc;
    VkDescriptorBufferInfo infos[GENSPIRV_VK_MAX_BINDINGS];
    VkWriteDescriptorSet writes[GENSPIRV_VK_MAX_BINDINGS];
    genspirv_vk_sets *e;
    uint64_t h = GENSPIRV_VK_HANDLE_BITS(k->layout);
    size_t slot;
    uint32_t i;
    VkResult r;
    if (ctx->set_capacity == 0) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_DESCRIPTORS_FULL, "genspirv: kernel %s: no descriptor "
                                 "cache (the context was given no sets storage)", m->name);
    }
    for (i = 0; i < n; i++) {
        h = genspirv_vki_mix(h, GENSPIRV_VK_HANDLE_BITS(views[i].buffer));
        h = genspirv_vki_mix(h, views[i].offset);
        h = genspirv_vki_mix(h, views[i].size);
    }
    slot = (size_t)(h % ctx->set_capacity);
    for (;;) {
        e = &ctx->sets[slot];
        if (e->layout == VK_NULL_HANDLE) break;
        if (e->hash == h && e->layout == k->layout && e->view_count == n && genspirv_vki_same_views(e, views, n)) {
            *out = e;
            return GENSPIRV_VK_OK;
        }
        slot = slot + 1 == ctx->set_capacity ? 0 : slot + 1;
    }
    if (ctx->set_count + 1 > ctx->set_capacity - ctx->set_capacity / 4) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_DESCRIPTORS_FULL, "genspirv: kernel %s: the descriptor cache "
                                 "holds %lu bindings of views, its most for a capacity of %lu; wait for the "
                                 "submitted work and call genspirv_vk_descriptors_reset, or give more sets",
                                 m->name, (unsigned long)ctx->set_count, (unsigned long)ctx->set_capacity);
    }
    memset(&alloc, 0, sizeof alloc);
    alloc.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    alloc.descriptorPool = ctx->pool;
    alloc.descriptorSetCount = k->set_count;
    alloc.pSetLayouts = k->set_layouts;
    r = ctx->vk->AllocateDescriptorSets(ctx->device, &alloc, e->sets);
    if (r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTED_POOL) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_DESCRIPTORS_FULL, "genspirv: kernel %s: the descriptor pool "
                                 "is full after %lu bindings of views; wait for the submitted work and call "
                                 "genspirv_vk_descriptors_reset (or define GENSPIRV_VK_POOL_DESCRIPTORS_PER_SET "
                                 "larger)", m->name, (unsigned long)ctx->set_count);
    }
    if (r != VK_SUCCESS) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_VULKAN, "genspirv: kernel %s: vkAllocateDescriptorSets "
                                 "failed (VkResult %d)", m->name, (int)r);
    }
    for (i = 0; i < n; i++) {
        infos[i].buffer = views[i].buffer;
        infos[i].offset = views[i].offset;
        infos[i].range = views[i].size;
        memset(&writes[i], 0, sizeof writes[i]);
        writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        writes[i].dstSet = e->sets[m->bindings[i].set];
        writes[i].dstBinding = m->bindings[i].binding;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = k->types[i];
        writes[i].pBufferInfo = &infos[i];
        e->views[i] = views[i];
    }
    ctx->vk->UpdateDescriptorSets(ctx->device, n, writes, 0, NULL);
    e->layout = k->layout;
    e->hash = h;
    e->set_count = k->set_count;
    e->view_count = n;
    ctx->set_count++;
    ctx->stats.descriptor_updates++;
    *out = e;
    return GENSPIRV_VK_OK;
}

#endif /* GENSPIRV_VULKAN_KERNEL_H */
