// Y = value over n elements.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "elementwise.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer YBuf { TYPE data[]; } Y;
layout(push_constant) uniform Push { uint n; float value; } pc;

void main() {
    // Convert once: every element gets the same rounded value.
    TYPE value = TYPE(pc.value);
    FOR_EACH_ELEMENT(i, pc.n) {
        Y.data[i] = value;
    }
}
