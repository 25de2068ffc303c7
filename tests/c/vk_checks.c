/* vk_checks.c -- genspirv/vulkan.h against a real device, for tests/test_vulkan_h.py.
 *
 * Built with the table of tests/c/checks (gen/checks.h) and the example's
 * device.c. Prints one line per case:
 *   run <case>: <local size x y z> <the uint words the kernel wrote>   (uniform: <sets> <words>;
 *                                                                     spec_push: <push size> <words>)
 *   check <case>: <code> <recorded nothing: 1|0> <message>   refusals
 * and, last, the validation counts (run it with --validate).
 */
#include <stdio.h>
#include <string.h>

#include "checks.h"
#include "genspirv/vulkan.h"

#include "device.h"

static backend_device dev;
static genspirv_vk_functions vk;
static genspirv_vk_context ctx;
static genspirv_interval reads[32], writes[32];
static genspirv_vk_sets sets[16];
static char message[512];
static backend_buffer out, uniform;

static const genspirv_module *module(const char *name)
{
    const genspirv_module *m = genspirv_find_module(name);
    if (m == NULL) {
        fprintf(stderr, "no module %s\n", name);
    }
    return m;
}

/* What the context has recorded and remembers, to prove a refusal recorded nothing. */
typedef struct snapshot {
    genspirv_vk_stats stats;
    size_t reads, writes, cached;
} snapshot;

static snapshot take(const genspirv_vk_context *c)
{
    snapshot s;
    s.stats = c->stats;
    s.reads = c->tracker.read_count;
    s.writes = c->tracker.write_count;
    s.cached = c->set_count;
    return s;
}

static int same(const snapshot *a, const snapshot *b)
{
    return memcmp(&a->stats, &b->stats, sizeof a->stats) == 0 && a->reads == b->reads && a->writes == b->writes &&
           a->cached == b->cached;
}

static void check(genspirv_vk_context *c, const char *name, genspirv_vk_result code, const snapshot *before)
{
    snapshot after = take(c);
    printf("check %s: %d %d %s\n", name, (int)code, same(before, &after), code ? genspirv_vk_message(c) : "");
}

static genspirv_vk_view view(VkBuffer b, VkDeviceSize offset, VkDeviceSize size)
{
    genspirv_vk_view v;
    v.buffer = b;
    v.offset = offset;
    v.size = size;
    return v;
}

/* Create, dispatch over out[slot * 64, +32), read back; prints the words. */
static int run_spec(const char *name, const genspirv_vk_spec *spec, size_t count, uint32_t slot)
{
    genspirv_vk_kernel k;
    genspirv_vk_view v = view(out.buffer, slot * 64u, 32);
    uint32_t tag = 100u + slot, i;
    const uint32_t *words = (const uint32_t *)out.mapped + slot * 16u;
    genspirv_vk_result r = genspirv_vk_kernel_create(&ctx, &k, module("spec"), spec, count, VK_NULL_HANDLE);
    if (r != GENSPIRV_VK_OK) {
        printf("run %s: refused %d %s\n", name, (int)r, genspirv_vk_message(&ctx));
        return 0;
    }
    if (device_begin(&dev)) return 1;
    genspirv_vk_begin(&ctx, dev.cmd);
    if (genspirv_vk_dispatch(&ctx, &k, &v, 1, &tag, 4, 3, 1, 1) != GENSPIRV_VK_OK ||
        genspirv_vk_host_read(&ctx, out.buffer, v.offset, v.size) != GENSPIRV_VK_OK || device_submit_and_wait(&dev)) {
        printf("run %s: failed %s\n", name, genspirv_vk_message(&ctx));
        return 1;
    }
    printf("run %s: %u %u %u", name, (unsigned)k.local_size[0], (unsigned)k.local_size[1],
           (unsigned)k.local_size[2]);
    for (i = 0; i < 8; i++) printf(" %u", (unsigned)words[i]);
    printf("\n");
    genspirv_vk_kernel_destroy(&ctx, &k);
    return 0;
}

/* spec_push with N = 8: 8 words pushed and 8 read from a 32-byte block, written to out[384, +64). */
static int run_spec_push(void)
{
    genspirv_vk_kernel k;
    genspirv_vk_spec n = genspirv_vk_spec_uint("N", 8);
    genspirv_vk_view v[2];
    uint32_t w[8], a[8], i;
    for (i = 0; i < 8; i++) {
        w[i] = 10u + i;
        a[i] = 20u + i;
    }
    if (genspirv_vk_kernel_create(&ctx, &k, module("spec_push"), &n, 1, VK_NULL_HANDLE) != GENSPIRV_VK_OK) {
        printf("run spec_push: refused %s\n", genspirv_vk_message(&ctx));
        return 1;
    }
    v[0] = view(out.buffer, 320, 32);
    v[1] = view(out.buffer, 384, 64);
    if (device_begin(&dev)) return 1;
    genspirv_vk_begin(&ctx, dev.cmd);
    if (genspirv_vk_update(&ctx, out.buffer, 320, a, 32) != GENSPIRV_VK_OK ||
        genspirv_vk_dispatch(&ctx, &k, v, 2, w, 32, 1, 1, 1) != GENSPIRV_VK_OK ||
        genspirv_vk_host_read(&ctx, out.buffer, 384, 64) != GENSPIRV_VK_OK || device_submit_and_wait(&dev)) {
        printf("run spec_push: failed %s\n", genspirv_vk_message(&ctx));
        return 1;
    }
    printf("run spec_push: %u", (unsigned)k.push_constant_size);
    for (i = 0; i < 16; i++) printf(" %u", (unsigned)((const uint32_t *)out.mapped)[96 + i]);
    printf("\n");
    genspirv_vk_kernel_destroy(&ctx, &k);
    return 0;
}

static int runs(void)
{
    genspirv_vk_spec named[5], mixed[2];
    genspirv_vk_kernel k;
    genspirv_vk_view v[2];
    uint32_t u[4] = {1000u, 0u, 0u, 0u}, i;
    named[0] = genspirv_vk_spec_uint("BLOCK", 32);
    named[1] = genspirv_vk_spec_int("OFFSET", 7);
    named[2] = genspirv_vk_spec_float("SCALE", 2.0);
    named[3] = genspirv_vk_spec_bool("FLAG", 1);
    named[4] = genspirv_vk_spec_uint("WIDE", 9);
    mixed[0] = genspirv_vk_spec_uint("OFFSET", 5);     /* an unsigned value for an int constant */
    mixed[1] = genspirv_vk_spec_int("SCALE", 3);       /* an integer for a float constant */
    if (run_spec("defaults", NULL, 0, 0) || run_spec("named", named, 5, 1) || run_spec("mixed", mixed, 2, 2) ||
        run_spec_push()) {
        return 1;
    }
    /* A uniform buffer in set 1, set 0 empty: o[i] = k + i. */
    if (genspirv_vk_kernel_create(&ctx, &k, module("uniform"), NULL, 0, VK_NULL_HANDLE) != GENSPIRV_VK_OK) {
        printf("run uniform: refused %s\n", genspirv_vk_message(&ctx));
        return 1;
    }
    v[0] = view(uniform.buffer, 0, 16);
    v[1] = view(out.buffer, 256, 16);
    if (device_begin(&dev)) return 1;
    genspirv_vk_begin(&ctx, dev.cmd);
    if (genspirv_vk_update(&ctx, uniform.buffer, 0, u, 16) != GENSPIRV_VK_OK ||
        genspirv_vk_dispatch(&ctx, &k, v, 2, NULL, 0, 1, 1, 1) != GENSPIRV_VK_OK ||
        genspirv_vk_host_read(&ctx, out.buffer, 256, 16) != GENSPIRV_VK_OK || device_submit_and_wait(&dev)) {
        printf("run uniform: failed %s\n", genspirv_vk_message(&ctx));
        return 1;
    }
    printf("run uniform: %u", (unsigned)k.set_count);
    for (i = 0; i < 4; i++) printf(" %u", (unsigned)((const uint32_t *)out.mapped)[64 + i]);
    printf("\n");
    genspirv_vk_kernel_destroy(&ctx, &k);
    return 0;
}

static void features(void);

static void refusals(void)
{
    genspirv_vk_kernel k, u, refused, sp;
    genspirv_vk_view views[2], bad, sp_views[2];
    uint32_t words[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    genspirv_vk_spec spec;
    genspirv_vk_context small;
    genspirv_vk_context_info info;
    genspirv_vk_sets few[4];
    char small_message[512];
    uint32_t tag = 1, i;
    VkDeviceSize align = ctx.storage_alignment;
    snapshot s;
    genspirv_vk_kernel_create(&ctx, &k, module("spec"), NULL, 0, VK_NULL_HANDLE);
    genspirv_vk_kernel_create(&ctx, &u, module("uniform"), NULL, 0, VK_NULL_HANDLE);
    views[0] = view(out.buffer, 0, 32);
    views[1] = view(out.buffer, 64, 32);

    genspirv_vk_begin(&ctx, VK_NULL_HANDLE);
    s = take(&ctx);
    check(&ctx, "before_begin", genspirv_vk_dispatch(&ctx, &k, views, 1, &tag, 4, 1, 1, 1), &s);
    device_begin(&dev);
    genspirv_vk_begin(&ctx, dev.cmd);
    s = take(&ctx);
    check(&ctx, "binding_count", genspirv_vk_dispatch(&ctx, &k, views, 2, &tag, 4, 1, 1, 1), &s);
    check(&ctx, "push_size", genspirv_vk_dispatch(&ctx, &k, views, 1, &tag, 3, 1, 1, 1), &s);
    check(&ctx, "push_null", genspirv_vk_dispatch(&ctx, &k, views, 1, NULL, 4, 1, 1, 1), &s);
    bad = view(out.buffer, 0, 16);
    check(&ctx, "min_size", genspirv_vk_dispatch(&ctx, &k, &bad, 1, &tag, 4, 1, 1, 1), &s);
    bad = view(out.buffer, align > 1 ? align / 2 : 1, 32);
    check(&ctx, "alignment", genspirv_vk_dispatch(&ctx, &k, &bad, 1, &tag, 4, 1, 1, 1), &s);
    bad = view(out.buffer, 0, VK_WHOLE_SIZE);
    check(&ctx, "whole_size", genspirv_vk_dispatch(&ctx, &k, &bad, 1, &tag, 4, 1, 1, 1), &s);
    bad = view(out.buffer, 0, (VkDeviceSize)ctx.max_storage_range + 16);
    check(&ctx, "storage_range", genspirv_vk_dispatch(&ctx, &k, &bad, 1, &tag, 4, 1, 1, 1), &s);
    check(&ctx, "groups_zero", genspirv_vk_dispatch(&ctx, &k, views, 1, &tag, 4, 1, 0, 1), &s);
    check(&ctx, "groups_past", genspirv_vk_dispatch(&ctx, &k, views, 1, &tag, 4, ctx.max_group_count[0] + 1u, 1,
                                                     1), &s);
    bad = view(uniform.buffer, 8, 8);
    views[1] = view(out.buffer, 0, 16);
    {
        genspirv_vk_view uv[2];
        uv[0] = bad;
        uv[1] = views[1];
        check(&ctx, "uniform_alignment", genspirv_vk_dispatch(&ctx, &u, uv, 2, NULL, 0, 1, 1, 1), &s);
    }

    spec = genspirv_vk_spec_uint("NOPE", 1);
    check(&ctx, "spec_unknown", genspirv_vk_kernel_create(&ctx, &refused, module("spec"), &spec, 1, VK_NULL_HANDLE), &s);
    spec = genspirv_vk_spec_uint("FLAG", 1);
    check(&ctx, "spec_bool", genspirv_vk_kernel_create(&ctx, &refused, module("spec"), &spec, 1, VK_NULL_HANDLE), &s);
    spec = genspirv_vk_spec_int("OFFSET", 2147483648LL);
    check(&ctx, "spec_range", genspirv_vk_kernel_create(&ctx, &refused, module("spec"), &spec, 1, VK_NULL_HANDLE), &s);
    spec = genspirv_vk_spec_int("WIDE", -1);
    check(&ctx, "spec_negative", genspirv_vk_kernel_create(&ctx, &refused, module("spec"), &spec, 1, VK_NULL_HANDLE),
          &s);
    spec = genspirv_vk_spec_float("WIDE", 1.5);
    check(&ctx, "spec_float", genspirv_vk_kernel_create(&ctx, &refused, module("spec"), &spec, 1, VK_NULL_HANDLE), &s);
    spec = genspirv_vk_spec_uint("BLOCK", 4096);
    check(&ctx, "workgroup", genspirv_vk_kernel_create(&ctx, &refused, module("spec"), &spec, 1, VK_NULL_HANDLE), &s);
    check(&ctx, "shared_memory", genspirv_vk_kernel_create(&ctx, &refused, module("shared_big"), NULL, 0,
                                                           VK_NULL_HANDLE), &s);
    check(&ctx, "push_limit", genspirv_vk_kernel_create(&ctx, &refused, module("push_big"), NULL, 0,
                                                        VK_NULL_HANDLE), &s);
    check(&ctx, "storage_limit", genspirv_vk_kernel_create(&ctx, &refused, module("wide"), NULL, 0, VK_NULL_HANDLE),
          &s);
    check(&ctx, "image", genspirv_vk_kernel_create(&ctx, &refused, module("image"), NULL, 0, VK_NULL_HANDLE), &s);
    check(&ctx, "array", genspirv_vk_kernel_create(&ctx, &refused, module("array"), NULL, 0, VK_NULL_HANDLE), &s);

    check(&ctx, "update_size", genspirv_vk_update(&ctx, out.buffer, 0, &tag, 6), &s);
    check(&ctx, "copy_overlap", genspirv_vk_copy(&ctx, out.buffer, 0, out.buffer, 16, 32), &s);
    check(&ctx, "fill_size", genspirv_vk_fill(&ctx, out.buffer, 2, 8, 0u), &s);
    /* spec_push at N = 8: push and min_size at its spec values, not the defaults' 8 bytes. */
    spec = genspirv_vk_spec_uint("N", 8);
    genspirv_vk_kernel_create(&ctx, &sp, module("spec_push"), &spec, 1, VK_NULL_HANDLE);
    sp_views[0] = view(out.buffer, 320, 32);
    sp_views[1] = view(out.buffer, 384, 64);
    s = take(&ctx);
    check(&ctx, "spec_push_size", genspirv_vk_dispatch(&ctx, &sp, sp_views, 2, words, 8, 1, 1, 1), &s);
    sp_views[0] = view(out.buffer, 320, 8);
    check(&ctx, "spec_min_size", genspirv_vk_dispatch(&ctx, &sp, sp_views, 2, words, 32, 1, 1, 1), &s);
    genspirv_vk_kernel_destroy(&ctx, &sp);
    spec = genspirv_vk_spec_uint("N", 0);
    check(&ctx, "spec_length", genspirv_vk_kernel_create(&ctx, &refused, module("spec_push"), &spec, 1,
                                                         VK_NULL_HANDLE), &s);
    /* N = 33: 132 bytes of push constants at its spec values, past lavapipe's 128. */
    spec = genspirv_vk_spec_uint("N", 33);
    check(&ctx, "spec_push_limit", genspirv_vk_kernel_create(&ctx, &refused, module("spec_push"), &spec, 1,
                                                             VK_NULL_HANDLE), &s);

    /* A cache of 4 entries holds 3 bindings of views; the fourth is refused. */
    memset(&info, 0, sizeof info);
    info.vk = &vk;
    info.device = dev.device;
    info.limits = &dev.properties.limits;
    info.policy = GENSPIRV_POLICY_SMART;
    info.reads = reads;
    info.read_capacity = 32;
    info.writes = writes;
    info.write_capacity = 32;
    info.sets = few;
    info.set_capacity = 4;
    info.message = small_message;
    info.message_size = sizeof small_message;
    genspirv_vk_context_init(&small, &info);
    genspirv_vk_begin(&small, dev.cmd);
    for (i = 0; i < 3; i++) {
        bad = view(out.buffer, i * 64u, 32);
        genspirv_vk_dispatch(&small, &k, &bad, 1, &tag, 4, 1, 1, 1);
    }
    s = take(&small);
    bad = view(out.buffer, 3 * 64u, 32);
    check(&small, "descriptors_full", genspirv_vk_dispatch(&small, &k, &bad, 1, &tag, 4, 1, 1, 1), &s);
    /* As the header asks: reset once nothing that used the sets is pending or recording. */
    device_submit_and_wait(&dev);
    genspirv_vk_descriptors_reset(&small);
    device_begin(&dev);
    genspirv_vk_begin(&small, dev.cmd);
    s = take(&small);
    check(&small, "after_reset", genspirv_vk_dispatch(&small, &k, &bad, 1, &tag, 4, 1, 1, 1), &s);
    device_submit_and_wait(&dev);
    genspirv_vk_context_destroy(&small);
    genspirv_vk_kernel_destroy(&ctx, &k);
    genspirv_vk_kernel_destroy(&ctx, &u);
    features();
}

/* The capability checks: a context told the device enabled nothing refuses wide_int's Int64,
 * one told of no subgroup arithmetic its subgroupAdd; the real device's features and
 * subgroup properties (lavapipe and the GPUs tested have both) take it. */
static void features(void)
{
    genspirv_vk_context c;
    genspirv_vk_context_info info;
    genspirv_vk_kernel k;
    VkPhysicalDeviceFeatures2 enabled;
    VkPhysicalDeviceSubgroupProperties subgroup;
    char msg[512];
    snapshot s;
    memset(&enabled, 0, sizeof enabled);
    enabled.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    memset(&subgroup, 0, sizeof subgroup);
    subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    subgroup.supportedStages = VK_SHADER_STAGE_COMPUTE_BIT;
    subgroup.supportedOperations = VK_SUBGROUP_FEATURE_BASIC_BIT;
    memset(&info, 0, sizeof info);
    info.vk = &vk;
    info.device = dev.device;
    info.limits = &dev.properties.limits;
    info.policy = GENSPIRV_POLICY_SMART;
    info.reads = reads;
    info.read_capacity = 32;
    info.writes = writes;
    info.write_capacity = 32;
    info.message = msg;
    info.message_size = sizeof msg;
    info.features = &enabled;
    info.subgroup = &subgroup;
    genspirv_vk_context_init(&c, &info);
    s = take(&c);
    check(&c, "feature_int64", genspirv_vk_kernel_create(&c, &k, module("wide_int"), NULL, 0, VK_NULL_HANDLE), &s);
    enabled.features.shaderInt64 = VK_TRUE;
    genspirv_vk_context_init(&c, &info);
    s = take(&c);
    check(&c, "feature_subgroup", genspirv_vk_kernel_create(&c, &k, module("wide_int"), NULL, 0, VK_NULL_HANDLE), &s);
    /* What the device really enabled (device.c: shaderInt64 where it has it) and supports. */
    info.features = &dev.enabled;
    info.subgroup = &dev.subgroup;
    genspirv_vk_context_init(&c, &info);
    s = take(&c);
    check(&c, "feature_enabled", genspirv_vk_kernel_create(&c, &k, module("wide_int"), NULL, 0, VK_NULL_HANDLE), &s);
    genspirv_vk_kernel_destroy(&c, &k);
    genspirv_vk_context_destroy(&c);
}

int main(int argc, char **argv)
{
    genspirv_vk_context_info info;
    char err[256];
    int validate = argc > 1 && strcmp(argv[1], "--validate") == 0, status;
    if (device_open(&dev, validate, NULL, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    genspirv_vk_functions_from_loader(&vk);
    memset(&info, 0, sizeof info);
    info.vk = &vk;
    info.device = dev.device;
    info.limits = &dev.properties.limits;
    info.policy = GENSPIRV_POLICY_SMART;
    info.reads = reads;
    info.read_capacity = 32;
    info.writes = writes;
    info.write_capacity = 32;
    info.sets = sets;
    info.set_capacity = 16;
    info.message = message;
    info.message_size = sizeof message;
    if (genspirv_vk_context_init(&ctx, &info) != GENSPIRV_VK_OK || buffer_create(&dev, &out, 512, 1) ||
        buffer_create(&dev, &uniform, 256, 0)) {
        fprintf(stderr, "set-up failed: %s\n", genspirv_vk_message(&ctx));
        return 2;
    }
    status = runs();
    if (!status) refusals();
    genspirv_vk_context_destroy(&ctx);
    buffer_destroy(&dev, &out);
    buffer_destroy(&dev, &uniform);
    device_close(&dev);
    printf("validation: %u sync hazards, %u other errors\n", dev.validation.sync_hazards,
           dev.validation.other_errors);
    return status;
}
