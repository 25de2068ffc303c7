"""Edge-case shaders for the reflection tests: GLSL (*.comp) and SPIR-V assembly (*.spvasm)."""
