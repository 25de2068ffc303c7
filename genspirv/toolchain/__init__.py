"""The tools a build runs: finding them, running them, and the compiler seam.

``tools`` finds the pinned glslangValidator and SPIRV-Tools (and checks their
pins); ``children`` starts and bounds their processes; ``spirv_tools`` runs
spirv-opt, spirv-val and spirv-dis on a blob; ``includes`` and ``preamble``
read a source's includes and compose its preamble; ``compiler`` is the seam
every compiler stands behind (``Compiler``, ``Job``, ``Versions``); ``chain``
opens the compilers of one build and picks each variant's; ``workers`` is the
one pool of worker processes (jobs over pipes, killed with what they started);
``slang`` is the second compiler, slang-glslang, in worker processes. Takes the project's
vocabulary (``genspirv.project``); knows nothing of plans, caches or outputs.
"""

from .tools import find_tool

__all__ = ["find_tool"]
