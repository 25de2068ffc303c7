/* genspirv/vulkan/context.h -- the types, the function table, the context, messages and barriers.
 *
 * A part of genspirv/vulkan.h, which includes the parts in order (context, spec,
 * kernel, dispatch) inside its extern "C": include that header, not this one.
 */
#ifndef GENSPIRV_VULKAN_CONTEXT_H
#define GENSPIRV_VULKAN_CONTEXT_H

#ifndef GENSPIRV_VULKAN_H
#error "include genspirv/vulkan.h, not its parts"
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
    GENSPIRV_VK_ERROR_VULKAN = 13,          /* a Vulkan call failed (the message names it) */
    GENSPIRV_VK_ERROR_LIMIT = 14,           /* push constants, descriptors or sets past the device's limits */
    GENSPIRV_VK_ERROR_FEATURE = 15          /* a capability or extension the device did not enable */
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
    /* What vkCreateDevice enabled, for the capability checks (NULL: not checked): the
     * VkPhysicalDeviceFeatures2 given as its pNext (its chain is walked: the 1.1 / 1.2 / 1.3
     * feature structs and the per-extension ones), and its enabled extension names. */
    const VkPhysicalDeviceFeatures2 *features;
    const char *const *extensions;
    uint32_t extension_count;
    /* The device's subgroup properties (NULL: subgroup operations not checked). */
    const VkPhysicalDeviceSubgroupProperties *subgroup;
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
    uint32_t max_push_constants, max_bound_sets, max_resources;
    uint32_t max_stage_storage, max_stage_uniform;      /* maxPerStageDescriptor{Storage,Uniform}Buffers */
    uint32_t max_set_storage, max_set_uniform;          /* maxDescriptorSet{Storage,Uniform}Buffers */
    uint64_t capabilities;                  /* bit (1 << GENSPIRV_CAP_*): what the device enabled */
    uint64_t extensions;                    /* bit (1 << GENSPIRV_EXT_*) */
    int check_features, check_subgroup;     /* whether features / subgroup properties were given */
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
    /* At the spec values it runs with (a spec-sized array changes them): */
    uint32_t push_constant_size;            /* bytes of push data a dispatch gives */
    uint32_t shared_memory;                 /* bytes of workgroup memory */
    uint64_t min_sizes[GENSPIRV_VK_MAX_BINDINGS];   /* bytes a view of each binding needs */
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

/* What the device enabled, from info->features, ->extensions, ->subgroup (features.h). */
static inline void genspirv_vki_enabled(genspirv_vk_context *ctx, const genspirv_vk_context_info *info);

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
    ctx->max_push_constants = l->maxPushConstantsSize;
    ctx->max_bound_sets = l->maxBoundDescriptorSets;
    ctx->max_resources = l->maxPerStageResources;
    ctx->max_stage_storage = l->maxPerStageDescriptorStorageBuffers;
    ctx->max_stage_uniform = l->maxPerStageDescriptorUniformBuffers;
    ctx->max_set_storage = l->maxDescriptorSetStorageBuffers;
    ctx->max_set_uniform = l->maxDescriptorSetUniformBuffers;
    genspirv_vki_enabled(ctx, info);
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

#endif /* GENSPIRV_VULKAN_CONTEXT_H */
