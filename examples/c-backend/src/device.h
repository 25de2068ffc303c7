/* device.h -- the Vulkan set-up every backend already has, kept apart from what genspirv adds.
 *
 * An instance (with the Khronos validation layer and its synchronization
 * validation on request, messages counted by a debug utils messenger), a
 * physical device (GENSPIRV_DEVICE: an index or a name substring; else a
 * discrete GPU first), a compute queue, one command buffer and fence, and
 * buffers with their own memory. Nothing here knows genspirv.
 */
#ifndef C_BACKEND_DEVICE_H
#define C_BACKEND_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

typedef struct validation_counts {
    unsigned sync_hazards;   /* messages whose id starts with SYNC- ... */
    unsigned raw, war, waw;  /* ... of which read-after-write, write-after-read, write-after-write */
    unsigned other_errors;   /* every other error the layer reports */
    unsigned warnings;
} validation_counts;

typedef struct backend_device {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties properties;
    VkPhysicalDeviceMemoryProperties memory;
    VkPhysicalDeviceSubgroupProperties subgroup;
    VkPhysicalDeviceFeatures2 enabled;  /* what vkCreateDevice enabled: shaderInt64 where the device has it */
    VkDevice device;
    uint32_t queue_family;
    VkQueue queue;
    VkCommandPool command_pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool timestamps;  /* two timestamp queries; VK_NULL_HANDLE where the queue cannot time */
    uint64_t timestamp_mask; /* the queue's timestampValidBits as a mask */
    validation_counts validation;
} backend_device;

typedef struct backend_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size;
    void *mapped;            /* host-visible buffers only */
} backend_buffer;

/* 0 on success; else a message in err. validate: the layer with sync validation. */
int device_open(backend_device *d, int validate, const char *wanted, char *err, size_t err_size);
void device_close(backend_device *d);

/* A storage buffer usable by copies too; host_visible: mapped and coherent. */
int buffer_create(backend_device *d, backend_buffer *b, VkDeviceSize size, int host_visible);
void buffer_destroy(backend_device *d, backend_buffer *b);

/* Reset and begin d->cmd; end it, submit it, wait for it. 0 on success. */
int device_begin(backend_device *d);
int device_submit_and_wait(backend_device *d);

/* GPU time of what d->cmd records between device_timer_begin and device_timer_end, in
 * microseconds, read after device_submit_and_wait; negative where the queue cannot time. */
void device_timer_begin(backend_device *d);
void device_timer_end(backend_device *d);
double device_timer_us(backend_device *d);

#endif /* C_BACKEND_DEVICE_H */
