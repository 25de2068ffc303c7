#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0, r32f) uniform writeonly image2D img;
void main() { imageStore(img, ivec2(0, 0), vec4(1.0)); }
