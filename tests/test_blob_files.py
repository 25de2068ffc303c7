"""``blobs = "files"``: generated C/C++ with no byte of a blob in it, linked and checked at run time.

The C table and a llama.cpp-shaped project template are rendered in both
modes from this repository's own manifest and 52 real blobs, compiled and
linked with every compiler here (gcc and g++; clang and a clang with C23
``#embed`` where installed), as C and as C++, and a small program checks that
every symbol holds its blob's bytes, with its size, at a 4-byte-aligned
address. ``.incbin`` is taken where it works; ``#embed`` where it is asked
for, or where the target has no ``.incbin`` (``-U__ELF__`` stands for one).
Which mechanism each compiler took is read from its own macros (``-dM -E``),
so a test that meant to try ``#embed`` fails if ``.incbin`` ran instead. A Mach-O object is assembled where a clang can target it; a compiler
with neither mechanism gets the ``#error`` that says to use arrays.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from genspirv import emit
from genspirv.errors import CodegenError, ConfigError
from genspirv.manifest import load_manifest

REPO = Path(__file__).resolve().parent.parent
WARNINGS = ("-Wall", "-Wextra", "-Werror", "-pedantic")


def _has_embed(cc: str) -> bool:
    proc = subprocess.run([cc, "-x", "c", "-E", "-"], input="#ifdef __has_embed\nGENSPIRV_YES\n#endif\n",
                          capture_output=True, text=True)
    return proc.returncode == 0 and "GENSPIRV_YES" in proc.stdout


def _embed_clang() -> str | None:
    """A clang that has C23 #embed (clang 19 and later), if one is installed."""
    for name in ("clang", *(f"clang-{v}" for v in range(30, 18, -1))):
        path = shutil.which(name)
        if path and _has_embed(path):
            return path
    return None


GCC, GXX, CLANG = shutil.which("gcc"), shutil.which("g++"), shutil.which("clang")
EMBED_CLANG = _embed_clang()
needs_gcc = pytest.mark.skipif(GCC is None or GXX is None, reason="needs gcc and g++")


def _cxx_of(cc: str) -> str:
    """The C++ driver beside a C one (g++ for gcc, clang++-19 for clang-19)."""
    return cc.replace("clang", "clang++", 1) if "clang" in Path(cc).name else GXX


@pytest.fixture(scope="module")
def repo_project(tmp_path_factory):
    """This repository's manifest and blobs, copied where outputs are written beside them."""
    root = tmp_path_factory.mktemp("files")
    shutil.copytree(REPO / "spirv", root / "spirv")
    (root / "manifests").mkdir()
    shutil.copy(REPO / "manifests" / "shaders.json", root / "manifests" / "shaders.json")
    return load_manifest(root / "manifests" / "shaders.json", root=root)


def write(files: dict[str, bytes], root: Path) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def mechanism(cc: str, source: Path, *flags: str) -> str:
    """Which one the file's prelude took with ``cc`` (from its macros)."""
    out = subprocess.run([cc, *flags, "-dM", "-E", str(source)], capture_output=True, text=True, check=True,
                         cwd=source.parent.parent).stdout
    found = [m for m in ("EMBED", "INCBIN") if f"#define GENSPIRV_BLOBS_{m} " in out]
    assert len(found) == 1, found
    return found[0].lower()


TABLE_CHECK = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "filetable.h"

int main(void) {
    static unsigned char buf[1 << 20];
    char path[512];
    int bad = 0;
    for (size_t i = 0; i < genspirv_module_count; i++) {
        const genspirv_module *m = &genspirv_modules[i];
        snprintf(path, sizeof path, "spirv/%s.spv", m->name);
        FILE *f = fopen(path, "rb");
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        if (n == 0 || n != m->word_count * 4 || memcmp(buf, m->words, n) != 0 || (uintptr_t)m->words % 4 != 0) {
            printf("DIFFERENT %s\n", m->name);
            bad = 1;
        }
    }
    printf("%u modules, words equal to the blobs, 4-byte aligned: %s\n", (unsigned)genspirv_module_count,
           bad ? "no" : "yes");
    return bad;
}
"""


def _table_case(cc: str, lang: str, want: str, *flags: str) -> tuple:
    return pytest.param(cc, lang, want, flags, id=f"{Path(cc).name if cc else 'none'}-{lang}-{want}",
                        marks=pytest.mark.skipif(cc is None, reason="compiler not installed"))


@pytest.mark.parametrize("cc,lang,want,flags", [
    _table_case(GCC, "c", "incbin"),
    _table_case(GCC, "c++", "incbin"),
    _table_case(CLANG, "c", "incbin"),
    _table_case(EMBED_CLANG, "c", "incbin"),                      # .incbin first where it works
    _table_case(EMBED_CLANG, "c", "embed", "-DGENSPIRV_BLOBS_EMBED"),
    _table_case(EMBED_CLANG, "c++", "embed", "-DGENSPIRV_BLOBS_EMBED"),
    _table_case(EMBED_CLANG, "c", "embed", "-U__ELF__"),          # no .incbin for this object format
])
@pytest.mark.slow
def test_the_c_table_links_the_blob_files_themselves(repo_project, tmp_path, cc, lang, want, flags):
    root = repo_project.root
    files = emit.render("c", repo_project, "manifests/filetable", blob_mode="files")
    source = files["manifests/filetable.c"].decode()
    assert not re.search(r"0x[0-9a-f]{8}, 0x[0-9a-f]{8}", source)      # no word of any blob in the text
    assert re.search(r"0x[0-9a-f]{8}, 0x[0-9a-f]{8}", emit.render("c", repo_project, "m/t")["m/t.c"].decode())
    write(files, root)
    (root / "check.c").write_text(TABLE_CHECK)
    std = ("-std=c99",) if lang == "c" else ("-x", "c++", "-std=c++11")
    compiler = cc if lang == "c" else _cxx_of(cc)
    assert mechanism(compiler, root / "manifests" / "filetable.c", *std, *flags) == want
    exe = tmp_path / "check"
    subprocess.run([compiler, *std, *WARNINGS, *flags, "-Imanifests", "manifests/filetable.c", "check.c",
                    "-o", str(exe)], cwd=root, check=True, capture_output=True)
    out = subprocess.run([str(exe)], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0 and "52 modules, words equal to the blobs, 4-byte aligned: yes" in out.stdout, out.stdout


TEMPLATE_SOURCE = """\
/* {{ banner }} */
#include "kernels.h"
{% for s in shaders %}
{{ s | blob_array(s.ident ~ "_data") }}
const uint64_t {{ s.ident }}_len = {{ s.size }}u;
{% endfor %}
"""
TEMPLATE_HEADER = """\
#include <stdint.h>
{% for s in shaders %}
extern const unsigned char {{ s.ident }}_data[{{ s.size }}];
extern const uint64_t {{ s.ident }}_len;
{% endfor %}
"""
TEMPLATE_CHECK = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "kernels.h"

static int same(const char *name, const unsigned char *data, size_t declared, uint64_t len, int aligned) {
    static unsigned char buf[1 << 20];
    char path[512];
    snprintf(path, sizeof path, "spirv/%s.spv", name);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    return n > 0 && n == declared && n == len && memcmp(buf, data, n) == 0 && (!aligned || (uintptr_t)data % 4 == 0);
}

int main(int argc, char **argv) {
    int aligned = argc > 1 && strcmp(argv[1], "aligned") == 0, good = 0, all = 0;
@CALLS@
    printf("%d of %d symbols hold their blob, size and length%s\n", good, all, aligned ? ", 4-byte aligned" : "");
    return good == all ? 0 : 1;
}
"""


@pytest.mark.parametrize("mode,force", [("arrays", ""), ("files", ""), ("files", "-DGENSPIRV_BLOBS_EMBED")])
@pytest.mark.parametrize("cc", [pytest.param(GCC, id="gcc"), pytest.param(CLANG, id="clang"),
                                pytest.param(EMBED_CLANG, id="clang-embed")])
@pytest.mark.slow
@pytest.mark.parametrize("lang", ["c", "c++"])
def test_a_templates_blob_arrays_are_the_blobs_in_either_mode(repo_project, tmp_path, mode, force, cc, lang):
    if cc is None:
        pytest.skip("compiler not installed")
    if force and not _has_embed(cc):
        pytest.skip("no #embed in this compiler")
    root = repo_project.root
    for name, text in (("kernels.c.j2", TEMPLATE_SOURCE), ("kernels.h.j2", TEMPLATE_HEADER)):
        (root / "tools").mkdir(exist_ok=True)
        (root / "tools" / name).write_text(text)
    source = emit.prepare(repo_project)
    write(emit.render_output(source, "template", "gen/kernels.c", "tools/kernels.c.j2", mode), root)
    write(emit.render_output(source, "template", "gen/kernels.h", "tools/kernels.h.j2", mode), root)
    text = (root / "gen" / "kernels.c").read_text()
    assert (text.count("0x") == 0) == (mode == "files")
    calls = "\n".join(f'    all++; good += same("{e.name}", {e.name}_data, sizeof {e.name}_data, {e.name}_len, '
                      "aligned);" for e in repo_project.shaders)
    (root / "check_t.c").write_text(TEMPLATE_CHECK.replace("@CALLS@", calls))
    std = ("-std=c99",) if lang == "c" else ("-x", "c++", "-std=c++11")
    compiler = cc if lang == "c" else _cxx_of(cc)
    flags = (force,) if force else ()
    if mode == "files":
        assert mechanism(compiler, root / "gen" / "kernels.c", *std, *flags) == ("embed" if force else "incbin")
    exe = tmp_path / "check"
    subprocess.run([compiler, *std, *WARNINGS, *flags, "-Igen", "gen/kernels.c", "check_t.c", "-o", str(exe)],
                   cwd=root, check=True, capture_output=True)
    out = subprocess.run([str(exe), "aligned" if mode == "files" else "-"], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
    assert out.stdout.startswith(f"52 of 52 symbols hold their blob")


@needs_gcc
def test_incbin_symbols_are_global_objects_of_the_blobs_size(repo_project):
    """ELF symbol table: a template's arrays are global data objects of their size; the C
    table's words stay local to its object, as its static arrays were."""
    root = repo_project.root
    (root / "tools").mkdir(exist_ok=True)
    (root / "tools" / "kernels.c.j2").write_text(TEMPLATE_SOURCE)
    (root / "tools" / "kernels.h.j2").write_text(TEMPLATE_HEADER)
    source = emit.prepare(repo_project)
    write(emit.render_output(source, "template", "gen/kernels.c", "tools/kernels.c.j2", "files"), root)
    write(emit.render_output(source, "template", "gen/kernels.h", "tools/kernels.h.j2", "files"), root)
    write(emit.render_output(source, "c", "manifests/filetable", None, "files"), root)
    for src, obj in (("gen/kernels.c", "k.o"), ("manifests/filetable.c", "t.o")):
        subprocess.run([GCC, "-c", "-Igen", "-Imanifests", src, "-o", obj], cwd=root, check=True)
    symbols = subprocess.run(["nm", "-S", "k.o"], cwd=root, capture_output=True, text=True, check=True).stdout
    sizes = {line.split()[3]: (int(line.split()[1], 16), line.split()[2]) for line in symbols.splitlines()
             if len(line.split()) == 4}
    for e in repo_project.shaders:
        assert sizes[f"{e.name}_data"] == (e.size, "R"), e.name
    table = subprocess.run(["nm", "-S", "t.o"], cwd=root, capture_output=True, text=True, check=True).stdout
    words = [line.split() for line in table.splitlines() if "genspirv_words_" in line]
    assert len(words) == 52 and all(kind == "r" for _, _, kind, _ in words)


@pytest.mark.skipif(EMBED_CLANG is None and CLANG is None, reason="needs clang")
def test_a_mach_o_object_holds_the_blobs_under_their_names(repo_project):
    """Clang assembles .incbin for Mach-O (arm64 macOS) too: the names carry the '_' prefix."""
    clang = EMBED_CLANG or CLANG
    nm = shutil.which("llvm-nm") or next((shutil.which(f"llvm-nm-{v}") for v in range(30, 13, -1)
                                          if shutil.which(f"llvm-nm-{v}")), None)
    if nm is None:
        pytest.skip("needs llvm-nm")
    root = repo_project.root
    (root / "tools").mkdir(exist_ok=True)
    (root / "tools" / "macho.c.j2").write_text("{% for s in shaders[:3] %}\n{{ s | blob_array(s.ident ~ '_data') }}\n"
                                               "{% endfor %}\n")
    write(emit.render("template", repo_project, "gen/macho.c", template="tools/macho.c.j2", blob_mode="files"), root)
    subprocess.run([clang, "-target", "arm64-apple-macos12", "-ffreestanding", "-DGENSPIRV_BLOBS_INCBIN", "-Igen",
                    "-c", "gen/macho.c", "-o", "macho.o"], cwd=root, check=True, capture_output=True)
    symbols = subprocess.run([nm, "macho.o"], cwd=root, capture_output=True, text=True, check=True).stdout
    first = sorted(e.name for e in repo_project.shaders)[:3]
    for name in first:
        assert f" S _{name}_data" in symbols, symbols


@needs_gcc
def test_a_compiler_with_neither_gets_the_error_that_says_to_use_arrays(repo_project, tmp_path):
    """Negative control: a target that is neither ELF nor Mach-O, and no #embed (gcc 12 told so)."""
    root = repo_project.root
    write(emit.render("c", repo_project, "manifests/filetable", blob_mode="files"), root)
    proc = subprocess.run([GCC, "-U__ELF__", "-c", "manifests/filetable.c", "-o", str(tmp_path / "x.o")],
                          cwd=root, capture_output=True, text=True)
    assert proc.returncode != 0
    assert 'neither #embed nor .incbin' in proc.stderr and 'blobs = \\"arrays\\"' in proc.stderr


def test_a_blob_path_neither_directive_can_quote_is_refused(repo_project):
    from genspirv.emit import cblobs
    assert cblobs.blob_path("manifests/x.c", "spirv/a.spv") == "../spirv/a.spv"
    assert cblobs.blob_path("x.c", "spirv/a.spv") == "spirv/a.spv"
    with pytest.raises(CodegenError, match=r'blob path .*a"b.spv.* use blobs = "arrays"'):
        cblobs.blob_path("manifests/x.c", 'spirv/a"b.spv')
    with pytest.raises(CodegenError, match="not a C identifier"):
        cblobs.byte_array("not-an-ident", "a.spv", 4, "0" * 64)


def test_arrays_stay_the_default_and_the_bytes_they_were(repo_project):
    assert emit.render("c", repo_project, "manifests/shaders") == \
        emit.render("c", repo_project, "manifests/shaders", blob_mode="arrays")
    assert emit.render("c", repo_project, "manifests/shaders")["manifests/shaders.c"] == \
        (REPO / "manifests" / "shaders.c").read_bytes()
    with pytest.raises(CodegenError, match="generate blobs 'file': not one of arrays, files"):
        emit.render("c", repo_project, "manifests/shaders", blob_mode="file")


@pytest.mark.parametrize("entry,ok", [
    ('{ target = "c", output = "m/s", blobs = "files" }', True),
    ('{ target = "c", output = "m/s", blobs = "arrays" }', True),
    ('{ target = "c", output = "m/s", blobs = "incbin" }', False),
    ('{ target = "c", output = "m/s", blobs = 1 }', False),
])
def test_the_generate_entry_takes_a_blobs_key(tmp_path, entry, ok):
    from genspirv.project.config import BlobMode, load_config
    (tmp_path / "glsl").mkdir()
    (tmp_path / "pyproject.toml").write_text(f"[tool.genspirv]\ngenerate = [ {entry} ]\n")
    if ok:
        (g,) = load_config(tmp_path).generate
        assert g.blobs is BlobMode(entry.split('blobs = "')[1].split('"')[0])
    else:
        with pytest.raises(ConfigError, match=r"tool.genspirv.generate\[0\].blobs"):
            load_config(tmp_path)
