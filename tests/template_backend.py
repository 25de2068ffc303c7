"""A synthetic template-driven backend: shaders that are templates its own generator renders.

``make_backend(root, listing=LISTING)`` writes, into a folder with no ``glsl/``:

- ``templates/*.glsl.in``: three shader templates and one header template
  (``indexing.glslh.in``, included by the binary and reduce shaders), in a
  small template language of the backend's own: ``${NAME}`` substitutes,
  ``$if NAME == value:`` ... ``$endif`` keeps lines;
- ``templates/variants.yaml``: a YAML-like variant list (op kind -> ops,
  element types, dims, subgroup size);
- ``codegen/gen.py``: the generator. It renders every variant's source
  (``source_text``, with the templates it came from) and the shared header
  (``files()``), and gives each variant ``meta`` (its subgroup size, op and
  type) for the registration table;
- ``tools/registry.inc.j2``: a project template rendering that table from
  ``meta``; ``pyproject.toml``.

With the default listing: 18 binary + 15 unary + 18 reduce = 51 variants.
``names_by_template(root)`` gives the variant names of each template.
Valid GLSL for float (the real-glslang tests use a float-only listing).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

LISTING = """\
# op kind -> its ops, element types (and dims), the subgroup size the C++ side dispatches with
binary_op:
  ops: [add, sub, mul, div, max, min]
  dtypes: [float, int, uint]
  subgroup: 64
unary_op:
  ops: [neg, abs, sign, square, copy]
  dtypes: [float, int, uint]
  subgroup: 32
reduce:
  ops: [sum, max, min]
  dtypes: [float, int, uint]
  dims: [row, col]
  subgroup: 64
"""

GEN = '''\
"""The backend's code generator: templates in its own small language, rendered for genspirv."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LISTING = "templates/variants.yaml"
EXPRS = {"add": "a[i] + b[i]", "sub": "a[i] - b[i]", "mul": "a[i] * b[i]", "div": "a[i] / b[i]",
         "max": "max(a[i], b[i])", "min": "min(a[i], b[i])", "neg": "-a[i]", "abs": "abs(a[i])",
         "sign": "sign(a[i])", "square": "a[i] * a[i]", "copy": "a[i]", "sum": "acc + a[j]"}
REDUCE = {"sum": "acc + a[j]", "max": "max(acc, a[j])", "min": "min(acc, a[j])"}


def render(template, values):
    """${NAME} substitutes; $if NAME == value: ... $endif keeps the lines between when it holds."""
    out, keep = [], [True]
    for line in (ROOT / template).read_text().splitlines():
        m = re.match(r"\\s*\\$if (\\w+) == (\\w+):$", line)
        if m:
            keep.append(keep[-1] and values[m[1]] == m[2])
        elif line.strip() == "$endif":
            keep.pop()
        elif keep[-1]:
            out.append(re.sub(r"\\$\\{(\\w+)\\}", lambda n: str(values[n[1]]), line))
    return "\\n".join(out) + "\\n"


def load_listing():
    """The YAML-like list: `kind:` lines, then `  key: [a, b]` or `  key: value` under each."""
    kinds = {}
    for line in (ROOT / LISTING).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if not line.startswith(" "):
            kind = kinds.setdefault(line.rstrip(":"), {})
            continue
        key, value = (part.strip() for part in line.split(":", 1))
        kind[key] = [v.strip() for v in value[1:-1].split(",")] if value.startswith("[") else value
    return kinds


def files():
    return [{"path": "indexing.glslh", "text": render("templates/indexing.glslh.in", {}),
             "template": "templates/indexing.glslh.in"}]


def variants():
    out = []
    for kind, spec in load_listing().items():
        template = f"templates/{kind}.glsl.in"
        for op in spec["ops"]:
            for dtype in spec["dtypes"]:
                for dim in spec.get("dims", [""]):
                    name = "_".join(x for x in (kind, op, dtype, dim) if x)
                    values = {"DTYPE": dtype, "SUBGROUP": spec["subgroup"], "DIM": dim,
                              "EXPR": REDUCE[op] if kind == "reduce" else EXPRS[op]}
                    out.append({"name": name, "source": f"{name}.comp", "source_text": render(template, values),
                                "template": [template, LISTING],
                                "meta": {"subgroup": int(spec["subgroup"]), "op": op, "dtype": dtype}})
    return out
'''

TEMPLATES = {
    "templates/indexing.glslh.in": """\
        #ifndef INDEXING_GLSLH
        #define INDEXING_GLSLH
        uint linear_index() { return gl_GlobalInvocationID.x; }
        #endif
        """,
    "templates/binary_op.glsl.in": """\
        #version 450
        #include "indexing.glslh"
        layout(local_size_x = ${SUBGROUP}) in;
        layout(std430, binding = 0) readonly buffer A { ${DTYPE} a[]; };
        layout(std430, binding = 1) readonly buffer B { ${DTYPE} b[]; };
        layout(std430, binding = 2) writeonly buffer C { ${DTYPE} c[]; };
        void main() {
            uint i = linear_index();
            c[i] = ${EXPR};
        }
        """,
    "templates/unary_op.glsl.in": """\
        #version 450
        layout(local_size_x = ${SUBGROUP}) in;
        layout(std430, binding = 0) readonly buffer A { ${DTYPE} a[]; };
        layout(std430, binding = 1) writeonly buffer B { ${DTYPE} b[]; };
        void main() {
            uint i = gl_GlobalInvocationID.x;
            b[i] = ${EXPR};
        }
        """,
    "templates/reduce.glsl.in": """\
        #version 450
        #include "indexing.glslh"
        layout(local_size_x = ${SUBGROUP}) in;
        layout(std430, binding = 0) readonly buffer A { ${DTYPE} a[]; };
        layout(std430, binding = 1) writeonly buffer B { ${DTYPE} b[]; };
        layout(push_constant) uniform P { uint rows; uint cols; } p;
        void main() {
            uint i = linear_index();
            ${DTYPE} acc = ${DTYPE}(0);
        $if DIM == row:
            for (uint k = 0; k < p.cols; ++k) { uint j = i * p.cols + k; acc = ${EXPR}; }
        $endif
        $if DIM == col:
            for (uint k = 0; k < p.rows; ++k) { uint j = k * p.cols + i; acc = ${EXPR}; }
        $endif
            b[i] = acc;
        }
        """,
    "tools/registry.inc.j2": """\
        // {{ banner }}
        {% for s in shaders %}
        REGISTER_SHADER({{ s.name }}, {{ s.meta.subgroup }}, "{{ s.meta.op }}", "{{ s.meta.dtype }}")
        {% endfor %}
        """,
}

PYPROJECT = """\
[tool.genspirv]
generator = "codegen/gen.py"
generate = [ { template = "tools/registry.inc.j2", output = "src/registry.inc" } ]
"""


def make_backend(root: Path, listing: str = LISTING) -> Path:
    files = {**{rel: textwrap.dedent(text) for rel, text in TEMPLATES.items()},
             "codegen/gen.py": GEN, "templates/variants.yaml": listing, "pyproject.toml": PYPROJECT}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def names_by_template(config) -> dict[str, set[str]]:
    """Variant names by the shader template they were rendered from (binary_op, unary_op, reduce)."""
    out: dict[str, set[str]] = {}
    for v in config.variants:
        out.setdefault(v.name.split("_op_")[0] if "_op_" in v.name else v.name.split("_")[0], set()).add(v.name)
    return out
