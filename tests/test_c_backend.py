"""examples/c-backend: the worked C backend builds, runs exact under sync validation, and
places exactly the barriers the Python runtime places on the same graph.

The example is copied to a temp folder and built there with cmake + ninja
(warnings are errors), so the checkout is never written. Its committed blobs,
manifest and table must survive that build byte for byte and pass ``genspirv
check``; ``ctest`` runs the example's three tests (``genspirv check``,
``smart --validate`` with no hazard, ``none --validate`` with hazards: the
live negative control). The barrier comparison replays the program's
``--trace`` through ``genspirv.runtime`` on lavapipe for every policy; the
trace leaves out the final read-back (the runtime downloads differently).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import c_backend_suite as suite
from genspirv.emit.cmake import cmake_dir

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "c-backend"
LAST_LINE = re.compile(r"^mixed_graph: exact=(yes|no) barriers=(\d+) dispatches=(\d+) hazards=(\d+|-)$")

needs_build = pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("ninja") is None or shutil.which("cc") is None
    or not Path("/usr/include/vulkan/vulkan.h").exists(),
    reason="needs cmake, ninja, a C compiler and the Vulkan headers (apt-get install cmake ninja-build gcc "
           "libvulkan-dev)")


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [e.get("PYTHONPATH")] if p])
    e.setdefault("XDG_RUNTIME_DIR", "/tmp")
    return e


def run(*args, cwd=None, ok=True, timeout=300) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env(), capture_output=True, text=True,
                          timeout=timeout)
    if ok:
        assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout}\n{proc.stderr}"
    return proc


def committed_outputs(folder: Path) -> dict[str, bytes]:
    files = [*folder.glob("spirv/*.spv"), *folder.glob("manifests/*")]
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in files}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """The example copied and built once (configure, build, the program's path)."""
    work = tmp_path_factory.mktemp("c-backend")
    source = work / "c-backend"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns(".genspirv", "build*"))
    build = work / "build"
    run("cmake", "-S", source, "-B", build, "-G", "Ninja", f"-Dgenspirv_DIR={cmake_dir()}",
        f"-DGENSPIRV_PYTHON={sys.executable}", "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror -pedantic")
    log = run("cmake", "--build", build).stdout
    return {"source": source, "build": build, "program": build / "c_backend", "log": log}


def last_line(output: str) -> re.Match:
    m = LAST_LINE.match(output.strip().splitlines()[-1])
    assert m, output
    return m


@pytest.mark.slow
def test_committed_outputs_pass_check():
    """The example's blobs, manifest and table are what its sources build to."""
    out = run(sys.executable, "-m", "genspirv", "check", cwd=EXAMPLE)
    assert "up to date" in out.stdout + out.stderr


@pytest.mark.slow
@needs_build
def test_build_keeps_committed_outputs_and_ctest_passes(built):
    assert "genspirv build" in built["log"] and "Linking C executable c_backend" in built["log"]
    assert committed_outputs(built["source"]) == committed_outputs(EXAMPLE)
    out = run("ctest", "--output-on-failure", cwd=built["build"]).stdout
    for test in ("kernels_genspirv_check", "c_backend_smart", "c_backend_none"):
        assert re.search(rf"{test} \.+\s+Passed", out), out
    assert "100% tests passed, 0 tests failed out of 3" in out


@pytest.mark.slow
@needs_build
def test_validation_sees_no_hazard_with_barriers_and_every_kind_without(built):
    for policy in ("smart", "always"):
        out = run(built["program"], "--policy", policy, "--validate", "--layers", "3", "--n", "256").stdout
        exact, barriers, dispatches, hazards = last_line(out).groups()
        assert (exact, hazards, dispatches) == ("yes", "0", "18"), out
        assert "0 other errors, 0 warnings" in out
    smart = int(last_line(run(built["program"], "--policy", "smart", "--layers", "3", "--n", "256").stdout)[2])
    always = int(last_line(run(built["program"], "--policy", "always", "--layers", "3", "--n", "256").stdout)[2])
    # smart: 4 per layer (one of each two independent dispatches is free) + the read-back's 2.
    # always: before every command but the first (4 uploads, 18 dispatches, 2 copies out, the host read).
    assert (smart, always) == (3 * 4 + 2, 4 + 18 + 2 + 1 - 1)
    # The negative control: no barrier but the host read's, and the layer reports both the
    # read-after-write of the join and the write-after-read of the third matvec.
    out = run(built["program"], "--policy", "none", "--validate", "--layers", "3", "--n", "256").stdout
    assert int(last_line(out)[2]) == 1 and int(last_line(out)[4]) > 0
    counts = re.search(r"(\d+) read-after-write, (\d+) write-after-read", out)
    assert counts and int(counts[1]) > 0 and int(counts[2]) > 0, out


@pytest.mark.slow
@needs_build
def test_block_size_is_set_by_name_and_checked(built):
    for block in ("32", "256"):
        out = run(built["program"], "--block-size", block, "--layers", "2", "--n", "200").stdout
        assert last_line(out)[1] == "yes", out
    refused = run(built["program"], "--block-size", "4096", "--n", "64", ok=False)
    assert refused.returncode == 2
    assert "kernel matvec: workgroup size x = 4096 (from a spec constant)" in refused.stderr, refused.stderr


@pytest.mark.slow
@needs_build
@pytest.mark.parametrize("policy", ["smart", "always", "none"])
def test_c_path_places_exactly_the_python_runtimes_barriers(built, policy):
    from genspirv.runtime import Device
    trace = suite.parse_trace(run(built["program"], "--trace", "--policy", policy, "--layers", "3",
                                  "--n", "128").stdout)
    assert [c.kind for c in trace.commands].count("dispatch") == 18
    with Device(manifest=EXAMPLE / "manifests" / "kernels.json", barriers=policy, transfer_queue="off") as dev:
        placed = suite.replay(dev, trace)
    c_placed = [c.barrier for c in trace.commands]
    assert placed == c_placed
    assert sum(c_placed) == {"smart": 12, "always": 21, "none": 0}[policy]


def test_trace_parser_reads_every_line_kind():
    trace = suite.parse_trace("kernel matvec BLOCK_SIZE=32\nkernel add\nbuffer x 1024\nbuffer t1 1024\n"
                              "upload x 1024 barrier=0\n"
                              "dispatch add 4 1 1 push=00000100 views=x:0:1024,t1:0:512 barrier=1\nreadback\n")
    assert trace.kernels == {"matvec": {"BLOCK_SIZE": 32}, "add": {}}
    assert trace.buffers == {"x": 1024, "t1": 1024}
    upload, dispatch = trace.commands
    assert (upload.kind, upload.views, upload.barrier) == ("upload", (("x", 0, 1024),), False)
    assert dispatch.push == (256).to_bytes(4, "little") and dispatch.groups == (4, 1, 1)
    assert dispatch.views == (("x", 0, 1024), ("t1", 0, 512)) and dispatch.barrier


def test_gpu_run_builds_and_runs_the_example():
    script = (REPO / "tools" / "gpu_run.sh").read_text()
    assert "examples/c-backend" in script and "ctest" in script and "benchmarks c-backend" in script


# -- the GUIDE's section quotes the example ----------------------------------------------

GUIDE = REPO / "docs" / "GUIDE.md"
SECTION = re.compile(r"^## Adopting genspirv in a C/C\+\+ backend\n(.*?)^## ", re.M | re.S)
QUOTED = re.compile(r"^```(\w+) from=(\S+)\n(.*?)^```$", re.M | re.S)


def guide_section() -> str:
    m = SECTION.search(GUIDE.read_text(encoding="utf-8"))
    assert m, "GUIDE.md has no section 'Adopting genspirv in a C/C++ backend'"
    return m[1]


def test_guide_quotes_the_example_verbatim():
    quotes = QUOTED.findall(guide_section())
    assert len(quotes) >= 8
    for lang, path, text in quotes:
        assert text in (REPO / path).read_text(), f"GUIDE.md quotes {path} ({lang}) wrongly:\n{text}"


@pytest.mark.slow
@needs_build
def test_guide_shows_what_the_program_prints(built):
    """The section's console output and its hazard counts are the program's own."""
    section = guide_section()
    console = re.search(r"^\$ build/c_backend --policy smart --validate\n(.*?)^```", section, re.M | re.S)[1]
    out = run(built["program"], "--policy", "smart", "--validate").stdout
    for line in console.splitlines()[1:]:          # the device line differs from machine to machine
        assert line in out.splitlines(), (line, out)
    none = run(built["program"], "--policy", "none", "--validate").stdout
    counts = re.search(r"(\d+) read-after-write, (\d+) write-after-read", none)
    assert f"here {counts[1]} read-after-write and {counts[2]} write-after-read" in " ".join(section.split())


@pytest.mark.slow
@needs_build
def test_bench_suite_records_both_arms_on_the_same_graph():
    """`genspirv bench c-backend --quick`: every sample of both arms, paired, and the ratio
    (the suite itself stops if the two paths placed different barriers)."""
    from benchmarks.harness import BenchOptions, RunLog
    rec = RunLog("c-backend")
    suite.bench_c_backend(BenchOptions(suite="c-backend", quick=True, quiet=True), rec)
    host = [r for r in rec.runs if r["case"] == "host per recorded dispatch"]
    arms = [r["arm"] for r in host]
    assert arms.count("c") == arms.count("python") == arms.count(suite.CALLS_LEFT_OUT) == 2 * suite.SAMPLES_PER_REPEAT
    assert all(0 < r["value"] < 1e-3 and r["dispatches"] == 60 for r in host)
    # The GPU time of each recorded graph, of both paths (lavapipe has timestamps).
    gpu = [r["arm"] for r in rec.runs if r["case"] == "gpu per recorded graph"]
    assert gpu.count("c") == gpu.count("python") == 2 * suite.SAMPLES_PER_REPEAT
    assert [d["label"] for d in rec.derived] == ["python / c", "python / c"] and rec.device
