"""Dead-code check: vulture over genspirv/, benchmarks/, examples/ and tools/, with tests/ as users.

A function, class, attribute or variable nothing uses is reported here (with
tools/vulture_allowlist.py naming the few whose use vulture cannot see: names
looked up from tables, record fields, public API, Vulkan structure fields).
Reports about tests/ themselves are not this check's business (fixtures and
``pytestmark`` look unused to vulture), so only genspirv/, benchmarks/, examples/ and tools/ count.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
COMMAND = [sys.executable, "-m", "vulture", "genspirv", "benchmarks", "examples", "tools", "tests",
           "--min-confidence", "60", "--ignore-names", "OP_*,STORAGE_*,DECORATION_*"]


def _report(cwd: Path) -> list[str]:
    proc = subprocess.run(COMMAND, cwd=cwd, capture_output=True, text=True, timeout=120)
    if proc.returncode not in (0, 3):          # 3: vulture found dead code
        pytest.fail(f"vulture failed (exit {proc.returncode}): {proc.stderr[-1000:]}")
    return [line for line in proc.stdout.splitlines() if line.startswith(("genspirv/", "benchmarks/", "examples/", "tools/"))]


@pytest.mark.slow
def test_no_dead_code_in_the_package_or_tools():
    dead = _report(REPO)
    assert not dead, "dead code (remove it, or name it in tools/vulture_allowlist.py with why):\n" + \
        "\n".join(dead)


@pytest.mark.slow
def test_the_check_finds_planted_dead_code(tmp_path):
    """Negative control: an unused function in a copy of the package is reported."""
    import shutil

    for folder in ("genspirv", "benchmarks", "examples", "tools", "tests"):
        shutil.copytree(REPO / folder, tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.spv", "*.json", "*.c", "*.h*"))
    (tmp_path / "genspirv" / "planted.py").write_text("def never_called():\n    return 1\n")
    assert any("never_called" in line for line in _report(tmp_path))
