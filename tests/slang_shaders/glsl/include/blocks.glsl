#ifndef BLOCKS_GLSL
#define BLOCKS_GLSL
// A 4-bit block: 32 weights, one fp16 scale (the layout quantised backends use).
struct block_q4 {
    float16_t scale;
    uint8_t nibbles[16];
};
#endif
