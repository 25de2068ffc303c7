"""A project template is the project's own code, bounded as its generator is (docs/SECURITY.md).

Rendered in a child process (``genspirv.project.isolated``) under the generators'
deadline (``GENSPIRV_GENERATOR_TIMEOUT``) and an address-space cap
(``GENSPIRV_COMPILER_MEMORY_MB`` past what the child starts with): a runaway
loop, a huge string, a macro that calls itself, text that is not UTF-8 are
each one line naming the template, never a hang or a traceback; the output of
a good template is unchanged. A jinja2 with known sandbox escapes is refused.
Builds run through the fake compiler (tests/fake_compiler.py) in-process, and
once as a real ``python -m genspirv`` for the exit status and stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_compiler import FakeCompiler
from genspirv import emit
from genspirv.buildsys.builder import build
from genspirv.emit import project as project_template
from genspirv.errors import CodegenError
from genspirv.manifest import Manifest, Toolchain
from genspirv.project.config import load_config

REPO = Path(__file__).resolve().parent.parent
COMP = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"
GOOD = "{% for s in shaders %}{{ s.name }} {{ s.words | length }} {{ s.blob | hex_bytes(4) | first }}\n{% endfor %}\n"
LOOP = ("{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100000) %}"
        "{% endfor %}{% endfor %}{% endfor %}\n")
HUGE = "{{ 'x' * 10**11 }}\n"


def manifest(root: Path) -> Manifest:
    return Manifest(Toolchain("13.1.1", "vulkan1.2", ()), (), root=root)


def render(root: Path, text: str, name: str = "tools/t.j2") -> bytes:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text)
    return emit.render("template", manifest(root), "out/t.txt", template=name)["out/t.txt"]


def project(root: Path, template: str) -> Path:
    for rel, text in {"glsl/a.comp": COMP, "tools/t.j2": template,
                      "pyproject.toml": '[tool.genspirv]\n'
                                        'generate = [ { template = "tools/t.j2", output = "out/t.txt" } ]\n'}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_runaway_loop_is_stopped_at_the_deadline_naming_the_template_and_the_setting(tmp_path, monkeypatch):
    """Was: 10**15 iterations, the build hung. Control: a quick loop of the same shape renders."""
    monkeypatch.setenv("GENSPIRV_GENERATOR_TIMEOUT", "1")
    start = time.monotonic()
    with pytest.raises(CodegenError) as info:
        render(tmp_path, LOOP)
    assert time.monotonic() - start < 15
    assert str(info.value) == ("tools/t.j2: the template did not finish rendering within 1 s and was stopped: "
                               "make it quicker (it renders on every build that changes an output, and on "
                               "check), or raise GENSPIRV_GENERATOR_TIMEOUT")
    assert render(tmp_path, LOOP.replace("100000", "3") + "done\n") == b"done\n"


def test_a_huge_string_is_one_line_naming_the_template_and_the_cap(tmp_path, monkeypatch):
    """``'x' * 10**11`` (was: a MemoryError traceback out of jinja2, or the machine's memory)."""
    with pytest.raises(CodegenError) as info:
        render(tmp_path, HUGE)
    assert str(info.value) == ("tools/t.j2: the template took more than the 2048 MiB it may "
                               "(GENSPIRV_COMPILER_MEMORY_MB) and was stopped")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="the cap reads what the child maps from /proc")
def test_the_memory_cap_is_what_stops_a_large_render(tmp_path, monkeypatch):
    """A 160 MiB string under a 16 MiB cap is refused; the control: with 512 MiB allowed, the
    same template renders (so the cap, not the machine, refused it). The string is far past the
    cap because the child may also use the heap its parent (this test process) left free."""
    text = "{{ ('y' * 160 * 1024 * 1024) | length }}\n"
    monkeypatch.setenv("GENSPIRV_COMPILER_MEMORY_MB", "16")
    with pytest.raises(CodegenError, match=r"more than the 16 MiB it may \(GENSPIRV_COMPILER_MEMORY_MB\)"):
        render(tmp_path, text)
    monkeypatch.setenv("GENSPIRV_COMPILER_MEMORY_MB", "512")
    assert render(tmp_path, text) == b"167772160\n"


@pytest.mark.parametrize("text, expected", [
    ("{% macro m() %}{{ m() }}{% endmacro %}\n{{ m() }}\n", r"^tools/t\.j2:\d+: the template recursed too deeply"),
    ("a\n{{ '\\udcff' }}\n", r"^tools/t\.j2: the rendered text is not UTF-8: surrogates not allowed$"),
    ("a\n{{ {}['k'] }}\n", r"^tools/t\.j2:2: UndefinedError: "),
    ("a\n\n{{ 1 // 0 }}\n", r"^tools/t\.j2:3: ZeroDivisionError: integer division or modulo by zero$"),
])
def test_any_failure_inside_a_template_is_one_line_naming_it(tmp_path, text, expected):
    """Was: RecursionError and UnicodeEncodeError escaped as tracebacks."""
    with pytest.raises(CodegenError, match=expected) as info:
        render(tmp_path, text)
    assert "\n" not in str(info.value)


def test_a_good_template_renders_the_same_bytes_in_its_child(tmp_path):
    """The child changes nothing of the output: the same bytes as jinja2 rendering in this process."""
    root = project(tmp_path, GOOD)
    build(load_config(root), compiler=FakeCompiler(), jobs=1)
    from genspirv.manifest import load_manifest
    m = load_manifest(root / "manifests/shaders.json")
    blobs = {e.name: m.read_blob(e) for e in m.shaders}
    from genspirv.emit import prepare
    from genspirv.project.config import BlobMode
    here = project_template._render(prepare(m, blobs), "tools/t.j2", "out/t.txt", BlobMode.ARRAYS, None, GOOD, 2048)
    assert (root / "out/t.txt").read_bytes() == here
    assert here.startswith(b"a 42 0x03, 0x02, 0x23, 0x07\n")


@pytest.mark.slow
def test_the_build_cli_stops_a_runaway_template_with_one_line_and_writes_nothing(tmp_path):
    """As a user runs it: exit 2, one ``genspirv: error:`` line naming the template, no traceback,
    no output written; the control: a quick template, exit 0 and its output."""
    root = project(tmp_path, LOOP)
    env = {**os.environ, "GENSPIRV_GENERATOR_TIMEOUT": "1", "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-m", "genspirv", "build", "--root", str(root)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("genspirv: error:")]
    assert errors == ["genspirv: error: tools/t.j2: the template did not finish rendering within 1 s and was "
                      "stopped: make it quicker (it renders on every build that changes an output, and on "
                      "check), or raise GENSPIRV_GENERATOR_TIMEOUT"]
    assert "Traceback" not in run.stderr and not (root / "out").exists()
    (root / "tools/t.j2").write_text("quick\n")
    run = subprocess.run([sys.executable, "-m", "genspirv", "build", "--root", str(root)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert (root / "out/t.txt").read_text() == "quick\n"


@pytest.mark.parametrize("version", ["3.1.5", "3.1.4", "3.0.3", "2.11.3"])
def test_a_jinja2_with_known_sandbox_escapes_is_refused_in_one_line(tmp_path, monkeypatch, version):
    """Was: any jinja2 >= 3.0 rendered project templates. Control: 3.1.6 (and later) renders."""
    monkeypatch.setattr(project_template, "jinja2_version", lambda: version)
    with pytest.raises(CodegenError) as info:
        render(tmp_path, "ok\n")
    assert str(info.value) == (f"tools/t.j2: jinja2 {version} has known sandbox escapes (CVE-2024-56201, "
                               "CVE-2024-56326, CVE-2025-27516); project templates need jinja2 3.1.6 or later: "
                               "pip install 'jinja2>=3.1.6'")
    for good in ("3.1.6", "3.2.0", "4.0.0a1"):
        monkeypatch.setattr(project_template, "jinja2_version", lambda good=good: good)
        assert render(tmp_path, "ok\n") == b"ok\n"


def test_the_installed_jinja2_and_the_pin_are_past_the_escapes():
    import re
    pin = re.search(r'"jinja2>=([\d.]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    assert tuple(map(int, pin.split("."))) == project_template.MIN_JINJA2
    project_template.check_jinja2("t.j2")           # this environment's own jinja2 passes


def test_the_sandbox_escapes_those_versions_had_are_closed(tmp_path):
    """CVE-2025-27516's and CVE-2024-56326's shapes: str.format reached through |attr or a stored
    reference is caught by the sandbox (a SecurityError line), never run."""
    for text in ("{{ ('{0.__class__}' | attr('format'))(shaders) }}\n",
                 "{% set f = '{0.__class__.__mro__}'.format %}{{ f(shaders) }}\n"):
        with pytest.raises(CodegenError, match=r"^tools/t\.j2:1: SecurityError: "):
            render(tmp_path, text)


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["win32", "darwin"])
def test_where_fork_is_missing_or_unsafe_a_template_renders_in_a_fresh_python_with_the_same_bounds(
        tmp_path, monkeypatch, platform):
    """Windows (no fork) and macOS: the same bytes, the same one-line stop at the deadline."""
    monkeypatch.setattr(sys, "platform", platform)
    if platform == "win32":
        monkeypatch.delattr(os, "fork")
    assert render(tmp_path, "{% for i in range(3) %}{{ i }}{% endfor %}\n") == b"012"
    monkeypatch.setenv("GENSPIRV_GENERATOR_TIMEOUT", "2")
    with pytest.raises(CodegenError, match=r"^tools/t\.j2: the template did not finish rendering within 2 s"):
        render(tmp_path, LOOP)


# -- several outputs in one child ------------------------------------------------------------------

def _entries(root: Path, templates: dict[str, str], outputs: list[tuple[str, str]]):
    from genspirv.project.config import Generate
    for name, text in templates.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return [Generate("template", output, template) for template, output in outputs]


def test_a_projects_outputs_render_in_as_many_children_as_jobs_each_as_it_would_alone(tmp_path, monkeypatch):
    """Was: a child (a fork) an output, ~20 ms each in page faults at 157 outputs. The bytes are
    each output's own (``output`` differs), as rendering it alone gives."""
    entries = _entries(tmp_path, {"tools/t.j2": "{{ output }} {{ template }}\n", "tools/u.j2": "u {{ output }}\n"},
                       [("tools/t.j2", f"out/{i}.txt") for i in range(4)] + [("tools/u.j2", "out/u.txt")])
    calls = []
    real = project_template.isolated.call_in_child
    monkeypatch.setattr(project_template.isolated, "call_in_child",
                        lambda fn, args, *rest, **kw: calls.append(len(args[1])) or real(fn, args, *rest, **kw))
    source = emit.prepare(manifest(tmp_path))
    together = emit.render_outputs(source, entries, jobs=2)
    assert sorted(calls) == [2, 3]
    alone = [emit.render_output(source, g.target, g.output, g.template) for g in entries]
    assert together == alone
    assert together[0] == {"out/0.txt": b"out/0.txt tools/t.j2\n"} and together[4] == {"out/u.txt": b"u out/u.txt\n"}
    assert len(calls) == 2 + 5


@pytest.mark.slow
def test_a_runaway_output_among_others_in_one_child_names_its_own_template(tmp_path, monkeypatch):
    """The child renders t, then u (which never ends): the line names u, not the first of the share."""
    monkeypatch.setenv("GENSPIRV_GENERATOR_TIMEOUT", "1")
    entries = _entries(tmp_path, {"tools/t.j2": GOOD, "tools/u.j2": LOOP},
                       [("tools/t.j2", "out/t.txt"), ("tools/u.j2", "out/u.txt"), ("tools/t.j2", "out/t2.txt")])
    with pytest.raises(CodegenError, match=r"^tools/u\.j2: the template did not finish rendering within 1 s"):
        emit.render_outputs(emit.prepare(manifest(tmp_path)), entries, jobs=1)
    entries[1] = entries[0]             # control: the same share without the runaway renders
    assert [list(d) for d in emit.render_outputs(emit.prepare(manifest(tmp_path)), entries, jobs=1)] == \
        [["out/t.txt"], ["out/t.txt"], ["out/t2.txt"]]
