// Y = value over n elements.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "elementwise.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer YBuf { TYPE data[]; } Y;
layout(push_constant) uniform Push { uint n; float value; } pc;

void main() {
    // No TYPE local: a float16_t variable would need shaderFloat16, not just 16-bit storage.
    FOR_EACH_ELEMENT(i, pc.n) {
        Y.data[i] = TYPE(pc.value);
    }
}
