"""Codegen: the C/C++ table compiles warning-free and agrees with the manifest.

A C program and a C++ program are built against the generated files; they
print the table as JSON and dump each module's words, and every field is
compared with the manifest JSON and every word with the blob.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from genspirv import emit
from genspirv.emit import ctable, ctext, render_input
from genspirv.errors import BlobIntegrityError, CodegenError, SpirvError
from genspirv.manifest import Manifest, ManifestEntry, Toolchain, dumps, load_manifest
from genspirv.reflect import Binding, ShaderInfo, SpecConstant

REPO = Path(__file__).resolve().parent.parent
CC = shutil.which("cc")
CXX = shutil.which("g++")


def _glslang():
    """The pinned compiler genspirv itself would run (its wheel, an override, or PATH)."""
    from genspirv.errors import GenspirvError
    from genspirv.toolchain.tools import find_tool
    try:
        return find_tool("glslangValidator")
    except GenspirvError:
        return None


GLSLANG = _glslang()
needs_cc = pytest.mark.skipif(CC is None or CXX is None, reason="needs cc and g++")

SHADERS = {
    "scale": """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { float a; uint n; } p;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] = p.a * x[i]; }
""",
    "fill": """#version 450
layout(local_size_x_id = 0, local_size_y = 2) in;
layout(constant_id = 1) const float VALUE = 0.5;
layout(constant_id = 4) const bool TWICE = false;
layout(set = 0, binding = 0) buffer Y { float y[]; };
void main() { y[gl_GlobalInvocationID.x] = TWICE ? 2.0 * VALUE : VALUE; }
""",
}


def compile_glsl(tmp: Path, name: str, text: str) -> bytes:
    if GLSLANG is None:
        pytest.skip("needs glslangValidator")
    src, out = tmp / f"{name}.comp", tmp / f"{name}.spv"
    src.write_text(text)
    subprocess.run([str(GLSLANG.path), "--target-env", "vulkan1.2", "-V", str(src), "-o", str(out)],
                   check=True, capture_output=True, timeout=60, env=GLSLANG.env())
    return out.read_bytes()


def entry(name: str, blob: bytes, info: ShaderInfo, spirv: str) -> ManifestEntry:
    return ManifestEntry(name=name, source=f"glsl/{name}.comp", defines=(("N", "1"),), spirv=spirv,
                         sha256=hashlib.sha256(blob).hexdigest(), size=len(blob), info=info)


def storage(i: int, access: str) -> Binding:
    return Binding(0, i, f"b{i}", "storage_buffer", 0, access, True, access != "read")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Manifest:
    """Real glslang blobs with varied reflection, in a project laid out like genspirv writes it."""
    root = tmp_path_factory.mktemp("codegen")
    (root / "spirv").mkdir()
    blobs = {name: compile_glsl(root, name, text) for name, text in SHADERS.items()}
    for name, blob in blobs.items():
        (root / "spirv" / f"{name}.spv").write_bytes(blob)
    infos = {
        "scale": ShaderInfo("main", (64, 1, 1), (None, None, None),
                            (storage(0, "read"), storage(1, "write")), (), 8),
        "fill": ShaderInfo("main", (32, 2, 1), (0, None, None), (storage(0, "read_write"),),
                           (SpecConstant(0, "WG", "uint32", 32), SpecConstant(1, "VALUE", "float32", 0.5),
                            SpecConstant(4, "TWICE", "bool", False)), 0),
        # Same words, a wide binding table: masks beyond 32 bits must survive.
        "wide": ShaderInfo("main", (1, 1, 1), (None, None, None),
                           tuple(storage(i, "read_write" if i in (0, 33, 39) else "read") for i in range(40)),
                           (), 128, shared_memory=4096),
    }
    entries = [entry(n, blobs["scale" if n == "wide" else n], infos[n],
                     f"spirv/{'scale' if n == 'wide' else n}.spv") for n in infos]
    # Deliberately unsorted: render must sort by name itself.
    return Manifest(Toolchain("13.1.1", "vulkan1.2", ()), tuple(entries), root=root)


C_PROGRAM = r"""
#include "shaders.h"
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    size_t i, j;
    (void)argc;
    printf("{\"count\": %u, \"missing_is_null\": %d, \"null_is_null\": %d, \"sentinel_is_null\": %d, \"modules\": [",
           (unsigned)genspirv_module_count, genspirv_find_module("no_such_shader") == NULL,
           genspirv_find_module(NULL) == NULL, genspirv_modules[genspirv_module_count].name == NULL);
    for (i = 0; i < genspirv_module_count; i++) {
        const genspirv_module *m = &genspirv_modules[i];
        char path[4096];
        FILE *f;
        snprintf(path, sizeof path, "%s/%s.words", argv[1], m->name);
        f = fopen(path, "wb");
        if (f == NULL || fwrite(m->words, 4, m->word_count, f) != m->word_count) return 2;
        fclose(f);
        printf("%s{\"name\": \"%s\", \"entry_point\": \"%s\", \"word_count\": %u, \"found\": %d, \"spec_ids\": [",
               i ? ", " : "", m->name, m->entry_point, (unsigned)m->word_count,
               genspirv_find_module(m->name) == m);
        for (j = 0; j < m->spec_count; j++) printf("%s%u", j ? ", " : "", (unsigned)m->spec_ids[j]);
        printf("], \"spec_names\": [");
        for (j = 0; j < m->spec_count; j++) printf("%s\"%s\"", j ? ", " : "", m->spec_names[j]);
        printf("], \"binding_count\": %u, \"writable_mask\": %llu, \"readable_mask\": %llu, "
               "\"push_constant_size\": %u, \"local_size\": [%u, %u, %u], \"sha256\": \"%s\"}",
               (unsigned)m->binding_count, (unsigned long long)m->writable_mask,
               (unsigned long long)m->readable_mask, (unsigned)m->push_constant_size,
               (unsigned)m->local_size[0], (unsigned)m->local_size[1], (unsigned)m->local_size[2], m->sha256);
    }
    printf("]}\n");
    return 0;
}
"""

WARNINGS = ["-Wall", "-Wextra", "-Werror", "-pedantic"]


def write_outputs(files: dict[str, bytes], where: Path) -> None:
    for rel, data in files.items():
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        (where / rel).write_bytes(data)


def run_cc(*args) -> None:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stderr}"


def build_and_run(files: dict[str, bytes], tmp: Path, cplusplus_main: bool) -> dict:
    """Compile the table as C, the reading program as C or C++, link, run, parse its JSON."""
    write_outputs(files, tmp)
    gen = tmp / "gen"
    (tmp / "main.c").write_text(C_PROGRAM)
    run_cc(CC, "-std=c99", *WARNINGS, "-c", gen / "shaders.c", "-o", tmp / "table.o")
    if cplusplus_main:
        # A C++ caller linked against the C object: only works if extern "C" is right.
        run_cc(CXX, "-std=c++11", *WARNINGS, "-x", "c++", "-I", gen, "-c", tmp / "main.c", "-o", tmp / "main.o")
        run_cc(CXX, tmp / "main.o", tmp / "table.o", "-o", tmp / "reader")
    else:
        run_cc(CC, "-std=c99", *WARNINGS, "-I", gen, tmp / "main.c", tmp / "table.o", "-o", tmp / "reader")
    dump = tmp / "words"
    dump.mkdir()
    proc = subprocess.run([tmp / "reader", dump], capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(proc.stdout)
    result["words"] = {p.stem: p.read_bytes() for p in dump.iterdir()}
    return result


def assert_table_matches_manifest(result: dict, manifest: Manifest) -> None:
    expected = json.loads(dumps(manifest))["shaders"]
    assert result["count"] == len(expected)
    assert result["missing_is_null"] == result["null_is_null"] == result["sentinel_is_null"] == 1
    assert [m["name"] for m in result["modules"]] == sorted(e["name"] for e in expected)
    for got, want in zip(result["modules"], sorted(expected, key=lambda e: e["name"])):
        blob = manifest.read_blob(manifest.entry(want["name"]))
        assert got["found"] == 1, got["name"]
        assert got["entry_point"] == want["entry_point"]
        assert got["word_count"] * 4 == want["size"] == len(blob)
        assert result["words"][want["name"]] == blob          # host is little-endian, as glslang writes
        assert got["spec_ids"] == [s["id"] for s in want["spec_constants"]]
        assert got["spec_names"] == [s["name"] for s in want["spec_constants"]]
        for key in ("binding_count", "writable_mask", "readable_mask", "push_constant_size",
                    "local_size", "sha256"):
            assert got[key] == want[key], (want["name"], key)


@needs_cc
@pytest.mark.parametrize("cplusplus_main", [False, True], ids=["c-caller", "cxx-caller"])
def test_c_table_agrees_with_manifest(project, tmp_path, cplusplus_main):
    files = emit.render("c", project, "gen/shaders")
    result = build_and_run(files, tmp_path, cplusplus_main)
    assert_table_matches_manifest(result, project)
    wide = next(m for m in result["modules"] if m["name"] == "wide")
    assert wide["writable_mask"] == (1 << 0) | (1 << 33) | (1 << 39)   # the guard against 32-bit masks


@needs_cc
def test_generated_source_compiles_as_cxx(project, tmp_path):
    write_outputs(emit.render("c", project, "gen/shaders"), tmp_path)
    run_cc(CXX, "-std=c++11", *WARNINGS, "-x", "c++", "-c", tmp_path / "gen" / "shaders.c", "-o", tmp_path / "t.o")


@needs_cc
def test_header_alone_compiles_in_c_and_cxx_and_twice(project, tmp_path):
    write_outputs(emit.render("c", project, "gen/shaders"), tmp_path)
    tu = tmp_path / "tu.c"
    tu.write_text('#include "shaders.h"\n#include "shaders.h"\nsize_t f(void) { return genspirv_module_count; }\n')
    run_cc(CC, "-std=c99", *WARNINGS, "-I", tmp_path / "gen", "-c", tu, "-o", tmp_path / "a.o")
    run_cc(CXX, "-std=c++11", *WARNINGS, "-x", "c++", "-I", tmp_path / "gen", "-c", tu, "-o", tmp_path / "b.o")


def test_render_gives_header_and_source_with_banner_and_guard(project):
    files = emit.render("c", project, "manifests/shaders")
    assert sorted(files) == ["manifests/shaders.c", "manifests/shaders.h"]
    for data in files.values():
        assert data.startswith(b"/* generated by genspirv -- do not edit")
        assert data.endswith(b"\n") and b"\r" not in data
    header = files["manifests/shaders.h"].decode()
    assert "#ifndef GENSPIRV_MANIFESTS_SHADERS_H" in header and 'extern "C"' in header
    assert '#include "shaders.h"' in files["manifests/shaders.c"].decode()


def test_words_are_eight_per_line_in_hex(project):
    source = emit.render("c", project, "gen/shaders")["gen/shaders.c"].decode()
    body = re.search(r"genspirv_words_1\[(\d+)\] = \{\n(.*?)\n\};", source, re.S)
    lines = body.group(2).split("\n")
    word = r"0x[0-9a-f]{8}"
    assert all(re.fullmatch(rf"    {word}(, {word}){{7}},", line) for line in lines[:-1])
    assert re.fullmatch(rf"    {word}(, {word}){{0,7}}", lines[-1])
    assert sum(line.count("0x") for line in lines) == int(body.group(1))
    assert lines[0].startswith("    0x07230203, ")


def test_render_is_deterministic_and_order_independent(project):
    a = emit.render("c", project, "gen/shaders")
    reordered = Manifest(project.toolchain, tuple(reversed(project.shaders)), root=project.root)
    assert emit.render("c", reordered, "gen/shaders") == a == emit.render("c", project, "gen/shaders")
    text = b"".join(a.values()).decode()
    assert str(project.root) not in text                # no absolute paths
    assert not re.search(r"20\d\d-\d\d-\d\d", text)     # no dates


def test_fresh_blobs_are_used_and_verified(project, tmp_path):
    """Build renders before it writes the blobs: the bytes it hands over win, and are checked."""
    e = project.entry("scale")
    blob = project.read_blob(e)
    moved = Manifest(project.toolchain, project.shaders, root=tmp_path)   # no blob files there
    fresh = {x.name: project.read_blob(x) for x in project.shaders}
    assert emit.render("c", moved, "g/s", blobs=fresh) == emit.render("c", project, "g/s")
    with pytest.raises(BlobIntegrityError, match="scale"):
        emit.render("c", project, "g/s", blobs={"scale": blob[:-4] + b"\0\0\0\0"})


def test_unknown_target_is_refused():
    m = Manifest(Toolchain("13.1.1", "vulkan1.2"), ())
    with pytest.raises(CodegenError, match=r"unknown generate target 'rust' \(known: c\)"):
        emit.render("rust", m, "manifests/shaders")


@pytest.mark.parametrize("output", ["", "/abs/shaders", "../shaders", "a/../b", "gen/", "a\\b", "./x"])
def test_bad_output_path_is_refused(output):
    m = Manifest(Toolchain("13.1.1", "vulkan1.2"), ())
    with pytest.raises(CodegenError, match="relative posix path"):
        emit.render("c", m, output)


@needs_cc
def test_empty_manifest_gives_a_compiling_empty_table(tmp_path):
    m = Manifest(Toolchain("13.1.1", "vulkan1.2"), (), root=tmp_path)
    result = build_and_run(emit.render("c", m, "gen/shaders"), tmp_path, cplusplus_main=False)
    assert result["count"] == 0 and result["modules"] == [] and result["missing_is_null"] == 1


def test_blob_words_reads_either_byte_order():
    words = (0x07230203, 0x00010500, 0, 7, 0)
    assert ctext.blob_words(struct.pack("<5I", *words), "x.spv") == words
    assert ctext.blob_words(struct.pack(">5I", *words), "x.spv") == words


@pytest.mark.parametrize("data,match", [
    (b"\x03\x02\x23\x07" * 2 + b"\0" * 11, "whole words"),
    (b"\x03\x02\x23\x07" * 4, "5-word header"),
    (b"\0" * 20, "bad SPIR-V magic"),
])
def test_blob_words_refuses_non_spirv_naming_the_file(data, match):
    with pytest.raises(SpirvError, match=match) as exc:
        ctext.blob_words(data, "spirv/bad.spv")
    assert "spirv/bad.spv" in str(exc.value)


def test_too_many_bindings_for_the_masks_is_refused(project):
    info = ShaderInfo("main", (1, 1, 1), (None,) * 3, tuple(storage(i, "read") for i in range(65)), (), 0)
    e = project.entry("scale")
    big = ManifestEntry("huge", e.source, (), e.spirv, e.sha256, e.size, info)
    with pytest.raises(CodegenError, match="'huge': 65 bindings"):
        emit.render("c", Manifest(project.toolchain, (big,), root=project.root), "g/s")


def test_c_string_escapes():
    assert ctext.c_string('a"b\\c') == r'"a\"b\134c"'
    assert ctext.c_escape("glsl/a*/b/*c") == r"glsl/a*\057b/\052c"
    assert ctext.c_string("??/") == r'"\?\?/"'
    assert ctext.c_string("é\n") == r'"\303\251\012"'


@pytest.mark.slow
@needs_cc
def test_repo_manifest_renders_and_compiles(tmp_path):
    path = REPO / "manifests" / "shaders.json"
    if not path.exists():
        pytest.skip("this repo's manifest is not committed yet")
    manifest = load_manifest(path)
    result = build_and_run(emit.render("c", manifest, "gen/shaders"), tmp_path, cplusplus_main=True)
    assert_table_matches_manifest(result, manifest)



# -- the table's reflection: bindings, spec constants, spec'd local size ------

TABLE_PROGRAM = r"""
#include "shaders.h"
#include <stdio.h>

static void hex(const char *s) {
    printf("\"");
    for (; s != NULL && *s; s++) printf("%02x", (unsigned)(unsigned char)*s);
    printf("\"");
}

int main(void) {
    size_t i, j;
    printf("{\"modules\": [");
    for (i = 0; i < genspirv_module_count; i++) {
        const genspirv_module *m = &genspirv_modules[i];
        printf("%s{\"name\": ", i ? ", " : "");
        hex(m->name);
        printf(", \"local_size_spec_ids\": [%d, %d, %d], \"shared_memory\": %u, \"bindings\": [",
               (int)m->local_size_spec_ids[0], (int)m->local_size_spec_ids[1], (int)m->local_size_spec_ids[2],
               (unsigned)m->shared_memory);
        for (j = 0; j < m->binding_count; j++) {
            const genspirv_binding *b = &m->bindings[j];
            printf("%s[%u, %u, ", j ? ", " : "", (unsigned)b->set, (unsigned)b->binding);
            hex(b->name);
            printf(", %d, %u, %d", (int)b->type, (unsigned)b->count, (int)b->access);
#ifdef GENSPIRV_HAS_MIN_SIZE
            printf(", %llu", (unsigned long long)b->min_size);
#endif
            printf("]");
        }
        printf("], \"spec_constants\": [");
        for (j = 0; j < m->spec_count; j++) {
            const genspirv_spec_constant *s = &m->spec_constants[j];
            printf("%s[%u, ", j ? ", " : "", (unsigned)s->id);
            hex(s->name);
            printf(", %d, %u, %llu]", (int)s->type, (unsigned)s->size, (unsigned long long)s->default_bits);
        }
        printf("]}");
    }
    printf("], \"unavailable\": [");
    for (i = 0; i < genspirv_unavailable_count; i++) {
        const genspirv_unavailable *u = &genspirv_unavailable_modules[i];
        printf("%s[", i ? ", " : "");
        hex(u->name); printf(", "); hex(u->source); printf(", "); hex(u->missing);
        printf("]");
    }
    printf("], \"sentinel\": %d}\n", genspirv_unavailable_modules[genspirv_unavailable_count].name == NULL);
    return 0;
}
"""


def run_table_program(files: dict[str, bytes], tmp: Path, cxx: bool = False) -> dict:
    write_outputs(files, tmp)
    gen = tmp / "gen"
    (tmp / "table.c").write_text(TABLE_PROGRAM)
    if cxx:
        run_cc(CXX, "-std=c++17", *WARNINGS, "-x", "c++", "-I", gen, tmp / "table.c", "-x", "c++",
               gen / "shaders.c", "-o", tmp / "table")
    else:
        run_cc(CC, "-std=c99", *WARNINGS, "-I", gen, tmp / "table.c", gen / "shaders.c", "-o", tmp / "table")
    proc = subprocess.run([tmp / "table"], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(proc.stdout)


def unhex(s: str) -> str:
    return bytes.fromhex(s).decode("utf-8")


def expected_rows(manifest_dict: dict, with_min_size: bool) -> list:
    from genspirv.reflect import DESCRIPTOR_TYPES, SPEC_TYPES
    rows = []
    for e in sorted(manifest_dict["shaders"], key=lambda e: e["name"].encode()):
        bindings = [[b["set"], b["binding"], b["name"], DESCRIPTOR_TYPES.index(b["type"]), b["count"],
                     {"read": 1, "write": 2, "read_write": 3}[b["access"]]]
                    + ([b["min_size"]] if with_min_size else []) for b in e["bindings"]]
        specs = [[s["id"], s["name"], SPEC_TYPES.index(s["type"]), ctable.SPEC_LAYOUT[s["type"]][0],
                  ctable.spec_default_bits(s["type"], s["default"], "x")] for s in e["spec_constants"]]
        rows.append({"name": e["name"], "bindings": bindings, "spec_constants": specs,
                     "local_size_spec_ids": [-1 if i is None else i for i in e["local_size_spec_ids"]],
                     "shared_memory": e["shared_memory"]})
    return rows


def decoded(result: dict) -> list:
    return [{"name": unhex(m["name"]), "local_size_spec_ids": m["local_size_spec_ids"],
             "shared_memory": m["shared_memory"],
             "bindings": [[b[0], b[1], unhex(b[2]), *b[3:]] for b in m["bindings"]],
             "spec_constants": [[s[0], unhex(s[1]), *s[2:]] for s in m["spec_constants"]]}
            for m in result["modules"]]


@needs_cc
@pytest.mark.parametrize("cxx", [False, True], ids=["c", "cxx"])
def test_table_holds_bindings_spec_constants_and_spec_local_size(project, tmp_path, cxx):
    result = run_table_program(emit.render("c", project, "gen/shaders"), tmp_path, cxx)
    doc = json.loads(dumps(project))
    has_sizes = all("min_size" in b for e in doc["shaders"] for b in e["bindings"])
    assert decoded(result) == expected_rows(doc, with_min_size=has_sizes)
    fill = next(m for m in decoded(result) if m["name"] == "fill")
    assert fill["local_size_spec_ids"] == [0, -1, -1]
    assert fill["spec_constants"][1][4] == struct.unpack("<I", struct.pack("<f", 0.5))[0]
    assert result["unavailable"] == [] and result["sentinel"] == 1


@needs_cc
def test_min_size_and_unavailable_render_when_the_manifest_has_them(project, tmp_path, monkeypatch):
    """Newer manifests carry per-binding ``min_size`` and a top-level ``unavailable``: both reach C."""
    from genspirv import manifest as manifest_mod
    original = manifest_mod.manifest_to_dict

    def newer(m):
        d = original(m)
        for e in d["shaders"]:
            for i, b in enumerate(e["bindings"]):
                b["min_size"] = 16 * (i + 1)
        d["unavailable"] = [{"name": "mm_f16_cm2", "source": "glsl/mm.comp",
                             "missing": ["GL_NV_cooperative_matrix2"]}]
        return d
    monkeypatch.setattr(render_input, "manifest_to_dict", newer)
    files = emit.render("c", project, "gen/shaders")
    assert b"#define GENSPIRV_HAS_MIN_SIZE 1" in files["gen/shaders.h"]
    result = run_table_program(files, tmp_path)
    assert decoded(result) == expected_rows(newer(project), with_min_size=True)
    assert [[unhex(x) for x in u] for u in result["unavailable"]] == [
        ["mm_f16_cm2", "glsl/mm.comp", "GL_NV_cooperative_matrix2"]]


# -- escaping: no path or name breaks the C ------------------------------------

NASTY = ["a*/b", "*/ int broken; /*", 'q"uote', "back\\slash", "line\nbreak\r", "trailing\\",
         "??/ trigraph", "é ü 漢字", "\t\x01\x7f", "*", "/", "**//", "// c++ comment", "", "x*\\\n/"]


@needs_cc
@pytest.mark.parametrize("compiler", ["cc", "c++"])
def test_c_escape_is_safe_in_comments_and_literals(tmp_path, compiler):
    import random
    rng = random.Random(16)
    alphabet = "*/\\\"'?\n\r\t #aé漢\x00\x01"
    texts = NASTY + ["".join(rng.choice(alphabet) for _ in range(rng.randrange(12))) for _ in range(300)]
    texts = [t for t in texts if "\x00" not in t] + ["nul is refused by C strings only"]
    lines = ["#include <stdio.h>", "static const char *const texts[] = {"]
    for t in texts:
        lines.append(f"    /* {ctext.c_escape(t)} */ {ctext.c_string(t)},  // {ctext.c_escape(t)}")
    lines += ["};", "int main(void) {", "    size_t i; const char *p;",
              "    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {",
              "        for (p = texts[i]; *p; p++) printf(\"%02x\", (unsigned)(unsigned char)*p);",
              "        printf(\"\\n\");", "    }", "    return 0;", "}"]
    src = tmp_path / ("t.c" if compiler == "cc" else "t.cpp")
    src.write_text("\n".join(lines) + "\n")
    std = ["-std=c99"] if compiler == "cc" else ["-std=c++17"]
    run_cc(shutil.which(compiler), *std, "-Wall", "-Wextra", "-Werror", "-trigraphs",
           src, "-o", tmp_path / "t")
    out = subprocess.run([tmp_path / "t"], capture_output=True, text=True, timeout=60, check=True).stdout
    assert [bytes.fromhex(h).decode("utf-8") for h in out.splitlines()] == texts


@needs_cc
def test_paths_and_names_with_comment_enders_compile(project, tmp_path):
    """A source folder called 'a*' used to end the words' comment early."""
    e = project.entry("scale")
    odd = ManifestEntry('we*/ird "name"\\é', 'glsl/a*/b */ c\n"d".comp', e.defines, e.spirv, e.sha256,
                        e.size, e.info)
    m = Manifest(project.toolchain, (odd,), root=project.root)
    result = run_table_program(emit.render("c", m, "gen/shaders"), tmp_path, cxx=False)
    assert unhex(result["modules"][0]["name"]) == odd.name
    run_cc(CXX, "-std=c++17", *WARNINGS, "-x", "c++", "-c", tmp_path / "gen" / "shaders.c", "-o", tmp_path / "x.o")


@pytest.mark.parametrize("output", ['gen/sha"ders', "gen/sha'ders", "gen/a\nb"])
def test_header_name_that_cannot_be_included_is_refused(project, output):
    with pytest.raises(CodegenError, match="header name"):
        emit.render("c", project, output)


# -- a project's own templates -------------------------------------------------

# The table in llama.cpp's shape: one byte array and one length per variant.
LLAMA_TEMPLATE = """\
// {{ banner }} (from {{ template }})
#pragma once
#include <cstddef>
#include <cstdint>

{% for s in shaders %}
// {{ s.name | c_escape }}: {{ s.source | c_escape }}
static const unsigned char {{ s.ident }}_data[{{ s.blob | length }}] = {
    {{ s.blob | hex_bytes | join(",\\n    ") }}
};
static const uint64_t {{ s.ident }}_len = {{ s.blob | length }};

{% endfor %}
"""

LLAMA_READER = r"""
#include <cstdio>
#include "kernels.hpp"

static int dump(const char *dir, const char *name, const unsigned char *data, uint64_t len) {
    char path[4096];
    std::snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    std::FILE *f = std::fopen(path, "wb");
    if (f == nullptr) return 1;
    size_t n = std::fwrite(data, 1, (size_t)len, f);
    std::fclose(f);
    return n == len ? 0 : 1;
}

int main(int, char **argv) {
    int bad = 0;
@CALLS@
    return bad;
}
"""


def write_template(root: Path, rel: str, text: str) -> str:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)
    return rel


@needs_cc
def test_llama_shaped_template_renders_arrays_equal_to_the_blobs(project, tmp_path):
    rel = write_template(project.root, "tools/llama.hpp.j2", LLAMA_TEMPLATE)
    files = emit.render("template", project, "gen/kernels.hpp", template=rel)
    assert list(files) == ["gen/kernels.hpp"]
    write_outputs(files, tmp_path)
    calls = "\n".join(f'    bad |= dump(argv[1], "{e.name}", {e.name}_data, {e.name}_len);' for e in project.shaders)
    (tmp_path / "reader.cpp").write_text(LLAMA_READER.replace("@CALLS@", calls))
    run_cc(CXX, "-std=c++17", *WARNINGS, "-I", tmp_path / "gen", tmp_path / "reader.cpp", "-o", tmp_path / "reader")
    (tmp_path / "out").mkdir()
    subprocess.run([tmp_path / "reader", tmp_path / "out"], check=True, timeout=60)
    for e in project.shaders:
        assert (tmp_path / "out" / f"{e.name}.bin").read_bytes() == project.read_blob(e), e.name
    text = files["gen/kernels.hpp"].decode()
    assert "(from tools/llama.hpp.j2)" in text and "static const uint64_t scale_len = " in text


@pytest.mark.parametrize("text,line,match", [
    ("a\nb\n{{ shaders[0].nmae }}\n", 3, "UndefinedError.*nmae"),
    ("{% for s in shaders %}\n{{ s.name }\n{% endfor %}\n", 2, "syntax error"),
    ("ok\n{% include 'other.j2' %}\n", 2, "one file"),
    ("\n{{ shaders.__class__.__mro__ }}\n", 2, "__class__"),
    ("{{ shaders[0].blob | no_such_filter }}\n", 1, "no_such_filter"),
])
def test_template_error_names_the_template_and_line(project, text, line, match):
    rel = write_template(project.root, "tools/bad.j2", text)
    with pytest.raises(CodegenError, match=rf"^tools/bad\.j2:{line}: .*{match}"):
        emit.render("template", project, "gen/x.hpp", template=rel)


def test_missing_template_is_an_error_naming_it(project):
    with pytest.raises(CodegenError, match="tools/absent.j2: no such file"):
        emit.render("template", project, "gen/x.hpp", template="tools/absent.j2")


def test_template_variables_documented_are_the_ones_given(project):
    from genspirv.emit.project import context
    blobs = {e.name: project.read_blob(e) for e in project.shaders}
    ctx = context(emit.prepare(project, blobs), "t.j2", "o.hpp")
    assert set(ctx) == {"manifest", "shaders", "unavailable", "compilers", "blobs", "toolchain", "banner",
                        "output", "template"}
    first = ctx["shaders"][0]
    assert [s["name"] for s in ctx["shaders"]] == sorted(e.name for e in project.shaders)
    assert first["blob"] == blobs[first["name"]] and first["ident"] == first["name"]
    assert first["words"][0] == 0x07230203
    assert first["words"] == list(ctext.blob_words(first["blob"], "x")) and len(first["words"]) == first["size"] // 4
    guide = (REPO / "docs" / "GUIDE.md").read_text(encoding="utf-8")
    for name in [*ctx, "blob", "words", "ident", "c_string", "c_escape", "c_ident", "hex_bytes", "hex_words",
                 "blob_array"]:
        assert f"`{name}`" in guide, f"GUIDE does not document template variable/filter {name!r}"


@pytest.mark.slow
@pytest.mark.skipif(GLSLANG is None, reason="needs glslangValidator")
def test_build_renders_template_and_check_verifies_it(tmp_path, capsys):
    from genspirv.cli import main
    (tmp_path / "glsl").mkdir()
    (tmp_path / "glsl" / "scale.comp").write_text(SHADERS["scale"])
    write_template(tmp_path, "tools/llama.hpp.j2", LLAMA_TEMPLATE)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.genspirv]\nglsl_dir = "glsl"\nspirv_dir = "spirv"\nmanifest = "manifests/shaders.json"\n'
        'generate = [ { template = "tools/llama.hpp.j2", output = "src/kernels.hpp" } ]\n')
    root = ["--root", str(tmp_path)]
    assert main([*root, "build", "-q"]) == 0
    out = tmp_path / "src" / "kernels.hpp"
    assert b"scale_data[" in out.read_bytes()
    assert main([*root, "check", "-q"]) == 0

    out.write_bytes(out.read_bytes().replace(b"0x03, 0x02", b"0x03, 0x03", 1))
    assert main([*root, "check"]) == 1
    assert "src/kernels.hpp: differs" in capsys.readouterr().err

    # Editing the template alone re-renders (the build's output key holds its bytes).
    assert main([*root, "build", "-q"]) == 0
    write_template(tmp_path, "tools/llama.hpp.j2", LLAMA_TEMPLATE.replace("#pragma once", "#pragma once // v2"))
    assert main([*root, "build", "-q"]) == 0
    assert b"#pragma once // v2" in out.read_bytes()
    assert main([*root, "check", "-q"]) == 0


@pytest.mark.parametrize("entry,match", [
    ('{ output = "src/x.hpp" }', "either target"),
    ('{ target = "c", template = "t.j2", output = "x" }', "either target"),
    ('{ template = "nope.j2", output = "src/x.hpp" }', "no such file nope.j2"),
    ('{ template = "../t.j2", output = "src/x.hpp" }', "relative posix path"),
])
def test_generate_template_entries_are_checked(tmp_path, entry, match):
    from genspirv.project.config import load_config
    from genspirv.errors import ConfigError
    (tmp_path / "glsl").mkdir()
    (tmp_path / "pyproject.toml").write_text(f'[tool.genspirv]\ngenerate = [ {entry} ]\n')
    with pytest.raises(ConfigError, match=match):
        load_config(tmp_path)


@pytest.mark.skipif(GLSLANG is None, reason="needs glslangValidator")
def test_a_new_c_table_renderer_rewrites_the_table_on_the_next_build(tmp_path, monkeypatch):
    """The build's output key holds the built-in renderer's own key (its modules and
    templates): a genspirv with another table shape rewrites the table at the next build,
    where it used to be a no-op that only `check` noticed."""
    from genspirv.cli import main
    (tmp_path / "glsl").mkdir()
    (tmp_path / "glsl" / "scale.comp").write_text(SHADERS["scale"])
    (tmp_path / "pyproject.toml").write_text(
        '[tool.genspirv]\nglsl_dir = "glsl"\nspirv_dir = "spirv"\nmanifest = "manifests/shaders.json"\n'
        'generate = [ { target = "c", output = "gen/shaders" } ]\n')
    root = ["--root", str(tmp_path)]
    assert main([*root, "build", "-q"]) == 0
    header = tmp_path / "gen" / "shaders.h"
    assert ctext.BANNER.encode() in header.read_bytes()

    # A renderer that writes other bytes under the same key: the build sees nothing to do
    # (the negative control: the key, not the output, decides)...
    monkeypatch.setattr(ctable, "BANNER", "another banner")
    assert main([*root, "build", "-q"]) == 0
    assert b"another banner" not in header.read_bytes()
    # ... and under a new key it renders again.
    monkeypatch.setattr(emit, "renderer_key", lambda target: "a newer renderer")
    assert main([*root, "build", "-q"]) == 0
    assert b"another banner" in header.read_bytes()


def test_renderer_key_follows_the_templates_and_emitters():
    assert emit.renderer_key("c") == emit.renderer_key("c")
    assert len(emit.renderer_key("c")) == 64 and emit.renderer_key("c") != emit.renderer_key("x")


def test_emit_modules_import_only_the_ones_before_them():
    """No cycle among the emitters: each imports only modules listed before it in
    ``genspirv.emit``'s docstring (ctext, cblobs, render_input, ctable, project, cmake), and the
    package itself loads a renderer only inside ``render``."""
    import ast
    order = ["ctext", "cblobs", "render_input", "ctable", "project", "cmake"]
    folder = Path(emit.__file__).parent
    for i, name in enumerate(order):
        tree = ast.parse((folder / f"{name}.py").read_text())
        siblings = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1}
        assert siblings <= set(order[:i]), (name, siblings)
        assert not any(isinstance(n, ast.ImportFrom) and n.level == 2 and n.module in (None, "emit")
                       for n in ast.walk(tree)), name
    top = ast.parse((folder / "__init__.py").read_text())
    assert all(n.col_offset > 0 for n in ast.walk(top) if isinstance(n, ast.ImportFrom) and n.level == 1)


def test_cli_start_up_path_does_not_load_jinja2():
    out = subprocess.run([__import__("sys").executable, "-c",
                          "import sys, genspirv.emit.cmake, genspirv.emit; print('jinja2' in sys.modules)"],
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"
