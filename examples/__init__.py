"""Worked examples on genspirv's public APIs, outside the installed package: the C backend
(``examples/c-backend``, a CMake project) and the LLM decode demo (``examples.llm``:
``python -m examples.llm`` from a checkout)."""
