#version 450
// Block sizes and workgroup memory: min_size / array_stride per binding, and the
// shared-memory bytes with a spec-constant expression as an array length.
layout(local_size_x = 8) in;
layout(constant_id = 0) const uint BLOCK = 64u;
layout(constant_id = 1) const uint ROWS = 3u;

// n at 0, pad (vec3, aligned 16) at 16..28, data (vec4) at 32: min 32, stride 16.
layout(std430, set = 0, binding = 0) buffer Header { uint n; vec3 pad; vec4 data[]; } hdr;
// std140: a vec3 + float share 16 bytes, mat3 columns of 16: 16 + 48 = 64.
layout(std140, set = 0, binding = 1) uniform Params { vec3 a; float b; mat3 m; } params;
// No runtime array: min_size is the whole block, stride 0.
layout(std430, set = 0, binding = 2) buffer Fixed { float f[7]; } fixed_;
// A runtime array of arrays: each element is float[3], stride 12, after a uvec2.
layout(std430, set = 0, binding = 3) buffer Nested { uvec2 head; float rows[][3]; } nested;
// Arrays of descriptors: min_size is per descriptor.
layout(std430, set = 1, binding = 0) buffer Many { double d; float x[]; } many[2];

struct S { uint a; bool b; vec2 c; };
shared float tile[BLOCK * ROWS + 1u];   // (64 * 3 + 1) * 4 = 772
shared vec3 v3[2];                      // 24
shared S s[4];                          // 4 * (4 + 4 + 8) = 64
shared bool flag;                       // 4

void main() {
    uint i = gl_LocalInvocationID.x;
    tile[i] = float(hdr.n) + params.b + fixed_.f[i % 7u] + nested.rows[i][1] + many[1].x[i];
    v3[i % 2u] = hdr.pad;
    s[i % 4u].a = i;
    s[i % 4u].b = i > 2u;
    s[i % 4u].c = vec2(tile[i]);
    flag = true;
    barrier();
    hdr.data[i] = vec4(tile[(i + 1u) % 8u], v3[0].x, s[0].c.y, flag ? 1.0 : 0.0);
    many[0].d = double(params.m[0].x);
}
