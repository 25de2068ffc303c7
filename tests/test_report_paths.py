"""Paths a build writes that are not its outputs, and outputs in folders it does not own.

A report (``--depfile``, ``--json``) that names one of the build's files, by any
spelling (``./``, ``..``, a symlink, a hard link), is refused before any work:
one line, exit 2, the file untouched, nothing built; the same report elsewhere,
inside the project too, is written (the control). A ``generate`` output, the
manifest or ``spirv_dir`` inside ``.git/`` or ``.genspirv/``, at any depth, in
any case, or through a symlink, is refused when the config is read; names that
only look alike (``.github/``, ``.genspirvrc``) are not.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from conftest import TINY_PYPROJECT
from genspirv.errors import ConfigError
from genspirv.project.config import load_config

PROJECT = TINY_PYPROJECT.replace("[tool.genspirv]\n", textwrap.dedent("""\
    [tool.genspirv]
    generator = "tools/gen.py"
    generate = [ { target = "c", output = "gen/shaders" },
                 { template = "tools/table.j2", output = "gen/table.txt" } ]
    """), 1)
GENERATOR = 'def variants():\n    return [{"name": "neg_g", "source": "neg.comp", "defines": {"G": "1"}}]\n'
TEMPLATE = "{% for s in shaders %}{{ s.name }}\n{% endfor %}"


@pytest.fixture
def project(tiny_project):
    """A tiny project with a generator, a C table and a template, not yet built, with a .git/."""
    root = tiny_project(pyproject=PROJECT, extra={"tools/gen.py": GENERATOR, "tools/table.j2": TEMPLATE})
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[remote \"origin\"]\n\turl = git@example.org:x.git\n")
    return root


def _files(root: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


# Each kind of file a report may not land on, spelled as a user might, and what the message calls it.
REFUSED = [
    ("source", "glsl/add.comp", "the source of variant add_f32"),
    ("source, ./ and ..", "./glsl/include/../add.comp", "the source of variant add_f32"),
    ("include", "glsl/include/common.glsl", "glsl/"),
    ("a new file among the sources", "glsl/include/report.json", "glsl/"),
    ("pyproject.toml", "pyproject.toml", "pyproject.toml"),
    ("generator", "tools/gen.py", "the generator file"),
    ("template", "tools/table.j2", "the template of tool.genspirv.generate[1]"),
    ("manifest", "manifests/shaders.json", "the manifest"),
    ("manifest, spelled with ..", "manifests/../manifests/shaders.json", "the manifest"),
    ("blob", "spirv/add_f32.spv", "the blob of variant add_f32"),
    ("a blob no variant has", "spirv/gone.spv", "spirv/"),
    ("generated C table", "gen/shaders.h", "tool.genspirv.generate[0].output"),
    ("templated output", "gen/table.txt", "tool.genspirv.generate[1].output"),
    ("state", ".genspirv/state.json", ".genspirv/"),
    ("git", ".git/config", ".git/"),
]


@pytest.mark.parametrize("option", ["--depfile", "--json"])
@pytest.mark.parametrize("what, path, named", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_report_on_a_file_of_the_build_is_refused_before_any_work(project, genspirv, option, what, path,
                                                                    named):
    # Outputs and state as an earlier build would have left them (the folders must exist for a report).
    for rel in ("manifests/shaders.json", "spirv/add_f32.spv", "gen/shaders.h", "gen/table.txt", ".genspirv/state.json"):
        (project / rel).parent.mkdir(exist_ok=True)
        (project / rel).write_text("{}\n")
    before = _files(project)
    r = genspirv("build", "--root", project, option, project / path)
    assert r.code == 2, r
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and named in lines[0] and "Traceback" not in r.err, r.err
    assert _files(project) == before            # the file as it was, and nothing built: no file new or changed


def test_check_refuses_a_json_report_on_the_manifest(built_tiny, genspirv):
    before = (built_tiny / "manifests" / "shaders.json").read_bytes()
    r = genspirv("check", "--root", built_tiny, "--json", built_tiny / "manifests" / "shaders.json")
    assert r.code == 2 and "the manifest" in r.err and len(r.err.strip().splitlines()) == 1, r
    assert (built_tiny / "manifests" / "shaders.json").read_bytes() == before
    r = genspirv("check", "--root", built_tiny, "--json", built_tiny / "check.json")      # control
    assert r.code == 0 and json.loads((built_tiny / "check.json").read_text())["ok"], r


def test_a_report_through_a_symlink_or_a_hard_link_is_refused(project, genspirv):
    (project / "out").mkdir()
    (project / "out" / "link.json").symlink_to(project / "pyproject.toml")
    (project / "out" / "into-glsl").symlink_to(project / "glsl", target_is_directory=True)
    os.link(project / "glsl" / "neg.comp", project / "out" / "hard.comp")
    before = _files(project)
    for path, named in (("out/link.json", "pyproject.toml"), ("out/into-glsl/new.d", "glsl/"),
                        ("out/hard.comp", "the source of variant neg")):
        r = genspirv("build", "--root", project, "--depfile", project / path)
        assert r.code == 2 and named in r.err, (path, r)
    assert _files(project) == before and (project / "out" / "link.json").is_symlink()


def test_two_reports_on_one_file_are_refused(project, genspirv):
    r = genspirv("build", "--root", project, "--json", project / "r.out", "--depfile", project / "./r.out")
    assert r.code == 2 and "--json and --depfile name one file" in r.err, r
    assert not (project / "r.out").exists()


def test_reports_elsewhere_are_written(project, genspirv, tmp_path):
    """The control: the same options, naming files that are not the build's, inside the project or not."""
    (project / "build").mkdir()
    for depfile, report in ((project / "build" / "shaders.d", project / "results.json"),
                            (tmp_path / "out.d", tmp_path / "out.json"),
                            (project / "spirv.d", project / ".github" / "r.json")):
        report.parent.mkdir(exist_ok=True)
        r = genspirv("build", "--root", project, "--depfile", depfile, "--json", report)
        assert r.code == 0, r
        assert "glsl/add.comp" in depfile.read_text() and json.loads(report.read_text())["ok"]


def test_build_file_names_nothing_outside_the_build(project):
    from genspirv.project.build_files import build_file
    config = load_config(project)
    assert build_file(config, project / "pyproject.toml") == "the project's pyproject.toml"
    assert build_file(config, project / "README.md") is None
    assert build_file(config, project / "spirv" / "notes.txt") is None      # only a .spv is a blob
    assert build_file(config, project / ".gitignore") is None
    assert build_file(config, project / ".genspirv-notes" / "x") is None


# -- outputs inside .git/ or .genspirv/ --------------------------------------------------------------


def _config_with(root: Path, table: str) -> Path:
    (root / "pyproject.toml").write_text(TINY_PYPROJECT.replace("[tool.genspirv]\n", "[tool.genspirv]\n" + table, 1))
    return root


OWNED = [
    ("manifest in .git", 'manifest = ".git/config"\n', "tool.genspirv.manifest", ".git/"),
    ("manifest, ./ spelling", 'manifest = "./.git/shaders.json"\n', "tool.genspirv.manifest", ".git/"),
    ("manifest deep in .git", 'manifest = ".git/refs/heads/shaders.json"\n', "tool.genspirv.manifest", ".git/"),
    ("manifest in a nested .git", 'manifest = "vendor/lib/.git/config"\n', "tool.genspirv.manifest", ".git/"),
    ("manifest in .GIT (case-blind disks)", 'manifest = ".GIT/config"\n', "tool.genspirv.manifest", ".git/"),
    ("manifest through a symlink", 'manifest = "meta/config"\n', "tool.genspirv.manifest", ".git/"),
    ("spirv_dir in .genspirv", 'spirv_dir = ".genspirv/blobs"\n', "tool.genspirv.spirv_dir", ".genspirv/"),
    ("spirv_dir is .git", 'spirv_dir = ".git"\n', "tool.genspirv.spirv_dir", ".git/"),
    ("C table in .git", 'generate = [ { target = "c", output = ".git/hooks/pre-commit" } ]\n',
     "tool.genspirv.generate[0].output", ".git/"),
    ("template output in .genspirv", 'generate = [ { template = "t.j2", output = ".genspirv/state.json" } ]\n',
     "tool.genspirv.generate[0].output", ".genspirv/"),
]


@pytest.mark.parametrize("what, table, key, folder", OWNED, ids=[o[0] for o in OWNED])
def test_an_output_in_git_or_genspirv_is_refused_when_the_config_is_read(tiny_project, genspirv, what, table,
                                                                         key, folder):
    root = _config_with(tiny_project(extra={"t.j2": "x"}), table)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "meta").symlink_to(root / ".git", target_is_directory=True)
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert str(info.value).startswith(key) and f"inside {folder}" in str(info.value), info.value
    r = genspirv("build", "--root", root)
    assert r.code == 2 and key in r.err and len(r.err.strip().splitlines()) == 1, r
    assert (root / ".git" / "config").read_text() == "[core]\n" and not (root / "spirv").exists()


def test_a_path_out_of_the_project_into_git_is_refused_too(tiny_project, tmp_path):
    """A symlink leading out of the project, into another checkout's .git/."""
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    root = _config_with(tiny_project(), 'manifest = "elsewhere/config"\n')
    (root / "elsewhere").symlink_to(other / ".git", target_is_directory=True)
    with pytest.raises(ConfigError, match=r"tool.genspirv.manifest: 'elsewhere/config' is inside \.git/"):
        load_config(root)


def test_dotdot_into_git_was_refused_already(tiny_project):
    root = _config_with(tiny_project(), 'manifest = "sub/../.git/x"\n')
    with pytest.raises(ConfigError, match="without '..'"):
        load_config(root)


@pytest.mark.parametrize("table", [
    'manifest = ".github/shaders.json"\n',
    'manifest = "manifests/.gitkeep.json"\n',
    'spirv_dir = "build/.genspirv-blobs"\n',
    'generate = [ { target = "c", output = "src/git/shaders" } ]\n',
], ids=["github", "gitkeep", "genspirv-blobs", "git-without-dot"])
def test_names_that_only_look_alike_are_accepted(tiny_project, genspirv, table):
    root = _config_with(tiny_project(), table)
    load_config(root)
    r = genspirv("build", "--root", root)
    assert r.code == 0, r


# -- what a report is written into ----------------------------------------------------------------


def test_a_report_into_a_fifo_is_written_into_it_not_over_it(project, genspirv, tmp_path):
    """/dev/null, a terminal or a FIFO is written into, as a shell's > would: the atomic writer's
    rename replaced the FIFO with a plain file (and, run as root, would replace /dev/null itself)."""
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)     # a reader waiting, so the write does not block
    try:
        r = genspirv("build", "--root", project, "--json", fifo)
        assert r.code == 0, r
        assert json.loads(os.read(reader, 1 << 20))["ok"] and fifo.is_fifo()
    finally:
        os.close(reader)


def test_a_report_through_a_symlink_updates_the_file_it_leads_to(project, genspirv, tmp_path):
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "build.d").write_text("old\n")
    link = tmp_path / "build.d"
    link.symlink_to(tmp_path / "reports" / "build.d")
    r = genspirv("build", "--root", project, "--depfile", link, "--depfile-target", "shaders.stamp")
    assert r.code == 0, r
    assert link.is_symlink() and "glsl/add.comp" in (tmp_path / "reports" / "build.d").read_text()


def test_a_blob_on_a_file_the_build_reads_is_refused(tiny_project):
    """The outputs were checked against the inputs, the blobs were not: a preamble kept as
    spirv/neg.spv was overwritten by variant neg's blob (control: under another name it is read)."""
    table = '[tool.genspirv.shaders."neg.comp"]\npreamble = "spirv/{}"\n'
    root = tiny_project(pyproject=TINY_PYPROJECT + table.format("neg.spv"), extra={"spirv/neg.spv": "#define P 1\n",
                                                                                 "spirv/pre.glsl": "#define P 1\n"})
    with pytest.raises(ConfigError, match=r"tool.genspirv.spirv_dir: 'spirv/neg.spv', the blob of variant neg, "
                                          r"would overwrite the preamble of variant neg"):
        load_config(root)
    (root / "pyproject.toml").write_text(TINY_PYPROJECT + table.format("pre.glsl"))
    assert load_config(root).variants[-1].preamble == "spirv/pre.glsl"
