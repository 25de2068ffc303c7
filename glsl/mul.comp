// C = A * B (element-wise) over n elements.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "elementwise.glsl"

layout(std430, set = 0, binding = 0) readonly buffer ABuf { TYPE data[]; } A;
layout(std430, set = 0, binding = 1) readonly buffer BBuf { TYPE data[]; } B;
layout(std430, set = 0, binding = 2) writeonly buffer CBuf { TYPE data[]; } C;
layout(push_constant) uniform Push { uint n; } pc;

void main() {
    FOR_EACH_ELEMENT(i, pc.n) {
        C.data[i] = TYPE(float(A.data[i]) * float(B.data[i]));
    }
}
