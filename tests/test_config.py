"""Config: defaults, matrix expansion, explicit variants, and refusals that name the key."""

from __future__ import annotations

import pytest

from genspirv.project.config import Variant, load_config
from genspirv.errors import ConfigError

COMP = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"


def names(config):
    return [v.name for v in config.variants]


def test_no_pyproject_builds_every_source_under_its_stem(tiny_project):
    root = tiny_project({"glsl/a.comp": COMP, "glsl/sub/b.comp": COMP,
                         "glsl/include/c.comp": COMP, "glsl/include/h.glsl": ""}, pyproject=None)
    config = load_config(root)
    assert names(config) == ["a", "b"]     # nothing under glsl/include/ is a source
    assert config.variants[1] == Variant("b", "glsl/sub/b.comp", ())
    assert (config.glsl_dir, config.spirv_dir, config.manifest, config.target_env, config.glslang) == \
        ("glsl", "spirv", "manifests/shaders.json", "vulkan1.2", "13.1.1")


def test_pyproject_without_table_and_with_empty_table_use_defaults(tiny_project):
    for text in ("[project]\nname = 'x'\n", "[tool.genspirv]\n"):
        root = tiny_project({"glsl/a.comp": COMP}, pyproject=text)
        assert names(load_config(root)) == ["a"]


def test_matrix_names_follow_key_order_and_aliases(tiny_project):
    root = tiny_project({"glsl/k.comp": COMP}, pyproject="""
[tool.genspirv.shaders."k.comp"]
name = "kern"
defines = { COMMON = "7" }
matrix = { TYPE = { f32 = "float", f16 = "float16_t" }, N = ["1", "4"] }
variants = [ { name = "kern_special", defines = { TYPE = "int", EXTRA = "x" } } ]
""")
    config = load_config(root)
    assert names(config) == ["kern_f16_1", "kern_f16_4", "kern_f32_1", "kern_f32_4", "kern_special"]
    by_name = {v.name: v.defines_dict for v in config.variants}
    assert by_name["kern_f32_4"] == {"COMMON": "7", "TYPE": "float", "N": "4"}
    assert by_name["kern_special"] == {"COMMON": "7", "TYPE": "int", "EXTRA": "x"}


def test_only_explicit_variants_replace_the_stem_build(tiny_project):
    root = tiny_project({"glsl/k.comp": COMP}, pyproject="""
[tool.genspirv.shaders."k.comp"]
variants = [ { name = "one" }, { name = "two", defines = { X = "2" } } ]
""")
    assert names(load_config(root)) == ["one", "two"]


@pytest.mark.parametrize("toml, key", [
    ('[tool.genspirv]\nglsl_dirr = "glsl"\n', "tool.genspirv.glsl_dirr"),
    ('[tool.genspirv]\nflags = "-O"\n', "tool.genspirv.flags"),
    ('[tool.genspirv]\nflags = ["-g"]\n', "tool.genspirv.flags[0]"),
    ('[tool.genspirv]\ntarget_env = "vulkan9"\n', "tool.genspirv.target_env"),
    ('[tool.genspirv]\nspirv_dir = "../out"\n', "tool.genspirv.spirv_dir"),
    ('[tool.genspirv.shaders."a.comp"]\nmatrx = {}\n', 'tool.genspirv.shaders."a.comp".matrx'),
    ('[tool.genspirv.shaders."a.comp"]\nmatrix = { T = 3 }\n', 'tool.genspirv.shaders."a.comp".matrix.T'),
    ('[tool.genspirv.shaders."a.comp"]\nmatrix = { T = { x = 1 } }\n',
     'tool.genspirv.shaders."a.comp".matrix.T.x'),
    ('[tool.genspirv.shaders."a.comp"]\ndefines = { X = 1 }\n', 'tool.genspirv.shaders."a.comp".defines.X'),
    ('[tool.genspirv.shaders."a.comp"]\nvariants = [ { defines = {} } ]\n',
     'tool.genspirv.shaders."a.comp".variants[0].name'),
    ('[tool.genspirv.shaders."missing.comp"]\n', 'tool.genspirv.shaders."missing.comp"'),
    ('[tool.genspirv]\ngenerate = [ { target = "c" } ]\n', "tool.genspirv.generate[0].output"),
    ('[tool.genspirv.shaders."a.comp"]\nname = "bad-name"\n', 'tool.genspirv.shaders."a.comp".name'),
])
def test_bad_config_names_the_key(tiny_project, toml, key):
    root = tiny_project({"glsl/a.comp": COMP}, pyproject=toml)
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert key in str(info.value)
    assert info.value.exit_code == 2


def test_duplicate_variant_names_name_both_sources(tiny_project):
    root = tiny_project({"glsl/a.comp": COMP, "glsl/b.comp": COMP}, pyproject="""
[tool.genspirv.shaders."b.comp"]
name = "a"
""")
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert "'a'" in str(info.value)
    assert "glsl/a.comp" in str(info.value) and "glsl/b.comp" in str(info.value)


def test_bad_toml_is_a_config_error_naming_the_file(tiny_project):
    root = tiny_project({"glsl/a.comp": COMP}, pyproject="[tool.genspirv\n")
    with pytest.raises(ConfigError, match="pyproject.toml"):
        load_config(root)


def test_cli_config_error_exits_2_without_traceback(tiny_project, genspirv):
    root = tiny_project({"glsl/a.comp": COMP}, pyproject='[tool.genspirv]\nglslang = 13\n')
    result = genspirv("build", "--root", root)
    assert result.code == 2
    assert "genspirv: error: tool.genspirv.glslang" in result.err
    assert "Traceback" not in result.err


# -- settings, generators, exclusions -----------------------------------------

GEN_TOML = """
[tool.genspirv]
generator = "gen.py"
flags = ["--quiet"]
optimize = true

[tool.genspirv.shaders."a.comp"]
target_env = "vulkan1.3"
flags = ["-Os"]
"""


def _gen(body: str) -> str:
    return "def variants():\n" + "\n".join("    " + line for line in body.splitlines()) + "\n"


def test_settings_resolve_variant_over_source_over_top_and_flags_accumulate(tiny_project):
    root = tiny_project({"glsl/a.comp": COMP, "glsl/b.comp": COMP, "gen.py": _gen("""
return [{"name": "a_gen", "source": "a.comp", "defines": {"X": "1"}, "flags": ["-Od"], "optimize": False},
        {"name": "a_opt", "source": "a.comp", "validate": False, "optional": True},
        {"name": "b_gen", "source": "b.comp", "target_env": "vulkan1.1"}]""")}, pyproject=GEN_TOML)
    config = load_config(root)
    by = {v.name: v for v in config.variants}
    # A source the generator builds has no stem variant; b.comp has no table: top level only.
    assert sorted(by) == ["a_gen", "a_opt", "b_gen"]
    assert (by["a_gen"].flags, by["a_gen"].target_env, by["a_gen"].optimize) == \
        (("--quiet", "-Os", "-Od"), "vulkan1.3", False)
    assert (by["a_opt"].optimize, by["a_opt"].validate, by["a_opt"].optional) == (True, False, True)
    assert (by["b_gen"].flags, by["b_gen"].target_env, by["b_gen"].optimize) == (("--quiet",), "vulkan1.1", True)
    assert by["a_gen"].defines == (("X", "1"),) and by["a_gen"].source == "glsl/a.comp"


@pytest.mark.parametrize("body, needles", [
    ('return [{"name": "v1", "source": "a.comp", "optimise": True}]', ("gen.py", "'v1'", "'optimise'")),
    ('return [{"name": "v1", "source": "a.comp", "target_env": "vulkan9"}]', ("gen.py", "'v1'", "vulkan9")),
    ('return [{"name": "v1", "source": "a.comp", "validate": "no"}]', ("gen.py", "'v1'", "validate")),
    ('return [{"name": "v1", "source": "a.comp", "defines": {"X": 1}}]', ("gen.py", "'v1'", "defines.X")),
    ('return [{"name": "v1", "source": "a.comp", "defines": {"X": "a\\nb"}}]',
     ("gen.py", "'v1'", "control character")),
    ('return [{"name": "v1", "source": "nowhere.comp"}]', ("gen.py", "'v1'", "glsl/nowhere.comp")),
    ('return [{"name": "v-1", "source": "a.comp"}]', ("gen.py: variant #0: name: 'v-1' is not a valid variant name", "try 'v_1'")),
    ('return [{"source": "a.comp"}]', ("gen.py", "variant #0", "'name'")),
    ('return [{"name": "a", "source": "a.comp"}, {"name": "a", "source": "a.comp"}]', ("duplicate", "'a'")),
    ('return {"name": "v1"}', ("gen.py", "list of mappings")),
    ('return [1 / 0]', ("gen.py:2: the generator failed in variants(): ZeroDivisionError: division by zero",)),
])
def test_bad_generator_variants_name_the_generator_and_the_variant(tiny_project, body, needles):
    root = tiny_project({"glsl/a.comp": COMP, "gen.py": _gen(body)},
                        pyproject='[tool.genspirv]\ngenerator = "gen.py"\n')
    with pytest.raises(ConfigError) as info:
        load_config(root)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_generator_and_table_variants_share_one_name_space(tiny_project):
    root = tiny_project({"glsl/a.comp": COMP, "glsl/b.comp": COMP,
                         "gen.py": _gen('return [{"name": "b", "source": "a.comp"}]')},
                        pyproject='[tool.genspirv]\ngenerator = "gen.py"\n')
    with pytest.raises(ConfigError, match="duplicate variant name 'b'.*glsl/a.comp|glsl/b.comp"):
        load_config(root)


def test_exclude_keeps_sources_out_and_refuses_a_table_for_one(tiny_project):
    files = {"glsl/a.comp": COMP, "glsl/wip/broken.comp": "not glsl", "glsl/wip/x.comp": COMP}
    root = tiny_project(files, pyproject='[tool.genspirv]\nexclude = ["wip/*"]\n')
    assert names(load_config(root)) == ["a"]
    root = tiny_project(files, pyproject='[tool.genspirv]\nexclude = ["wip/*"]\n'
                                         '[tool.genspirv.shaders."wip/x.comp"]\n')
    with pytest.raises(ConfigError, match='"wip/x.comp".*excluded'):
        load_config(root)


def test_a_define_with_a_control_character_is_refused_naming_the_key(tiny_project):
    root = tiny_project({"glsl/a.comp": COMP},
                        pyproject='[tool.genspirv.shaders."a.comp"]\ndefines = { X = "1\\n#define Y 2" }\n')
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert 'tool.genspirv.shaders."a.comp".defines.X' in str(info.value)
    assert "control character" in str(info.value) and info.value.exit_code == 2


@pytest.mark.parametrize("output, needle", [("manifests/shaders.json", "the manifest"),
                                            ("spirv/a.spv", "the blob of variant a")])
def test_a_generated_file_colliding_with_an_output_is_refused(tiny_project, output, needle):
    pyproject = f'[tool.genspirv]\ngenerate = [ {{ target = "c", output = "{output}" }} ]\n'
    root = tiny_project({"glsl/a.comp": COMP}, pyproject=pyproject)
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert "tool.genspirv.generate[0].output" in str(info.value) and needle in str(info.value)


# -- refusals a new user meets first: one line, the file or key, the fix --------


def test_a_source_whose_stem_is_no_variant_name_gets_the_fix(tiny_project):
    root = tiny_project({"glsl/my-kernel.comp": COMP}, pyproject=None)
    with pytest.raises(ConfigError) as info:
        load_config(root)
    message = str(info.value)
    assert message.startswith("glsl/my-kernel.comp: the file stem 'my-kernel' is not a valid variant name")
    assert '[tool.genspirv.shaders."my-kernel.comp"] name = "my_kernel"' in message
    assert "rename the file" in message and "\n" not in message
    # The fix it gives works.
    (root / "pyproject.toml").write_text('[tool.genspirv.shaders."my-kernel.comp"]\nname = "my_kernel"\n')
    assert names(load_config(root)) == ["my_kernel"]


def test_a_bad_stem_of_a_source_only_the_generator_builds_is_not_refused(tiny_project):
    """Negative control: the stem is checked only where it becomes a name."""
    root = tiny_project({"glsl/my-kernel.comp": COMP,
                         "gen.py": _gen('return [{"name": "k", "source": "my-kernel.comp"}]')},
                        pyproject='[tool.genspirv]\ngenerator = "gen.py"\n')
    assert names(load_config(root)) == ["k"]


def test_a_matrix_value_that_makes_a_bad_name_gets_an_alias_hint(tiny_project):
    root = tiny_project({"glsl/k.comp": COMP},
                        pyproject='[tool.genspirv.shaders."k.comp"]\nmatrix = { N = ["1", "1.5"] }\n')
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert str(info.value) == (
        "tool.genspirv.shaders.\"k.comp\".matrix.N: the value '1.5' gives the variant name 'k_1.5', which is "
        "not a valid variant name (letters, digits and _, not starting with a digit: it names a blob file "
        "and a C identifier); give the value an alias: N = { 1_5 = \"1.5\" }")
    (root / "pyproject.toml").write_text('[tool.genspirv.shaders."k.comp"]\nmatrix = { N = { 1 = "1", 1_5 = "1.5" } }\n')
    assert names(load_config(root)) == ["k_1", "k_1_5"]


def test_a_pyproject_that_is_not_utf8_names_line_column_and_offset(tiny_project):
    root = tiny_project({"glsl/a.comp": COMP}, pyproject=None)
    (root / "pyproject.toml").write_bytes(b'[tool.genspirv]\n# caf\xe9\n')
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert str(info.value) == "pyproject.toml:2:6: byte 0xe9 (offset 21) is not UTF-8; save the file as UTF-8"
    (root / "pyproject.toml").write_bytes('[tool.genspirv]\n# caf\xe9\n'.encode())    # the same, as UTF-8
    assert names(load_config(root)) == ["a"]


def test_an_empty_folder_says_how_to_start_a_project(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert "no genspirv project here" in str(info.value) and "run `genspirv init`" in str(info.value)


def test_a_configured_project_without_its_glsl_dir_is_not_told_to_init(tiny_project):
    """Negative control: init would refuse here; the message names the key instead."""
    root = tiny_project({}, pyproject='[tool.genspirv]\nglsl_dir = "shaders"\n')
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert str(info.value).startswith("tool.genspirv.glsl_dir: no folder 'shaders' in the project")
    assert "init" not in str(info.value) and str(root) not in str(info.value)


def test_a_tool_key_that_is_not_a_table_is_refused(tiny_project):
    root = tiny_project({"glsl/a.comp": COMP}, pyproject='tool = "x"\n')
    with pytest.raises(ConfigError, match=r"^pyproject.toml: tool: expected a table, got a string$"):
        load_config(root)


@pytest.mark.parametrize("toml, message", [
    ('manifest = "glsl/a.comp"', "tool.genspirv.manifest: 'glsl/a.comp' would overwrite the source of variant a"),
    ('manifest = "pyproject.toml"', "tool.genspirv.manifest: 'pyproject.toml' would overwrite the project's"),
    ('manifest = "glsl/include/m.json"', "tool.genspirv.manifest: 'glsl/include/m.json' is among the sources"),
    ('manifest = "glsl/new.comp"', "tool.genspirv.manifest: 'glsl/new.comp' is among the sources"),
    ('manifest = "glsl"', "tool.genspirv.manifest: 'glsl' is a folder"),
    ('spirv_dir = "glsl/a.comp"', "tool.genspirv.spirv_dir: 'glsl/a.comp' is a file"),
    ('spirv_dir = "glsl/a.comp/blobs"', "tool.genspirv.spirv_dir: 'glsl/a.comp/blobs' cannot be written: glsl/a.comp"),
    ('manifest = "pyproject.toml/m.json"',
     "tool.genspirv.manifest: 'pyproject.toml/m.json' cannot be written: pyproject.toml is a file, not a folder"),
    ('generate = [ { target = "c", output = "glsl/include/t" } ]', "tool.genspirv.generate[0].output: "),
    ('generate = [ { target = "cpp", output = "t" } ]', "tool.genspirv.generate[0].target: unknown target 'cpp'"),
])
def test_an_output_on_a_file_the_build_reads_is_refused(tiny_project, toml, message):
    root = tiny_project({"glsl/a.comp": COMP, "glsl/include/h.glsl": ""}, pyproject=f"[tool.genspirv]\n{toml}\n")
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert str(info.value).startswith(message), str(info.value)


def test_outputs_beside_the_sources_are_fine_where_glsl_dir_is_the_root(tiny_project):
    """Negative control: glsl_dir = "." puts the manifest under it, which is no collision."""
    root = tiny_project({"a.comp": COMP}, pyproject='[tool.genspirv]\nglsl_dir = "."\n')
    config = load_config(root)
    assert names(config) == ["a"] and config.manifest == "manifests/shaders.json"


@pytest.mark.parametrize("files, message", [
    ({"gen.py": "def variants(:\n    return []\n"}, "gen.py:1: the generator failed while loading: SyntaxError: "),
    ({"gen.py": "import sys\nsys.exit(3)\n"}, "gen.py:2: the generator failed while loading: it called sys.exit(3)"),
    ({"gen.py": "def variants():\n    raise ValueError('two\\nlines')\n"},
     "gen.py:2: the generator failed in variants(): ValueError: two lines"),
    ({"gen.py": "import helper\ndef variants():\n    return helper.make()\n", "helper.py": "def make():\n    return {}['x']\n"},
     "gen.py:3: the generator failed in variants(): KeyError: 'x' (in helper.py:2)"),
    ({"gen.py": "def variants():\n    return [{1: 2, 'name': 'a', 'source': 'a.comp'}]\n"},
     "gen.py: variant 'a': unknown key 1 "),
])
def test_a_failing_generator_is_one_line_naming_its_file_and_line(tiny_project, genspirv, files, message):
    root = tiny_project({"glsl/a.comp": COMP, **files}, pyproject='[tool.genspirv]\ngenerator = "gen.py"\n')
    result = genspirv("build", "--root", root)
    assert result.code == 2 and result.err.count("\n") == 1 and "Traceback" not in result.err, result.err
    assert result.err.startswith(f"genspirv: error: {message}"), result.err


# -- a folder with no [tool.genspirv] says it used the defaults ----------------------------------

PLAIN = "#version 450\nlayout(local_size_x = 8) in;\nvoid main() {}\n"


@pytest.mark.parametrize("pyproject, where", [
    (None, "no pyproject.toml"),
    ('[project]\nname = "x"\n', "pyproject.toml has no [tool.genspirv]"),
])
def test_a_project_without_the_table_is_marked_as_defaults(tmp_path, pyproject, where):
    (tmp_path / "glsl").mkdir()
    (tmp_path / "glsl" / "plain.comp").write_text(PLAIN)
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    config = load_config(tmp_path)
    assert config.defaults and config.defaults_note().startswith(f"{where}: the default settings apply")
    # Control: any [tool.genspirv], even an empty one, is a configuration.
    (tmp_path / "pyproject.toml").write_text("[tool.genspirv]\n")
    assert not load_config(tmp_path).defaults


@pytest.mark.slow
def test_build_without_a_config_says_it_used_the_defaults(tmp_path, genspirv):
    (tmp_path / "glsl").mkdir()
    (tmp_path / "glsl" / "plain.comp").write_text(PLAIN)
    said = genspirv("build", "--root", tmp_path)
    assert said.code == 0, said.err
    assert said.out.splitlines()[-2:] == [
        "genspirv build: no pyproject.toml: the default settings apply (every glsl/*.comp under its own name; "
        "`genspirv init` adds a [tool.genspirv] section to change them)",
        "genspirv build: 1 compiled, 0 up to date, 0 removed, 2 files written"]
    (tmp_path / "pyproject.toml").write_text("[tool.genspirv]\n")          # control: configured, no note
    assert "default settings" not in genspirv("build", "--root", tmp_path).out


def _rglob_sources(root, glsl_dir, exclude=(), suffixes=(".comp",)):
    # The walk discover_sources replaced, kept as its oracle.
    from genspirv.project.variants import is_excluded
    base = root / glsl_dir
    found = []
    for path in sorted(p for suffix in suffixes for p in base.rglob(f"*{suffix}")):
        rel = path.relative_to(base).as_posix()
        if rel.split("/", 1)[0] == "include" or not path.is_file() or is_excluded(rel, exclude):
            continue
        found.append(rel)
    return found


def test_discover_sources_finds_what_rglob_found(tmp_path):
    import os

    from genspirv.project.config import OTHER_STAGES, discover_sources
    glsl = tmp_path / "glsl"
    for rel in ("a.comp", "b/c.comp", "b/a-b.comp", "b-a.comp", ".hidden/x.comp", "include/h.comp",
                "sub/include/i.comp", "skip/s.comp", "z.frag", "d/e.vert", "notes.txt", "B/Upper.comp"):
        (glsl / rel).parent.mkdir(parents=True, exist_ok=True)
        (glsl / rel).write_text("//\n")
    (glsl / "folder.comp").mkdir()
    os.symlink(glsl / "b", glsl / "linked")             # a symlinked folder is not entered
    os.symlink(glsl / "a.comp", glsl / "alias.comp")    # a symlinked file is a source
    os.symlink(glsl / "gone", glsl / "broken.comp")
    for exclude, suffixes in (((), (".comp",)), (("skip/*",), (".comp",)), ((), tuple(OTHER_STAGES))):
        assert discover_sources(tmp_path, "glsl", exclude, suffixes) == _rglob_sources(tmp_path, "glsl", exclude, suffixes)
    # Sorted by path parts, as paths sort ("b/..." before "b-a.comp"); only the top include/ is left out.
    assert discover_sources(tmp_path, "glsl") == [".hidden/x.comp", "B/Upper.comp", "a.comp", "alias.comp",
                                                  "b/a-b.comp", "b/c.comp", "b-a.comp", "skip/s.comp",
                                                  "sub/include/i.comp"]
    assert discover_sources(tmp_path, "absent") == []
