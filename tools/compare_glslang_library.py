"""Compile a project's variants with glslangValidator and with glslang's library; compare.

    python tools/compare_glslang_library.py PROJECT [--every N] [--passes N] [--json FILE]

For each variant of the genspirv project at PROJECT (every Nth with ``--every``),
the SPIR-V bytes and the included files of the pinned glslangValidator (its
process, as a build's own process runs it) and of ``genspirv.toolchain.glslang_library``
(as a compile worker runs it: in this one process, started again with a zeroed heap):
equal, different, or declined by the library (it answers only clean successes;
glslangValidator answers the rest). ``--passes N`` compiles every variant N times in
the library, each pass in another random order, so that what one compile leaves in
the process meets many others. Exits 1 when any variant differs. A project with
generated sources is built first, so they exist.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from genspirv.errors import GenspirvError  # noqa: E402
from genspirv.project.config import load_config  # noqa: E402
from genspirv.project.variants import CompilerName  # noqa: E402
from genspirv.toolchain import children, glslang_library  # noqa: E402
from genspirv.toolchain.compiler import Job, find_compiler  # noqa: E402


class Watched:
    """The library, remembering whether it answered the last request."""

    def __init__(self, library: glslang_library.GlslangLibrary):
        self.library = library
        self.answered: Optional[bool] = None     # None: not asked yet

    def compile(self, **request):
        made = self.library.compile(**request)
        self.answered = made is not None
        return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--every", type=int, default=1, help="compare every Nth variant (default: all)")
    parser.add_argument("--passes", type=int, default=1, help="library passes, each in a new random order")
    parser.add_argument("--seed", type=int, default=0, help="of the passes' orders")
    parser.add_argument("--json", type=Path, help="write the counts and every difference here")
    parser.add_argument("--perturb", type=int, default=None, metavar="BYTE",
                        help="the control: start with MALLOC_PERTURB_=BYTE (not a zeroed heap) and use "
                             "the library anyway, to see what a heap of old bytes does to its output")
    args = parser.parse_args()
    if args.perturb is not None:
        if os.environ.get("MALLOC_PERTURB_") != str(args.perturb):
            os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "MALLOC_PERTURB_": str(args.perturb)})
    elif not children.heap_zeroed():
        # As a compile worker starts: glibc reads this at a process's start.
        os.execve(sys.executable, [sys.executable, *sys.argv], children.zeroed_heap(os.environ))
    config = load_config(args.project.resolve())
    compiler = find_compiler(config)
    glslang_library.allow()
    library = glslang_library.for_tool(compiler.glslang)
    if args.perturb is not None:
        library = glslang_library._load(*glslang_library.library_files(compiler.glslang.tool.lib_dir,
                                                                       compiler.glslang.version))
    if library is None:
        print(f"no glslang library beside {compiler.glslang.tool.path}", file=sys.stderr)
        return 2
    watched = Watched(library)
    counts = {"equal": 0, "different": 0, "declined": 0, "refused by glslangValidator": 0}
    differences = []
    seconds = {"glslangValidator": 0.0, "library": 0.0}
    variants = [v for v in config.variants if v.chain[0] is CompilerName.GLSLANG][::args.every]
    with tempfile.TemporaryDirectory() as tmp:
        jobs, by_process = {}, {}
        for v in variants:
            jobs[v.name] = job = Job(v, config.root, config.include_dirs, config.include_directive,
                                     Path(tmp) / v.name)
            job.workdir.mkdir()
            started = time.perf_counter()
            try:
                by_process[v.name] = compiler.compile_with(job, None)
            except GenspirvError:
                counts["refused by glslangValidator"] += 1
            seconds["glslangValidator"] += time.perf_counter() - started
        order = list(by_process)
        for n in range(args.passes):
            if n:
                random.Random(args.seed + n).shuffle(order)
            for name in order:
                started = time.perf_counter()
                watched.answered = None     # stays None when the compile never asks the library
                by_library = compiler.compile_with(jobs[name], watched)
                seconds["library"] += time.perf_counter() - started
                expected = by_process[name]
                if not watched.answered:
                    counts["declined"] += 1
                elif (by_library.blob, by_library.deps) == (expected.blob, expected.deps):
                    counts["equal"] += 1
                else:
                    counts["different"] += 1
                    differences.append({"variant": name, "pass": n, "bytes_equal": by_library.blob == expected.blob,
                                        "deps": [list(expected.deps), list(by_library.deps)]})
    result = {"project": str(args.project), "variants": len(variants), "passes": args.passes,
              "heap": f"MALLOC_PERTURB_={os.environ.get('MALLOC_PERTURB_')}", "counts": counts,
              "seconds": {k: round(s, 3) for k, s in seconds.items()}, "differences": differences}
    print(json.dumps({k: result[k] for k in ("variants", "passes", "heap", "counts", "seconds")}))
    for d in differences[:20]:
        print(f"different: {d['variant']} (bytes {'equal' if d['bytes_equal'] else 'differ'})")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
