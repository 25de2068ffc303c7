"""The LLM kernel library's demo: a small Llama-shaped decoder on the runtime.

- ``model``: the numpy float32 reference of every kernel and of the decoder,
  and the fixed-seed weights (no Vulkan).
- ``reorder``: the reorder pass (levels of the dependency DAG the runtime's
  hazard tracker sees; no Vulkan).
- ``driver``: the decoder on a ``Device`` and ``decode_rounds``, the measured
  loop that ``python -m examples.llm`` and ``python -m benchmarks demo`` both run.
- ``compare``: the comparison rule (device decode against the reference).
- ``report``: the demo's report dict, table and JSON.
- ``demo``: the ``python -m examples.llm`` command.
- ``kernel_groups``: group counts and the ``mul_mat_vec`` variant for a device (pure).
"""
