"""A synthetic project's build outputs, as every build suite checks them.

Takes a project of ``genspirv.bench.synth``; gives ``fresh_copy`` (the project
as a fresh clone has it), ``output_digests`` (mtime and sha256 of each blob and
the manifest, to show a no-op rewrote nothing) and ``expect_blobs`` (one
distinct blob per variant). Shared by the build and remote-cache suites.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path

from .harness import BenchError


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
