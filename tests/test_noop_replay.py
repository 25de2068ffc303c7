"""A plain ``genspirv build`` replayed from the sealed no-op stamp (genspirv.buildsys.noopreplay).

Each case settles a built project (a build or a no-op through the CLI seals the
stamp; the replay then answers), changes one input the build's outcome depends on, and
asserts the replay declines, so the full build decides; had the stamp been
trusted, the change would have gone unseen
(``test_a_stamp_trusted_blindly_would_replay_over_a_change`` is the negative
control). ``genspirv.project.reads`` is tested in a child process, where it
records a generator's reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from genspirv.buildsys import noopreplay, noopstamp, state
from genspirv.fsutil import try_lock
from genspirv.project import isolated
from genspirv.project.reads import WHOLE_ENVIRONMENT, watch


@pytest.fixture
def settled(built_tiny, genspirv, monkeypatch):
    """The built tiny project after a no-op through the CLI: its stamp sealed. Files written just
    now count as settled, as they would a moment later."""
    monkeypatch.setattr("genspirv.buildsys.statlog.RACY_S", -1.0)
    result = genspirv("build", "--root", built_tiny)
    assert result.code == 0 and result.out.startswith("genspirv build: 0 compiled"), result.err
    return built_tiny


def replayed(root: Path, capsys, *args: str) -> tuple[int | None, str]:
    capsys.readouterr()
    code = noopreplay.replay(["build", "--root", str(root), *args])
    return code, capsys.readouterr().out


def test_the_constants_are_the_builds_own():
    assert (noopreplay.STATE_DIR, noopreplay.STAMP_FILE, noopreplay.JOURNAL_FILE, noopreplay.LOCK_FILE,
            noopreplay.WHOLE_ENVIRONMENT) == \
        (state.STATE_DIR, noopstamp.STAMP_FILE, state.JOURNAL_FILE, state.LOCK_FILE, WHOLE_ENVIRONMENT)


def test_a_no_op_is_replayed_with_the_full_builds_lines(settled, genspirv, capsys):
    full = genspirv("build", "--root", settled)
    code, out = replayed(settled, capsys)
    assert code == 0 and out == full.out == "genspirv build: 0 compiled, 3 up to date, 0 removed, 0 files written\n"
    for argv in (["-q"], ["--jobs", "3"], ["-j2"], ["--jobs=4", "--quiet"]):
        assert replayed(settled, capsys, *argv) == (0, out)


def test_the_no_op_after_a_build_that_compiled_is_replayed(settled, genspirv, capsys):
    # The build stamps and seals the no-op that follows it: no full no-op in between.
    _edit(settled / "glsl/neg.comp")
    assert replayed(settled, capsys) == (None, "")
    assert "1 compiled, 2 up to date" in genspirv("build", "--root", settled).out
    code, out = replayed(settled, capsys)
    assert code == 0 and out == "genspirv build: 0 compiled, 3 up to date, 0 removed, 0 files written\n"
    _edit(settled / "glsl/neg.comp")
    assert replayed(settled, capsys) == (None, "")


def test_an_edited_template_is_not_replayed(built_tiny, genspirv, capsys, monkeypatch):
    # A project's template renders a generated file: editing it re-renders, though no source changed.
    monkeypatch.setattr("genspirv.buildsys.statlog.RACY_S", -1.0)
    (built_tiny / "t").mkdir()
    (built_tiny / "t/x.j2").write_text("{% for s in shaders %}{{ s.name }}\n{% endfor %}")
    pyproject = (built_tiny / "pyproject.toml").read_text()
    (built_tiny / "pyproject.toml").write_text(
        pyproject.replace("[tool.genspirv]\n", '[tool.genspirv]\ngenerate = [ { template = "t/x.j2", output = "x.txt" } ]\n'))
    assert "1 files written" in genspirv("build", "--root", built_tiny).out
    assert replayed(built_tiny, capsys)[0] == 0
    (built_tiny / "t/x.j2").write_text("{% for s in shaders %}- {{ s.name }}\n{% endfor %}")
    assert replayed(built_tiny, capsys) == (None, "")
    assert "0 compiled, 3 up to date, 0 removed, 1 files written" in genspirv("build", "--root", built_tiny).out


def test_the_command_replays_before_the_cli_is_imported(settled):
    # The seal names the interpreter and its sys.path, which `python -c` has its own of: the
    # first run is a full no-op that seals for it, the second is replayed.
    probe = ("import sys; from genspirv.__main__ import main; code = main(); "
             "print('cli imported' if 'genspirv.cli' in sys.modules else 'cli not imported', code)")
    runs = [subprocess.run([sys.executable, "-c", probe, "build", "--root", str(settled)],
                           capture_output=True, text=True, timeout=60) for _ in range(2)]
    assert [r.stdout.splitlines()[-1] for r in runs] == ["cli imported 0", "cli not imported 0"], runs[1].stderr
    assert runs[0].stdout == runs[1].stdout.replace("cli not imported", "cli imported")


def test_a_reader_that_left_gets_no_traceback(settled):
    # `genspirv build | head -0`, replayed: exit 1 and nothing on stderr, as the CLI does.
    # The control: the same command into a reader that stays prints the summary.
    command = f"{sys.executable} -m genspirv build --root '{settled}'"
    for _ in range(2):          # the first seals for this interpreter's sys.path
        kept = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60)
    assert kept.returncode == 0 and "3 up to date" in kept.stdout
    proc = subprocess.run(f"{command} | (exec 0<&-; sleep 0.2)", shell=True, capture_output=True, text=True,
                          timeout=60, executable="/bin/bash")
    assert proc.stderr == ""


@pytest.mark.parametrize("argv", [["--force"], ["-v"], ["--explain"], ["add_f32"], ["--json", "-"],
                                  ["--depfile", "x.d"], ["--jobs", "0"], ["--ro", "."], ["check"]])
def test_any_other_command_line_runs_the_full_build(settled, capsys, argv):
    assert replayed(settled, capsys, *argv) == (None, "")


def _edit(path: Path, text: bytes = b"// edited\n") -> None:
    path.write_bytes(path.read_bytes() + text)


CHANGES = {
    "a source edited": lambda r: _edit(r / "glsl/neg.comp"),
    "an include edited": lambda r: _edit(r / "glsl/include/common.glsl"),
    "a source touched, unchanged": lambda r: (r / "glsl/neg.comp").write_bytes((r / "glsl/neg.comp").read_bytes()),
    "a source added": lambda r: (r / "glsl/new.comp").write_bytes((r / "glsl/neg.comp").read_bytes()),
    "a source added in a new folder": lambda r: ((r / "glsl/more").mkdir(), (r / "glsl/more/x.comp").write_text("")),
    "pyproject.toml edited": lambda r: _edit(r / "pyproject.toml", b"\n"),
    "a committed blob removed": lambda r: (r / "spirv/neg.spv").unlink(),
    "the manifest edited": lambda r: _edit(r / "manifests/shaders.json", b" "),
    "the state file rewritten": lambda r: _edit(r / ".genspirv/state.json", b" "),
    "a journal left by an interrupted build": lambda r: (r / ".genspirv/journal.jsonl").write_text(""),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_changed_input_is_not_replayed(settled, capsys, change):
    CHANGES[change](settled)
    assert replayed(settled, capsys) == (None, "")


def test_a_touched_source_is_replayed_again_after_one_full_no_op(settled, genspirv, capsys):
    CHANGES["a source touched, unchanged"](settled)
    assert replayed(settled, capsys)[0] is None
    full = genspirv("build", "--root", settled)
    assert "0 compiled, 3 up to date" in full.out
    assert replayed(settled, capsys) == (0, full.out)


@pytest.mark.parametrize("name,value", [("GENSPIRV_MATRIX_MAX", "100"), ("PATH", "/nowhere"),
                                        ("PYTHONPATH", "/nowhere")])
def test_a_changed_setting_or_lookup_path_is_not_replayed(settled, capsys, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert replayed(settled, capsys) == (None, "")


def test_a_running_build_is_not_replayed(settled, capsys):
    with open(settled / ".genspirv/lock", "a+b") as held:
        assert try_lock(held)
        assert replayed(settled, capsys) == (None, "")


def test_a_stamp_trusted_blindly_would_replay_over_a_change(settled, capsys):
    # The negative control of the cases above: with the files left out of the seal, an edited
    # source still replays the old answer. The stat() of each file is what catches it.
    stamp = settled / ".genspirv" / noopstamp.STAMP_FILE
    doc = json.loads(stamp.read_bytes())
    doc[noopreplay.REPLAY]["files"] = {}
    stamp.write_text(json.dumps(doc))
    _edit(settled / "glsl/neg.comp")
    assert replayed(settled, capsys)[0] == 0


def test_racily_new_files_are_not_sealed(built_tiny, genspirv, capsys):
    # No RACY_S patch: the blobs the build wrote a moment ago are racily new.
    for _ in range(2):
        assert genspirv("build", "--root", built_tiny).code == 0
    _edit(built_tiny / "glsl/neg.comp", b"")        # rewritten just now, the same bytes
    assert genspirv("build", "--root", built_tiny).code == 0
    assert replayed(built_tiny, capsys) == (None, "")


# -- a generator's reads ----------------------------------------------------------

GENERATOR = """\
import json, os
from pathlib import Path

HERE = Path(__file__).parent

def variants():
    names = json.loads((HERE / "names.json").read_text())
    if os.path.exists(HERE / "extra.flag"):
        names.append("extra")
    suffix = os.environ.get("GEN_SUFFIX", "")
    return [{"name": n + suffix, "source": "neg.comp"} for n in names]
"""


@pytest.fixture
def generated(built_tiny, genspirv, monkeypatch):
    monkeypatch.setattr("genspirv.buildsys.statlog.RACY_S", -1.0)
    monkeypatch.delenv("GEN_SUFFIX", raising=False)
    (built_tiny / "shaders").mkdir()
    (built_tiny / "shaders/variants.py").write_text(GENERATOR)
    (built_tiny / "shaders/names.json").write_text('["g1", "g2"]')
    text = (built_tiny / "pyproject.toml").read_text().replace(
        'glslang = "13.1.1"\n', 'glslang = "13.1.1"\ngenerator = "shaders/variants.py"\n')
    (built_tiny / "pyproject.toml").write_text(text)
    for _ in range(3):          # compile the new variants, stamp, seal
        result = genspirv("build", "--root", built_tiny)
        assert result.code == 0, result.err
    return built_tiny


GENERATOR_CHANGES = {
    "a file it reads edited": lambda r, m: (r / "shaders/names.json").write_text('["g1"]'),
    "a file it looks for created": lambda r, m: (r / "shaders/extra.flag").write_text(""),
    "a variable it reads set": lambda r, m: m.setenv("GEN_SUFFIX", "_x"),
    "the generator edited": lambda r, m: _edit(r / "shaders/variants.py", b"\n"),
}


@pytest.mark.parametrize("change", GENERATOR_CHANGES)
def test_a_change_to_what_the_generator_read_is_not_replayed(generated, capsys, monkeypatch, genspirv, change):
    code, out = replayed(generated, capsys)
    assert code == 0 and "4 up to date" in out     # add_f32, add_i32, g1, g2
    GENERATOR_CHANGES[change](generated, monkeypatch)
    assert replayed(generated, capsys) == (None, "")
    assert genspirv("build", "--root", generated).code == 0


def test_a_variable_it_does_not_read_is_no_change(generated, capsys, monkeypatch):
    monkeypatch.setenv("UNRELATED_TO_THE_BUILD", "1")
    assert replayed(generated, capsys)[0] == 0


def _record(stage, folder: str):
    reads = watch()
    os.listdir(folder)
    open(os.path.join(folder, "a.txt")).close()
    os.path.exists(os.path.join(folder, "absent"))
    Path(folder, "b.txt").is_file()
    os.environ.get("GENSPIRV_TEST_READ")
    os.getenv("HOME")
    "SHELL" in os.environ
    first = reads()
    return first


def _record_whole(stage, folder: str):
    reads = watch()
    dict(os.environ)
    os.chdir(folder)
    open("a.txt").close()
    return reads()


def test_reads_records_opens_stats_listings_and_variables(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    reads = isolated.call_in_child(_record, (str(tmp_path),), 30)
    assert reads.files == tuple(sorted(str(tmp_path / n) for n in ("a.txt", "absent", "b.txt")))
    assert reads.folders == (str(tmp_path),)
    assert reads.env == ("GENSPIRV_TEST_READ", "HOME", "SHELL") and reads.cwd is None
    whole = isolated.call_in_child(_record_whole, (str(tmp_path),), 30)
    assert WHOLE_ENVIRONMENT in whole.env and whole.cwd == str(tmp_path)
    assert str(tmp_path / "a.txt") in whole.files
