/* genspirv/vulkan/dispatch.h -- checked dispatches and tracked transfers.
 *
 * A part of genspirv/vulkan.h, which includes the parts in order (context, spec,
 * kernel, dispatch) inside its extern "C": include that header, not this one.
 */
#ifndef GENSPIRV_VULKAN_DISPATCH_H
#define GENSPIRV_VULKAN_DISPATCH_H

#ifndef GENSPIRV_VULKAN_H
#error "include genspirv/vulkan.h, not its parts"
#endif

/* -- dispatch ------------------------------------------------------------------ */

static inline genspirv_vk_result genspirv_vki_check_view(genspirv_vk_context *ctx, const genspirv_module *m,
                                                         const genspirv_vk_kernel *k, uint32_t i,
                                                         const genspirv_vk_view *v)
{
    const genspirv_binding *b = &m->bindings[i];
    int uniform = k->types[i] == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    VkDeviceSize align = uniform ? ctx->uniform_alignment : ctx->storage_alignment;
    uint64_t most = uniform ? ctx->max_uniform_range : ctx->max_storage_range;
    const char *type = uniform ? "uniform_buffer" : "storage_buffer";
    if (v->buffer == VK_NULL_HANDLE || v->size == 0 || v->size == VK_WHOLE_SIZE) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_RANGE, "genspirv: kernel %s, binding %s: the view needs a "
                                 "buffer and its size in bytes (not 0, not VK_WHOLE_SIZE)", m->name, b->name);
    }
    if (v->offset % align) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_ALIGNMENT, "genspirv: kernel %s, binding %s: view offset "
                                 "%llu is not a multiple of the device's %llu-byte %s offset alignment", m->name,
                                 b->name, (unsigned long long)v->offset, (unsigned long long)align, type);
    }
    if (v->size < k->min_sizes[i]) {     /* at the kernel's spec values */
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_MIN_SIZE, "genspirv: kernel %s, binding %s: view of %llu "
                                 "bytes, the shader's block needs at least %llu bytes (min_size)", m->name, b->name,
                                 (unsigned long long)v->size, (unsigned long long)k->min_sizes[i]);
    }
    if (v->size > most) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_RANGE, "genspirv: kernel %s, binding %s: view of %llu bytes, "
                                 "the device binds at most %llu bytes as a %s", m->name, b->name,
                                 (unsigned long long)v->size, (unsigned long long)most, type);
    }
    return GENSPIRV_VK_OK;
}

/* Check, track, bind and record one dispatch of k over views (one per binding,
 * in (set, binding) order) with push_size bytes of push constants. */
static inline genspirv_vk_result genspirv_vk_dispatch(genspirv_vk_context *ctx, const genspirv_vk_kernel *k,
                                                      const genspirv_vk_view *views, uint32_t view_count,
                                                      const void *push, uint32_t push_size,
                                                      uint32_t x, uint32_t y, uint32_t z)
{
    const genspirv_module *m = k->module;
    const genspirv_vk_sets *sets = NULL;
    genspirv_range ranges[GENSPIRV_VK_MAX_BINDINGS];
    uint32_t groups[3], i;
    genspirv_vk_result r;
    if (ctx->cmd == VK_NULL_HANDLE || m == NULL || k->pipeline == VK_NULL_HANDLE) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_STATE, "genspirv: dispatch %s", m == NULL || k->pipeline ==
                                 VK_NULL_HANDLE ? "of a kernel not created" : "before genspirv_vk_begin");
    }
    if (view_count != m->binding_count) {
        char names[256];
        size_t used = 0;
        names[0] = '\0';
        for (i = 0; i < m->binding_count; i++) {
            if (used + strlen(m->bindings[i].name) + 3 < sizeof names) {
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                                         m->bindings[i].name);
            }
        }
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_BINDING_COUNT, "genspirv: kernel %s: %u buffer(s) bound, the "
                                 "kernel has %u binding(s) (%s)", m->name, (unsigned)view_count,
                                 (unsigned)m->binding_count, used ? names : "none");
    }
    if (push_size != k->push_constant_size || (push_size != 0 && push == NULL)) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_PUSH_SIZE, "genspirv: kernel %s: %u byte(s) of push data, the "
                                 "kernel's push constants are %u bytes", m->name, push == NULL ? 0u :
                                 (unsigned)push_size, (unsigned)k->push_constant_size);
    }
    groups[0] = x;
    groups[1] = y;
    groups[2] = z;
    for (i = 0; i < 3; i++) {
        if (groups[i] < 1) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_GROUPS, "genspirv: kernel %s: 0 groups along %c; a "
                                     "dispatch needs at least 1", m->name, "xyz"[i]);
        }
        if (groups[i] > ctx->max_group_count[i]) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_GROUPS, "genspirv: kernel %s: %u groups along %c, the "
                                     "device allows at most %u", m->name, (unsigned)groups[i], "xyz"[i],
                                     (unsigned)ctx->max_group_count[i]);
        }
    }
    for (i = 0; i < view_count; i++) {
        r = genspirv_vki_check_view(ctx, m, k, i, &views[i]);
        if (r != GENSPIRV_VK_OK) return r;
        ranges[i].memory = GENSPIRV_VK_HANDLE_BITS(views[i].buffer);
        ranges[i].offset = views[i].offset;
        ranges[i].size = views[i].size;
    }
    if (view_count) {
        r = genspirv_vki_sets_for(ctx, k, views, view_count, &sets);
        if (r != GENSPIRV_VK_OK) return r;
    }
    genspirv_vki_track(ctx, GENSPIRV_STAGE_COMPUTE, ranges, view_count, m->readable_mask, m->writable_mask);
    if (ctx->bound_pipeline != k->pipeline) {
        ctx->vk->CmdBindPipeline(ctx->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
        ctx->bound_pipeline = k->pipeline;
    }
    if (sets != NULL && sets != ctx->bound_sets) {
        ctx->vk->CmdBindDescriptorSets(ctx->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, sets->set_count,
                                       sets->sets, 0, NULL);
        ctx->bound_sets = sets;
    }
    if (push_size) {
        ctx->vk->CmdPushConstants(ctx->cmd, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
    }
    ctx->vk->CmdDispatch(ctx->cmd, x, y, z);
    ctx->stats.dispatches++;
    return GENSPIRV_VK_OK;
}

/* -- transfers ------------------------------------------------------------------ */

static inline genspirv_vk_result genspirv_vki_transfer_ready(genspirv_vk_context *ctx, const char *what)
{
    if (ctx->cmd == VK_NULL_HANDLE) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_STATE, "genspirv: %s before genspirv_vk_begin", what);
    }
    return GENSPIRV_VK_OK;
}

/* vkCmdCopyBuffer of size bytes, tracked as a transfer reading src and writing dst. */
static inline genspirv_vk_result genspirv_vk_copy(genspirv_vk_context *ctx, VkBuffer src, VkDeviceSize src_offset,
                                                  VkBuffer dst, VkDeviceSize dst_offset, VkDeviceSize size)
{
    genspirv_range ranges[2];
    VkBufferCopy region;
    genspirv_vk_result r = genspirv_vki_transfer_ready(ctx, "copy");
    if (r != GENSPIRV_VK_OK) return r;
    if (size == 0 || size == VK_WHOLE_SIZE) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_TRANSFER, "genspirv: copy of %llu bytes: give the size in "
                                 "bytes (not 0, not VK_WHOLE_SIZE)", (unsigned long long)size);
    }
    if (src == dst && src_offset < dst_offset + size && dst_offset < src_offset + size) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_TRANSFER, "genspirv: copy within one buffer: source [%llu, "
                                 "%llu) overlaps destination [%llu, %llu)", (unsigned long long)src_offset,
                                 (unsigned long long)(src_offset + size), (unsigned long long)dst_offset,
                                 (unsigned long long)(dst_offset + size));
    }
    ranges[0].memory = GENSPIRV_VK_HANDLE_BITS(src);
    ranges[0].offset = src_offset;
    ranges[0].size = size;
    ranges[1].memory = GENSPIRV_VK_HANDLE_BITS(dst);
    ranges[1].offset = dst_offset;
    ranges[1].size = size;
    genspirv_vki_track(ctx, GENSPIRV_STAGE_TRANSFER, ranges, 2, 1u, 2u);
    region.srcOffset = src_offset;
    region.dstOffset = dst_offset;
    region.size = size;
    ctx->vk->CmdCopyBuffer(ctx->cmd, src, dst, 1, &region);
    ctx->stats.transfers++;
    return GENSPIRV_VK_OK;
}

/* The bytes of data into dst at offset through vkCmdUpdateBuffer (the data is
 * copied into the command buffer, so the caller may reuse it at once), in
 * pieces of 65536 bytes, tracked as one transfer write. Offset and size: multiples of 4. */
static inline genspirv_vk_result genspirv_vk_update(genspirv_vk_context *ctx, VkBuffer dst, VkDeviceSize offset,
                                                    const void *data, VkDeviceSize size)
{
    genspirv_range range;
    VkDeviceSize done;
    genspirv_vk_result r = genspirv_vki_transfer_ready(ctx, "update");
    if (r != GENSPIRV_VK_OK) return r;
    if (size == 0 || size % 4 || offset % 4 || data == NULL) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_TRANSFER, "genspirv: update of %llu bytes at offset %llu: "
                                 "both must be multiples of 4 (and the size not 0)", (unsigned long long)size,
                                 (unsigned long long)offset);
    }
    range.memory = GENSPIRV_VK_HANDLE_BITS(dst);
    range.offset = offset;
    range.size = size;
    genspirv_vki_track(ctx, GENSPIRV_STAGE_TRANSFER, &range, 1, 0u, 1u);
    for (done = 0; done < size; done += 65536) {
        VkDeviceSize piece = size - done < 65536 ? size - done : 65536;
        ctx->vk->CmdUpdateBuffer(ctx->cmd, dst, offset + done, piece, (const unsigned char *)data + done);
    }
    ctx->stats.transfers++;
    return GENSPIRV_VK_OK;
}

/* vkCmdFillBuffer: size bytes of dst at offset set to the 32-bit word value. */
static inline genspirv_vk_result genspirv_vk_fill(genspirv_vk_context *ctx, VkBuffer dst, VkDeviceSize offset,
                                                  VkDeviceSize size, uint32_t value)
{
    genspirv_range range;
    genspirv_vk_result r = genspirv_vki_transfer_ready(ctx, "fill");
    if (r != GENSPIRV_VK_OK) return r;
    if (size == 0 || size == VK_WHOLE_SIZE || size % 4 || offset % 4) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_TRANSFER, "genspirv: fill of %llu bytes at offset %llu: both "
                                 "must be multiples of 4 (and the size not 0 or VK_WHOLE_SIZE)",
                                 (unsigned long long)size, (unsigned long long)offset);
    }
    range.memory = GENSPIRV_VK_HANDLE_BITS(dst);
    range.offset = offset;
    range.size = size;
    genspirv_vki_track(ctx, GENSPIRV_STAGE_TRANSFER, &range, 1, 0u, 1u);
    ctx->vk->CmdFillBuffer(ctx->cmd, dst, offset, size, value);
    ctx->stats.transfers++;
    return GENSPIRV_VK_OK;
}

/* Before the host reads bytes of a host-visible buffer (after the fence): the
 * barrier that makes the device's writes visible to the host, recorded under
 * every policy (hazards.h never leaves a host read unsynchronised). */
static inline genspirv_vk_result genspirv_vk_host_read(genspirv_vk_context *ctx, VkBuffer buffer,
                                                       VkDeviceSize offset, VkDeviceSize size)
{
    genspirv_range range;
    genspirv_vk_result r = genspirv_vki_transfer_ready(ctx, "host read");
    if (r != GENSPIRV_VK_OK) return r;
    range.memory = GENSPIRV_VK_HANDLE_BITS(buffer);
    range.offset = offset;
    range.size = size;
    genspirv_vki_track(ctx, GENSPIRV_STAGE_HOST, &range, 1, 1u, 0u);
    return GENSPIRV_VK_OK;
}

#endif /* GENSPIRV_VULKAN_DISPATCH_H */
