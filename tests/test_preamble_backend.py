"""A backend that writes its headers in its build script, migrated without a hand edit.

The shape of a real one: compute sources with no ``#version``, a build script
that writes each variant as a header (``#version 450 core``, ``layout(std430)
buffer;``, the fp16 extensions, ``#define FLOAT ...``: one header for fp32,
another for fp16) followed by the source, variants from a JSON table. Here
the two headers are preambles and the script's loop is a generator reading
the same JSON table. Through real glslang: build, check, a no-op, an edit of
one preamble that rebuilds exactly its variants, and every blob byte for byte
what the script's own concatenation gives when compiled by glslang directly;
the define the table passes but no source reads is what ``identical-blobs``
finds.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from corpus import tools
from genspirv.buildsys.builder import build
from genspirv.buildsys.builder import check
from genspirv.project.config import load_config
from genspirv.lint.findings import lint
from genspirv.manifest import load_manifest

pytestmark = pytest.mark.slow       # ~30 real compiles

HEADERS = {
    "fp32": """\
        #version 450 core
        layout(std430) buffer;
        #define FLOAT float
        #define FLOAT4 vec4
        """,
    "fp16": """\
        #version 450 core
        layout(std430) buffer;
        #extension GL_EXT_shader_16bit_storage : require
        #extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
        #define FLOAT float16_t
        #define FLOAT4 f16vec4
        """,
}
SOURCES = {
    "unary.comp": """\
        layout(local_size_x = 64) in;
        layout(binding = 0) readonly buffer X { FLOAT4 x[]; };
        layout(binding = 1) writeonly buffer Y { FLOAT4 y[]; };
        layout(push_constant) uniform P { uint n; } p;
        void main() {
            uint i = gl_GlobalInvocationID.x;
            if (i >= p.n) return;
        #ifdef RELU
            y[i] = max(x[i], FLOAT4(0));
        #elif defined(SQUARE)
            y[i] = x[i] * x[i];
        #endif
        }
        """,
    "binary.comp": """\
        layout(local_size_x = 64) in;
        layout(binding = 0) readonly buffer A { FLOAT4 a[]; };
        layout(binding = 1) readonly buffer B { FLOAT4 b[]; };
        layout(binding = 2) writeonly buffer C { FLOAT4 c[]; };
        void main() {
            uint i = gl_GlobalInvocationID.x;
            c[i] = OP(a[i], b[i]);
        }
        """,
    "scale.comp": """\
        layout(local_size_x = 64) in;
        layout(binding = 0) buffer X { FLOAT x[]; };
        layout(constant_id = 0) const float SCALE = 2.0;
        void main() { x[gl_GlobalInvocationID.x] *= FLOAT(SCALE); }
        """,
}
# The backend's table: each source's variants (defines) and the precisions each is built in.
# BROADCAST is read by no source: the add and add_bcast variants come out byte-identical.
TABLE = [
    {"source": "unary.comp", "variants": {"relu": {"RELU": "1"}, "square": {"SQUARE": "1"}},
     "precisions": ["fp32", "fp16"]},
    {"source": "binary.comp", "precisions": ["fp32", "fp16"],
     "variants": {"add": {"OP": "ADD"}, "add_bcast": {"OP": "ADD", "BROADCAST": "1"}}},
    {"source": "scale.comp", "precisions": ["fp32"], "variants": {"": {}}},
]
GENERATOR = '''\
"""The backend's variants: its build script's loop over the JSON table, with the headers as preambles."""
import json
from pathlib import Path


def variants():
    table = json.loads((Path(__file__).parent / "variants.json").read_text())
    out = []
    for entry in table:
        stem = entry["source"].rsplit(".", 1)[0]
        for op, defines in entry["variants"].items():
            for precision in entry["precisions"]:
                out.append({"name": "_".join(p for p in (stem, op, precision) if p), "source": entry["source"],
                            "defines": defines, "preamble": f"glsl/headers/{precision}.glsl"})
    return out
'''
# What the backend's own C does with OP: the generator passes defines whose values are macro names.
OPS = "#define ADD(x, y) ((x) + (y))\n#define MUL(x, y) ((x) * (y))\n"


def make_backend(root: Path) -> Path:
    files = {f"glsl/headers/{p}.glsl": textwrap.dedent(h) + OPS for p, h in HEADERS.items()}
    files.update({f"glsl/{name}": textwrap.dedent(text) for name, text in SOURCES.items()})
    files.update({"build/variants.json": json.dumps(TABLE, indent=1), "build/variants.py": GENERATOR,
                  "pyproject.toml": '[tool.genspirv]\ngenerator = "build/variants.py"\n', ".gitignore": ".genspirv/\n"})
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root,
                          capture_output=True, text=True, check=True).stdout


FP16 = ["binary_add_bcast_fp16", "binary_add_fp16", "unary_relu_fp16", "unary_square_fp16"]
FP32 = ["binary_add_bcast_fp32", "binary_add_fp32", "scale_fp32", "unary_relu_fp32", "unary_square_fp32"]


def test_a_backend_with_headers_in_its_build_script_migrates_without_a_hand_edit(tmp_path):
    root = make_backend(tmp_path / "backend")
    git(root, "init", "-q")
    config = load_config(root)
    assert sorted(v.name for v in config.variants) == sorted(FP16 + FP32)
    report = build(config)
    assert sorted(report.compiled) == sorted(FP16 + FP32)

    # Every blob is what the script's own file (header, then source) gives, compiled by glslang directly.
    script = tmp_path / "script"
    script.mkdir()
    for v in config.variants:
        written = script / f"{v.name}.comp"
        written.write_text((root / v.preamble).read_text() + (root / v.source).read_text())
        direct = tools.compile_glsl(written, "vulkan1.2", tuple(f"-D{k}={x}" for k, x in v.defines))
        assert (root / config.blob_relpath(v)).read_bytes() == direct, v.name

    assert check(load_config(root)).ok
    git(root, "add", ".")
    git(root, "commit", "-qm", "backend")
    noop = build(load_config(root))
    assert noop.compiled == () and noop.written == ()

    # Editing the fp16 header rebuilds exactly the fp16 variants.
    header = root / "glsl/headers/fp16.glsl"
    header.write_text(header.read_text() + "#define FLOAT2 f16vec2\n")
    edited = build(load_config(root))
    assert sorted(edited.compiled) == FP16 and sorted(edited.up_to_date) == FP32
    # A new header line changes no instruction: the blobs stay as committed; the manifest records the new keys.
    assert edited.written == ("manifests/shaders.json",)
    assert git(root, "status", "--porcelain", "--untracked-files=all").splitlines() == [
        " M glsl/headers/fp16.glsl", " M manifests/shaders.json"]

    # The define no source reads: the add and add_bcast variants are the same bytes.
    findings = [f for f in lint(load_manifest(root / "manifests/shaders.json")) if f.kind == "identical-blobs"]
    assert [str(f) for f in findings] == [
        f"binary_add_bcast_{p}: binary_add_bcast_{p}, binary_add_{p} are byte-identical blobs of glsl/binary.comp: "
        f"their defines differ (binary_add_bcast_{p}: BROADCAST=1; binary_add_{p}: no BROADCAST), which changes "
        "nothing in the bytes; one variant would serve them all [identical-blobs]" for p in ("fp16", "fp32")]
