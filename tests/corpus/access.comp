#version 450
// Access rules: readonly/writeonly blocks and members, a mixed block, qualifiers that are no access.
layout(local_size_x = 32) in;
layout(binding = 0) readonly buffer R { float a; float b[]; } r;
layout(binding = 1) writeonly buffer W { float a; float b[]; } w;
layout(binding = 2) buffer Mixed { readonly float ro; float rw[]; } mixed;
layout(binding = 3) buffer AllMembersReadonly { readonly float x; readonly float y[]; } members;
layout(binding = 4) coherent restrict buffer RW { float v[]; } rwbuf;
layout(binding = 5) volatile buffer Vol { uint v[]; } vol;
layout(binding = 6) readonly writeonly buffer Neither { float v[]; } neither;
layout(binding = 7) buffer Anon { float anon_v[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    w.b[i] = r.b[i] + mixed.ro + members.y[i] + float(neither.v.length());
    mixed.rw[i] = rwbuf.v[i] + anon_v[i];
    rwbuf.v[i] = 1.0;
    atomicAdd(vol.v[0], 1u);
}
