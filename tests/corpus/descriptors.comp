#version 460
// Every descriptor kind genspirv names, several sets, arrays of descriptors.
#extension GL_EXT_ray_query : require
#extension GL_EXT_nonuniform_qualifier : require
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer In { float data[]; } inbuf;
layout(set = 0, binding = 1) writeonly buffer Out { float data[]; } outbuf;
layout(set = 0, binding = 2) uniform Params { vec4 scale; uint n; } params;
layout(set = 0, binding = 3, r32f) uniform readonly image2D src_img;
layout(set = 0, binding = 4, r32f) uniform writeonly image2D dst_img;
layout(set = 0, binding = 5, r32f) uniform image2D rw_img;
layout(set = 1, binding = 0) uniform texture2D tex;
layout(set = 1, binding = 1) uniform sampler samp;
layout(set = 1, binding = 2) uniform sampler2D combined;
layout(set = 1, binding = 3) uniform samplerBuffer utb;
layout(set = 1, binding = 4, r32f) uniform readonly imageBuffer stb_ro;
layout(set = 1, binding = 5, r32f) uniform imageBuffer stb_rw;
layout(set = 2, binding = 0) uniform accelerationStructureEXT tlas;
layout(set = 2, binding = 1) buffer Many { float v[]; } many[3];
layout(set = 2, binding = 2) buffer Unbounded { float v[]; } unbounded[];
layout(set = 2, binding = 3) uniform texture2D tex_grid[2][3];
layout(set = 3, binding = 7) buffer Unused { float v[]; } unused;

void main() {
    uint i = gl_GlobalInvocationID.x;
    float x = inbuf.data[i] * params.scale.x;
    x += imageLoad(src_img, ivec2(i, 0)).x + imageLoad(rw_img, ivec2(i, 0)).x;
    x += texture(sampler2D(tex, samp), vec2(0.5)).x + textureLod(combined, vec2(0.5), 0.0).x;
    x += texelFetch(utb, int(i)).x + imageLoad(stb_ro, int(i)).x;
    x += texelFetch(sampler2D(tex_grid[1][2], samp), ivec2(0), 0).x;
    rayQueryEXT rq;
    rayQueryInitializeEXT(rq, tlas, 0u, 0xFFu, vec3(0), 0.0, vec3(1, 0, 0), 1.0);
    imageStore(dst_img, ivec2(i, 0), vec4(x));
    imageStore(stb_rw, int(i), vec4(x));
    many[1].v[i] = x;
    unbounded[nonuniformEXT(i)].v[0] += 1.0;
    outbuf.data[i] = x;
}
