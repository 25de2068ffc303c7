#ifndef ACTIVATION_GLSL
#define ACTIVATION_GLSL
float relu(float v) { return max(v, 0.0); }
float silu(float v) { return v / (1.0 + exp(-v)); }
#endif
