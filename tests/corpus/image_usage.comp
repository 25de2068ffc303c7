#version 450
// Image usage: atomics through OpImageTexelPointer, size queries only, a sampler used
// only through a combined sampler2D() construction, an image stored in a callee.
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, r32ui) uniform uimage2D counters;          // imageAtomicAdd
layout(set = 0, binding = 1, r32f) uniform image2D sized_only;          // imageSize only
layout(set = 0, binding = 2) uniform texture2D tex;
layout(set = 0, binding = 3) uniform sampler samp;
layout(set = 0, binding = 4, rgba8) uniform writeonly image2D target;   // stored in a callee
layout(set = 0, binding = 5) uniform sampler2D queried;                 // textureSize only

void paint(ivec2 at, vec4 colour) { imageStore(target, at, colour); }

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    uint before = imageAtomicAdd(counters, p, 1u);
    ivec2 size = imageSize(sized_only) + textureSize(queried, 0);
    vec4 c = texture(sampler2D(tex, samp), vec2(p) / vec2(size));
    paint(p, c + vec4(float(before)));
}
