"""Mutation proof for the hazard tracker and the submission slots.

Each mutation below is applied to a scratch copy of the package and tests
(never to the working tree); the runtime tests then run against the copy and
at least one must fail. Prints, per mutation, the tests that caught it, and
exits 1 if any mutation survived (or if the unmutated copy fails).

    python tools/mutate_tracker.py            # all mutations
    python tools/mutate_tracker.py war views  # some of them
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ["tests/test_hazards.py", "tests/test_runtime.py", "tests/test_submit.py"]

# name -> (what it breaks, [(file, exact text, replacement)])
MUTATIONS = {
    # hazards() is the one check: access() works its answers out through it.
    "never": ("never report a hazard", [
        ("genspirv/runtime/hazards.py",
         '        """The hazard kinds ``access`` has against what is pending."""\n',
         '        """The hazard kinds ``access`` has against what is pending."""\n'
         '        return frozenset()\n'),
    ]),
    "war": ("drop the write-after-read check", [
        ("genspirv/runtime/hazards.py",
         'war = 1',
         'war = 0'),
    ]),
    "memo-stale": ("keep what was pending before a barrier answered from memory", [
        ("genspirv/runtime/hazards.py",
         "                    self._read_stages = self._write_stages = 0\n"
         "                    self._unapplied.clear()\n",
         "                    self._read_stages = self._write_stages = 0\n"),
    ]),
    "memo-added": ("lose an access added by add_pending on the remembered path", [
        ("genspirv/runtime/hazards.py",
         "            self._node = known[1]\n            self._unapplied.append(access)\n            return\n",
         "            self._node = known[1]\n            return\n"),
    ]),
    "views": ("treat overlapping views of one buffer as disjoint", [
        ("genspirv/runtime/hazards.py",
         "return tuple((r.memory, r.offset, r.offset + r.size)",
         "return tuple(((r.memory, r.offset, r.size), r.offset, r.offset + r.size)"),
    ]),
    "flush": ("clear the pending sets at each flush or submit", [
        ("genspirv/runtime/submission.py",
         '            self.submit(slot)\n',
         '            self.submit(slot)\n            self.tracker.clear()\n'),
    ]),
    "slots": ("collapse every slot onto one descriptor pool and one staging allocation", [
        ("genspirv/runtime/slots.py",
         "        self.descriptors = DescriptorPools(device)\n"
         "        self.staging = StagingArena(device, mem_props, max_allocation, families)\n",
         "        shared = _SHARED.setdefault(str(device), (DescriptorPools(device),\n"
         "                                    StagingArena(device, mem_props, max_allocation, families)))\n"
         "        self.descriptors, self.staging = shared\n"),
        ("genspirv/runtime/slots.py",
         "STAGING_CHUNK = 4 << 20\n", "STAGING_CHUNK = 4 << 20\n_SHARED = {}\n"),
        # Shared objects must be destroyed once only.
        ("genspirv/runtime/slots.py",
         "        self.descriptors.destroy()\n        self.staging.destroy()\n        vk.vkDestroyFence",
         "        if _SHARED.pop(str(self._device), None) is not None:\n"
         "            self.descriptors.destroy()\n            self.staging.destroy()\n"
         "        vk.vkDestroyFence"),
    ]),
}


def scratch_copy(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(ROOT / "genspirv", dest / "genspirv", ignore=ignore)
    shutil.copytree(ROOT / "tests", dest / "tests", ignore=ignore)
    for extra in ("pyproject.toml", "manifests", "spirv"):
        src = ROOT / extra
        if src.is_dir():
            shutil.copytree(src, dest / extra, ignore=ignore)
        elif src.is_file():
            shutil.copy2(src, dest / extra)


def apply(dest: Path, edits) -> None:
    for rel, old, new in edits:
        path = dest / rel
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"mutation does not apply: {old!r} found {text.count(old)} times in {rel}")
        path.write_text(text.replace(old, new))


def run_tests(dest: Path) -> tuple[int, list[str]]:
    env = dict(os.environ, PYTHONPATH=str(dest), PYTHONDONTWRITEBYTECODE="1",
               XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    cmd = [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider",
           "-o", "addopts=", *TESTS]
    proc = subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True, timeout=900)
    failed = re.findall(r"^FAILED (\S+)", proc.stdout, flags=re.M)
    return proc.returncode, failed


def main(argv: list[str]) -> int:
    names = argv or list(MUTATIONS)
    unknown = [n for n in names if n not in MUTATIONS and n != "baseline"]
    if unknown:
        raise SystemExit(f"unknown mutation(s): {', '.join(unknown)} (known: {', '.join(MUTATIONS)})")
    survived = []
    with tempfile.TemporaryDirectory(prefix="genspirv-mutate-") as tmp:
        base = Path(tmp) / "baseline"
        scratch_copy(base)
        rc, failed = run_tests(base)
        print(f"baseline: {'ok' if rc == 0 else 'FAILS: ' + ', '.join(failed)}", flush=True)
        if rc != 0:
            return 1
        for name in names:
            if name == "baseline":
                continue
            what, edits = MUTATIONS[name]
            dest = Path(tmp) / name
            scratch_copy(dest)
            apply(dest, edits)
            rc, failed = run_tests(dest)
            if rc == 0:
                survived.append(name)
                print(f"{name} ({what}): SURVIVED", flush=True)
                continue
            print(f"{name} ({what}): caught by {len(failed)} test(s)"
                  + ("" if failed else f" (pytest exit {rc})"), flush=True)
            for test_file in TESTS:
                hits = [f.split("::", 1)[1] for f in failed if f.startswith(test_file + "::")]
                if hits:
                    more = f" and {len(hits) - 4} more" if len(hits) > 4 else ""
                    print(f"    {test_file}: {', '.join(hits[:4])}{more}", flush=True)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
