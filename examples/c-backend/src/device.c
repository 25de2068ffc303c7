/* device.c -- instance, validation, physical and logical device, buffers, submission. */
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRINTED_MESSAGES 8   /* the first few validation messages in full on stderr; the rest counted */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                            VkDebugUtilsMessageTypeFlagsEXT types,
                                                            const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                            void *user)
{
    validation_counts *counts = (validation_counts *)user;
    const char *id = data->pMessageIdName != NULL ? data->pMessageIdName : "";
    unsigned seen = counts->sync_hazards + counts->other_errors + counts->warnings;
    (void)types;
    if (strncmp(id, "SYNC-", 5) == 0) {
        counts->sync_hazards++;
        counts->raw += strcmp(id, "SYNC-HAZARD-READ-AFTER-WRITE") == 0;
        counts->war += strcmp(id, "SYNC-HAZARD-WRITE-AFTER-READ") == 0;
        counts->waw += strcmp(id, "SYNC-HAZARD-WRITE-AFTER-WRITE") == 0;
    } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        counts->other_errors++;
    } else {
        counts->warnings++;
    }
    if (seen < PRINTED_MESSAGES) {
        fprintf(stderr, "validation: %s: %s\n", id, data->pMessage != NULL ? data->pMessage : "");
    }
    return VK_FALSE;
}

static int has_layer(const char *name)
{
    VkLayerProperties layers[64];
    uint32_t count = 64, i;
    if (vkEnumerateInstanceLayerProperties(&count, layers) < 0) return 0;
    for (i = 0; i < count; i++) {
        if (strcmp(layers[i].layerName, name) == 0) return 1;
    }
    return 0;
}

static int create_instance(backend_device *d, int validate, char *err, size_t err_size)
{
    static const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    static const char *extensions[] = {"VK_EXT_debug_utils", "VK_EXT_validation_features"};
    /* Synchronization validation is off by default: VkValidationFeaturesEXT turns it on
     * (the layers of Vulkan SDK 1.3.239 ignore VK_LAYER_VALIDATE_SYNC=1). */
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features;
    VkDebugUtilsMessengerCreateInfoEXT messenger;
    VkApplicationInfo app;
    VkInstanceCreateInfo info;
    VkResult r;
    memset(&app, 0, sizeof app);
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "c_backend";
    app.apiVersion = VK_API_VERSION_1_2;
    memset(&info, 0, sizeof info);
    info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    info.pApplicationInfo = &app;
    memset(&messenger, 0, sizeof messenger);
    messenger.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    messenger.pfnUserCallback = on_validation_message;
    messenger.pUserData = &d->validation;
    if (validate) {
        if (!has_layer(layers[0])) {
            snprintf(err, err_size, "--validate: VK_LAYER_KHRONOS_validation is not installed "
                     "(Debian: apt-get install vulkan-validationlayers)");
            return 1;
        }
        memset(&features, 0, sizeof features);
        features.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
        features.pNext = &messenger;          /* messages of vkCreateInstance itself too */
        features.enabledValidationFeatureCount = 1;
        features.pEnabledValidationFeatures = enables;
        info.pNext = &features;
        info.enabledLayerCount = 1;
        info.ppEnabledLayerNames = layers;
        info.enabledExtensionCount = 2;
        info.ppEnabledExtensionNames = extensions;
    }
    r = vkCreateInstance(&info, NULL, &d->instance);
    if (r != VK_SUCCESS) {
        snprintf(err, err_size, "vkCreateInstance failed (VkResult %d)", (int)r);
        return 1;
    }
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            d->instance, "vkCreateDebugUtilsMessengerEXT");
        if (create == NULL || create(d->instance, &messenger, NULL, &d->messenger) != VK_SUCCESS) {
            snprintf(err, err_size, "--validate: cannot create the debug utils messenger");
            return 1;
        }
    }
    return 0;
}

static int device_rank(VkPhysicalDeviceType type)
{
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
    }
}

static int contains_nocase(const char *text, const char *part)
{
    size_t n = strlen(part), i, j;
    for (i = 0; text[i] != '\0'; i++) {
        for (j = 0; j < n && text[i + j] != '\0'; j++) {
            char a = text[i + j], b = part[j];
            if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
            if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
            if (a != b) break;
        }
        if (j == n) return 1;
    }
    return n == 0;
}

static int pick_physical_device(backend_device *d, const char *wanted, char *err, size_t err_size)
{
    VkPhysicalDevice devices[16];
    uint32_t count = 16, i, best = 0;
    int best_rank = 99;
    if (vkEnumeratePhysicalDevices(d->instance, &count, devices) < 0 || count == 0) {
        snprintf(err, err_size, "no Vulkan physical device found");
        return 1;
    }
    for (i = 0; i < count; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devices[i], &p);
        if (wanted != NULL && wanted[0] != '\0') {
            char *end;
            unsigned long index = strtoul(wanted, &end, 10);
            if (*end == '\0' ? index == i : contains_nocase(p.deviceName, wanted)) {
                best = i;
                best_rank = -1;
                break;
            }
        } else if (device_rank(p.deviceType) < best_rank) {
            best = i;
            best_rank = device_rank(p.deviceType);
        }
    }
    if (best_rank == 99 || (wanted != NULL && wanted[0] != '\0' && best_rank != -1)) {
        snprintf(err, err_size, "GENSPIRV_DEVICE=%s matches none of the %u Vulkan devices", wanted, (unsigned)count);
        return 1;
    }
    d->physical = devices[best];
    vkGetPhysicalDeviceProperties(d->physical, &d->properties);
    {
        VkPhysicalDeviceProperties2 props;
        memset(&props, 0, sizeof props);
        memset(&d->subgroup, 0, sizeof d->subgroup);
        d->subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
        props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
        props.pNext = &d->subgroup;
        vkGetPhysicalDeviceProperties2(d->physical, &props);
    }
    vkGetPhysicalDeviceMemoryProperties(d->physical, &d->memory);
    return 0;
}

static int create_device(backend_device *d, char *err, size_t err_size)
{
    VkQueueFamilyProperties families[16];
    uint32_t count = 16, i;
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue;
    VkDeviceCreateInfo info;
    VkCommandPoolCreateInfo pool;
    VkCommandBufferAllocateInfo alloc;
    VkFenceCreateInfo fence;
    vkGetPhysicalDeviceQueueFamilyProperties(d->physical, &count, families);
    for (i = 0; i < count && !(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT); i++) {
    }
    if (i == count) {
        snprintf(err, err_size, "%s has no compute queue", d->properties.deviceName);
        return 1;
    }
    d->queue_family = i;
    memset(&queue, 0, sizeof queue);
    queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    queue.queueFamilyIndex = d->queue_family;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    /* The features the kernels may need, where the device has them; genspirv/vulkan.h
     * is told what was enabled and refuses a kernel needing more. */
    memset(&d->enabled, 0, sizeof d->enabled);
    d->enabled.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    {
        VkPhysicalDeviceFeatures supported;
        vkGetPhysicalDeviceFeatures(d->physical, &supported);
        d->enabled.features.shaderInt64 = supported.shaderInt64;
    }
    memset(&info, 0, sizeof info);
    info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    info.pNext = &d->enabled;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue;
    if (vkCreateDevice(d->physical, &info, NULL, &d->device) != VK_SUCCESS) {
        snprintf(err, err_size, "vkCreateDevice failed on %s", d->properties.deviceName);
        return 1;
    }
    vkGetDeviceQueue(d->device, d->queue_family, 0, &d->queue);
    memset(&pool, 0, sizeof pool);
    pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = d->queue_family;
    memset(&alloc, 0, sizeof alloc);
    alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    memset(&fence, 0, sizeof fence);
    fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    if (vkCreateCommandPool(d->device, &pool, NULL, &d->command_pool) != VK_SUCCESS) {
        snprintf(err, err_size, "vkCreateCommandPool failed on %s", d->properties.deviceName);
        return 1;
    }
    alloc.commandPool = d->command_pool;
    if (vkAllocateCommandBuffers(d->device, &alloc, &d->cmd) != VK_SUCCESS ||
        vkCreateFence(d->device, &fence, NULL, &d->fence) != VK_SUCCESS) {
        snprintf(err, err_size, "cannot allocate a command buffer and a fence on %s", d->properties.deviceName);
        return 1;
    }
    if (families[d->queue_family].timestampValidBits > 0 && d->properties.limits.timestampPeriod > 0.0f) {
        VkQueryPoolCreateInfo queries;
        uint32_t bits = families[d->queue_family].timestampValidBits;
        memset(&queries, 0, sizeof queries);
        queries.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
        queries.queryType = VK_QUERY_TYPE_TIMESTAMP;
        queries.queryCount = 2;
        if (vkCreateQueryPool(d->device, &queries, NULL, &d->timestamps) != VK_SUCCESS) {
            d->timestamps = VK_NULL_HANDLE;          /* no timing, nothing else lost */
        }
        d->timestamp_mask = bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
    }
    return 0;
}

int device_open(backend_device *d, int validate, const char *wanted, char *err, size_t err_size)
{
    memset(d, 0, sizeof *d);
    if (create_instance(d, validate, err, err_size) || pick_physical_device(d, wanted, err, err_size) ||
        create_device(d, err, err_size)) {
        device_close(d);
        return 1;
    }
    return 0;
}

void device_close(backend_device *d)
{
    if (d->device != VK_NULL_HANDLE) {
        vkDeviceWaitIdle(d->device);
        if (d->fence != VK_NULL_HANDLE) vkDestroyFence(d->device, d->fence, NULL);
        if (d->timestamps != VK_NULL_HANDLE) vkDestroyQueryPool(d->device, d->timestamps, NULL);
        if (d->command_pool != VK_NULL_HANDLE) vkDestroyCommandPool(d->device, d->command_pool, NULL);
        vkDestroyDevice(d->device, NULL);
    }
    if (d->messenger != VK_NULL_HANDLE) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            d->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy != NULL) destroy(d->instance, d->messenger, NULL);
    }
    if (d->instance != VK_NULL_HANDLE) vkDestroyInstance(d->instance, NULL);
    d->device = VK_NULL_HANDLE;
    d->messenger = VK_NULL_HANDLE;
    d->instance = VK_NULL_HANDLE;
}

static int memory_type(const backend_device *d, uint32_t allowed, VkMemoryPropertyFlags want)
{
    uint32_t i;
    for (i = 0; i < d->memory.memoryTypeCount; i++) {
        if ((allowed & (1u << i)) && (d->memory.memoryTypes[i].propertyFlags & want) == want) return (int)i;
    }
    return -1;
}

int buffer_create(backend_device *d, backend_buffer *b, VkDeviceSize size, int host_visible)
{
    VkBufferCreateInfo info;
    VkMemoryRequirements needs;
    VkMemoryAllocateInfo alloc;
    VkMemoryPropertyFlags want = host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                              : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    int type;
    memset(b, 0, sizeof *b);
    memset(&info, 0, sizeof info);
    info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    info.size = size;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (vkCreateBuffer(d->device, &info, NULL, &b->buffer) != VK_SUCCESS) return 1;
    vkGetBufferMemoryRequirements(d->device, b->buffer, &needs);
    type = memory_type(d, needs.memoryTypeBits, want);
    if (type < 0 && !host_visible) type = memory_type(d, needs.memoryTypeBits, 0);
    memset(&alloc, 0, sizeof alloc);
    alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    alloc.allocationSize = needs.size;
    alloc.memoryTypeIndex = (uint32_t)type;
    if (type < 0 || vkAllocateMemory(d->device, &alloc, NULL, &b->memory) != VK_SUCCESS ||
        vkBindBufferMemory(d->device, b->buffer, b->memory, 0) != VK_SUCCESS ||
        (host_visible && vkMapMemory(d->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped) != VK_SUCCESS)) {
        buffer_destroy(d, b);
        return 1;
    }
    b->size = size;
    return 0;
}

void buffer_destroy(backend_device *d, backend_buffer *b)
{
    if (b->buffer != VK_NULL_HANDLE) vkDestroyBuffer(d->device, b->buffer, NULL);
    if (b->memory != VK_NULL_HANDLE) vkFreeMemory(d->device, b->memory, NULL);
    memset(b, 0, sizeof *b);
}

int device_begin(backend_device *d)
{
    VkCommandBufferBeginInfo begin;
    memset(&begin, 0, sizeof begin);
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (vkResetCommandBuffer(d->cmd, 0) != VK_SUCCESS) return 1;
    return vkBeginCommandBuffer(d->cmd, &begin) != VK_SUCCESS;
}

void device_timer_begin(backend_device *d)
{
    if (d->timestamps == VK_NULL_HANDLE) return;
    vkCmdResetQueryPool(d->cmd, d->timestamps, 0, 2);
    vkCmdWriteTimestamp(d->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, d->timestamps, 0);
}

void device_timer_end(backend_device *d)
{
    if (d->timestamps == VK_NULL_HANDLE) return;
    vkCmdWriteTimestamp(d->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d->timestamps, 1);
}

double device_timer_us(backend_device *d)
{
    uint64_t ticks[2];
    if (d->timestamps == VK_NULL_HANDLE ||
        vkGetQueryPoolResults(d->device, d->timestamps, 0, 2, sizeof ticks, ticks, sizeof ticks[0],
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS) {
        return -1.0;
    }
    return (double)((ticks[1] - ticks[0]) & d->timestamp_mask) * d->properties.limits.timestampPeriod / 1e3;
}

int device_submit_and_wait(backend_device *d)
{
    VkSubmitInfo submit;
    if (vkEndCommandBuffer(d->cmd) != VK_SUCCESS) return 1;
    memset(&submit, 0, sizeof submit);
    submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &d->cmd;
    if (vkQueueSubmit(d->queue, 1, &submit, d->fence) != VK_SUCCESS) return 1;
    if (vkWaitForFences(d->device, 1, &d->fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS) return 1;
    return vkResetFences(d->device, 1, &d->fence) != VK_SUCCESS;
}
