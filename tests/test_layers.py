"""The package's shape: layers, no import cycles, no module over 500 lines.

Read from the source with ``ast`` (nothing is imported). Every import inside
genspirv/ (lazy ones inside functions and ``if TYPE_CHECKING`` ones included)
goes from a top-level unit (a module, or a subpackage taken whole) to a unit
of a lower layer, as docs/ARCHITECTURE.md draws them: the build's stages in
data-flow order, the runtime beside them, then the consumers (demo,
benchmarks, commands). Inside a subpackage its own order holds
(tests/test_runtime_layers.py for the runtime). Each check carries a negative
control: the same check over a made-up import that breaks it reports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import genspirv

PACKAGE = Path(genspirv.__file__).parent

# Lowest first; a unit imports only from layers below its own.
LAYERS = [
    {"errors", "lint_rules"},
    {"__init__", "settings", "spirv", "variant_names", "fsutil", "children", "console", "remote_url",
     "isolated", "statlog"},
    {"generated", "variants", "reflect", "includes", "preamble", "cachestats"},
    # ^ generated files; variant tables; SPIR-V facts; the caches' counters
    {"generator"},                                  # a generator file run, its variants and files checked
    {"config"},                                     # the project's settings
    {"manifest", "toolchain", "remote_entry"},      # the JSON format; the pinned tools; remote entries
    {"spirv_tools"},                                # spirv-opt, spirv-val, spirv-dis on a blob
    {"buildstate", "compiler", "runtime", "remote_cache"},
    {"blobcache"},                                  # compiled blobs by content key
    {"compilers"},                                  # every compiler of a build, and each variant's chain
    {"plan", "compile", "emit", "lint"},
    {"outputs", "suppress", "selection", "buildreport", "noopstamp", "remote_plan"},
    # ^ ... ; build NAME...'s plan; what a build did; a no-op decided from stat() alone; the remote
    #   cache's fetches in the plan
    {"commit"},                                     # outputs put in place all or none
    {"build"},
    {"check", "scaffold"},
    {"llm"},                                        # the demo, on the runtime's public API
    {"bench"},                                      # every benchmark
    {"results", "cache_command", "reflect_command"},   # --json and annotations; `cache`; `reflect`
    {"cli"},
    {"__main__"},
]
LAYER = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def unit_of(path: Path) -> str:
    """The top-level unit a file belongs to: ``build`` for build.py, ``runtime`` for runtime/x.py."""
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _is_unit(name: str) -> bool:
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file()


def imported_units(path: Path, source: str) -> set[str]:
    """The top-level units of genspirv that ``source`` (the file at ``path``) imports."""
    depth = len(path.relative_to(PACKAGE).parts) - 1       # 0 for a top-level module
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                up = node.level - 1                          # levels above this file's own package
                if up > depth:
                    continue
                if up < depth:
                    continue                                 # inside this file's own subpackage
                if node.module:
                    found.add(node.module.split(".")[0])
                else:       # from . import x: a module, or a name of the package's __init__
                    found.update(a.name if _is_unit(a.name) else "__init__" for a in node.names)
            elif node.module and node.module.startswith("genspirv."):
                found.add(node.module.split(".")[1])
            elif node.module == "genspirv":
                found.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("genspirv."):
                    found.add(a.name.split(".")[1])
    return found


def violations(imports: dict[str, set[str]]) -> list[str]:
    out = []
    for unit, targets in sorted(imports.items()):
        for target in sorted(targets - {unit}):
            if LAYER.get(target, 99) >= LAYER[unit]:
                out.append(f"{unit} imports {target}")
    return out


def package_imports() -> dict[str, set[str]]:
    imports: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = unit_of(path)
        imports.setdefault(unit, set()).update(imported_units(path, path.read_text(encoding="utf-8")))
    return imports


def test_every_unit_has_a_layer():
    units = {unit_of(p) for p in PACKAGE.rglob("*.py")}
    assert units - set(LAYER) == set(), "add the new module to LAYERS (and to docs/ARCHITECTURE.md)"


def test_imports_only_go_down_the_layers():
    assert violations(package_imports()) == []


def test_a_back_up_import_is_reported():
    """Negative control: the manifest importing the build, or the runtime the CLI, is caught."""
    imports = package_imports()
    imports["manifest"] = imports["manifest"] | {"build"}
    imports["runtime"] = imports["runtime"] | {"cli"}
    assert violations(imports) == ["manifest imports build", "runtime imports cli"]


def test_relative_imports_are_read_at_the_right_level():
    inner = PACKAGE / "runtime" / "device.py"
    assert imported_units(inner, "from ..manifest import load_manifest\nfrom .kernel import Kernel\n") == {"manifest"}
    top = PACKAGE / "build.py"
    assert imported_units(top, "from .plan import Plan\nfrom . import settings\n") == {"plan", "settings"}
    assert imported_units(top, "from . import __version__\n") == {"__init__"}
    lazy = "def f():\n    from .emit import render\n"
    assert imported_units(top, lazy) == {"emit"}


def test_no_module_is_over_500_lines():
    long = {p.relative_to(PACKAGE).as_posix(): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}
