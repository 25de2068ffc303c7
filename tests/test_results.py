"""Output for CI: check's progress, ``--json`` results (schema genspirv-results/1) and GitHub annotations.

Builds and checks run through the fake compiler (``fake_genspirv``); its
``// fake: error`` line is a compile error at that file and line.
"""

from __future__ import annotations

import json

import pytest

from fake_compiler import ERROR_MARK
from genspirv.commands.results import Problem, annotations

from conftest import TINY_VARIANTS


def test_check_shows_progress_as_build_does_and_quiet_hides_it(tiny_project, fake_genspirv):
    root = tiny_project()
    assert fake_genspirv("build", "--root", root, "-q").code == 0
    loud = fake_genspirv("check", "--root", root, "--jobs", "1")
    assert loud.code == 0, loud.err
    lines = loud.out.splitlines()
    # The compiles start longest first by the build's recorded times: the names in any order.
    assert [line.split()[0] for line in lines[:3]] == ["[1/3]", "[2/3]", "[3/3]"]
    assert sorted(line.split()[1] for line in lines[:3]) == ["add_f32", "add_i32", "neg"]
    assert lines[3:] == ["genspirv check: 4 files up to date"]
    quiet = fake_genspirv("check", "--root", root, "-q")
    assert quiet.out.splitlines() == ["genspirv check: 4 files up to date"]     # the control


def test_build_json_has_every_variant_with_its_status_and_the_summary(tiny_project, fake_genspirv, tmp_path):
    root = tiny_project()
    assert fake_genspirv("build", "--root", root, "-q").code == 0
    (root / "glsl/neg.comp").write_text((root / "glsl/neg.comp").read_text() + "// edited\n")
    out = tmp_path / "build.json"
    result = fake_genspirv("build", "--root", root, "-q", "--json", out)
    assert result.code == 0, result.err
    doc = json.loads(out.read_text())
    assert doc["schema"] == "genspirv-results/1" and doc["command"] == "build"
    assert doc["ok"] is True and doc["exit_code"] == 0 and doc["problems"] == []
    assert {v["name"]: v["status"] for v in doc["variants"]} == \
        {"add_f32": "up_to_date", "add_i32": "up_to_date", "neg": "compiled"}
    assert doc["variants"][2] == {"name": "neg", "source": "glsl/neg.comp", "spirv": "spirv/neg.spv",
                                  "status": "compiled"}
    assert doc["summary"]["compiled"] == 1 and doc["summary"]["up_to_date"] == 2
    assert doc["summary"]["text"] == "1 compiled, 2 up to date, 0 removed, 2 files written"
    assert sorted(doc["written"]) == ["manifests/shaders.json", "spirv/neg.spv"]


def test_json_to_stdout_leaves_stdout_to_the_document(tiny_project, fake_genspirv):
    root = tiny_project()
    result = fake_genspirv("build", "--root", root, "--json", "-")
    assert result.code == 0
    doc = json.loads(result.out)                 # nothing else on stdout: progress and summary on stderr
    assert [v["status"] for v in doc["variants"]] == ["compiled"] * 3
    assert "genspirv build: 3 compiled" in result.err
    check = fake_genspirv("check", "--root", root, "--json", "-")
    assert json.loads(check.out)["summary"] == {"text": "4 files up to date", "checked": 4, "stale": 0}


def test_a_compile_error_is_an_annotation_on_its_line_and_a_problem_in_the_json(tiny_project, fake_genspirv,
                                                                               tmp_path):
    root = tiny_project()
    header = root / "glsl/include/common.glsl"
    header.write_text(header.read_text() + ERROR_MARK + "\n")        # line 3, in both add_* variants
    out = tmp_path / "r.json"
    result = fake_genspirv("build", "--root", root, "-q", "--annotations", "github", "--json", out)
    assert result.code == 1
    notes = [ln for ln in result.out.splitlines() if ln.startswith("::")]
    assert notes == ["::error file=glsl/include/common.glsl,line=3,title=genspirv build::"
                     f"'{ERROR_MARK}' : the fake refuses this line (in add_f32, add_i32)"]
    doc = json.loads(out.read_text())
    assert doc["ok"] is False and doc["exit_code"] == 1
    assert doc["problems"] == [{"file": "glsl/include/common.glsl", "line": 3, "variants": ["add_f32", "add_i32"],
                                "message": f"'{ERROR_MARK}' : the fake refuses this line"}]
    assert {v["name"]: v["status"] for v in doc["variants"]} == \
        {"add_f32": "failed", "add_i32": "failed", "neg": "compiled"}
    plain = fake_genspirv("build", "--root", root, "-q")                # control: no annotation unasked
    assert plain.code == 1 and "::error" not in plain.out + plain.err


def test_a_stale_check_annotates_each_file_and_says_which_variant(tiny_project, fake_genspirv, tmp_path):
    root = tiny_project()
    assert fake_genspirv("build", "--root", root, "-q").code == 0
    blob = root / "spirv/neg.spv"
    blob.write_bytes(blob.read_bytes()[:-4])
    out = tmp_path / "check.json"
    result = fake_genspirv("check", "--root", root, "-q", "--annotations", "github", "--json", out)
    assert result.code == 1
    notes = [ln for ln in result.out.splitlines() if ln.startswith("::")]
    # A blob edited by hand (its sources unchanged): annotated on the blob, the variant named once.
    assert len(notes) == 1 and notes[0].startswith(
        "::error file=spirv/neg.spv,title=genspirv check::spirv/neg.spv: differs from a fresh build: edited by hand")
    assert notes[0].endswith("run `genspirv build` and commit the result (in neg)") and notes[0].count("neg)") == 1
    doc = json.loads(out.read_text())
    assert doc["command"] == "check" and doc["ok"] is False and doc["summary"]["stale"] == 1
    assert {v["name"]: v["status"] for v in doc["variants"]} == {**dict.fromkeys(TINY_VARIANTS, "up_to_date"),
                                                                 "neg": "differs"}
    assert [f["path"] for f in doc["files"]] == ["spirv/neg.spv"] and doc["files"][0]["status"] == "differs"
    assert doc["files"][0]["cause"].startswith("edited by hand") and doc["problems"][0]["file"] == "spirv/neg.spv"


def _check_notes(run, root) -> list[str]:
    result = run("check", "--root", root, "-q", "--annotations", "github")
    assert result.code == 1, result.err
    return [line for line in result.out.splitlines() if line.startswith("::error ")]


def test_a_blob_made_stale_by_an_edit_is_annotated_on_the_file_edited(tiny_project, fake_genspirv):
    """A stale blob's annotation goes on the file whose edit made it stale, saying so, the variant
    once: the source, or the include the variants share; this clone's .genspirv/ knows which."""
    root = tiny_project()
    assert fake_genspirv("build", "--root", root, "-q").code == 0
    source = root / "glsl/neg.comp"
    source.write_text(source.read_text().replace("-X.data", "2.0 * X.data"))
    [note] = [n for n in _check_notes(fake_genspirv, root) if "spirv/neg.spv" in n]
    assert note.startswith("::error file=glsl/neg.comp,title=genspirv check::spirv/neg.spv: differs from a fresh "
                           "build: source changed since the committed build (glsl/neg.comp changed); first "
                           "difference at byte "), note
    assert note.endswith("(in neg)") and note.count("neg)") == 1
    shown = fake_genspirv("check", "--root", root, "-q").err        # the same cause on the terminal
    assert "spirv/neg.spv (neg): differs from a fresh build: source changed since the committed build" in shown
    assert fake_genspirv("build", "--root", root, "-q").code == 0
    header = root / "glsl/include/common.glsl"
    header.write_text(header.read_text().replace("#define ONE 1", "#define ONE 2"))
    notes = [n for n in _check_notes(fake_genspirv, root) if ".spv" in n]
    assert [n.split(",title=")[0] for n in notes] == ["::error file=glsl/include/common.glsl"] * 2, notes
    assert all("include changed since the committed build (glsl/include/common.glsl changed)" in n for n in notes)


def test_a_fresh_clone_says_the_inputs_changed_and_blames_the_source(tiny_project, fake_genspirv):
    """A fresh clone (CI: no .genspirv/) knows the manifest's inputs key only: the blob's inputs
    changed, annotated on its source; not a hand edit. Control: a blob edited by hand in the
    same clone is said to be, on the blob."""
    import shutil
    root = tiny_project()
    assert fake_genspirv("build", "--root", root, "-q").code == 0
    shutil.rmtree(root / ".genspirv")
    source = root / "glsl/neg.comp"
    source.write_text(source.read_text().replace("-X.data", "2.0 * X.data"))
    blob = root / "spirv/add_f32.spv"
    blob.write_bytes(blob.read_bytes()[:-4])
    notes = sorted(_check_notes(fake_genspirv, root))
    spv = [n for n in notes if ".spv:" in n]
    assert [n.split(",title=")[0] for n in spv] == ["::error file=glsl/neg.comp", "::error file=spirv/add_f32.spv"]
    neg, add = (n for n in spv if "spirv/neg.spv" in n), (n for n in spv if "spirv/add_f32.spv" in n)
    assert "differs from a fresh build: its inputs changed since the committed build" in next(neg)
    assert "differs from a fresh build: edited by hand" in next(add)


def test_annotations_escape_what_would_end_a_property_or_the_message():
    [line] = annotations([Problem("50% off\nsecond line", "dir,a/b:c.comp", 7, ("v",))], "genspirv build")
    assert line == "::error file=dir%2Ca/b%3Ac.comp,line=7,title=genspirv build::50%25 off%0Asecond line (in v)"
    [bare] = annotations([Problem("no file")], "genspirv check")
    assert bare == "::error title=genspirv check::no file"


def _only_json(stdout: str) -> dict:
    """stdout parsed as one JSON document, nothing before or after it (json.loads refuses any other line)."""
    return json.loads(stdout)


@pytest.mark.slow
def test_json_on_stdout_with_annotations_keeps_stdout_one_document(tiny_project, genspirv):
    """--json - with --annotations github: stdout is the JSON alone, exactly when there are errors; the
    annotations go to stderr. A real compile of a source with a syntax error, through the command line."""
    root = tiny_project(extra={"glsl/neg.comp": "#version 450\nlayout(local_size_x = 32) in;\n"
                                                "void main() { float x = ; }\n"})
    built = genspirv("build", "--root", root, "-q", "--json", "-", "--annotations", "github")
    assert built.code == 1, built.err
    doc = _only_json(built.out)
    assert doc["ok"] is False and doc["problems"][0]["file"] == "glsl/neg.comp"
    assert doc["problems"][0]["line"] == 3 and doc["problems"][0]["variants"] == ["neg"]
    notes = [line for line in built.err.splitlines() if line.startswith("::error ")]
    assert len(notes) == 1 and notes[0].startswith("::error file=glsl/neg.comp,line=3,title=genspirv build::")
    checked = genspirv("check", "--root", root, "-q", "--json", "-", "--annotations", "github")
    assert checked.code == 1, checked.err
    assert _only_json(checked.out)["problems"][0]["file"] == "glsl/neg.comp"
    assert "::error file=glsl/neg.comp,line=3,title=genspirv check::" in checked.err
    # Control: with the document in a file, the annotations stay on stdout, where they always were.
    to_file = genspirv("build", "--root", root, "-q", "--json", root / "r.json", "--annotations", "github")
    assert to_file.out.startswith("::error file=glsl/neg.comp,line=3,") and "::error" not in to_file.err


def test_json_on_stdout_with_annotations_through_the_fake_compiler(tiny_project, fake_genspirv):
    """The quick loop's copy of the test above: a compile error, --json - and --annotations github."""
    root = tiny_project()
    header = root / "glsl/include/common.glsl"
    header.write_text(header.read_text() + ERROR_MARK + "\n")
    result = fake_genspirv("build", "--root", root, "-q", "--annotations", "github", "--json", "-")
    assert result.code == 1
    assert _only_json(result.out)["problems"][0]["variants"] == ["add_f32", "add_i32"]
    assert "::error file=glsl/include/common.glsl,line=3," in result.err
