"""A synthetic GPU backend's shader project, in the shape of a real LLM backend's (written here).

What it has, because real backends have it:

- several sources sharing headers under ``glsl/include/``, included by bare
  name and without ``#extension GL_GOOGLE_include_directive``;
- a generator file (``shaders/variants.py``) that builds the variants: coupled
  defines (``A_TYPE`` goes with ``DATA_A_<TYPE>``, a define name built from an
  axis), two name prefixes on one source (``matmul_*`` and ``matmul_id_*``),
  a per-variant target env, optimised and unoptimised variants, a validation
  opt-out, and an optional variant needing ``GL_NV_cooperative_matrix2``, which
  glslang 13.1.1 lacks (optional through its source's table in pyproject.toml);
- one source of ``COPY_VARIANTS`` variants (``copy.comp``), to break and fix;
- an excluded folder holding a source that does not compile.

``write_backend(root)`` writes it and returns the names of the variants by
source, so tests can assert exactly which variants a build touched.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

COPY_VARIANTS = 40
TYPES = {"F32": "float", "I32": "int", "U32": "uint"}

PYPROJECT = """\
[project]
name = "fake-backend"
version = "0"

[tool.genspirv]
glslang = "13.1.1"
generator = "shaders/variants.py"
exclude = ["experimental/*"]
flags = ["--quiet"]

[tool.genspirv.shaders."coopmat2.comp"]
optional = true
"""

FILES = {
    "glsl/include/types.glsl": """\
        #ifndef TYPES_GLSL
        #define TYPES_GLSL
        #extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
        layout(constant_id = 0) const uint BLOCK = 64;
        layout(local_size_x_id = 1) in;
        #endif
        """,
    "glsl/include/dequant.glsl": """\
        #ifndef DEQUANT_GLSL
        #define DEQUANT_GLSL
        #include "types.glsl"
        #if defined(DATA_A_F32)
        float dequant(A_TYPE v) { return v; }
        #elif defined(DATA_A_I32) || defined(DATA_A_U32)
        float dequant(A_TYPE v) { return float(v) * 0.5; }
        #else
        #error "one DATA_A_<TYPE> must be defined"
        #endif
        #endif
        """,
    "glsl/matmul.comp": """\
        #version 450
        #include "dequant.glsl"
        layout(std430, binding = 0) readonly buffer ABuf { A_TYPE a[]; };
        layout(std430, binding = 1) readonly buffer BBuf { float b[]; };
        layout(std430, binding = 2) writeonly buffer DBuf { float d[]; };
        #ifdef MUL_MAT_ID
        layout(std430, binding = 3) readonly buffer IdBuf { uint ids[]; };
        #endif
        layout(push_constant) uniform Push { uint m; uint n; uint k; } p;
        shared float tile[64];
        void main() {
            uint row = gl_GlobalInvocationID.x;
            if (row >= p.m) return;
            uint arow = row;
        #ifdef MUL_MAT_ID
            arow = ids[row % p.m];
        #endif
            float acc = 0.0;
            for (uint i = 0; i < p.k; ++i) {
                float x = dequant(a[arow * p.k + i]) * b[i];
                tile[gl_LocalInvocationID.x % 64] = x;
                acc += x + float(BLOCK) * 0.0;
            }
            for (uint j = 0; j < p.n; ++j) {
                d[row * p.n + j] = acc * float(j + 1);
            }
        }
        """,
    "glsl/copy.comp": """\
        #version 450
        #include "types.glsl"
        layout(std430, binding = 0) readonly buffer Src { uint src[]; };
        layout(std430, binding = 1) writeonly buffer Dst { uint dst[]; };
        layout(push_constant) uniform Push { uint n; } p;
        void main() {
            uint i = gl_GlobalInvocationID.x;
            if (i < p.n) dst[i] = src[i] * SCALE + OFFSET;
        }
        """,
    "glsl/norm.comp": """\
        #version 450
        layout(local_size_x = 32) in;
        layout(std430, binding = 0) buffer X { float x[]; };
        void main() { x[gl_GlobalInvocationID.x] *= EPS; }
        """,
    "glsl/coopmat2.comp": """\
        #version 450
        #extension GL_NV_cooperative_matrix2 : require
        #include "types.glsl"
        layout(std430, binding = 0) buffer X { float x[]; };
        void main() { x[gl_GlobalInvocationID.x] = 1.0; }
        """,
    "glsl/experimental/wip.comp": """\
        #version 450
        this is not GLSL yet
        """,
    "shaders/variants.py": """\
        \"\"\"The fake backend's variants: what a C++ generator of a real backend would list.\"\"\"

        TYPES = {"F32": "float", "I32": "int", "U32": "uint"}
        COPY_VARIANTS = %(copy)d


        def _matmul(prefix, extra):
            for tag, glsl_type in TYPES.items():
                defines = {"A_TYPE": glsl_type, f"DATA_A_{tag}": "1", **extra}
                name = f"{prefix}_{tag.lower()}"
                # Optimised like a release build; an _noopt twin of f32 for comparison.
                yield {"name": name, "source": "matmul.comp", "defines": defines, "optimize": True}
                if tag == "F32":
                    yield {"name": name + "_noopt", "source": "matmul.comp", "defines": defines}


        def variants():
            out = list(_matmul("matmul", {}))
            out += _matmul("matmul_id", {"MUL_MAT_ID": "1"})
            for i in range(COPY_VARIANTS):
                out.append({"name": f"copy_{i}", "source": "copy.comp",
                            "defines": {"SCALE": f"{i + 1}u", "OFFSET": f"({i}u * 3u)"}})
            out.append({"name": "copy_v13", "source": "copy.comp", "target_env": "vulkan1.3",
                        "defines": {"SCALE": "2u", "OFFSET": "0u"}})
            out.append({"name": "norm_noval", "source": "norm.comp", "defines": {"EPS": "1e-6"},
                        "validate": False})
            out.append({"name": "matmul_cm2", "source": "coopmat2.comp"})
            return out
        """ % {"copy": COPY_VARIANTS},
}


def variant_names() -> dict[str, tuple[str, ...]]:
    """The variant names each source builds (the unavailable one included)."""
    matmul = tuple(f"{p}_{t.lower()}" for p in ("matmul", "matmul_id") for t in TYPES) + \
        ("matmul_f32_noopt", "matmul_id_f32_noopt")
    return {"glsl/matmul.comp": tuple(sorted(matmul)),
            "glsl/copy.comp": tuple(sorted([f"copy_{i}" for i in range(COPY_VARIANTS)] + ["copy_v13"])),
            "glsl/norm.comp": ("norm_noval",),
            "glsl/coopmat2.comp": ("matmul_cm2",)}


def write_backend(root: Path) -> dict[str, tuple[str, ...]]:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (root / "pyproject.toml").write_text(PYPROJECT)
    return variant_names()
