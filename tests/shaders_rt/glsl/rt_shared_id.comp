#version 450
// Two spec constants share id 0, as in real backends: the workgroup width
// (local_size_x_id = 0, no local_size_x: default 1) and BLOCK_SIZE (default 64).
// Each invocation writes its local index + 1, so a test sees how wide the
// workgroups that ran were.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint BLOCK_SIZE = 64u;
layout(set = 0, binding = 0) writeonly buffer Out { uint ids[]; };
void main() {
    ids[gl_WorkGroupID.x * BLOCK_SIZE + gl_LocalInvocationID.x] = gl_LocalInvocationID.x + 1u;
}
