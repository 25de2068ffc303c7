/* main.c -- c_backend: a small compute backend on genspirv's C table and genspirv/vulkan.h.
 *
 *   c_backend [--policy smart|always|none] [--validate] [--layers N] [--n N] [--block-size N]
 *             [--trace] [--bench REPS [--calls-left-out]] [--device INDEX|NAME]
 *
 * Uploads three n x n matrices and a vector, records a dependent graph of
 * `layers` layers, reads the result back and compares it with a C reference.
 * Each layer (x and x2 take turns as src and dst):
 *
 *     t1  = matvec(W1, src)      \  two independent chains: the second gets no barrier
 *     t2  = matvec(W2, src)      /
 *     t3  = add(t1, t2)             a join: read-after-write on t1 and t2
 *     t1  = matvec(W3, src)         write-after-read: add has just read t1
 *     s   = reduce(t3)              independent of the matvec before it: no barrier
 *     dst = axpy(t1, t3, s)         read-after-write on t1 and s
 *
 * The kernels compute in uint32, which wraps the same on every device and in C,
 * so the result is compared bit for bit: a missing barrier shows as wrong values
 * on a GPU (a CPU device such as lavapipe runs dispatches one after another and
 * hides it; --validate's synchronization validation sees it anyway).
 *
 * Last line: mixed_graph: exact=yes|no barriers=N dispatches=N hazards=N
 * (hazards: synchronization-validation messages; "-" without --validate).
 * --trace prints the kernels, the buffers, then each recorded command of the
 * uploads and the graph and whether a barrier went before it (push constants
 * as 32-bit words in hex);
 * --bench REPS records the graph REPS more times and prints the host time per
 * recorded dispatch of each (JSON), submitting and waiting outside the timing,
 * then (line `bench_gpu`) the GPU time of each recorded graph from timestamps;
 * with --calls-left-out the vkCmd* entry points the header records through are
 * functions that do nothing while it times: the samples are then the header's
 * and this program's own share of a recorded dispatch, the driver's left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels.h"            /* the table genspirv_add_shaders generates: include it first */
#include "genspirv/vulkan.h"

#include "device.h"

enum { W1, W2, W3, X0, X1, T1, T2, T3, S, BUFFER_COUNT };
static const char *const BUFFER_NAMES[BUFFER_COUNT] = {"w1", "w2", "w3", "x", "x2", "t1", "t2", "t3", "s"};

typedef struct options {
    genspirv_policy policy;
    const char *policy_name;
    int validate, trace, calls_left_out;
    uint32_t layers, n, block_size, bench;
    const char *device;
} options;

typedef struct app {
    options opt;
    backend_device dev;
    genspirv_vk_functions vk;
    genspirv_vk_context ctx;
    genspirv_interval reads[64], writes[64];     /* the tracker's storage */
    genspirv_vk_sets sets[64];                   /* the descriptor-set cache's storage */
    char message[512];                           /* the last refusal */
    genspirv_vk_kernel matvec, add, axpy, reduce;
    backend_buffer buffers[BUFFER_COUNT], staging, readback;
    int tracing;
} app;

/* -- recording, traced ------------------------------------------------------- */

static void trace_command(app *a, const char *what, uint64_t barriers_before)
{
    if (a->tracing) printf("%s barrier=%d\n", what, a->ctx.stats.barriers != barriers_before);
}

static int dispatch(app *a, const genspirv_vk_kernel *k, const int *bound, uint32_t count,
                    const uint32_t *push, uint32_t push_words, uint32_t groups)
{
    genspirv_vk_view views[4];
    char line[512];
    size_t used;
    uint32_t i;
    uint64_t before = a->ctx.stats.barriers;
    for (i = 0; i < count; i++) {
        views[i].buffer = a->buffers[bound[i]].buffer;
        views[i].offset = 0;
        views[i].size = a->buffers[bound[i]].size;
    }
    if (genspirv_vk_dispatch(&a->ctx, k, views, count, push, push_words * 4, groups, 1, 1) != GENSPIRV_VK_OK) {
        fprintf(stderr, "c_backend: %s\n", genspirv_vk_message(&a->ctx));
        return 1;
    }
    if (a->tracing) {
        used = (size_t)snprintf(line, sizeof line, "dispatch %s %u 1 1 push=", k->module->name, (unsigned)groups);
        for (i = 0; i < push_words; i++) {
            used += (size_t)snprintf(line + used, sizeof line - used, "%08x", (unsigned)push[i]);
        }
        used += (size_t)snprintf(line + used, sizeof line - used, " views=");
        for (i = 0; i < count; i++) {
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%s:0:%llu", i ? "," : "",
                                     BUFFER_NAMES[bound[i]], (unsigned long long)views[i].size);
        }
        trace_command(a, line, before);
    }
    return 0;
}

/* Staging bytes [offset, offset + size) into a whole buffer: a tracked transfer. */
static int upload(app *a, int target, VkDeviceSize staging_offset)
{
    char line[128];
    uint64_t before = a->ctx.stats.barriers;
    backend_buffer *b = &a->buffers[target];
    if (genspirv_vk_copy(&a->ctx, a->staging.buffer, staging_offset, b->buffer, 0, b->size) != GENSPIRV_VK_OK) {
        fprintf(stderr, "c_backend: %s\n", genspirv_vk_message(&a->ctx));
        return 1;
    }
    snprintf(line, sizeof line, "upload %s %llu", BUFFER_NAMES[target], (unsigned long long)b->size);
    trace_command(a, line, before);
    return 0;
}

static int record_graph(app *a)
{
    uint32_t n = a->opt.n, layer, mv_push[2], n_push[1];
    mv_push[0] = n;          /* rows */
    mv_push[1] = n;          /* cols */
    n_push[0] = n;
    for (layer = 0; layer < a->opt.layers; layer++) {
        int src = layer % 2 ? X1 : X0, dst = layer % 2 ? X0 : X1;
        int mv1[3] = {W1, 0, T1}, mv2[3] = {W2, 0, T2}, mv3[3] = {W3, 0, T1};
        int add[3] = {T1, T2, T3}, reduce[2] = {T3, S}, axpy[4] = {T1, T3, S, 0};
        uint32_t elementwise_groups = (n + 255) / 256;
        mv1[1] = mv2[1] = mv3[1] = src;
        axpy[3] = dst;
        if (dispatch(a, &a->matvec, mv1, 3, mv_push, 2, n) || dispatch(a, &a->matvec, mv2, 3, mv_push, 2, n) ||
            dispatch(a, &a->add, add, 3, n_push, 1, elementwise_groups) ||
            dispatch(a, &a->matvec, mv3, 3, mv_push, 2, n) || dispatch(a, &a->reduce, reduce, 2, n_push, 1, 1) ||
            dispatch(a, &a->axpy, axpy, 4, n_push, 1, elementwise_groups)) {
            return 1;
        }
    }
    return 0;
}

/* -- the C reference ---------------------------------------------------------- */

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state ^ (*state >> 16);
}

static void reference(const uint32_t *w, const uint32_t *x_in, uint32_t n, uint32_t layers, uint32_t *x_out,
                      uint32_t *s_out, uint32_t *scratch)
{
    uint32_t *src = scratch, *t1 = scratch + n, *t2 = scratch + 2 * n, *t3 = scratch + 3 * n, *dst = x_out;
    uint32_t layer, r, c, s = 0;
    memcpy(src, x_in, n * sizeof *src);
    for (layer = 0; layer < layers; layer++) {
        for (r = 0; r < n; r++) {
            uint32_t y1 = 0, y2 = 0, y3 = 0;
            for (c = 0; c < n; c++) {
                y1 += w[0 * n * n + r * n + c] * src[c];
                y2 += w[1 * n * n + r * n + c] * src[c];
                y3 += w[2 * n * n + r * n + c] * src[c];
            }
            t2[r] = y2;
            t3[r] = y1 + y2;              /* add read t1 = W1 src ... */
            t1[r] = y3;                   /* ... before matvec(W3) overwrote it */
        }
        for (s = 0, r = 0; r < n; r++) s += t3[r] * t3[r];
        for (r = 0; r < n; r++) dst[r] = t1[r] + t3[r] * (s | 1u);
        memcpy(src, dst, n * sizeof *src);
    }
    *s_out = s;
}

/* -- set-up ------------------------------------------------------------------- */

static int usage(const char *why)
{
    fprintf(stderr, "c_backend: %s\nusage: c_backend [--policy smart|always|none] [--validate] [--layers N] "
            "[--n N] [--block-size N] [--trace] [--bench REPS [--calls-left-out]] [--device INDEX|NAME]\n", why);
    return 2;
}

static int parse_number(const char *text, uint32_t most, uint32_t *out)
{
    char *end;
    unsigned long v = text != NULL ? strtoul(text, &end, 10) : 0;
    if (text == NULL || *end != '\0' || v < 1 || v > most) return 1;
    *out = (uint32_t)v;
    return 0;
}

static int parse(int argc, char **argv, options *o)
{
    int i;
    memset(o, 0, sizeof *o);
    o->policy = GENSPIRV_POLICY_SMART;
    o->policy_name = "smart";
    o->layers = 8;
    o->n = 1024;
    o->device = getenv("GENSPIRV_DEVICE");
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--validate") == 0) {
            o->validate = 1;
        } else if (strcmp(arg, "--trace") == 0) {
            o->trace = 1;
        } else if (strcmp(arg, "--calls-left-out") == 0) {
            o->calls_left_out = 1;
        } else if (strcmp(arg, "--policy") == 0 && value != NULL) {
            o->policy_name = argv[++i];
            if (strcmp(value, "smart") == 0) o->policy = GENSPIRV_POLICY_SMART;
            else if (strcmp(value, "always") == 0) o->policy = GENSPIRV_POLICY_ALWAYS;
            else if (strcmp(value, "none") == 0) o->policy = GENSPIRV_POLICY_NONE;
            else return usage("--policy is smart, always or none");
        } else if (strcmp(arg, "--device") == 0 && value != NULL) {
            o->device = argv[++i];
        } else if ((strcmp(arg, "--layers") == 0 && !parse_number(value, 100000, &o->layers)) ||
                   (strcmp(arg, "--n") == 0 && !parse_number(value, 4096, &o->n)) ||
                   (strcmp(arg, "--block-size") == 0 && !parse_number(value, 65536, &o->block_size)) ||
                   (strcmp(arg, "--bench") == 0 && !parse_number(value, 100000, &o->bench))) {
            i++;
        } else {
            char why[128];
            snprintf(why, sizeof why, "bad argument %s", arg);
            return usage(why);
        }
    }
    return 0;
}

static int create_kernel(app *a, genspirv_vk_kernel *k, const char *name, const genspirv_vk_spec *spec,
                         size_t spec_count)
{
    const genspirv_module *m = genspirv_find_module(name);
    size_t i;
    if (m == NULL) {
        fprintf(stderr, "c_backend: the table has no kernel %s (run genspirv build)\n", name);
        return 1;
    }
    if (genspirv_vk_kernel_create(&a->ctx, k, m, spec, spec_count, VK_NULL_HANDLE) != GENSPIRV_VK_OK) {
        fprintf(stderr, "c_backend: %s\n", genspirv_vk_message(&a->ctx));
        return 1;
    }
    if (a->tracing) {
        printf("kernel %s", name);
        for (i = 0; i < spec_count; i++) printf(" %s=%llu", spec[i].name, (unsigned long long)spec[i].u);
        printf("\n");
    }
    return 0;
}

static int set_up(app *a)
{
    genspirv_vk_context_info info;
    genspirv_vk_spec block = genspirv_vk_spec_uint("BLOCK_SIZE", a->opt.block_size);
    VkDeviceSize vector = (VkDeviceSize)a->opt.n * 4, matrix = vector * a->opt.n;
    const char *missing;
    char err[256];
    int i;
    if (device_open(&a->dev, a->opt.validate, a->opt.device, err, sizeof err)) {
        fprintf(stderr, "c_backend: %s\n", err);
        return 1;
    }
    missing = genspirv_vk_functions_from_device(&a->vk, vkGetDeviceProcAddr, a->dev.device);
    if (missing != NULL) {
        fprintf(stderr, "c_backend: the device has no %s\n", missing);
        return 1;
    }
    memset(&info, 0, sizeof info);
    info.vk = &a->vk;
    info.device = a->dev.device;
    info.limits = &a->dev.properties.limits;
    info.policy = a->opt.policy;
    info.reads = a->reads;
    info.read_capacity = 64;
    info.writes = a->writes;
    info.write_capacity = 64;
    info.sets = a->sets;
    info.set_capacity = 64;
    info.message = a->message;
    info.message_size = sizeof a->message;
    info.features = &a->dev.enabled;       /* kernels are checked against what the device enabled */
    info.subgroup = &a->dev.subgroup;
    if (genspirv_vk_context_init(&a->ctx, &info) != GENSPIRV_VK_OK) {
        fprintf(stderr, "c_backend: %s\n", genspirv_vk_message(&a->ctx));
        return 1;
    }
    if (create_kernel(a, &a->matvec, "matvec", &block, a->opt.block_size ? 1 : 0) ||
        create_kernel(a, &a->add, "add", NULL, 0) || create_kernel(a, &a->axpy, "axpy", NULL, 0) ||
        create_kernel(a, &a->reduce, "reduce", NULL, 0)) {
        return 1;
    }
    for (i = 0; i < BUFFER_COUNT; i++) {
        VkDeviceSize size = i <= W3 ? matrix : i == S ? 4 : vector;
        if (buffer_create(&a->dev, &a->buffers[i], size, 0)) {
            fprintf(stderr, "c_backend: cannot create buffer %s of %llu bytes\n", BUFFER_NAMES[i],
                    (unsigned long long)size);
            return 1;
        }
        if (a->tracing) printf("buffer %s %llu\n", BUFFER_NAMES[i], (unsigned long long)size);
    }
    if (buffer_create(&a->dev, &a->staging, 3 * matrix + vector, 1) ||
        buffer_create(&a->dev, &a->readback, vector + 4, 1)) {
        fprintf(stderr, "c_backend: cannot create host-visible buffers\n");
        return 1;
    }
    return 0;
}

static void tear_down(app *a)
{
    int i;
    genspirv_vk_kernel_destroy(&a->ctx, &a->matvec);
    genspirv_vk_kernel_destroy(&a->ctx, &a->add);
    genspirv_vk_kernel_destroy(&a->ctx, &a->axpy);
    genspirv_vk_kernel_destroy(&a->ctx, &a->reduce);
    genspirv_vk_context_destroy(&a->ctx);
    for (i = 0; i < BUFFER_COUNT; i++) buffer_destroy(&a->dev, &a->buffers[i]);
    buffer_destroy(&a->dev, &a->staging);
    buffer_destroy(&a->dev, &a->readback);
    device_close(&a->dev);
}

/* -- runs --------------------------------------------------------------------- */

/* Upload, record the graph, read back; 1 and *exact on success. */
static int run_graph(app *a, int *exact)
{
    uint32_t n = a->opt.n, *data = (uint32_t *)a->staging.mapped, seed = 12345u, s_ref = 0, i;
    VkDeviceSize vector = (VkDeviceSize)n * 4, matrix = vector * n;
    uint32_t *expected = (uint32_t *)malloc(vector), *scratch = (uint32_t *)malloc(4 * vector);
    const uint32_t *result = (const uint32_t *)a->readback.mapped;
    int final = a->opt.layers % 2 ? X1 : X0, ok = 0;
    if (expected == NULL || scratch == NULL) goto done;
    for (i = 0; i < 3 * n * n + n; i++) data[i] = next_random(&seed);
    if (device_begin(&a->dev)) goto done;
    genspirv_vk_begin(&a->ctx, a->dev.cmd);
    if (upload(a, W1, 0) || upload(a, W2, matrix) || upload(a, W3, 2 * matrix) || upload(a, X0, 3 * matrix) ||
        record_graph(a)) {
        goto done;
    }
    a->tracing = 0;
    if (a->opt.trace) printf("readback\n");
    if (genspirv_vk_copy(&a->ctx, a->buffers[final].buffer, 0, a->readback.buffer, 0, vector) != GENSPIRV_VK_OK ||
        genspirv_vk_copy(&a->ctx, a->buffers[S].buffer, 0, a->readback.buffer, vector, 4) != GENSPIRV_VK_OK ||
        genspirv_vk_host_read(&a->ctx, a->readback.buffer, 0, vector + 4) != GENSPIRV_VK_OK) {
        fprintf(stderr, "c_backend: %s\n", genspirv_vk_message(&a->ctx));
        goto done;
    }
    if (device_submit_and_wait(&a->dev)) {
        fprintf(stderr, "c_backend: the submission failed\n");
        goto done;
    }
    reference(data, data + 3 * n * n, n, a->opt.layers, expected, &s_ref, scratch);
    *exact = memcmp(result, expected, vector) == 0 && result[n] == s_ref;
    ok = 1;
done:
    free(expected);
    free(scratch);
    return ok;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* Recording entry points that record nothing: --calls-left-out times the rest. */
static VKAPI_ATTR void VKAPI_CALL no_bind_pipeline(VkCommandBuffer c, VkPipelineBindPoint p, VkPipeline q)
{
    (void)c; (void)p; (void)q;
}

static VKAPI_ATTR void VKAPI_CALL no_bind_sets(VkCommandBuffer c, VkPipelineBindPoint p, VkPipelineLayout l,
                                               uint32_t first, uint32_t count, const VkDescriptorSet *sets,
                                               uint32_t dynamic_count, const uint32_t *dynamic)
{
    (void)c; (void)p; (void)l; (void)first; (void)count; (void)sets; (void)dynamic_count; (void)dynamic;
}

static VKAPI_ATTR void VKAPI_CALL no_push(VkCommandBuffer c, VkPipelineLayout l, VkShaderStageFlags stages,
                                          uint32_t offset, uint32_t size, const void *data)
{
    (void)c; (void)l; (void)stages; (void)offset; (void)size; (void)data;
}

static VKAPI_ATTR void VKAPI_CALL no_dispatch(VkCommandBuffer c, uint32_t x, uint32_t y, uint32_t z)
{
    (void)c; (void)x; (void)y; (void)z;
}

static VKAPI_ATTR void VKAPI_CALL no_barrier(VkCommandBuffer c, VkPipelineStageFlags src, VkPipelineStageFlags dst,
                                             VkDependencyFlags flags, uint32_t memory_count,
                                             const VkMemoryBarrier *memory, uint32_t buffer_count,
                                             const VkBufferMemoryBarrier *buffers, uint32_t image_count,
                                             const VkImageMemoryBarrier *images)
{
    (void)c; (void)src; (void)dst; (void)flags; (void)memory_count; (void)memory; (void)buffer_count;
    (void)buffers; (void)image_count; (void)images;
}

/* The graph recorded `reps` more times: host microseconds per recorded dispatch of each. */
static int run_bench(app *a)
{
    uint32_t rep;
    genspirv_vk_functions real = a->vk, none = a->vk;
    double *gpu = calloc(a->opt.bench, sizeof *gpu);
    if (gpu == NULL) return 1;
    none.CmdBindPipeline = no_bind_pipeline;
    none.CmdBindDescriptorSets = no_bind_sets;
    none.CmdPushConstants = no_push;
    none.CmdDispatch = no_dispatch;
    none.CmdPipelineBarrier = no_barrier;
    printf("bench {\"unit\": \"us per recorded dispatch\", \"dispatches\": %u, \"samples\": [",
           (unsigned)(6 * a->opt.layers));
    for (rep = 0; rep < a->opt.bench; rep++) {
        uint64_t before = a->ctx.stats.dispatches;
        double t0, t1;
        if (device_begin(&a->dev)) goto failed;
        genspirv_vk_begin(&a->ctx, a->dev.cmd);
        if (!a->opt.calls_left_out) device_timer_begin(&a->dev);   /* outside the host timing */
        if (a->opt.calls_left_out) a->vk = none;       /* the context calls through a->vk */
        t0 = now_us();
        if (record_graph(a)) goto failed;
        t1 = now_us();
        a->vk = real;
        if (!a->opt.calls_left_out) device_timer_end(&a->dev);
        if (device_submit_and_wait(&a->dev)) goto failed;
        gpu[rep] = a->opt.calls_left_out ? -1.0 : device_timer_us(&a->dev);
        printf("%s%.4f", rep ? ", " : "", (t1 - t0) / (double)(a->ctx.stats.dispatches - before));
    }
    printf("]}\n");
    /* The GPU time of each recorded graph (none with the calls left out: nothing ran). */
    printf("bench_gpu {\"unit\": \"us per graph\", \"samples\": [");
    for (rep = 0; rep < a->opt.bench && gpu[rep] >= 0.0; rep++) printf("%s%.3f", rep ? ", " : "", gpu[rep]);
    printf("]}\n");
    free(gpu);
    return 0;
failed:
    a->vk = real;
    free(gpu);
    return 1;
}

int main(int argc, char **argv)
{
    static app a;      /* the descriptor cache's storage is large: not on the stack */
    genspirv_vk_stats graph;
    int exact = 0, status;
    status = parse(argc, argv, &a.opt);
    if (status) return status;
    a.tracing = a.opt.trace;
    if (set_up(&a) || !run_graph(&a, &exact)) {
        tear_down(&a);
        return 2;
    }
    graph = a.ctx.stats;   /* the graph's own counts, before any bench recording */
    if (a.opt.bench && run_bench(&a)) {
        tear_down(&a);
        return 2;
    }
    tear_down(&a);     /* the layer's messages about destruction are counted too */
    printf("device: %s, policy %s, layers %u, n %u\n", a.dev.properties.deviceName, a.opt.policy_name,
           (unsigned)a.opt.layers, (unsigned)a.opt.n);
    if (a.opt.validate) {
        validation_counts *v = &a.dev.validation;
        printf("validation: %u sync hazards (%u read-after-write, %u write-after-read, %u write-after-write), "
               "%u other errors, %u warnings\n", v->sync_hazards, v->raw, v->war, v->waw, v->other_errors,
               v->warnings);
        printf("mixed_graph: exact=%s barriers=%llu dispatches=%llu hazards=%u\n", exact ? "yes" : "no",
               (unsigned long long)graph.barriers, (unsigned long long)graph.dispatches,
               a.dev.validation.sync_hazards);
    } else {
        printf("mixed_graph: exact=%s barriers=%llu dispatches=%llu hazards=-\n", exact ? "yes" : "no",
               (unsigned long long)graph.barriers, (unsigned long long)graph.dispatches);
    }
    return exact && a.dev.validation.other_errors == 0 ? 0 : 1;
}
