"""The ``tables`` suite: a real backend's generated code, rendered and compiled.

Takes the kernels of a project (this repo by default) and writes a synthetic
project of a real backend's shape (``synth.generate_generator_project`` with
outputs: ~2,000 variants over ~150 sources, one C++ file per source and one
header, all from one project template that writes every blob with
``hex_bytes``), then gives raw runs of:

- ``cold build`` (``--force``, with ``.genspirv/`` and every output removed) and
  ``check``, each with its progress lines timed as they come, and of each the
  part ``after the last compile`` (every output rendered or compared, and
  committed: the issue's goal is <= 10 % of the cold build);

- the render of every output, alone (no compile, no write of the blobs), in a
  fresh process of its own, timed inside it from the manifest and blobs in
  memory to the last file written, ABBA over the arms: ``before`` (the emitters
  of ``--baseline REV``, one output at a time as that build called them; only
  when a baseline is named), ``plain formatter`` (this tree, one at a time,
  the hex formatters replaced by the plain one: the formatting change alone),
  ``after`` (this tree: ``emit.render_outputs`` as the build calls it, every
  output in one child process) and ``after, N processes`` (N = the job count:
  the outputs dealt out to N children forked after ``prepare``, the blobs
  shared, not copied);
- the C++ compile of every generated file, N at a time, with each compiler
  here (g++, and clang++, a clang with ``#embed`` first), ``arrays`` (the hex
  text) beside ``files`` (``blobs = "files"`` as the prelude picks it:
  ``.incbin``) and, for a compiler that has it, ``files, #embed``
  (``-DGENSPIRV_BLOBS_EMBED``), ABBA; once per compiler and mode, untimed, the
  objects are linked with a program that compares every symbol with its blob.

Every render arm writes the same bytes as the cold build did (sha256 over every
file), or the run stops. Derived: the part after the last compile over the whole
of the cold build and of check, each render arm over ``after``, the render's
share of the cold build, arrays over files per compiler.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

from . import synth
from .harness import (BenchError, BenchOptions, BenchProgress, RunLog, baseline_package, genspirv_command,
                      genspirv_env, paired_order, run_command, snapshot_package, timed_cpu, timed_tail)

TABLE_SIZES = (2000,)
# llama.cpp's Vulkan backend: 1,979 variants from 139 sources.
TABLE_PER_SOURCE = 1979 / 139
FILES_DIR = "src/shaders_files"     # the same outputs rendered with blobs = "files"

# One render of every output in a process of its own: argv root, arm, jobs, out dir. Prints
# JSON: the seconds from the blobs in memory to the last file written, and what was written.
RENDER = r"""
import hashlib, json, sys, time
from pathlib import Path
root, arm, jobs, out = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
from genspirv.project.config import load_config
from genspirv.manifest import load_manifest
from genspirv import emit
cfg = load_config(root)
manifest = load_manifest(cfg.path(cfg.manifest), root=root)
blobs = {e.name: manifest.blob_path(e).read_bytes() for e in manifest.shaders}   # a build's fresh blobs
entries = list(cfg.generate)
if arm == "plain formatter":
    from genspirv.emit import ctext, project
    project.hex_bytes = lambda data, per_line=16, suffix="": ctext.reference_hex_lines(data, 2, per_line, suffix)
    project.hex_words = lambda words, per_line=8, suffix="": ctext.reference_hex_lines(words, 8, per_line, suffix)

def write(files):
    for rel, data in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()}

t0 = time.perf_counter()
digests = {}
if arm == "before":                 # the baseline's API: one output at a time, as its build did
    for g in entries:
        digests.update(write(emit.render(g.target, manifest, g.output, blobs=blobs, template=g.template)))
else:
    source = emit.prepare(manifest, blobs)     # then the outputs as the build renders them, in `jobs` children
    for files in emit.render_outputs(source, entries, jobs):
        digests.update(write(files))
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "digests": digests}))
"""

# Compares every symbol the generated files define with its blob: argv the spirv folder.
CHECK_MAIN = r"""
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include "shaders.hpp"

struct Blob { const char *name; const unsigned char *data; uint64_t len; };
static const Blob blobs[] = {
@ROWS@
};

int main(int, char **argv) {
    int bad = 0, n = 0;
    for (const Blob &b : blobs) {
        std::ifstream f(std::string(argv[1]) + "/" + b.name + ".spv", std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        n++;
        if (bytes.size() != b.len || std::memcmp(bytes.data(), b.data, b.len) != 0) bad++;
    }
    std::printf("%d %d\n", n, bad);
    return bad != 0;
}
"""


def compilers() -> list[tuple[str, str]]:
    """(label, path) of the C++ compilers measured: g++, and one clang++ (one with #embed first)."""
    found = []
    if shutil.which("g++"):
        found.append(("g++", shutil.which("g++")))
    clangs = ["clang++", *(f"clang++-{v}" for v in range(30, 13, -1))]
    paths = [shutil.which(c) for c in clangs if shutil.which(c)]
    with_embed = [p for p in paths if _has_embed(p)]
    if with_embed or paths:
        path = (with_embed or paths)[0]
        found.append((Path(path).name, path))
    return found


def _has_embed(cxx: str) -> bool:
    proc = subprocess.run([cxx, "-x", "c++", "-E", "-"], input="#ifdef __has_embed\nYES\n#endif\n",
                          capture_output=True, text=True)
    return proc.returncode == 0 and "YES" in proc.stdout


def _render(code: Path, root: Path, arm: str, jobs: int, out: Path) -> dict:
    proc = run_command([sys.executable, "-c", RENDER, str(root), arm, str(jobs), str(out)],
                       what=f"bench tables: render ({arm})", env=genspirv_env(code))
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def _committed(root: Path, outputs) -> dict[str, str]:
    return {rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in outputs}


def _files_outputs(root: Path, outputs) -> list[str]:
    """Render the outputs with blobs = "files" beside the arrays ones (FILES_DIR); their paths."""
    from genspirv import emit
    from genspirv.manifest import load_manifest
    manifest = load_manifest(root / "manifests" / "shaders.json", root=root)
    (root / synth.OUTPUTS_TEMPLATE).with_suffix(".files.j2").write_text(synth.outputs_template("files"))
    template = Path(synth.OUTPUTS_TEMPLATE).with_suffix(".files.j2").as_posix()
    source = emit.prepare(manifest)
    written = []
    for rel in outputs:
        out = f"{FILES_DIR}/{Path(rel).name}"
        for path, data in emit.render_output(source, "template", out, template, "files").items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
            written.append(path)
    return written


COMPILE_MODES = {"arrays": (synth.OUTPUTS_DIR, ()), "files": (FILES_DIR, ()),
                 "files, #embed": (FILES_DIR, ("-DGENSPIRV_BLOBS_EMBED",))}


def _compile_all(cxx: str, root: Path, folder: str, flags, jobs: int, objects: Path) -> list[Path]:
    objects.mkdir(parents=True, exist_ok=True)
    sources = sorted((root / folder).glob("*.cpp"))

    def one(src: Path) -> Path:
        obj = objects / (src.stem + ".o")
        run_command([cxx, "-std=c++17", "-O2", "-c", *flags, f"-I{root / folder}", str(src), "-o", str(obj)],
                    what=f"bench tables: {Path(cxx).name} {src.name}", cwd=root / folder, timeout=1800)
        return obj

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, sources))


def _check_objects(cxx: str, root: Path, folder: str, objs: list[Path], scratch: Path, names) -> None:
    """Link ``objs`` with a program comparing every symbol with its blob; it must say all match."""
    rows = ",\n".join(f'    {{ "{n}", {n}_data, {n}_len }}' for n in sorted(names))
    main = scratch / "check_main.cpp"
    main.write_text(CHECK_MAIN.replace("@ROWS@", rows))
    exe = scratch / "check"
    run_command([cxx, "-std=c++17", f"-I{root / folder}", str(main), *map(str, objs), "-o", str(exe)],
                what=f"bench tables: link the check of {folder}", timeout=1800)
    out = run_command([str(exe), str(root / "spirv")], what="bench tables: the check program").stdout.decode().split()
    if out != [str(len(names)), "0"]:
        raise BenchError(f"bench tables: {Path(cxx).name} {folder}: the symbols do not hold the blobs ({out})")


def bench_tables(opts: BenchOptions, rec: RunLog) -> None:
    """``python -m benchmarks tables``: render and compile a real backend's generated tables."""
    sizes = opts.sizes or TABLE_SIZES
    jobs = (opts.jobs or (2,))[0]
    repeats = opts.repeat or 3
    per_source = opts.per_source or TABLE_PER_SOURCE
    cxxs = compilers()
    render_arms = (["before"] if opts.baseline else []) + ["plain formatter", "after", f"after, {jobs} processes"]
    modes = {label: [m for m in COMPILE_MODES if "#embed" not in m or _has_embed(cxx)] for label, cxx in cxxs}
    progress = BenchProgress(len(sizes) * repeats * (len(render_arms) + sum(map(len, modes.values())) + 2),
                             opts.quiet)
    scratch = Path(tempfile.mkdtemp(prefix="genspirv-bench-tables-"))
    rec.notes.append(
        f"a generator project with {synth.OPTIMIZED_SHARE:.0%} of its variants optimised and, from one template, "
        f"a C++ file per source and a header (the blobs as hex_bytes arrays); cold build = `python -m genspirv "
        f"build --force --jobs {jobs}` with .genspirv/ and every output removed first, check = `genspirv check "
        f"--jobs {jobs}`, each with its progress lines timed as they come: 'after the last compile' is the time "
        "from the last [n/N] line to the command's end (every output rendered or compared, and committed); render arms: every output rendered in a process of its own from the manifest "
        "and blobs in memory to the files written, timed inside it: before = the emitters of the baseline "
        f"({opts.baseline or 'none named'}), one output at a time as its build called them; plain formatter = "
        "this tree one at a time with hex_bytes/hex_words replaced by the plain formatter (one f'0x{v:02x}' "
        f"a value); after = this tree's render_outputs, every output in one child; after, {jobs} processes = "
        f"the outputs dealt out to {jobs} children forked after prepare (blobs shared); compile arms: `CXX -std=c++17 -O2 -c` of every generated .cpp, {jobs} at a time, arrays "
        "(hex) beside files (blobs = \"files\" as its prelude picks: .incbin) and files, #embed "
        "(-DGENSPIRV_BLOBS_EMBED, where the compiler has #embed), each checked once by a program comparing "
        "every symbol with its blob.")
    try:
        code = snapshot_package(scratch)
        baseline = baseline_package(opts.root, opts.baseline, scratch) if opts.baseline else None
        for size in sizes:
            case = f"tables variants={size} jobs={jobs}"
            gen = synth.generate_generator_project(opts.root, scratch / f"p{size}", size, opts.header_share,
                                                   per_source=per_source, outputs="arrays")
            root = gen.root
            # The cold build and check with their progress lines, each timed as it comes: the part
            # after the last compile renders (or compares) every output and commits (issue goal:
            # <= 10 % of the cold build). The last cold build's outputs are the ones the render
            # arms below must write again.
            for r in range(repeats):
                for step in paired_order(r, ("cold build", "check")):
                    progress.step(f"{case} {step} (run {r + 1}/{repeats})")
                    if step == "cold build":
                        shutil.rmtree(root / ".genspirv", ignore_errors=True)
                        for rel in [synth.OUTPUTS_DIR, "spirv", "manifests"]:
                            shutil.rmtree(root / rel, ignore_errors=True)
                    args = ["build", "--force"] if step == "cold build" else ["check"]
                    t, tail, cpu = timed_tail(genspirv_command(*args, "--root", str(root), "--jobs", str(jobs)),
                                              what=f"bench tables {case}: {step}", env=genspirv_env(code))
                    rec.add(case, step, t, repeat=r, cpu_s=cpu, variants=size, jobs=jobs)
                    rec.add(case, f"{step}, after the last compile", tail, repeat=r, variants=size, jobs=jobs)
            rec.ratio(case, "cold build: after the last compile / all", "cold build, after the last compile",
                      "cold build")
            rec.ratio(case, "check: after the last compile / all", "check, after the last compile", "check")
            want = _committed(root, gen.outputs)
            text = sum((root / rel).stat().st_size for rel in gen.outputs)
            files = _files_outputs(root, gen.outputs)
            rec.extra.setdefault("projects", {})[str(size)] = {
                "variants": len(gen.project.variants), "sources": gen.project.source_count,
                "outputs": len(gen.outputs), "spirv_bytes": sum(p.stat().st_size for p in (root / "spirv").iterdir()),
                "arrays_text_bytes": text, "files_text_bytes": sum((root / f).stat().st_size for f in files),
                "compilers": {label: path for label, path in cxxs}}
            for r in range(repeats):
                for arm in paired_order(r, render_arms):
                    progress.step(f"{case} render ({arm}, run {r + 1}/{repeats})")
                    out = scratch / f"render-{size}-{r}-{len(rec.runs)}"
                    result = _render(baseline if arm == "before" else code, root, arm,
                                     jobs if arm.endswith("processes") else 1, out)
                    if result["digests"] != want:
                        raise BenchError(f"bench tables {case}: render ({arm}) wrote other bytes than the build")
                    rec.add(case, f"render, {arm}", result["seconds"], repeat=r, outputs=len(want))
                    shutil.rmtree(out, ignore_errors=True)
            for label, cxx in cxxs:
                checked = set()
                for r in range(repeats):
                    for mode in paired_order(r, modes[label]):
                        progress.step(f"{case} compile {mode} {label} (run {r + 1}/{repeats})")
                        folder, flags = COMPILE_MODES[mode]
                        objects = scratch / f"obj-{label}-{len(rec.runs)}"
                        t, cpu, objs = timed_cpu(lambda: _compile_all(cxx, root, folder, flags, jobs, objects))
                        rec.add(case, f"compile {mode}, {label}", t, repeat=r, cpu_s=cpu, files=len(objs))
                        if mode not in checked:
                            _check_objects(cxx, root, folder, objs, scratch, [v.name for v in gen.project.variants])
                            checked.add(mode)
                        shutil.rmtree(objects, ignore_errors=True)
                for mode in modes[label][1:]:
                    rec.ratio(case, f"compile arrays / {mode}, {label}", f"compile arrays, {label}",
                              f"compile {mode}, {label}")
                    rec.ratio(case, f"compile arrays / {mode}, {label}, CPU time", f"compile arrays, {label}",
                              f"compile {mode}, {label}", of="cpu_median")
            for arm in render_arms:
                if arm != "after":
                    rec.ratio(case, f"render, {arm} / after", f"render, {arm}", "render, after")
                rec.ratio(case, f"render, {arm} / cold build", f"render, {arm}", "cold build")
            rec.checkpoint()
            if opts.keep is None:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        progress.close()
        if opts.keep is not None:
            opts.keep.mkdir(parents=True, exist_ok=True)
            for child in scratch.iterdir():
                if child.name.startswith("p"):
                    shutil.move(str(child), str(opts.keep / child.name))
        shutil.rmtree(scratch, ignore_errors=True)
