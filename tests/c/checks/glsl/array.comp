#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint v[]; } bufs[2];
void main() { bufs[0].v[0] = bufs[1].v[0]; }
