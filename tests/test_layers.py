"""The package's shape: layers, no import cycles, no module over 500 lines without a reason.

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
import re
from pathlib import Path

import genspirv

PACKAGE = Path(genspirv.__file__).parent

# Lowest first; a unit imports only from layers below its own.
LAYERS = [
    {"errors"},
    {"__init__", "settings", "fsutil", "console"},  # the settings table; atomic writes and locks; the terminal
    {"statedir"},                   # the .genspirv/ folder: its files' names, bounded reads, the project lock
    {"cachestats"},                 # the caches' counters, kept under a lock
    {"reflect"},                    # the SPIR-V reader and reflection: pure, on bytes
    {"project"},                    # the vocabulary: config, variants, generators, generated sources
    {"manifest"},                   # the JSON format
    {"toolchain", "remote"},        # the tools and the compiler seam; the remote cache
    {"runtime"},                    # the Vulkan runtime, on the manifest
    {"emit", "lint"},               # generated C, C++ and CMake; lint's findings and suppressions
    {"buildsys"},                   # plan, caches, compiles, outputs, commit; build and check
    {"scaffold"},                   # genspirv init
    {"commands"},                   # --json and annotations; `cache`; `reflect`
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
    top = PACKAGE / "cli.py"
    assert imported_units(top, "from .buildsys.plan import Plan\nfrom . import settings\n") == {"buildsys", "settings"}
    deep = PACKAGE / "toolchain" / "slang" / "workers.py"
    assert imported_units(deep, "from ... import settings\nfrom .. import children\nfrom ...errors import E\n") \
        == {"settings", "errors"}
    assert imported_units(top, "from . import __version__\n") == {"__init__"}
    lazy = "def f():\n    from .emit import render\n"
    assert imported_units(top, lazy) == {"emit"}


MAX_LINES = 500
# A module is split where it has a seam, not where it reaches a count: one past
# MAX_LINES says why in its docstring, on one line, e.g. "longer than 500 lines
# because the table and its one reader belong together".
LONG_REASON = re.compile(rf"^longer than {MAX_LINES} lines because \S")


def too_long(sources: dict[str, str]) -> dict[str, int]:
    """The modules of ``sources`` (name -> text) over MAX_LINES whose docstring gives no reason."""
    long = {}
    for name, source in sorted(sources.items()):
        n = len(source.splitlines())
        if n <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(source)) or ""
        if not any(LONG_REASON.match(line.strip()) for line in doc.splitlines()):
            long[name] = n
    return long


def test_no_module_is_over_500_lines():
    """Unless its docstring says ``longer than 500 lines because ...``."""
    sources = {p.relative_to(PACKAGE).as_posix(): p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py")}
    assert too_long(sources) == {}


def test_a_long_module_without_its_reason_is_reported():
    """Negative control: 600 lines are reported unless the docstring gives the reason on one line;
    the words elsewhere (a comment, a string after the docstring) or with no reason do not count."""
    body = "x = 1\n" * 600
    reason = "longer than 500 lines because the table and its one reader belong together"
    made_up = {
        "no_docstring.py": body,
        "no_reason.py": '"""A module."""\n' + body,
        "empty_reason.py": '"""A module.\n\nlonger than 500 lines because\n"""\n' + body,
        "in_a_comment.py": f'"""A module."""\n# {reason}\n' + body,
        "in_a_later_string.py": f'"""A module."""\n"{reason}"\n' + body,
        "with_reason.py": f'"""A module.\n\n{reason}.\n"""\n' + body,
        "short.py": '"""A module."""\n' + "x = 1\n" * 499,
    }
    assert set(too_long(made_up)) == {"no_docstring.py", "no_reason.py", "empty_reason.py", "in_a_comment.py",
                                      "in_a_later_string.py"}


def module_of(path: Path) -> str:
    """The dotted module a file is, under genspirv: ``build.plan``, ``reflect`` for reflect/__init__.py."""
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _module_exists(dotted: str) -> bool:
    base = PACKAGE.joinpath(*dotted.split(".")) if dotted else PACKAGE
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imported_modules(path: Path, source: str) -> set[str]:
    """Every genspirv module ``source`` (the file at ``path``) imports, dotted under genspirv."""
    module = module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                base = parts[:len(parts) - (node.level - 1)]
                target = ".".join(base + (node.module.split(".") if node.module else []))
            elif node.module == "genspirv" or (node.module or "").startswith("genspirv."):
                target = node.module[len("genspirv."):] if node.module != "genspirv" else ""
            else:
                continue
            subs = {f"{target}.{a.name}".lstrip(".") for a in node.names}
            found.update(s for s in subs if _module_exists(s))
            if any(not _module_exists(s) for s in subs):
                found.add(target)
        elif isinstance(node, ast.Import):
            found.update(a.name[len("genspirv."):] for a in node.names if a.name.startswith("genspirv."))
    return found - {module}


def module_imports() -> dict[str, set[str]]:
    return {module_of(p): imported_modules(p, p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_cycle_between_any_two_modules():
    """Inside the packages too, lazy imports included: no module reaches itself."""
    assert cycles(module_imports()) == []


def test_an_import_cycle_is_reported():
    """Negative control: the plan importing the builder, which imports the plan, is a cycle."""
    graph = module_imports()
    graph["buildsys.plan"] = graph["buildsys.plan"] | {"buildsys.builder"}
    assert any({"buildsys.builder", "buildsys.plan"} <= set(c) for c in cycles(graph))
