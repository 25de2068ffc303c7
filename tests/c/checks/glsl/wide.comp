#version 450
// 33 storage buffers: one past lavapipe's maxPerStageDescriptorStorageBuffers (32).
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint v; } b[33];
void main() {
    b[0].v = b[32].v;
}
