#version 450
// A 512-byte push block: past maxPushConstantsSize on lavapipe (128) and most GPUs (256).
layout(local_size_x = 1) in;
layout(push_constant) uniform Push { uint p[128]; } pc;
layout(set = 0, binding = 0) writeonly buffer Out { uint v; };
void main() {
    v = pc.p[0] + pc.p[127];
}
