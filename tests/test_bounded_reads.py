"""What a hand or a stranger can edit is read bounded: one line naming the file, never a hang.

Each hostile input (a committed manifest of JSON nested 100,000 deep, one of 50,000 bad
entries, one larger than ``MANIFEST_MAX``, a manifest or a blob that is a FIFO or a
symlink to ``/dev/zero``, a blob larger than its entry says, the ``.genspirv/`` files
genspirv keeps outside its build package) goes through every command that reads it, each
a ``python -m genspirv`` process with an address-space cap and a timeout of
``TIMEOUT`` seconds: a hang is a ``TimeoutExpired``, an unbounded read a ``MemoryError``
traceback, and either fails the test. The wall-clock bound is that timeout, not a timed
assertion. What is asserted: the exit code, one line on stderr naming the file, no
traceback. ``build`` and ``check`` overwrite and report a bad committed manifest (it is
their output); the same files read inside genspirv/buildsys/ (the stat log, check's
comparison, the state) are marked ``xfail`` until that package reads through
``fsutil.read_regular`` too.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from faults import VARIANTS, cli_command, cli_env, vulkan_present, write_project
from genspirv.fsutil import RefusedRead, parse_json, read_json, read_regular
from genspirv.manifest import MANIFEST_MAX

TIMEOUT = 15            # seconds; a command here takes well under one
MEMORY = 3 << 30        # bytes of address space a command may take (an unbounded read dies at it)
MANIFEST = "manifests/shaders.json"
BLOB = "spirv/scale_64.spv"


def _capped() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, hard))


def run(args: list[str], root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=root, env=cli_env(), capture_output=True, text=True, timeout=TIMEOUT,
                          preexec_fn=_capped)


def one_line(proc: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    detail = f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    assert proc.returncode == code, detail
    assert "Traceback" not in proc.stderr + proc.stdout, detail
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, detail
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not named\n{detail}"
    return lines[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = write_project(tmp_path_factory.mktemp("bounded") / "proj")
    subprocess.run(cli_command("build", "--root", str(root)), env=cli_env(), check=True, capture_output=True,
                   timeout=120)
    return root


@pytest.fixture
def project(built, tmp_path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(built, root, symlinks=True)
    return root


def _replace(path: Path, make) -> None:
    path.unlink()
    make(path)


def _nested(root: Path) -> None:
    (root / MANIFEST).write_text("[" * 100_000 + "]" * 100_000)


def _bad_entries(root: Path) -> None:
    doc = json.loads((root / MANIFEST).read_text())
    doc["shaders"] = [{"name": f"bad_{i}"} for i in range(50_000)]
    (root / MANIFEST).write_text(json.dumps(doc))


def _huge(root: Path) -> None:
    with open(root / MANIFEST, "ab") as f:        # sparse: past the cap at no cost
        f.truncate(MANIFEST_MAX + 1)


def _long_number(root: Path) -> None:
    """Python refuses to convert an integer of more than 4,300 digits (a ValueError json passes on)."""
    text = (root / MANIFEST).read_text()
    (root / MANIFEST).write_text(text.replace('"size": ', '"size": ' + "9" * 5000, 1))


def _deep_push_structs(root: Path) -> None:
    """JSON the parser takes (400 levels) that jsonschema cannot check within the recursion limit."""
    doc = json.loads((root / MANIFEST).read_text())
    member = {"name": "x", "offset": 0, "size": 4, "type": "uint32", "vector": 1, "columns": 1, "array": [],
              "array_stride": 0, "matrix_stride": 0, "row_major": False}
    for _ in range(200):
        member = {**member, "name": "s", "type": "struct", "members": [member]}
    doc["shaders"][0]["push_constants"] = [member]
    (root / MANIFEST).write_text(json.dumps(doc))


def _blob_grown(root: Path) -> None:
    with open(root / BLOB, "ab") as f:
        f.write(b"\0" * 4096)


# name -> (how the project is spoiled, the file the line names, what else it says)
HOSTILE = {
    "manifest nested 100,000 deep": (_nested, MANIFEST, "nested"),
    "manifest of 50,000 bad entries": (_bad_entries, MANIFEST, "$.shaders[0]"),
    "manifest of push structs 200 deep": (_deep_push_structs, MANIFEST, "nested too deeply to check"),
    "manifest with a number of 5,000 digits": (_long_number, MANIFEST, "digits"),
    "manifest past MANIFEST_MAX": (_huge, MANIFEST, f"more than the {MANIFEST_MAX} bytes"),
    "manifest a FIFO": (lambda root: _replace(root / MANIFEST, os.mkfifo), MANIFEST, "a FIFO"),
    "manifest a link to /dev/zero": (lambda root: _replace(root / MANIFEST, lambda p: p.symlink_to("/dev/zero")),
                                     MANIFEST, "a character device"),
    "blob a link to /dev/zero": (lambda root: _replace(root / BLOB, lambda p: p.symlink_to("/dev/zero")),
                                 BLOB, "a character device"),
    "blob a FIFO": (lambda root: _replace(root / BLOB, os.mkfifo), BLOB, "a FIFO"),
    "blob larger than its entry": (_blob_grown, BLOB, "does not match the manifest"),
}
READERS = {"list": ["list"], "show": ["show", "add_f32"], "lint": ["lint"]}


def quick_first(*axes: list) -> list:
    """Every combination of ``axes``; those past the first of each axis but the first one's
    items marked slow: the quick loop meets every input once and every command once."""
    combos = [(a,) for a in axes[0]]
    for axis in axes[1:]:
        combos = [(*c, b) for c in combos for b in axis]
    firsts = [axis[0] for axis in axes[1:]]
    return [pytest.param(*c, marks=() if list(c[1:]) == firsts or c[0] == axes[0][0] else pytest.mark.slow)
            for c in combos]


@pytest.mark.parametrize("hostile, command", quick_first(list(HOSTILE), list(READERS)))
def test_a_hostile_manifest_or_blob_is_one_line_naming_it(project, hostile, command):
    spoil, named, says = HOSTILE[hostile]
    spoil(project)
    one_line(run(cli_command(*READERS[command], "--root", str(project)), project), 1, named, says)


@pytest.mark.slow
def test_lint_reads_no_fifo_a_manifests_depends_names(project):
    """lint reads each entry's depends for suppression comments; a hand-edited depends may name a
    FIFO in the project, which is skipped as unreadable (control: the same lint without it)."""
    control = run(cli_command("lint", "--root", str(project)), project)
    doc = json.loads((project / MANIFEST).read_text())
    doc["shaders"][0]["depends"].append("glsl/fifo")
    (project / MANIFEST).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    os.mkfifo(project / "glsl" / "fifo")
    proc = run(cli_command("lint", "--root", str(project)), project)
    assert (proc.returncode, proc.stdout) == (control.returncode, control.stdout) and "Traceback" not in proc.stderr


RUNTIME = textwrap.dedent("""\
    import sys
    from genspirv import GenspirvError
    from genspirv.runtime import Device
    with Device(manifest=sys.argv[1]) as dev:
        try:
            dev.kernel("add_f32")
        except GenspirvError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(1)
    """)


@pytest.mark.skipif(not vulkan_present(), reason="no Vulkan device")
@pytest.mark.parametrize("hostile", [pytest.param(h, marks=() if h.startswith(("manifest nested", "blob a"))
                                                  else pytest.mark.slow) for h in HOSTILE])
def test_the_runtime_refuses_a_hostile_manifest_or_blob_in_one_line(project, hostile):
    spoil, named, says = HOSTILE[hostile]
    spoil(project)
    one_line(run([sys.executable, "-c", RUNTIME, str(project / MANIFEST)], project), 1, named.split("/")[-1], says)


@pytest.mark.slow
def test_every_command_and_the_runtime_read_the_same_project_unspoiled(project):
    """Negative control for the rows above and below: untouched, every command and the runtime work."""
    for args in READERS.values():
        proc = run(cli_command(*args, "--root", str(project)), project)
        assert proc.returncode in (0, 1) and proc.stdout and "error" not in proc.stderr, proc   # lint: findings
    for command in ("build", "check"):
        proc = run(cli_command(command, "--root", str(project)), project)
        assert proc.returncode == 0, proc
    if vulkan_present():
        proc = run([sys.executable, "-c", RUNTIME, str(project / MANIFEST)], project)
        assert proc.returncode == 0, proc


@pytest.mark.parametrize("hostile, fresh", [
    pytest.param(h, fresh, marks=() if (h, fresh) == ("manifest nested 100,000 deep", True) else pytest.mark.slow,
                 id=f"{h}-{'fresh clone' if fresh else 'with state'}")
    for h in ("manifest nested 100,000 deep", "manifest of 50,000 bad entries", "manifest past MANIFEST_MAX")
    for fresh in (True, False)])
@pytest.mark.slow
def test_build_replaces_a_hostile_manifest_and_check_reports_it(project, hostile, fresh):
    """The committed manifest is build's output: a fresh clone's build (which reads it for its
    records) writes it afresh; check reports it stale, naming it."""
    if fresh:
        shutil.rmtree(project / ".genspirv")
    HOSTILE[hostile][0](project)
    check = run(cli_command("check", "--root", str(project)), project)
    assert check.returncode == 1 and "Traceback" not in check.stderr, check
    assert f"genspirv check: {MANIFEST}" in check.stderr, check.stderr[-2000:]
    build = run(cli_command("build", "--root", str(project)), project)
    assert build.returncode == 0 and "Traceback" not in build.stderr, build
    assert [e["name"] for e in json.loads((project / MANIFEST).read_text())["shaders"]] == sorted(VARIANTS)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["build", "check"])
@pytest.mark.parametrize("hostile", ["manifest a FIFO", "manifest a link to /dev/zero", "blob a link to /dev/zero",
                                     "blob a FIFO"])
def test_build_and_check_read_a_hostile_committed_file_bounded(project, hostile, command):
    spoil, named, says = HOSTILE[hostile]
    spoil(project)
    proc = run(cli_command(command, "--root", str(project)), project)
    # In time, without a traceback: check names the file stale; build (whose output it is)
    # replaces it with a regular file of what it should hold.
    assert "Traceback" not in proc.stderr, proc
    if command == "check":
        assert proc.returncode == 1 and named in proc.stderr, proc
    else:
        path = project / named
        assert proc.returncode == 0 and path.is_file() and not path.is_symlink() and path.stat().st_size > 0, proc


# -- the files genspirv keeps in .genspirv/, outside its build package ---------------------------


SPOILERS = {"a FIFO": os.mkfifo, "a link to /dev/zero": lambda p: p.symlink_to("/dev/zero")}


# Each file with the commands that read it: the tool versions in a build that finds nothing to do
# and in check, the counters in `cache stats` and in a build that counts (one that compiles).
STATE_FILES = {".genspirv/tools.json": (["build"], ["check"]),
               ".genspirv/cache/stats.json": (["cache", "stats"], ["build", "--force"])}


@pytest.mark.parametrize("which, spoiler", [pytest.param(w, s, marks=() if s == "a FIFO" else pytest.mark.slow)
                                             for w in STATE_FILES for s in SPOILERS])
@pytest.mark.slow
def test_a_hostile_cache_file_in_genspirv_is_started_again(project, which, spoiler):
    """These are caches: what is not a regular file of JSON is not ours, read as empty and
    written afresh (a regular file again), and the command goes on."""
    path = project / which
    path.unlink(missing_ok=True)
    SPOILERS[spoiler](path)
    for args in STATE_FILES[which]:
        proc = run(cli_command(*args, "--root", str(project)), project)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc)
    assert path.is_file() and not path.is_symlink() and isinstance(json.loads(path.read_text()), dict)


SLANG_PROBES = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from genspirv.toolchain.slang.slang_glslang import SlangGlslang

    class Probes(SlangGlslang):
        identity = "slang-glslang test"

    probes = object.__new__(Probes)
    probes.cache, probes._known = Path(sys.argv[1]), None
    print(probes._state())
    """)


@pytest.mark.parametrize("spoiler", SPOILERS)
def test_a_hostile_slang_probe_cache_is_started_again(tmp_path, spoiler):
    pytest.importorskip("genspirv.toolchain.slang.slang_glslang")
    path = tmp_path / "slang-glslang.json"
    SPOILERS[spoiler](path)
    proc = run([sys.executable, "-c", SLANG_PROBES, str(path)], tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "{'identity': 'slang-glslang test'}", proc


# -- the reader itself ---------------------------------------------------------------------------


def test_read_regular_reads_a_regular_file_up_to_its_cap_and_refuses_the_rest(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x" * 100)
    assert read_regular(f, 100) == b"x" * 100                       # control: exactly the cap
    (tmp_path / "link").symlink_to(f)
    assert read_regular(tmp_path / "link", 100) == b"x" * 100       # a symlink to a regular file is read
    with pytest.raises(RefusedRead) as info:
        read_regular(f, 99)
    assert info.value.too_large and info.value.size == 100 and "100 bytes, more than the 99" in str(info.value)
    os.mkfifo(tmp_path / "fifo")            # opened for reading, a FIFO with no writer would block forever
    for path, kind in ((tmp_path / "fifo", "a FIFO"), ("/dev/zero", "a character device"), (tmp_path, "a folder")):
        with pytest.raises(RefusedRead, match=kind) as info:
            read_regular(path, 1 << 20)
        assert not info.value.too_large and info.value.filename == str(path)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "absent", 10)


def test_read_regular_refuses_a_file_that_reads_longer_than_its_stat_says():
    """/proc's files say 0 bytes and give more: read no further than the cap + 1."""
    with pytest.raises(RefusedRead, match="more than the 16 bytes") as info:
        read_regular("/proc/self/status", 16)
    assert info.value.too_large and info.value.size is None


def test_parse_json_turns_every_failure_into_one_value_error(tmp_path):
    assert parse_json(b'{"a": [1]}') == {"a": [1]}
    for data, says in ((b"[" * 100_000 + b"]" * 100_000, "nested deeper"), (b'{"a": \xff}', "byte 0xff at offset 6"),
                       (b'{"a": ', "Expecting value")):
        with pytest.raises(ValueError, match=says):
            parse_json(data)
    (tmp_path / "doc.json").write_text('{"ok": true}')
    assert read_json(tmp_path / "doc.json", 100) == {"ok": True}
