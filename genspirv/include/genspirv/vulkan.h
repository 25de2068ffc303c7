/* genspirv/vulkan.h -- pipelines from a genspirv table entry, and checked, tracked dispatches.
 *
 * Header-only C99 (and C++), over the application's own Vulkan loader: it
 * includes <vulkan/vulkan.h> and calls Vulkan only through a table of function
 * pointers the caller fills (genspirv_vk_functions_from_device, or
 * genspirv_vk_functions_from_loader for the loader's prototypes). It creates
 * Vulkan objects (set layouts, pipeline layouts, pipelines, one descriptor
 * pool, descriptor sets) and allocates nothing else: the caller gives every
 * other piece of storage. Include the generated table's header first.
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
 * maxComputeWorkGroupInvocations; the shared memory the module declares at
 * its defaults within maxComputeSharedMemorySize (with overrides given, the
 * header cannot recompute it, and leaves that check to the driver).
 *
 * A dispatch is refused, with a return code and a message naming the kernel,
 * the binding and both numbers, when the views are not one per binding, the
 * push data is not the reflected size, a view is smaller than its binding's
 * min_size, its offset not a multiple of the device's
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

/* Compile-time bounds of the storage kept per kernel and per cached descriptor
 * binding; define larger ones before including this header if a kernel needs them. */
#ifndef GENSPIRV_VK_MAX_BINDINGS
#define GENSPIRV_VK_MAX_BINDINGS 16
#endif
#ifndef GENSPIRV_VK_MAX_SETS
#define GENSPIRV_VK_MAX_SETS 4
#endif
#ifndef GENSPIRV_VK_MAX_SPEC_IDS
#define GENSPIRV_VK_MAX_SPEC_IDS 32
#endif
/* Descriptors of each buffer type in the pool, per cache entry. */
#ifndef GENSPIRV_VK_POOL_DESCRIPTORS_PER_SET
#define GENSPIRV_VK_POOL_DESCRIPTORS_PER_SET 8
#endif

#if defined(VK_USE_64_BIT_PTR_DEFINES) && VK_USE_64_BIT_PTR_DEFINES == 1
#define GENSPIRV_VK_HANDLE_BITS(h) ((uint64_t)(uintptr_t)(h))
#else
#define GENSPIRV_VK_HANDLE_BITS(h) ((uint64_t)(h))
#endif

#if defined(__GNUC__) || defined(__clang__)
#define GENSPIRV_VK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GENSPIRV_VK_PRINTF(f, a)
#endif

typedef enum genspirv_vk_result {
    GENSPIRV_VK_OK = 0,
    GENSPIRV_VK_ERROR_BINDING_COUNT = 1,    /* views given != the kernel's bindings */
    GENSPIRV_VK_ERROR_PUSH_SIZE = 2,        /* push bytes != the kernel's push constants */
    GENSPIRV_VK_ERROR_MIN_SIZE = 3,         /* a view smaller than its binding's min_size */
    GENSPIRV_VK_ERROR_ALIGNMENT = 4,        /* a view offset off the device's alignment */
    GENSPIRV_VK_ERROR_RANGE = 5,            /* a view past the device's range, empty, or VK_WHOLE_SIZE */
    GENSPIRV_VK_ERROR_GROUPS = 6,           /* a group count of 0 or past maxComputeWorkGroupCount */
    GENSPIRV_VK_ERROR_SPEC = 7,             /* an unknown constant, a bad value, two values for one id */
    GENSPIRV_VK_ERROR_WORKGROUP = 8,        /* workgroup size or shared memory past the device's limits */
    GENSPIRV_VK_ERROR_UNSUPPORTED = 9,      /* a binding the header cannot bind; past a GENSPIRV_VK_MAX_* */
    GENSPIRV_VK_ERROR_DESCRIPTORS_FULL = 10, /* the descriptor cache or pool is full */
    GENSPIRV_VK_ERROR_TRANSFER = 11,        /* a copy, update or fill Vulkan does not allow */
    GENSPIRV_VK_ERROR_STATE = 12,           /* no command buffer begun, a kernel not created */
    GENSPIRV_VK_ERROR_VULKAN = 13           /* a Vulkan call failed (the message names it) */
} genspirv_vk_result;

/* The Vulkan functions the header calls, as the caller loaded them. */
#define GENSPIRV_VK_FUNCTIONS(X) \
    X(CreateShaderModule) X(DestroyShaderModule) X(CreateDescriptorSetLayout) X(DestroyDescriptorSetLayout) \
    X(CreatePipelineLayout) X(DestroyPipelineLayout) X(CreateComputePipelines) X(DestroyPipeline) \
    X(CreateDescriptorPool) X(DestroyDescriptorPool) X(ResetDescriptorPool) X(AllocateDescriptorSets) \
    X(UpdateDescriptorSets) X(CmdBindPipeline) X(CmdBindDescriptorSets) X(CmdPushConstants) \
    X(CmdDispatch) X(CmdPipelineBarrier) X(CmdCopyBuffer) X(CmdUpdateBuffer) X(CmdFillBuffer)

typedef struct genspirv_vk_functions {
#define GENSPIRV_VK_MEMBER(name) PFN_vk##name name;
    GENSPIRV_VK_FUNCTIONS(GENSPIRV_VK_MEMBER)
#undef GENSPIRV_VK_MEMBER
} genspirv_vk_functions;

/* Fill *f through vkGetDeviceProcAddr (device-level entry points, no loader
 * trampoline). NULL on success, else the name of the first function missing. */
static inline const char *genspirv_vk_functions_from_device(genspirv_vk_functions *f,
                                                            PFN_vkGetDeviceProcAddr get, VkDevice device)
{
#define GENSPIRV_VK_LOAD(name) \
    f->name = (PFN_vk##name)get(device, "vk" #name); \
    if (f->name == NULL) { \
        return "vk" #name; \
    }
    GENSPIRV_VK_FUNCTIONS(GENSPIRV_VK_LOAD)
#undef GENSPIRV_VK_LOAD
    return NULL;
}

#ifndef VK_NO_PROTOTYPES
/* Fill *f with the loader's own prototypes (the application links the loader). */
static inline void genspirv_vk_functions_from_loader(genspirv_vk_functions *f)
{
#define GENSPIRV_VK_PROTO(name) f->name = vk##name;
    GENSPIRV_VK_FUNCTIONS(GENSPIRV_VK_PROTO)
#undef GENSPIRV_VK_PROTO
}
#endif

/* Bytes [offset, offset + size) of a buffer, bound to one binding. */
typedef struct genspirv_vk_view {
    VkBuffer buffer;
    VkDeviceSize offset;
    VkDeviceSize size;       /* in bytes; VK_WHOLE_SIZE is refused: the checks need the size */
} genspirv_vk_view;

/* One entry of the descriptor-set cache: storage the caller gives. */
typedef struct genspirv_vk_sets {
    VkPipelineLayout layout;           /* VK_NULL_HANDLE: an empty slot */
    uint64_t hash;
    uint32_t set_count;
    uint32_t view_count;
    VkDescriptorSet sets[GENSPIRV_VK_MAX_SETS];
    genspirv_vk_view views[GENSPIRV_VK_MAX_BINDINGS];
} genspirv_vk_sets;

/* What the context has recorded, as the Python runtime counts it. */
typedef struct genspirv_vk_stats {
    uint64_t dispatches;
    uint64_t transfers;           /* copies, updates, fills */
    uint64_t barriers;
    uint64_t barriers_skipped;    /* something was pending and no hazard: no barrier */
    uint64_t descriptor_updates;  /* cache misses: sets allocated and written */
} genspirv_vk_stats;

/* Everything genspirv_vk_context_init needs; zero it, then fill it. */
typedef struct genspirv_vk_context_info {
    const genspirv_vk_functions *vk;        /* kept by pointer: it must outlive the context */
    VkDevice device;
    const VkPhysicalDeviceLimits *limits;   /* copied */
    genspirv_policy policy;
    const VkAllocationCallbacks *allocator; /* for every Vulkan object; NULL: the driver's */
    genspirv_interval *reads;               /* the tracker's pending ranges (see hazards.h) */
    size_t read_capacity;
    genspirv_interval *writes;
    size_t write_capacity;
    genspirv_vk_sets *sets;                 /* the descriptor-set cache */
    size_t set_capacity;
    char *message;                          /* the last refusal, NUL-terminated; may be NULL */
    size_t message_size;
} genspirv_vk_context_info;

typedef struct genspirv_vk_context {
    const genspirv_vk_functions *vk;
    VkDevice device;
    const VkAllocationCallbacks *allocator;
    VkCommandBuffer cmd;                    /* genspirv_vk_begin's */
    genspirv_tracker tracker;
    VkDeviceSize storage_alignment, uniform_alignment;
    uint64_t max_storage_range, max_uniform_range;
    uint32_t max_group_count[3];
    uint32_t max_workgroup_size[3];
    uint32_t max_invocations;
    uint32_t max_shared_memory;
    VkDescriptorPool pool;
    genspirv_vk_sets *sets;
    size_t set_capacity;
    size_t set_count;
    VkPipeline bound_pipeline;              /* what cmd has bound: not bound again */
    const genspirv_vk_sets *bound_sets;
    genspirv_vk_stats stats;
    char *message;
    size_t message_size;
} genspirv_vk_context;

/* One module of the table as a pipeline with fixed specialisation. */
typedef struct genspirv_vk_kernel {
    const genspirv_module *module;
    VkPipeline pipeline;
    VkPipelineLayout layout;
    VkDescriptorSetLayout set_layouts[GENSPIRV_VK_MAX_SETS];
    uint32_t set_count;                     /* sets 0 .. set_count - 1 (empty ones for gaps) */
    uint32_t local_size[3];                 /* the workgroup size it runs with */
    VkDescriptorType types[GENSPIRV_VK_MAX_BINDINGS];
} genspirv_vk_kernel;

/* A specialisation value by constant name; make one with the helpers below. */
typedef enum genspirv_vk_spec_kind {
    GENSPIRV_VK_SPEC_BOOL = 0,
    GENSPIRV_VK_SPEC_INT = 1,
    GENSPIRV_VK_SPEC_UINT = 2,
    GENSPIRV_VK_SPEC_FLOAT = 3
} genspirv_vk_spec_kind;

typedef struct genspirv_vk_spec {
    const char *name;
    genspirv_vk_spec_kind kind;
    int64_t i;
    uint64_t u;
    double f;
} genspirv_vk_spec;

static inline genspirv_vk_spec genspirv_vki_spec(const char *name, genspirv_vk_spec_kind kind)
{
    genspirv_vk_spec s;
    s.name = name;
    s.kind = kind;
    s.i = 0;
    s.u = 0;
    s.f = 0.0;
    return s;
}

static inline genspirv_vk_spec genspirv_vk_spec_bool(const char *name, int value)
{
    genspirv_vk_spec s = genspirv_vki_spec(name, GENSPIRV_VK_SPEC_BOOL);
    s.u = value ? 1u : 0u;
    return s;
}

static inline genspirv_vk_spec genspirv_vk_spec_int(const char *name, int64_t value)
{
    genspirv_vk_spec s = genspirv_vki_spec(name, GENSPIRV_VK_SPEC_INT);
    s.i = value;
    return s;
}

static inline genspirv_vk_spec genspirv_vk_spec_uint(const char *name, uint64_t value)
{
    genspirv_vk_spec s = genspirv_vki_spec(name, GENSPIRV_VK_SPEC_UINT);
    s.u = value;
    return s;
}

static inline genspirv_vk_spec genspirv_vk_spec_float(const char *name, double value)
{
    genspirv_vk_spec s = genspirv_vki_spec(name, GENSPIRV_VK_SPEC_FLOAT);
    s.f = value;
    return s;
}

/* -- messages ---------------------------------------------------------------- */

static inline genspirv_vk_result genspirv_vki_fail(genspirv_vk_context *ctx, genspirv_vk_result code,
                                                   const char *format, ...) GENSPIRV_VK_PRINTF(3, 4);

static inline genspirv_vk_result genspirv_vki_fail(genspirv_vk_context *ctx, genspirv_vk_result code,
                                                   const char *format, ...)
{
    if (ctx->message != NULL && ctx->message_size > 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(ctx->message, ctx->message_size, format, args);
        va_end(args);
    }
    return code;
}

/* The last refusal's message ("" if none or no storage was given). */
static inline const char *genspirv_vk_message(const genspirv_vk_context *ctx)
{
    return ctx->message != NULL && ctx->message_size > 0 ? ctx->message : "";
}

/* -- the context ------------------------------------------------------------- */

static inline genspirv_vk_result genspirv_vk_context_init(genspirv_vk_context *ctx,
                                                          const genspirv_vk_context_info *info)
{
    const VkPhysicalDeviceLimits *l = info->limits;
    VkDescriptorPoolSize sizes[2];
    VkDescriptorPoolCreateInfo pool_info;
    VkResult r;
    size_t i;
    memset(ctx, 0, sizeof *ctx);
    ctx->vk = info->vk;
    ctx->device = info->device;
    ctx->allocator = info->allocator;
    ctx->message = info->message;
    ctx->message_size = info->message_size;
    if (ctx->message != NULL && ctx->message_size > 0) {
        ctx->message[0] = '\0';
    }
    genspirv_tracker_init(&ctx->tracker, info->policy, info->reads, info->read_capacity, info->writes,
                          info->write_capacity);
    ctx->storage_alignment = l->minStorageBufferOffsetAlignment ? l->minStorageBufferOffsetAlignment : 1;
    ctx->uniform_alignment = l->minUniformBufferOffsetAlignment ? l->minUniformBufferOffsetAlignment : 1;
    ctx->max_storage_range = l->maxStorageBufferRange;
    ctx->max_uniform_range = l->maxUniformBufferRange;
    for (i = 0; i < 3; i++) {
        ctx->max_group_count[i] = l->maxComputeWorkGroupCount[i];
        ctx->max_workgroup_size[i] = l->maxComputeWorkGroupSize[i];
    }
    ctx->max_invocations = l->maxComputeWorkGroupInvocations;
    ctx->max_shared_memory = l->maxComputeSharedMemorySize;
    ctx->sets = info->sets;
    ctx->set_capacity = info->sets != NULL ? info->set_capacity : 0;
    for (i = 0; i < ctx->set_capacity; i++) {
        ctx->sets[i].layout = VK_NULL_HANDLE;
    }
    if (ctx->set_capacity == 0) {
        return GENSPIRV_VK_OK;    /* kernels without bindings only */
    }
    sizes[0].type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    sizes[0].descriptorCount = (uint32_t)(ctx->set_capacity * GENSPIRV_VK_POOL_DESCRIPTORS_PER_SET);
    sizes[1].type = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    sizes[1].descriptorCount = sizes[0].descriptorCount;
    memset(&pool_info, 0, sizeof pool_info);
    pool_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    pool_info.maxSets = (uint32_t)ctx->set_capacity;
    pool_info.poolSizeCount = 2;
    pool_info.pPoolSizes = sizes;
    r = ctx->vk->CreateDescriptorPool(ctx->device, &pool_info, ctx->allocator, &ctx->pool);
    if (r != VK_SUCCESS) {
        ctx->pool = VK_NULL_HANDLE;
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_VULKAN,
                                 "genspirv: vkCreateDescriptorPool for %lu sets failed (VkResult %d)",
                                 (unsigned long)ctx->set_capacity, (int)r);
    }
    return GENSPIRV_VK_OK;
}

static inline void genspirv_vk_context_destroy(genspirv_vk_context *ctx)
{
    if (ctx->pool != VK_NULL_HANDLE) {
        ctx->vk->DestroyDescriptorPool(ctx->device, ctx->pool, ctx->allocator);
        ctx->pool = VK_NULL_HANDLE;
    }
    ctx->set_count = 0;
}

/* Commands from now on go into cmd (begun by the caller). What was bound in
 * another command buffer is forgotten; what the tracker holds pending is not. */
static inline void genspirv_vk_begin(genspirv_vk_context *ctx, VkCommandBuffer cmd)
{
    ctx->cmd = cmd;
    ctx->bound_pipeline = VK_NULL_HANDLE;
    ctx->bound_sets = NULL;
}

/* Barrier policy from the next command on (A/B runs switch it in one process). */
static inline void genspirv_vk_set_policy(genspirv_vk_context *ctx, genspirv_policy policy)
{
    ctx->tracker.policy = policy;
}

/* Forget every cached descriptor set and reset the pool. Only when no command
 * buffer that used them is pending or being recorded, e.g. after a queue wait. */
static inline genspirv_vk_result genspirv_vk_descriptors_reset(genspirv_vk_context *ctx)
{
    size_t i;
    for (i = 0; i < ctx->set_capacity; i++) {
        ctx->sets[i].layout = VK_NULL_HANDLE;
    }
    ctx->set_count = 0;
    ctx->bound_sets = NULL;
    if (ctx->pool != VK_NULL_HANDLE) {
        VkResult r = ctx->vk->ResetDescriptorPool(ctx->device, ctx->pool, 0);
        if (r != VK_SUCCESS) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_VULKAN,
                                     "genspirv: vkResetDescriptorPool failed (VkResult %d)", (int)r);
        }
    }
    return GENSPIRV_VK_OK;
}

/* -- barriers ------------------------------------------------------------------ */

static inline VkPipelineStageFlags genspirv_vki_stages(unsigned stages)
{
    VkPipelineStageFlags out = 0;
    if (stages & GENSPIRV_STAGE_COMPUTE) out |= VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    if (stages & GENSPIRV_STAGE_TRANSFER) out |= VK_PIPELINE_STAGE_TRANSFER_BIT;
    if (stages & GENSPIRV_STAGE_HOST) out |= VK_PIPELINE_STAGE_HOST_BIT;
    return out;
}

static inline VkAccessFlags genspirv_vki_reads(unsigned stages)
{
    VkAccessFlags out = 0;
    if (stages & GENSPIRV_STAGE_COMPUTE) out |= VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_UNIFORM_READ_BIT;
    if (stages & GENSPIRV_STAGE_TRANSFER) out |= VK_ACCESS_TRANSFER_READ_BIT;
    if (stages & GENSPIRV_STAGE_HOST) out |= VK_ACCESS_HOST_READ_BIT;
    return out;
}

static inline VkAccessFlags genspirv_vki_writes(unsigned stages)
{
    VkAccessFlags out = 0;
    if (stages & GENSPIRV_STAGE_COMPUTE) out |= VK_ACCESS_SHADER_WRITE_BIT;
    if (stages & GENSPIRV_STAGE_TRANSFER) out |= VK_ACCESS_TRANSFER_WRITE_BIT;
    if (stages & GENSPIRV_STAGE_HOST) out |= VK_ACCESS_HOST_WRITE_BIT;
    return out;
}

/* One global memory barrier covering what *b says (hazards.h's answer). */
static inline void genspirv_vki_record_barrier(genspirv_vk_context *ctx, const genspirv_barrier *b)
{
    VkMemoryBarrier mb;
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.pNext = NULL;
    mb.srcAccessMask = genspirv_vki_writes(b->src_writes);
    mb.dstAccessMask = genspirv_vki_reads(b->dst_reads) | genspirv_vki_writes(b->dst_writes);
    ctx->vk->CmdPipelineBarrier(ctx->cmd, genspirv_vki_stages(b->src_stages), genspirv_vki_stages(b->dst_stages),
                                0, 1, &mb, 0, NULL, 0, NULL);
    ctx->stats.barriers++;
}

/* Ask the tracker about one access and record the barrier it answers. */
static inline void genspirv_vki_track(genspirv_vk_context *ctx, unsigned stage, const genspirv_range *ranges,
                                      size_t count, uint64_t read_mask, uint64_t write_mask)
{
    genspirv_barrier b;
    genspirv_decision d = genspirv_tracker_access(&ctx->tracker, stage, ranges, count, read_mask, write_mask, &b);
    if (d == GENSPIRV_BARRIER) {
        genspirv_vki_record_barrier(ctx, &b);
    } else if (d == GENSPIRV_SKIPPED) {
        ctx->stats.barriers_skipped++;
    }
}

/* A barrier ordering everything pending before everything after, if anything is pending. */
static inline genspirv_vk_result genspirv_vk_barrier_all(genspirv_vk_context *ctx)
{
    genspirv_barrier b;
    if (ctx->cmd == VK_NULL_HANDLE) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_STATE, "genspirv: barrier before genspirv_vk_begin");
    }
    if (genspirv_tracker_barrier_all(&ctx->tracker, &b)) {
        genspirv_vki_record_barrier(ctx, &b);
    }
    return GENSPIRV_VK_OK;
}

/* -- specialisation ------------------------------------------------------------ */

static inline int genspirv_vki_is_int(genspirv_spec_type t)
{
    return t == GENSPIRV_SPEC_INT8 || t == GENSPIRV_SPEC_UINT8 || t == GENSPIRV_SPEC_INT16 ||
           t == GENSPIRV_SPEC_UINT16 || t == GENSPIRV_SPEC_INT32 || t == GENSPIRV_SPEC_UINT32 ||
           t == GENSPIRV_SPEC_INT64 || t == GENSPIRV_SPEC_UINT64;
}

static inline int genspirv_vki_is_signed(genspirv_spec_type t)
{
    return t == GENSPIRV_SPEC_INT8 || t == GENSPIRV_SPEC_INT16 || t == GENSPIRV_SPEC_INT32 ||
           t == GENSPIRV_SPEC_INT64;
}

/* A default's value as Python compares it: (kind 0 bool / 1 integer / 2 float, value). */
typedef struct genspirv_vki_value {
    int kind;
    int negative;        /* integers: the sign, and ... */
    uint64_t magnitude;  /* ... the magnitude */
    double real;         /* floats */
} genspirv_vki_value;

static inline double genspirv_vki_half(uint64_t bits)
{
    unsigned exponent = (unsigned)(bits >> 10) & 0x1fu;
    double mantissa = (double)(bits & 0x3ffu), value;
    int e;
    if (exponent == 0) {
        value = mantissa / 1024.0 / 16384.0;            /* subnormal: m * 2^-24 */
    } else if (exponent == 31) {
        value = 65536.0 + mantissa;                      /* inf and NaNs: past every finite half, apart */
    } else {
        value = 1.0 + mantissa / 1024.0;
        for (e = (int)exponent - 15; e > 0; e--) value *= 2.0;
        for (; e < 0; e++) value /= 2.0;
    }
    return (bits & 0x8000u) ? -value : value;
}

static inline genspirv_vki_value genspirv_vki_default(const genspirv_spec_constant *c)
{
    genspirv_vki_value v;
    uint64_t bits = c->default_bits;
    v.kind = c->type == GENSPIRV_SPEC_BOOL ? 0 : genspirv_vki_is_int(c->type) ? 1 : 2;
    v.negative = 0;
    v.magnitude = bits;
    v.real = 0.0;
    if (genspirv_vki_is_signed(c->type)) {
        unsigned width = 8u * c->size;
        uint64_t sign = (uint64_t)1 << (width - 1);
        if (bits & sign) {
            uint64_t mask = width == 64 ? ~(uint64_t)0 : (((uint64_t)1 << width) - 1);
            v.negative = 1;
            v.magnitude = ((~bits) + 1) & mask;
        }
    } else if (c->type == GENSPIRV_SPEC_FLOAT32) {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof f);
        v.real = (double)f;
    } else if (c->type == GENSPIRV_SPEC_FLOAT64) {
        memcpy(&v.real, &bits, sizeof v.real);
    } else if (c->type == GENSPIRV_SPEC_FLOAT16) {
        v.real = genspirv_vki_half(bits);
    }
    return v;
}

static inline int genspirv_vki_same_default(const genspirv_spec_constant *a, const genspirv_spec_constant *b)
{
    genspirv_vki_value x = genspirv_vki_default(a), y = genspirv_vki_default(b);
    if (x.kind != y.kind) return 0;
    if (x.kind == 2) return x.real == y.real;
    return x.negative == y.negative && x.magnitude == y.magnitude;
}

/* The caller's value as the bits of constant c's type, or a refusal. */
static inline genspirv_vk_result genspirv_vki_spec_bits(genspirv_vk_context *ctx, const genspirv_module *m,
                                                        const genspirv_spec_constant *c,
                                                        const genspirv_vk_spec *s, uint64_t *bits)
{
    const char *type = genspirv_spec_type_name(c->type);
    if (c->type == GENSPIRV_SPEC_BOOL) {
        if (s->kind != GENSPIRV_VK_SPEC_BOOL) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: spec constant %s (%s) "
                                     "needs a bool (genspirv_vk_spec_bool)", m->name, c->name, type);
        }
        *bits = s->u ? 1u : 0u;
        return GENSPIRV_VK_OK;
    }
    if (genspirv_vki_is_int(c->type)) {
        unsigned width = 8u * c->size;
        int negative = 0;
        uint64_t magnitude, most;
        if (s->kind == GENSPIRV_VK_SPEC_INT) {
            negative = s->i < 0;
            magnitude = negative ? (uint64_t)0 - (uint64_t)s->i : (uint64_t)s->i;
        } else if (s->kind == GENSPIRV_VK_SPEC_UINT) {
            magnitude = s->u;
        } else {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: spec constant %s (%s) "
                                     "needs an integer (genspirv_vk_spec_int or _uint)", m->name, c->name, type);
        }
        if (genspirv_vki_is_signed(c->type)) {
            most = ((uint64_t)1 << (width - 1)) - (negative ? 0u : 1u);
        } else {
            most = negative ? 0u : width == 64 ? ~(uint64_t)0 : ((uint64_t)1 << width) - 1;
        }
        if ((negative && !genspirv_vki_is_signed(c->type) && magnitude != 0) || magnitude > most) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: spec constant %s (%s): "
                                     "%s%llu is outside its range", m->name, c->name, type, negative ? "-" : "",
                                     (unsigned long long)magnitude);
        }
        *bits = negative ? ((uint64_t)0 - magnitude) : magnitude;
        if (width < 64) *bits &= ((uint64_t)1 << width) - 1;
        return GENSPIRV_VK_OK;
    }
    {
        double value = s->kind == GENSPIRV_VK_SPEC_FLOAT ? s->f
                       : s->kind == GENSPIRV_VK_SPEC_INT ? (double)s->i
                       : s->kind == GENSPIRV_VK_SPEC_UINT ? (double)s->u : 0.0;
        if (s->kind == GENSPIRV_VK_SPEC_BOOL) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: spec constant %s (%s) "
                                     "needs a number, not a bool", m->name, c->name, type);
        }
        if (c->type == GENSPIRV_SPEC_FLOAT32) {
            float f = (float)value;
            uint32_t b32;
            memcpy(&b32, &f, sizeof b32);
            *bits = b32;
        } else if (c->type == GENSPIRV_SPEC_FLOAT64) {
            memcpy(bits, &value, sizeof value);
        } else {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_UNSUPPORTED, "genspirv: kernel %s: spec constant %s is "
                                     "a %s; genspirv/vulkan.h sets float16 constants only to their defaults",
                                     m->name, c->name, type);
        }
        return GENSPIRV_VK_OK;
    }
}

/* The map entries and data of a VkSpecializationInfo, and each id's value. */
typedef struct genspirv_vki_packed {
    VkSpecializationMapEntry entries[GENSPIRV_VK_MAX_SPEC_IDS];
    uint32_t entry_count;
    unsigned char data[GENSPIRV_VK_MAX_SPEC_IDS * 8];
    uint32_t size;
    uint32_t ids[GENSPIRV_VK_MAX_SPEC_IDS];     /* every distinct id ... */
    uint64_t values[GENSPIRV_VK_MAX_SPEC_IDS];  /* ... and the bits its constants run with */
    uint32_t id_count;
} genspirv_vki_packed;

static inline void genspirv_vki_put(genspirv_vki_packed *p, uint32_t id, uint32_t size, uint64_t bits)
{
    VkSpecializationMapEntry *e = &p->entries[p->entry_count++];
    uint8_t b8 = (uint8_t)bits;
    uint16_t b16 = (uint16_t)bits;
    uint32_t b32 = (uint32_t)bits;
    e->constantID = id;
    e->offset = p->size;
    e->size = size;
    /* Host byte order, as Vulkan reads the data. */
    if (size == 1) memcpy(p->data + p->size, &b8, 1);
    else if (size == 2) memcpy(p->data + p->size, &b16, 2);
    else if (size == 4) memcpy(p->data + p->size, &b32, 4);
    else memcpy(p->data + p->size, &bits, 8);
    p->size += size;
}

static inline genspirv_vk_result genspirv_vki_pack(genspirv_vk_context *ctx, const genspirv_module *m,
                                                   const genspirv_vk_spec *spec, size_t spec_count,
                                                   genspirv_vki_packed *p)
{
    const genspirv_spec_constant *given_by[GENSPIRV_VK_MAX_SPEC_IDS];   /* per id: the constant named, or NULL */
    uint64_t given_bits[GENSPIRV_VK_MAX_SPEC_IDS];
    size_t i, j;
    uint32_t k;
    p->entry_count = 0;
    p->size = 0;
    p->id_count = 0;
    for (i = 0; i < m->spec_count; i++) {     /* sorted by id: distinct ids in order */
        uint32_t id = m->spec_constants[i].id;
        if (p->id_count == 0 || p->ids[p->id_count - 1] != id) {
            if (p->id_count == GENSPIRV_VK_MAX_SPEC_IDS) {
                return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_UNSUPPORTED, "genspirv: kernel %s has more than "
                                         "%d spec ids; define GENSPIRV_VK_MAX_SPEC_IDS larger", m->name,
                                         GENSPIRV_VK_MAX_SPEC_IDS);
            }
            given_by[p->id_count] = NULL;
            given_bits[p->id_count] = 0;
            p->ids[p->id_count++] = id;
        }
    }
    for (i = 0; i < spec_count; i++) {
        const genspirv_spec_constant *c = NULL;
        uint64_t bits = 0;
        genspirv_vk_result r;
        for (j = 0; j < m->spec_count && c == NULL; j++) {
            if (spec[i].name != NULL && m->spec_constants[j].name[0] != '\0' &&
                strcmp(spec[i].name, m->spec_constants[j].name) == 0) {
                c = &m->spec_constants[j];
            }
        }
        if (c == NULL) {
            char known[256];
            size_t used = 0;
            known[0] = '\0';
            for (j = 0; j < m->spec_count; j++) {
                const char *name = m->spec_constants[j].name;
                if (name[0] != '\0' && used + strlen(name) + 3 < sizeof known) {
                    used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "", name);
                }
            }
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: unknown spec constant %s "
                                     "(known: %s)", m->name, spec[i].name != NULL ? spec[i].name : "(null)",
                                     used ? known : "none");
        }
        r = genspirv_vki_spec_bits(ctx, m, c, &spec[i], &bits);
        if (r != GENSPIRV_VK_OK) return r;
        for (k = 0; p->ids[k] != c->id; k++) {
        }
        if (given_by[k] != NULL && given_bits[k] != bits) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: spec constants %s and %s "
                                     "share spec id %u but were given different values", m->name,
                                     given_by[k]->name, c->name, (unsigned)c->id);
        }
        given_by[k] = c;
        given_bits[k] = bits;
    }
    for (k = 0; k < p->id_count; k++) {
        const genspirv_spec_constant *first = NULL, *named = NULL;
        int disagree = 0, sizes_differ = 0;
        for (i = 0; i < m->spec_count; i++) {
            const genspirv_spec_constant *c = &m->spec_constants[i];
            if (c->id != p->ids[k]) continue;
            if (first == NULL) first = c;
            if (named == NULL && c->name[0] != '\0') named = c;
            if (!genspirv_vki_same_default(first, c)) disagree = 1;
            if (c->size != first->size) sizes_differ = 1;
        }
        if (given_by[k] != NULL || (named != NULL && disagree)) {
            const genspirv_spec_constant *c = given_by[k] != NULL ? given_by[k] : named;
            if (sizes_differ) {
                return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_SPEC, "genspirv: kernel %s: the constants of spec "
                                         "id %u differ in size; one value cannot set them all", m->name,
                                         (unsigned)p->ids[k]);
            }
            p->values[k] = given_by[k] != NULL ? given_bits[k] : named->default_bits;
            genspirv_vki_put(p, p->ids[k], c->size, p->values[k]);
        } else {
            p->values[k] = (named != NULL ? named : first)->default_bits;
        }
    }
    return GENSPIRV_VK_OK;
}

/* The workgroup size after specialisation, and the device's limits on it. */
static inline genspirv_vk_result genspirv_vki_workgroup(genspirv_vk_context *ctx, const genspirv_module *m,
                                                        const genspirv_vki_packed *p, size_t spec_count,
                                                        uint32_t local[3])
{
    uint64_t invocations = 1;
    uint32_t axis, k;
    for (axis = 0; axis < 3; axis++) {
        int32_t id = m->local_size_spec_ids[axis];
        local[axis] = m->local_size[axis];
        for (k = 0; id >= 0 && k < p->id_count; k++) {
            if (p->ids[k] == (uint32_t)id) local[axis] = (uint32_t)p->values[k];
        }
        if (local[axis] < 1 || local[axis] > ctx->max_workgroup_size[axis]) {
            return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_WORKGROUP, "genspirv: kernel %s: workgroup size %c = %u "
                                     "(from %s), the device allows 1 to %u along %c (maxComputeWorkGroupSize)",
                                     m->name, "xyz"[axis], (unsigned)local[axis],
                                     id >= 0 ? "a spec constant" : "the source", (unsigned)ctx->max_workgroup_size[axis],
                                     "xyz"[axis]);
        }
        invocations *= local[axis];
    }
    if (invocations > ctx->max_invocations) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_WORKGROUP, "genspirv: kernel %s: workgroup of %u x %u x %u = "
                                 "%llu invocations, the device allows at most %u (maxComputeWorkGroupInvocations)",
                                 m->name, (unsigned)local[0], (unsigned)local[1], (unsigned)local[2],
                                 (unsigned long long)invocations, (unsigned)ctx->max_invocations);
    }
    if (spec_count == 0 && m->shared_memory > ctx->max_shared_memory) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_WORKGROUP, "genspirv: kernel %s declares %u bytes of shared "
                                 "memory, the device allows at most %u (maxComputeSharedMemorySize)", m->name,
                                 (unsigned)m->shared_memory, (unsigned)ctx->max_shared_memory);
    }
    return GENSPIRV_VK_OK;
}

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
    result = genspirv_vki_workgroup(ctx, m, &packed, spec_count, k->local_size);
    if (result != GENSPIRV_VK_OK) return result;

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
    push.size = m->push_constant_size;
    memset(&layout_info, 0, sizeof layout_info);
    layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    layout_info.setLayoutCount = k->set_count;
    layout_info.pSetLayouts = k->set_count ? k->set_layouts : NULL;
    layout_info.pushConstantRangeCount = m->push_constant_size ? 1u : 0u;
    layout_info.pPushConstantRanges = m->push_constant_size ? &push : NULL;
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
#ifdef GENSPIRV_HAS_MIN_SIZE
    if (v->size < b->min_size) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_MIN_SIZE, "genspirv: kernel %s, binding %s: view of %llu "
                                 "bytes, the shader's block needs at least %llu bytes (min_size)", m->name, b->name,
                                 (unsigned long long)v->size, (unsigned long long)b->min_size);
    }
#endif
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
    if (push_size != m->push_constant_size || (push_size != 0 && push == NULL)) {
        return genspirv_vki_fail(ctx, GENSPIRV_VK_ERROR_PUSH_SIZE, "genspirv: kernel %s: %u byte(s) of push data, the "
                                 "kernel's push constants are %u bytes", m->name, push == NULL ? 0u :
                                 (unsigned)push_size, (unsigned)m->push_constant_size);
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

#ifdef __cplusplus
}
#endif

#endif /* GENSPIRV_VULKAN_H */
