#version 450
#extension GL_EXT_control_flow_attributes : require
// Memory-bandwidth probes: the roofline the kernel benchmarks compare against.
// Takes X (n_vec4 vec4s); PROBE_COPY=0 reads X and writes one float per
// invocation to Y (a sum, so the loads cannot be dropped; read-dominated),
// PROBE_COPY=1 copies X to Y (n_vec4 vec4s). 16-byte loads, grid-stride with four
// loads in flight per invocation, so any group count covers any n_vec4.
// Bindings: 0 = X readonly, 1 = Y writeonly; push { uint n_vec4; }.
// Spec constant 0 = BLOCK_SIZE (invocations per workgroup).
// 256-wide workgroups: past the 128 invocations every Vulkan 1.2 device guarantees, within
// what the GPUs this library targets allow (1024 and more); a smaller device refuses it by name.
// genspirv: ignore-file[portability]
layout(local_size_x = 256, local_size_x_id = 0) in;
layout(constant_id = 0) const uint BLOCK_SIZE = 256;

layout(binding = 0) readonly buffer X { vec4 x[]; };
#if PROBE_COPY
layout(binding = 1) writeonly buffer Y { vec4 y[]; };
#else
layout(binding = 1) writeonly buffer Y { float y[]; };
#endif

layout(push_constant) uniform Params {
    uint n_vec4;
} p;

void main() {
    const uint stride = gl_NumWorkGroups.x * BLOCK_SIZE;
    uint i = gl_GlobalInvocationID.x;
#if PROBE_COPY
    for (; i + 3u * stride < p.n_vec4; i += 4u * stride) {
        const vec4 a = x[i], b = x[i + stride], c = x[i + 2u * stride], d = x[i + 3u * stride];
        y[i] = a;
        y[i + stride] = b;
        y[i + 2u * stride] = c;
        y[i + 3u * stride] = d;
    }
    for (; i < p.n_vec4; i += stride) {
        y[i] = x[i];
    }
#else
    vec4 s = vec4(0.0);
    for (; i + 3u * stride < p.n_vec4; i += 4u * stride) {
        s += (x[i] + x[i + stride]) + (x[i + 2u * stride] + x[i + 3u * stride]);
    }
    for (; i < p.n_vec4; i += stride) {
        s += x[i];
    }
    y[gl_GlobalInvocationID.x] = (s.x + s.y) + (s.z + s.w);
#endif
}
