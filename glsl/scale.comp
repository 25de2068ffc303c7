// Y = alpha * X over n elements.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "elementwise.glsl"

layout(std430, set = 0, binding = 0) readonly buffer XBuf { TYPE data[]; } X;
layout(std430, set = 0, binding = 1) writeonly buffer YBuf { TYPE data[]; } Y;
layout(push_constant) uniform Push { uint n; float alpha; } pc;

void main() {
    FOR_EACH_ELEMENT(i, pc.n) {
        Y.data[i] = TYPE(pc.alpha * float(X.data[i]));
    }
}
