"""C initialiser text at the speed of bytes.hex(), and rendering that many threads may share.

The fast formatters (``hex_bytes``, ``hex_words``, ``word_lines``) are compared
with the plain one (``reference_hex_lines``, one ``f"0x{v:02x}"`` at a time) on
random data, every line width and every suffix; ``Words`` with the list of ints
it stands for; and one ``RenderInput`` rendered from several threads at once
with the same bytes as one at a time, the manifest data it shares refused to a
template that would change it.
"""

from __future__ import annotations

import json
import struct
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genspirv import emit
from genspirv.emit import ctext
from genspirv.errors import CodegenError, SpirvError
from genspirv.manifest import Manifest, ManifestEntry, Toolchain
from genspirv.reflect import ShaderInfo

SUFFIXES = ("", "u", "U", "l", "L", "ul", "lu", "ull", "ULL", "llu", "LLU", "uLL", "Ul")
per_line = st.integers(min_value=1, max_value=40)
suffix = st.sampled_from(SUFFIXES)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=600), per_line=per_line, suffix=suffix)
def test_hex_bytes_is_the_plain_formatter_on_any_bytes(data, per_line, suffix):
    want = ctext.reference_hex_lines(data, 2, per_line, suffix)
    assert ctext.hex_bytes(data, per_line, suffix) == want
    assert ctext.hex_bytes(bytearray(data), per_line, suffix) == want
    assert ctext.hex_bytes(memoryview(data), per_line, suffix) == want
    assert ctext.hex_bytes(list(data), per_line, suffix) == want     # a template's list of ints


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.integers(min_value=0, max_value=2**32 - 1), max_size=200), per_line=per_line,
       suffix=suffix)
def test_hex_words_is_the_plain_formatter_on_any_words(words, per_line, suffix):
    want = ctext.reference_hex_lines(words, 8, per_line, suffix)
    assert ctext.hex_words(words, per_line, suffix) == want
    assert ctext.hex_words(tuple(words), per_line, suffix) == want


@settings(max_examples=200, deadline=None)
@given(body=st.lists(st.integers(min_value=0, max_value=2**32 - 1), min_size=4, max_size=200),
       order=st.sampled_from("<>"), per_line=per_line, suffix=suffix)
def test_a_blobs_words_format_as_their_values_in_either_byte_order(body, order, per_line, suffix):
    blob = struct.pack(f"{order}{len(body) + 1}I", ctext.SPIRV_MAGIC, *body)
    words = ctext.Words(blob, "x.spv")
    values = list(ctext.blob_words(blob, "x.spv"))
    assert words == values and list(words) == values and len(words) == len(values)
    assert ctext.hex_words(words, per_line, suffix) == ctext.reference_hex_lines(values, 8, per_line, suffix)
    assert ctext.word_lines(tuple(values)) == ctext.reference_hex_lines(values, 8, ctext.WORDS_PER_LINE)
    assert words[-1] == values[-1] and words[1:3] == values[1:3] and repr(words) == repr(values)


@pytest.mark.parametrize("values,digits", [
    ([0, 255, 256, 70000], 2),         # not bytes: each value as it is
    ([-1, 5], 2),
    ([2**32, 1], 8),                   # not a 32-bit word
    ([True, False], 8),
])
def test_values_that_are_no_bytes_or_words_take_the_plain_path(values, digits):
    fmt = ctext.hex_bytes if digits == 2 else ctext.hex_words
    assert fmt(values, 3) == ctext.reference_hex_lines(values, digits, 3)


@pytest.mark.parametrize("per_line,suffix,match", [
    (0, "", "per_line must be a whole number of at least 1, not 0"),
    (-2, "", "per_line must be a whole number of at least 1, not -2"),
    ("8", "", "per_line must be a whole number"),
    (8, "f", "suffix 'f' is no C integer suffix"),
    (8, "u, 0", "no C integer suffix"),
    (8, "uu", "no C integer suffix"),
])
def test_a_bad_line_layout_is_one_clear_error(per_line, suffix, match):
    for fmt in (ctext.hex_bytes, ctext.hex_words):
        with pytest.raises(CodegenError, match=match):
            fmt(b"\x01\x02", per_line, suffix)


def test_the_defaults_are_the_layout_every_committed_table_has():
    assert ctext.hex_bytes(bytes(range(17))) == [
        ", ".join(f"0x{i:02x}" for i in range(16)), "0x10"]
    assert ctext.hex_words([1, 0xFFFFFFFF], suffix="u") == ["0x00000001u, 0xffffffffu"]
    assert ctext.hex_bytes(b"") == [] and ctext.hex_words([]) == []


def test_words_refuse_what_is_no_spirv_naming_the_file():
    with pytest.raises(SpirvError, match="spirv/bad.spv: bad SPIR-V magic"):
        ctext.Words(b"\0" * 20, "spirv/bad.spv")
    with pytest.raises(IndexError):
        ctext.Words(struct.pack("<5I", ctext.SPIRV_MAGIC, 0, 0, 0, 0), "x")[5]


# -- one RenderInput, many outputs at once -------------------------------------------


def _manifest(tmp_path, count: int = 12) -> tuple[Manifest, dict[str, bytes]]:
    import hashlib
    info = ShaderInfo("main", (64, 1, 1), (None, None, None), (), (), 0)
    entries, blobs = [], {}
    for i in range(count):
        blob = struct.pack(f"<{5 + 40 * i}I", ctext.SPIRV_MAGIC, 0x10500, 0, 30, 0, *range(40 * i))
        name = f"k{i:02d}"
        blobs[name] = blob
        entries.append(ManifestEntry(name, f"glsl/k{i % 3}.comp", (), f"spirv/{name}.spv",
                                     hashlib.sha256(blob).hexdigest(), len(blob), info))
    return Manifest(Toolchain("13.1.1", "vulkan1.2"), tuple(entries), root=tmp_path), blobs


PER_SOURCE = """\
// {{ banner }}: {{ output }}
{% set stem = output.rsplit('/', 1)[1].rsplit('.', 1)[0] %}
{% for s in shaders if s.source.endswith('/' ~ stem ~ '.comp') %}
const unsigned char {{ s.ident }}_data[{{ s.blob | length }}] = {
    {{ s.blob | hex_bytes | join(",\\n    ") }}
};
const unsigned int {{ s.ident }}_words[{{ s.words | length }}] = { {{ s.words | hex_words(4, "u") | join(", ") }} };
{% endfor %}
"""


@pytest.mark.slow
def test_outputs_rendered_on_many_threads_at_once_are_the_serial_bytes(tmp_path):
    manifest, blobs = _manifest(tmp_path)
    (tmp_path / "t.j2").write_text(PER_SOURCE)
    source = emit.prepare(manifest, blobs)
    outputs = [f"src/k{i % 3}.cpp" for i in range(24)] + ["gen/table"]
    serial = {out: emit.render("c" if out == "gen/table" else "template", manifest, out, blobs,
                               None if out == "gen/table" else "t.j2") for out in outputs}
    got: dict = {}
    barrier = threading.Barrier(8)

    def worker(k: int) -> None:
        barrier.wait()
        for out in outputs[k::8]:
            got[out] = emit.render_output(source, "c" if out == "gen/table" else "template", out,
                                          None if out == "gen/table" else "t.j2")
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)            # switch threads as often as the interpreter can
    try:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    assert got == serial
    assert b"k03_data[" in got["src/k0.cpp"]["src/k0.cpp"] and b"k04_data[" not in got["src/k0.cpp"]["src/k0.cpp"]


def test_the_shared_blobs_are_the_callers_bytes_not_copies(tmp_path):
    manifest, blobs = _manifest(tmp_path, 3)
    source = emit.prepare(manifest, blobs)
    assert all(source.blobs[name] is blobs[name] for name in blobs)
    assert all(s["blob"] is blobs[s["name"]] for s in source.template_shaders)


@pytest.mark.parametrize("statement", [
    "{{ shaders[0].defines.update({'X': '1'}) }}",
    "{{ manifest.shaders.append(1) }}",
    "{{ toolchain.flags.append('-O') }}",
    "{{ shaders[1].meta.setdefault('k', 1) }}",
])
def test_a_template_cannot_change_what_every_output_shares(tmp_path, statement):
    manifest, blobs = _manifest(tmp_path, 3)
    (tmp_path / "bad.j2").write_text("line one\n" + statement + "\n")
    source = emit.prepare(manifest, blobs)
    with pytest.raises(CodegenError, match=r"^bad\.j2:2: SecurityError"):
        emit.render_output(source, "template", "out.h", "bad.j2")
    # Negative control: its own values it may change, the next output sees none of it.
    (tmp_path / "own.j2").write_text("{% set seen = [] %}{{ seen.append(1) or '' }}"
                                     "{{ shaders[0].update({'name': 'x'}) or '' }}{{ shaders[0].name }}{{ seen }}\n")
    assert emit.render_output(source, "template", "a.h", "own.j2") == {"a.h": b"x[1]\n"}
    (tmp_path / "read.j2").write_text("{{ shaders[0].name }}\n")
    assert emit.render_output(source, "template", "b.h", "read.j2") == {"b.h": b"k00\n"}


def test_words_print_and_serialise_as_the_list_they_stand_for(tmp_path):
    manifest, blobs = _manifest(tmp_path, 2)
    (tmp_path / "w.j2").write_text("{{ shaders[1].words[:6] }} {{ shaders[1].words | tojson }} "
                                   "{{ shaders[1].words | length }}\n")
    text = emit.render("template", manifest, "w.h", blobs, "w.j2")["w.h"].decode()
    values = list(ctext.blob_words(blobs["k01"], "x"))
    assert text == f"{values[:6]} {json.dumps(values)} {len(values)}\n"
