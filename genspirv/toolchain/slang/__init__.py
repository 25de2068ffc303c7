"""Compilers besides the pinned glslangValidator (docs/COMPILERS.md).

slang-glslang is the newer glslang that the ``slangpy`` wheel ships as a shared
library. ``slang_glslang`` is its public face (``open_slang_glslang``,
``SlangGlslang.compile``, ``supports``); ``library`` binds its C entry point,
``pinned_glslang`` the pinned glslang's preprocessor, ``preprocess`` says what
that preprocessor is told and what is kept of its output, ``probes`` asks the
compiler what it predefines and builds, ``job`` is one unit of work in a worker,
``workers`` runs the workers (on the shared pool, ``genspirv.toolchain.workers``).
"""
