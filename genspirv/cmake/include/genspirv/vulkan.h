/* genspirv/vulkan.h -- pipelines from a genspirv table entry, and checked, tracked dispatches.
 *
 * Header-only C99 (and C++), over the application's own Vulkan loader: it
 * includes <vulkan/vulkan.h> and calls Vulkan only through a table of function
 * pointers the caller fills (genspirv_vk_functions_from_device, or
 * genspirv_vk_functions_from_loader for the loader's prototypes). It creates
 * Vulkan objects (set layouts, pipeline layouts, pipelines, one descriptor
 * pool, descriptor sets) and allocates nothing else: the caller gives every
 * other piece of storage. Include the generated table's header first.
 * docs/GUIDE.md ("Adopting genspirv in a C/C++ backend", "How barriers are
 * decided") states the rules; the code is in genspirv/vulkan/ (context.h,
 * features.h, spec.h, kernel.h, dispatch.h, included here in that order).
 *
 *   genspirv_vk_context_init      the device's limits, the hazard tracker, the descriptor cache
 *   genspirv_vk_kernel_create     a module of the table -> set layouts from the reflected
 *                                 types, a push range of the reflected size, a compute
 *                                 pipeline specialised by constant name (below)
 *   genspirv_vk_begin             the command buffer the next commands go into
 *   genspirv_vk_dispatch          checks, barrier if hazards.h says so, descriptor sets, dispatch
 *   genspirv_vk_copy / _update / _fill / _host_read / _barrier_all   the same tracker for transfers
 *
 * Specialisation (as genspirv.runtime does): overrides are given by constant
 * name; the constants sharing a spec id all get one value, the caller's (by
 * any of the id's names), else the id's first named constant's default where
 * the id's constants disagree (local_size_x_id = 0 beside BLOCK_SIZE = 64 runs
 * with 64), else the module's own defaults. The workgroup size after
 * specialisation must be within maxComputeWorkGroupSize and
 * maxComputeWorkGroupInvocations. The sizes an array sized by a spec
 * constant changes are taken at the kernel's values, from the expressions the
 * table carries (genspirv_spec_step): the push range and the push data a
 * dispatch must give, each binding's min_size, and the shared memory, which
 * must be within maxComputeSharedMemorySize; a length below 1 is refused.
 *
 * Before any Vulkan object, genspirv_vk_kernel_create checks the module
 * against the device (GENSPIRV_VK_ERROR_LIMIT): push constants within
 * maxPushConstantsSize, storage and uniform buffers within
 * maxPerStageDescriptor*Buffers and maxDescriptorSet*Buffers, all
 * descriptors within maxPerStageResources, the sets within
 * maxBoundDescriptorSets; and, where genspirv_vk_context_info gave the
 * features chain, extensions and subgroup properties the device was created
 * with, the capabilities and extensions the module declares against them
 * (GENSPIRV_VK_ERROR_FEATURE, vulkan/features.h).
 *
 * A dispatch is refused, with a return code and a message naming the kernel,
 * the binding and both numbers, when the views are not one per binding, the
 * push data is not the reflected size (at the kernel's spec values), a view is
 * smaller than its binding's min_size (likewise), its offset not a multiple of the device's
 * minStorageBufferOffsetAlignment (minUniformBufferOffsetAlignment for a
 * uniform buffer), it is larger than maxStorageBufferRange
 * (maxUniformBufferRange), or a group count is 0 or past
 * maxComputeWorkGroupCount. Nothing is recorded for a refused command.
 *
 * Barriers: every dispatch and transfer is one access for hazards.h (binding
 * i read if bit i of readable_mask is set, written if bit i of writable_mask
 * is; the memory object is the VkBuffer handle); on GENSPIRV_BARRIER one
 * global VkMemoryBarrier is recorded before the command, from the compute and
 * transfer stages pending to the compute and transfer stages (and the host's,
 * before a host read). The tracker's pending ranges carry over from one
 * command buffer to the next on the same queue: only a barrier clears them.
 *
 * Descriptor sets: cached by bound views. Each distinct (pipeline layout,
 * views) gets its sets allocated from the context's pool and written once;
 * a later dispatch over the same views binds them again, and binds nothing
 * when they are still bound. A set is never rewritten, so none is changed
 * while a submitted command buffer uses it. The cache holds up to 3/4 of
 * set_capacity entries; when it or the pool is full the dispatch is refused
 * (GENSPIRV_VK_ERROR_DESCRIPTORS_FULL): wait for the submitted work, then
 * genspirv_vk_descriptors_reset. Reset it too after destroying a buffer
 * (a new buffer may get the old handle).
 *
 * Not seen by the header: two VkBuffers aliasing one allocation (different
 * handles, so different memory to the tracker), indirect dispatches, work on
 * other queues, and host writes to mapped memory the device is still reading.
 * One context per queue and per thread; it holds no lock. It skips binding a
 * pipeline or descriptor sets that it bound last in the same command buffer:
 * after binding any yourself, call genspirv_vk_begin(ctx, cmd) again.
 */
#ifndef GENSPIRV_VULKAN_H
#define GENSPIRV_VULKAN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vulkan/vulkan.h>

#include "hazards.h"

#ifndef GENSPIRV_MODULE_TABLE
#error "genspirv/vulkan.h: include the generated table's header (the <output>.h of the generate entry with target \"c\") first"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#include "vulkan/context.h"
#include "vulkan/features.h"
#include "vulkan/spec.h"
#include "vulkan/kernel.h"
#include "vulkan/dispatch.h"

#ifdef __cplusplus
}
#endif

#endif /* GENSPIRV_VULKAN_H */
