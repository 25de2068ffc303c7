#version 450
// Static usage through functions: out/inout parameters, atomics, length-only, dead code.
layout(local_size_x = 64) in;
layout(binding = 0) buffer A { float v[]; } a;        // read and written in a callee
layout(binding = 1) buffer B { float v[]; } b;        // only read: lint suggests readonly
layout(binding = 2) buffer C { float v[]; } c;        // only written: lint suggests writeonly
layout(binding = 3) buffer D { float v[]; } d;        // only in a function never called
layout(binding = 4) buffer E { uint counter; } e;     // atomic
layout(binding = 5) buffer F { float v[]; } f;        // length only
layout(binding = 6) buffer G { float v[]; } g;        // declared, never touched
layout(binding = 7) readonly buffer H { float v[]; } h;

void bump(inout float x, float by) { x += by; }
float twice(float x) { return 2.0 * x; }
void dead() { d.v[0] = 1.0; }
void store_c(uint i, float x) { c.v[i] = x; }

void main() {
    uint i = gl_GlobalInvocationID.x;
    bump(a.v[i], twice(b.v[i]) + h.v[i]);
    store_c(i, float(f.v.length()));
    atomicAdd(e.counter, 1u);
}
