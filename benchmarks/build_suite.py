"""The ``build`` suite: how build, no-op, header-edit rebuild and check grow with the variants.

Takes the kernels of a project (this repo by default) and, for each size and
job count, a synthetic project of that many variants (``benchmarks.synth``).
Gives raw runs of: ``cold`` (``genspirv build`` on a fresh copy), ``floor``
(glslangValidator alone over the same variants, as many at a time, paired
with ``cold`` in ABBA order), ``noop`` (the build again), ``edit`` (after one
header edit), ``check``; and the ratios cold/floor and check/floor and the
no-op time per variant. Each step verifies what it claims: the no-op rewrote
nothing, the edit changed exactly the blobs of the variants including the
header, every variant compiled to a distinct blob. ``build-generator`` also
pairs the cold build with the peer's pipeline (``glslc``: Google's glslc per
variant, as llama.cpp's generator runs it, then the tables written; skipped
with a note where glslc is not installed) and with glslang's own compile in its
library (``floor, library``), and sets no-op and check beside both.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from genspirv.project import config
from genspirv.toolchain import tools as toolchain
from . import synth
from .build_outputs import FRESH_CLONE_FLOOR, expect_blobs, fresh_copy, output_digests
from .harness import (BenchError, BenchOptions, BenchProgress, RunLog, genspirv_command, genspirv_env,
                      paired_order, run_command, snapshot_package, timed_cpu)

BUILD_SIZES = (50, 200, 800, 1600)
BUILD_JOBS = (1, 2)
SERIAL_UP_TO = 200      # default plan: 1 job only up to this many variants


@dataclass(frozen=True)
class BuildCase:
    variants: int
    jobs: int
    repeats: int

    @property
    def name(self) -> str:
        return f"variants={self.variants} jobs={self.jobs}"


def build_repeats(variants: int) -> int:
    """Default repeats: a median of 3 where it is cheap, single runs where one takes minutes."""
    return 3 if variants <= 50 else 2 if variants <= 200 else 1


def build_plan(sizes=None, jobs=None, repeat=None) -> list[BuildCase]:
    """The cases to run. By default 1 job only up to SERIAL_UP_TO variants: 1 job at
    1600 variants would double the longest runs of a suite that must fit ~25 minutes
    on 2 cores; pass ``jobs`` explicitly to measure it anyway."""
    plan = []
    for size in sizes or BUILD_SIZES:
        for j in jobs or tuple(j for j in BUILD_JOBS if j > 1 or size <= SERIAL_UP_TO):
            plan.append(BuildCase(size, j, repeat or build_repeats(size)))
    return plan


@dataclass(frozen=True)
class FloorTool:
    """The glslangValidator the build uses, and what the floor needs to call it."""

    path: str
    env: dict
    include_dirs: tuple[str, ...]


def floor_tool(project) -> FloorTool:
    cfg = config.load_config(project.root)
    compiler = toolchain.find_glslang(cfg.glslang)
    incl = (cfg.include_dir,) if (project.root / cfg.include_dir).is_dir() else ()
    return FloorTool(str(compiler.tool.path), compiler.tool.env(), incl)


def glslang_floor(tool: FloorTool, project, jobs: int, out_dir: Path) -> int:
    """glslangValidator alone over every variant, ``jobs`` at a time; returns the count."""
    out_dir.mkdir(parents=True, exist_ok=True)

    def one(v) -> None:
        cmd = [tool.path, "-V", "--target-env", project.target_env]
        cmd += [f"-I{d}" for d in tool.include_dirs]
        cmd += [f"-D{k}={val}" for k, val in v.defines]
        cmd += list(project.flags) + ["-o", str(out_dir / f"{v.name}.spv"), v.source]
        run_command(cmd, what=f"floor: {v.name}", cwd=project.root, env=tool.env, timeout=600)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, project.variants))
    return len(project.variants)


def bench_build(opts: BenchOptions, rec: RunLog) -> None:
    plan = build_plan(opts.sizes, opts.jobs, opts.repeat)
    steps_per_repeat = 5       # cold, floor, noop, edit, check
    progress = BenchProgress(sum(c.repeats * steps_per_repeat for c in plan), opts.quiet)
    scratch = Path(tempfile.mkdtemp(prefix="genspirv-bench-"))
    rec.notes.append(
        "cold = `python -m genspirv build --jobs N` on a fresh copy (no state, no outputs); "
        "floor = glslangValidator alone over the same variants, N at a time, the same binary "
        "and flags, paired with cold in ABBA order; noop = the same build again; "
        f"edit = the build after one edit of a header {opts.header_share:.0%} of the sources "
        "include; check = `python -m genspirv check --jobs N`.")
    try:
        projects = {}
        for size in dict.fromkeys(c.variants for c in plan):
            fan_out = {} if opts.per_source is None else {"per_source": opts.per_source}
            projects[size] = p = synth.generate_project(opts.root, scratch / f"pristine-{size}",
                                                        size, opts.header_share, **fan_out)
            rec.extra.setdefault("projects", {})[str(size)] = {
                "variants": len(p.variants), "sources": p.source_count,
                "header_dependents": p.header_dependents}
        tool = floor_tool(projects[plan[0].variants])
        code = snapshot_package(scratch)
        for case in plan:
            _run_case(case, projects[case.variants], tool, scratch, rec, progress, code, keep=opts.keep)
            rec.ratio(case.name, "cold / floor", "cold", "floor")
            rec.ratio(case.name, "check / floor", "check", "floor")
            rec.ratio(case.name, "cold / floor, CPU time", "cold", "floor", of="cpu_median")
            rec.ratio(case.name, "check / floor, CPU time", "check", "floor", of="cpu_median")
            rec.per_unit(case.name, "noop per variant", "noop", case.variants, "s")
            rec.per_unit(case.name, "cold per variant", "cold", case.variants, "s")
            deps = projects[case.variants].header_dependents
            rec.per_unit(case.name, f"edit per rebuilt variant ({deps})", "edit", max(deps, 1), "s")
            rec.checkpoint()
    finally:
        progress.close()
        _keep_projects(scratch, opts.keep)
        shutil.rmtree(scratch, ignore_errors=True)


def _keep_projects(scratch: Path, keep: Optional[Path]) -> None:
    """``--keep DIR``: move what the run left in ``scratch`` (its projects) into DIR."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        for child in (c for c in scratch.iterdir() if c.name != "code"):
            shutil.move(str(child), str(keep / child.name))


def _run_case(case: BuildCase, pristine, tool: FloorTool, scratch: Path, rec: RunLog,
              progress: BenchProgress, code: Path, keep) -> None:
    jobs = str(case.jobs)
    info = {"variants": case.variants, "jobs": case.jobs}

    def genspirv(project, *args: str, what: str) -> None:
        run_command(genspirv_command(*args, "--root", str(project.root), "--jobs", jobs, "--quiet"),
                    what=f"bench build {case.name}: {what}", env=genspirv_env(code))

    for r in range(case.repeats):
        label = f"{case.name} (run {r + 1}/{case.repeats})"
        work = None
        for arm in paired_order(r, ("cold", "floor")):
            progress.step(f"{label} {arm}")
            if arm == "cold":
                work = fresh_copy(pristine, scratch / f"work-{case.variants}-{jobs}-{r}")
                t, cpu, _ = timed_cpu(lambda: genspirv(work, "build", what="cold build"))
                expect_blobs(work, f"{case.name} cold build")
            else:
                out = scratch / f"floor-{case.variants}-{jobs}-{r}"
                t, cpu, _ = timed_cpu(lambda: glslang_floor(tool, pristine, case.jobs, out))
                shutil.rmtree(out, ignore_errors=True)
            rec.add(case.name, arm, t, repeat=r, cpu_s=cpu, **info)

        progress.step(f"{label} noop")
        before = output_digests(work)
        t, cpu, _ = timed_cpu(lambda: genspirv(work, "build", what="no-op build"))
        if output_digests(work) != before:
            raise BenchError(f"bench build {case.name}: the no-op build rewrote outputs")
        rec.add(case.name, "noop", t, repeat=r, cpu_s=cpu, **info)

        progress.step(f"{label} edit")
        synth.edit_header(work)
        t, cpu, _ = timed_cpu(lambda: genspirv(work, "build", what="header-edit rebuild"))
        _expect_changed(before, output_digests(work), work, case.name)
        rec.add(case.name, "edit", t, repeat=r, rebuilt=work.header_dependents, cpu_s=cpu, **info)

        progress.step(f"{label} check")
        t, cpu, _ = timed_cpu(lambda: genspirv(work, "check", what="check"))
        rec.add(case.name, "check", t, repeat=r, cpu_s=cpu, **info)
        if keep is None:
            shutil.rmtree(work.root, ignore_errors=True)


def _expect_changed(before: dict, after: dict, project, case: str) -> None:
    changed = sum(1 for k, v in after.items() if k.endswith(".spv") and before.get(k, (0, ""))[1] != v[1])
    if changed != project.header_dependents:
        raise BenchError(f"bench build {case}: the header edit changed {changed} blobs, "
                         f"expected the {project.header_dependents} variants that include it")


# -- generator variants at a real backend's scale --------------------------------

GENERATOR_SIZES = (400, 1000, 2000)
QUICK_NOOPS = 3         # --quick: no-op and fresh-clone no-op runs after each cold build
SERIES_ARMS = ("cold", "floor+opt")     # each point of a --jobs series


def glslang_opt_floor(tool: FloorTool, opt: FloorTool, gen, jobs: int, out_dir: Path) -> int:
    """The floor with the optimiser: glslang, then spirv-opt -O for the optimised variants."""
    from genspirv.toolchain.spirv_tools import OPTIMIZE_ARGS
    project = gen.project
    out_dir.mkdir(parents=True, exist_ok=True)

    def one(v) -> None:
        env = "vulkan1.3" if v.name in gen.vulkan13 else project.target_env
        out = out_dir / f"{v.name}.spv"
        cmd = [tool.path, "-V", "--target-env", env] + [f"-I{d}" for d in tool.include_dirs]
        cmd += [f"-D{k}={val}" for k, val in v.defines] + list(project.flags) + ["-o", str(out), v.source]
        run_command(cmd, what=f"floor: {v.name}", cwd=project.root, env=tool.env, timeout=600)
        if v.name in gen.optimized:
            run_command([opt.path, *OPTIMIZE_ARGS, f"--target-env={env}", str(out), "-o", str(out)],
                        what=f"floor: spirv-opt {v.name}", env=opt.env, timeout=600)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, project.variants))
    return len(project.variants)


# The peer's pipeline (llama.cpp's vulkan-shaders-gen): Google's glslc once per variant, the
# optimised ones with -O, up to N at a time, then the tables written as C arrays.
GLSLC_ARM = "glslc"
LIBRARY_FLOOR_ARM = "floor, library"


def glslc_pipeline(glslc: str, gen, jobs: int, out_dir: Path) -> int:
    """glslc per variant (its defines, target env, -O where it is optimised), ``jobs`` at a time,
    then one C++ file of ``name_data`` arrays and ``name_len`` sizes; returns the bytes written."""
    from genspirv.emit.ctext import hex_bytes
    project = gen.project
    out_dir.mkdir(parents=True, exist_ok=True)
    incl = [f"-I{project.glsl_dir}/include"] if (project.root / project.glsl_dir / "include").is_dir() else []

    def one(v) -> bytes:
        env = "vulkan1.3" if v.name in gen.vulkan13 else project.target_env
        out = out_dir / f"{v.name}.spv"
        cmd = [glslc, "-fshader-stage=compute", f"--target-env={env}", *incl]
        cmd += [f"-D{k}={val}" for k, val in v.defines] + (["-O"] if v.name in gen.optimized else [])
        run_command(cmd + ["-o", str(out), v.source], what=f"glslc: {v.name}", cwd=project.root, timeout=600)
        return out.read_bytes()

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        blobs = dict(zip((v.name for v in project.variants), pool.map(one, project.variants)))
    lines = ["#include <cstdint>", ""]
    for name, blob in sorted(blobs.items()):
        lines += [f"unsigned char {name}_data[{len(blob)}] = {{", "    " + ",\n    ".join(hex_bytes(blob)), "};",
                  f"const uint64_t {name}_len = {len(blob)};", ""]
    text = "\n".join(lines).encode()
    (out_dir / "shaders.cpp").write_bytes(text)
    return len(text)


# glslang's own compile in its library, in worker processes started as the build starts its
# compile workers (a zeroed heap): every variant, nothing else. argv: root, glslang pin;
# stdin: JSON [source, target env, defines, include preamble, include dirs] per variant.
LIBRARY_FLOOR = r"""
import json, sys
from pathlib import Path
from genspirv.toolchain import glslang_library, tools
root = Path(sys.argv[1])
work = json.loads(sys.stdin.read())
glslang_library.allow()
library = glslang_library.for_tool(tools.find_glslang(sys.argv[2]))
if library is None:
    sys.exit("the glslang library is not there (a glslang wheel is needed)")
for source, env, defines, preamble, dirs in work:
    if library.compile(root=root, source=source, target_env=env, defines=defines, include_preamble=preamble,
                       include_dirs=dirs) is None:
        sys.exit(f"the library declined {source} {defines}")
print(len(work))
"""


def glslang_library_floor(gen, jobs: int, code: Path) -> int:
    """Every variant compiled by glslang in its library, in ``jobs`` worker processes (each its
    share, one after another): what no build of these variants can beat on these cores."""
    from genspirv.toolchain.children import zeroed_heap
    from genspirv.toolchain.tools import INCLUDE_PREAMBLE, uses_include
    cfg = config.load_config(gen.root)
    dirs = list(cfg.include_dirs)
    work = []
    for v in gen.project.variants:
        env = "vulkan1.3" if v.name in gen.vulkan13 else gen.project.target_env
        preamble = INCLUDE_PREAMBLE if uses_include((gen.root / v.source).read_bytes()) else None
        work.append([v.source, env, dict(v.defines), preamble, dirs])
    environment = zeroed_heap(genspirv_env(code))

    def worker(share) -> int:
        proc = subprocess.run([sys.executable, "-c", LIBRARY_FLOOR, str(gen.root), cfg.glslang],
                              input=json.dumps(share).encode(), capture_output=True, env=environment, timeout=3600)
        if proc.returncode != 0:
            raise BenchError(f"bench build-generator: library floor: {proc.stderr.decode(errors='replace')[-500:]}")
        return int(proc.stdout.split()[-1])

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return sum(pool.map(worker, [work[i::jobs] for i in range(jobs)]))


def bench_build_generator(opts: BenchOptions, rec: RunLog) -> None:
    """``python -m benchmarks build-generator``: a generator-driven project at 400, 1,000 and 2,000 variants."""
    if opts.remote:
        from .remote_suite import bench_remote
        return bench_remote(opts, rec)
    from genspirv.toolchain import tools as toolchain
    job_counts = opts.jobs or (2,)
    # Several job counts: a series of how wall time grows with cores, cold beside the compiler
    # and optimiser alone at each (the other arms, at one job count, are the single-count run's).
    series = len(job_counts) > 1
    sizes = opts.sizes or GENERATOR_SIZES
    repeats = {size: opts.repeat or (3 if size <= 400 else 1) for size in sizes}
    # --quick: only what no-op figures need (cold build untimed against a floor, no edit, no check).
    glslc = shutil.which("glslc")
    peers = (() if glslc is None else (GLSLC_ARM,)) + (LIBRARY_FLOOR_ARM,)
    steps = ("cold",) + ("noop", "fresh clone noop", "fresh clone floor") * QUICK_NOOPS if opts.quick else \
        SERIES_ARMS if series else ("cold", "floor", "floor+opt", *peers, "noop", "fresh clone noop",
                                    "fresh clone floor", "edit", "check")
    progress = BenchProgress(sum(repeats.values()) * len(steps) * len(job_counts), opts.quiet)
    scratch = Path(tempfile.mkdtemp(prefix="genspirv-bench-gen-"))
    rec.notes.append(
        "generator projects: the synthetic project's variants listed by a generator file, "
        f"{synth.OPTIMIZED_SHARE:.0%} optimised (spirv-opt -O) and {synth.VULKAN13_SHARE:.0%} for vulkan1.3, "
        "as in llama.cpp; floor = glslangValidator alone, floor+opt = glslangValidator then spirv-opt -O "
        "for the optimised variants (what the build runs besides spirv-val and reflection), a process "
        "a step; the build's worker processes compile with the same glslang in its library (the "
        "process's bytes, without its start each time) and run spirv-opt as a process; "
        "fresh clone noop = the build in a copy without .genspirv/ (committed outputs only); "
        "fresh clone floor = what deciding it must read, in a Python importing nothing of genspirv: "
        "the table, the generator run in-process, the manifest parsed, every blob and source hashed; "
        f"edit = one edit of a header {opts.header_share:.0%} of the sources include; "
        f"jobs = {', '.join(map(str, job_counts))}"
        + (" (a series: cold and floor+opt alone at each)." if series else "."))
    if not opts.quick and not series:
        rec.notes.append(
            "glslc = the peer's pipeline (llama.cpp's vulkan-shaders-gen): Google's glslc once per variant, with "
            "its defines and target env, -O where the variant is optimised, N at a time, then the tables written "
            "as C arrays (one .cpp of name_data/name_len); floor, library = glslang's own compile in its library, "
            "every variant, nothing else, in N worker processes (what no build of these variants beats on these "
            "cores); both paired with cold in ABBA order. "
            + ("glslc: " + subprocess.run([glslc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
               if glslc else "glslc is not installed here (apt-get install glslc): its arm is skipped."))
    try:
        code = snapshot_package(scratch)
        opt_tool = toolchain.find_tool("spirv-opt")
        opt = FloorTool(str(opt_tool.path), opt_tool.env(), ())
        for size in sizes:
            fan_out = {} if opts.per_source is None else {"per_source": opts.per_source}
            gen = synth.generate_generator_project(opts.root, scratch / f"pristine-{size}", size,
                                                   opts.header_share, **fan_out)
            rec.extra.setdefault("projects", {})[str(size)] = {
                "variants": len(gen.project.variants), "sources": gen.project.source_count,
                "optimized": len(gen.optimized), "vulkan1.3": len(gen.vulkan13),
                "header_dependents": gen.project.header_dependents}
            tool = floor_tool(gen.project)
            for jobs in job_counts:
                case = f"generator variants={size} jobs={jobs}"
                _run_generator_case(case, size, jobs, repeats[size], gen, tool, opt, scratch, rec, progress, code,
                                    opts.quick, series, peers)
                if not opts.quick:
                    rec.ratio(case, "cold / floor+opt", "cold", "floor+opt")
                    rec.ratio(case, "cold / floor+opt, CPU time", "cold", "floor+opt", of="cpu_median")
                if not series:
                    rec.ratio(case, "fresh clone noop / fresh clone floor", "fresh clone noop", "fresh clone floor")
                if not opts.quick and not series:
                    rec.ratio(case, "cold / floor", "cold", "floor")
                    rec.ratio(case, "check / floor+opt", "check", "floor+opt")
                    for peer in peers:
                        for arm in ("cold", "noop", "check"):
                            rec.ratio(case, f"{arm} / {peer}", arm, peer)
                        rec.ratio(case, f"cold / {peer}, CPU time", "cold", peer, of="cpu_median")
                rec.checkpoint()
            if opts.keep is None:
                shutil.rmtree(gen.root, ignore_errors=True)
    finally:
        progress.close()
        _keep_projects(scratch, opts.keep)
        shutil.rmtree(scratch, ignore_errors=True)


def _run_generator_case(case, size, jobs, repeats, gen, tool, opt, scratch, rec, progress, code,
                        quick=False, series=False, peers=()) -> None:
    info = {"variants": size, "jobs": jobs}

    def genspirv(root: Path, *args: str, what: str) -> None:
        run_command(genspirv_command(*args, "--root", str(root), "--jobs", str(jobs), "--quiet"),
                    what=f"bench build-generator {case}: {what}", env=genspirv_env(code))

    for r in range(repeats):
        label = f"{case} (run {r + 1}/{repeats})"
        work = None
        arms = ("cold",) if quick else paired_order(r, SERIES_ARMS if series else ("cold", "floor", "floor+opt",
                                                                                   *peers))
        for arm in arms:
            progress.step(f"{label} {arm}")
            if arm == "cold":
                work = fresh_copy(gen.project, scratch / f"work-{size}-{r}")
                t, cpu, _ = timed_cpu(lambda: genspirv(work.root, "build", what="cold build"))
                expect_blobs(work, f"{case} cold build")
            elif arm == GLSLC_ARM:
                out = scratch / f"glslc-{size}-{r}"
                t, cpu, _ = timed_cpu(lambda: glslc_pipeline(shutil.which("glslc"), gen, jobs, out))
                shutil.rmtree(out, ignore_errors=True)
            elif arm == LIBRARY_FLOOR_ARM:
                t, cpu, count = timed_cpu(lambda: glslang_library_floor(gen, jobs, code))
                if count != size:
                    raise BenchError(f"bench build-generator {case}: the library floor compiled {count} of {size}")
            else:
                out = scratch / f"floor-{size}-{r}"
                fn = (lambda: glslang_floor(tool, gen.project, jobs, out)) if arm == "floor" else \
                    (lambda: glslang_opt_floor(tool, opt, gen, jobs, out))
                t, cpu, _ = timed_cpu(fn)
                shutil.rmtree(out, ignore_errors=True)
            rec.add(case, arm, t, repeat=r, cpu_s=cpu, **info)
        if series:
            shutil.rmtree(work.root, ignore_errors=True)
            continue

        for k in range(QUICK_NOOPS if quick else 1):
            progress.step(f"{label} noop")
            before = output_digests(work)
            t, cpu, _ = timed_cpu(lambda: genspirv(work.root, "build", what="no-op build"))
            if output_digests(work) != before:
                raise BenchError(f"bench build-generator {case}: the no-op build rewrote outputs")
            rec.add(case, "noop", t, repeat=r, run=k, cpu_s=cpu, **info)

            progress.step(f"{label} fresh clone noop")
            clone = scratch / f"clone-{size}-{r}-{k}"
            shutil.copytree(work.root, clone, ignore=shutil.ignore_patterns(".genspirv"))
            clone_project = dataclasses.replace(work, root=clone)
            clone_before = output_digests(clone_project)
            t, cpu, _ = timed_cpu(lambda: genspirv(clone, "build", what="fresh-clone no-op build"))
            if output_digests(clone_project) != clone_before:
                raise BenchError(f"bench build-generator {case}: the fresh clone's build rewrote outputs")
            rec.add(case, "fresh clone noop", t, repeat=r, run=k, cpu_s=cpu, **info)
            progress.step(f"{label} fresh clone floor")
            t, cpu, proc = timed_cpu(lambda: run_command([sys.executable, "-c", FRESH_CLONE_FLOOR, str(clone)],
                                                         what=f"bench build-generator {case}: fresh-clone floor",
                                                         env=genspirv_env(code)))
            if proc.stdout.decode().split()[:2] != [str(size)] * 2:
                raise BenchError(f"bench build-generator {case}: the fresh-clone floor read {proc.stdout!r}")
            rec.add(case, "fresh clone floor", t, repeat=r, run=k, cpu_s=cpu, **info)
            shutil.rmtree(clone, ignore_errors=True)
        if quick:
            shutil.rmtree(work.root, ignore_errors=True)
            continue

        progress.step(f"{label} edit")
        synth.edit_header(work)
        t, cpu, _ = timed_cpu(lambda: genspirv(work.root, "build", what="header-edit rebuild"))
        _expect_changed(before, output_digests(work), work, case)
        rec.add(case, "edit", t, repeat=r, rebuilt=work.header_dependents, cpu_s=cpu, **info)

        progress.step(f"{label} check")
        t, cpu, _ = timed_cpu(lambda: genspirv(work.root, "check", what="check"))
        rec.add(case, "check", t, repeat=r, cpu_s=cpu, **info)
        shutil.rmtree(work.root, ignore_errors=True)
