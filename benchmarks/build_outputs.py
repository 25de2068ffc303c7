"""A synthetic project's build outputs, as every build suite checks them.

Takes a project of ``benchmarks.synth``; gives ``fresh_copy`` (the project
as a fresh clone has it), ``output_digests`` (mtime and sha256 of each blob and
the manifest, to show a no-op rewrote nothing), ``expect_blobs`` (one
distinct blob per variant) and ``FRESH_CLONE_FLOOR``, the reads a fresh clone's
no-op cannot do without. Shared by the build and remote-cache suites.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path

from .harness import BenchError

# What deciding a fresh clone's no-op exactly must read, in a Python that imports nothing of
# genspirv: the project's table, the generator's variants (run here, not in a child), the
# committed manifest parsed, and every committed blob and every file under glsl_dir hashed.
# Its time, start-up included, is the floor a fresh clone's no-op is set beside.
FRESH_CLONE_FLOOR = """
import hashlib, json, os, runpy, sys, tomllib
root = sys.argv[1]
with open(os.path.join(root, "pyproject.toml"), "rb") as f:
    table = tomllib.load(f)["tool"]["genspirv"]
variants = runpy.run_path(os.path.join(root, table["generator"]))["variants"]()
with open(os.path.join(root, table.get("manifest", "manifests/shaders.json")), "rb") as f:
    shaders = json.loads(f.read())["shaders"]
hashed = 0
for folder in (table.get("spirv_dir", "spirv"), table.get("glsl_dir", "glsl")):
    for parent, _, names in os.walk(os.path.join(root, folder)):
        for name in names:
            with open(os.path.join(parent, name), "rb") as f:
                hashlib.sha256(f.read()).hexdigest()
            hashed += 1
print(len(variants), len(shaders), hashed)
"""


def output_digests(project) -> dict[str, tuple[int, str]]:
    """mtime_ns and sha256 of every blob and of the manifest."""
    out = {}
    files = list((project.root / project.spirv_dir).glob("*.spv")) + [project.root / project.manifest]
    for p in files:
        if p.exists():
            out[p.name] = (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def fresh_copy(pristine, dest: Path):
    """A copy of the pristine project at ``dest``, as a fresh clone would have it."""
    shutil.copytree(pristine.root, dest)
    return dataclasses.replace(pristine, root=dest)


def expect_blobs(project, what: str) -> None:
    """Every variant left a blob of its own, or the run does not measure what it claims."""
    digests = output_digests(project)
    blobs = {k: v for k, v in digests.items() if k.endswith(".spv")}
    if len(blobs) != len(project.variants):
        raise BenchError(f"bench build: {what} left {len(blobs)} blobs for {len(project.variants)} variants")
    if len({sha for _, sha in blobs.values()}) != len(blobs):
        raise BenchError(f"bench build: {what}: some variants compiled to identical blobs; "
                         "the synthetic project does not measure what it claims")
