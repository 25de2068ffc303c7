"""Compilers besides the pinned glslangValidator (docs/COMPILERS.md).

``slang_glslang`` is the newer glslang that the ``slangpy`` wheel ships as a
shared library: ``library`` binds its C entry point, ``workers`` runs it in
worker processes, ``preprocess`` prepares a variant's text with the pinned
glslang's own preprocessor, ``slang_glslang`` puts them together.
"""
