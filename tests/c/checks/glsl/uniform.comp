#version 450
// A uniform buffer in set 1 (set 0 left empty): o[i] = k + i.
layout(local_size_x = 4) in;
layout(set = 1, binding = 0) uniform U { uint k; };
layout(set = 1, binding = 1) writeonly buffer O { uint o[]; };
void main() { o[gl_GlobalInvocationID.x] = k + gl_GlobalInvocationID.x; }
