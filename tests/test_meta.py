"""A variant's ``meta``: data for project templates, in the manifest, in the outputs' key, not the compile's.

Builds run against the fake compiler (tests/fake_compiler.py): what matters
here is what is compiled, rendered and written, not glslang's bytes.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from fake_compiler import FakeCompiler
from genspirv.buildsys.builder import build
from genspirv.buildsys.builder import check
from genspirv.project.config import load_config
from genspirv.errors import ConfigError
from genspirv.manifest import load_manifest

COMP = "#version 450\nvoid main() {}\n"
TEMPLATE = """\
{% for s in shaders %}
{{ s.name }} subgroup={{ s.meta.subgroup | default("none") }} tile={{ s.meta.tile | default([]) | join("x") }}
{% endfor %}
"""
CONFIG = """\
[tool.genspirv]
generator = "gen.py"
generate = [ { template = "tools/table.j2", output = "src/table.txt" } ]

[tool.genspirv.shaders."add.comp"]
meta = { op = "add", subgroup = 32 }
matrix = { T = { f32 = "float", i32 = "int" } }

[tool.genspirv.shaders."mul.comp"]
variants = [ { name = "mul_big", meta = { tile = [8, 4] } }, { name = "mul_plain" } ]
"""
GEN = """\
def variants():
    return [{"name": "neg_wide", "source": "neg.comp", "meta": {"subgroup": SUBGROUP, "flags": {"fp16": True}}}]

SUBGROUP = 64
"""


def make(root: Path, config: str = CONFIG, gen: str = GEN) -> Path:
    for rel, text in {"glsl/add.comp": COMP, "glsl/mul.comp": COMP, "glsl/neg.comp": COMP,
                      "tools/table.j2": TEMPLATE, "gen.py": gen, "pyproject.toml": config}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_meta_resolves_variant_over_source_and_comes_from_the_generator_too(tmp_path):
    config = load_config(make(tmp_path))
    meta = {v.name: v.meta for v in config.variants}
    assert meta == {"add_f32": {"op": "add", "subgroup": 32}, "add_i32": {"op": "add", "subgroup": 32},
                    "mul_big": {"tile": [8, 4]}, "mul_plain": {},
                    "neg_wide": {"subgroup": 64, "flags": {"fp16": True}}}


def test_meta_reaches_the_manifest_and_a_project_template(tmp_path):
    root = make(tmp_path)
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    doc = json.loads((root / "manifests/shaders.json").read_text())
    entries = {e["name"]: e for e in doc["shaders"]}
    assert entries["mul_big"]["meta"] == {"tile": [8, 4]}
    assert "meta" not in entries["mul_plain"]                  # written only when given
    assert load_manifest(root / "manifests/shaders.json").entry("neg_wide").meta == \
        {"flags": {"fp16": True}, "subgroup": 64}
    table = (root / "src/table.txt").read_text()
    assert "mul_big subgroup=none tile=8x4" in table and "neg_wide subgroup=64 tile=" in table
    assert "add_f32 subgroup=32 tile=" in table


def test_manifest_bytes_do_not_depend_on_the_order_meta_was_written_in(tmp_path):
    one = make(tmp_path / "one", CONFIG.replace('{ op = "add", subgroup = 32 }', '{ subgroup = 32, op = "add" }'))
    two = make(tmp_path / "two")
    for root in (one, two):
        build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert (one / "manifests/shaders.json").read_bytes() == (two / "manifests/shaders.json").read_bytes()


def test_changing_meta_rerenders_and_does_not_recompile(tmp_path):
    root = make(tmp_path)
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    (root / "gen.py").write_text(GEN.replace("SUBGROUP = 64", "SUBGROUP = 16"))
    compiler = FakeCompiler()
    report = build(load_config(root), compiler=compiler, jobs=1)
    assert sum(compiler.compiles.values()) == 0 and report.compiled == ()
    assert set(report.written) == {"manifests/shaders.json", "src/table.txt"}
    assert "neg_wide subgroup=16" in (root / "src/table.txt").read_text()
    # Negative control: the same meta again is a no-op that writes nothing.
    again = build(load_config(root), compiler=FakeCompiler(), jobs=1)
    assert again.written == () and again.compiled == ()
    assert check(load_config(root), compiler=FakeCompiler()).ok


def test_a_fresh_clone_with_meta_is_a_noop(tmp_path):
    root = make(tmp_path)
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    import shutil
    shutil.rmtree(root / ".genspirv")
    compiler = FakeCompiler()
    report = build(load_config(root), compiler=compiler, jobs=1)
    assert sum(compiler.compiles.values()) == 0 and report.written == ()


@pytest.mark.parametrize("where, value, said", [
    ('[tool.genspirv.shaders."add.comp"]\nmeta = "fast"\n', None, 'tool.genspirv.shaders."add.comp".meta: expected a table'),
    ('[tool.genspirv.shaders."add.comp"]\nmeta = { when = 2024-01-02 }\n', None,
     'tool.genspirv.shaders."add.comp".meta.when: a TOML date or time (2024-01-02) is not JSON data; quote it'),
    ('[tool.genspirv.shaders."add.comp"]\nvariants = [ { name = "a", meta = { x = [1, nan] } } ]\n', None,
     'tool.genspirv.shaders."add.comp".variants[0].meta.x[1]: nan is not a JSON number'),
    (None, '{"tile": {1: 2}}', "gen.py: variant 'neg_wide'.meta.tile: key 1 is not a string"),
    (None, '{"f": print}', "gen.py: variant 'neg_wide'.meta.f: builtin_function_or_method"),
    (None, '[1]', "gen.py: variant 'neg_wide'.meta: expected a table"),
])
def test_meta_that_is_not_json_data_is_refused_naming_the_value(tmp_path, where, value, said):
    config = "[tool.genspirv]\ngenerator = \"gen.py\"\n" + (where or "")
    gen = textwrap.dedent(f"""\
        def variants():
            return [{{"name": "neg_wide", "source": "neg.comp", "meta": {value or '{}'}}}]
        """)
    with pytest.raises(ConfigError) as info:
        load_config(make(tmp_path, config, gen))
    assert said in str(info.value)
