#version 450
// 64 KiB of shared memory: past the 32 KiB many devices allow.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer B { uint v[]; };
shared uint scratch[16384];
void main() {
    scratch[gl_LocalInvocationIndex * 256u] = v[gl_LocalInvocationIndex];
    barrier();
    v[gl_LocalInvocationIndex] = scratch[16383u - gl_LocalInvocationIndex];
}
