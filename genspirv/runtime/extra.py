"""The runtime extra: whether numpy and vulkan can be imported, and the one error naming what to install.

Takes nothing; gives ``PURE``, the runtime's modules that need neither, and
``missing_extra()``: None when both can be imported, else the
``ExtraMissingError`` that says which are missing and names the extra
(``pip install 'genspirv[runtime]'``). The package's lazy public names ask it
before they load a module that needs the extra, and every such module raises
it from its first statement, before it imports anything that needs them: so
importing any part of the runtime without the extra ends in that one line
under a traceback of one frame inside genspirv, never in ``No module named
'numpy'`` from a module further down. Pure: no numpy, no Vulkan.
"""

from __future__ import annotations

import importlib.util
from typing import Optional

from ..errors import ExtraMissingError

# The runtime's modules that import neither numpy nor vulkan (docs/ARCHITECTURE.md: the pure layers).
PURE = frozenset({"extra", "hazards", "sharing", "limits", "profile", "args", "push", "trust"})

EXTRA_MODULES = ("numpy", "vulkan")


def missing_extra() -> Optional[ExtraMissingError]:
    """None when numpy and vulkan can be imported; else the error naming the missing ones and the extra."""
    missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    return ExtraMissingError.runtime(missing) if missing else None
