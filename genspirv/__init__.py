"""genspirv: reproducible SPIR-V, reflection manifests, a dependency-aware Vulkan runtime."""

from .errors import *  # noqa: F401,F403  (the error hierarchy is public API)
from .errors import GenspirvError

__version__ = "0.1.0"
__all__ = ["GenspirvError", "__version__"]
