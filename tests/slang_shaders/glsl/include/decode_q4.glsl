#ifndef DECODE_Q4_GLSL
#define DECODE_Q4_GLSL
#include "blocks.glsl"

layout(buffer_reference, std430, buffer_reference_align = 2) buffer Q4Ref {
    block_q4 block;
};

// Element coordInBlock[1] of one block, as a coopmat2 tensor load calls it.
float16_t decode_q4(const in Q4Ref ref, const in uint blockCoords[2], const in uint coordInBlock[2])
{
    const uint i = coordInBlock[1];
    const uint byte_ = uint(ref.block.nibbles[i & 15u]);
    const uint nibble = (byte_ >> ((i & 16u) >> 2)) & 15u;
    return float16_t(int(nibble) - 8) * ref.block.scale;
}
#endif
