"""What imports what: the pure cores without Vulkan or numpy; a no-op build without what only compiling needs."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
sys.modules["vulkan"] = None          # "import vulkan" now raises ImportError
import genspirv.reflect.spirv, genspirv.reflect, genspirv.manifest, genspirv.runtime.hazards
import genspirv.runtime.trust, genspirv.runtime.sharing, examples.llm.kernel_groups
import genspirv.runtime.limits
import genspirv.runtime
print(json.dumps(sorted(m for m, mod in sys.modules.items() if mod is not None)))
"""


def _loaded(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout))


def test_pure_cores_import_without_vulkan():
    loaded = _loaded(_PROBE)
    assert {"genspirv.reflect.spirv", "genspirv.reflect", "genspirv.manifest",
            "genspirv.runtime.hazards", "genspirv.runtime.trust", "genspirv.runtime.sharing",
            "examples.llm.kernel_groups", "genspirv.runtime.limits"} <= loaded
    assert "vulkan" not in loaded and "genspirv.runtime.device" not in loaded
    assert "genspirv.runtime._vk" not in loaded and "numpy" not in loaded


def test_the_probe_sees_an_eager_import():
    """Negative control: touching a public runtime name loads the device module, and
    with the binding blocked that import fails, so the probe above would notice one."""
    code = _PROBE.replace("print(", "genspirv.runtime.Device\nprint(")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "vulkan" in out.stderr


def test_public_names_still_import():
    loaded = _loaded("import json, sys\nfrom genspirv.runtime import Device, HazardTracker, Buffer\n"
                     "print(json.dumps(sorted(sys.modules)))")
    assert "genspirv.runtime.device" in loaded and "vulkan" in loaded


def test_only_vk_imports_the_binding():
    from pathlib import Path
    import genspirv
    package = Path(genspirv.__file__).parent
    importers = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                       if "import vulkan" in p.read_text() or "from vulkan" in p.read_text())
    assert importers == ["runtime/_vk.py"]


def test_without_the_runtime_extra_the_public_names_say_which_extra_to_install():
    """numpy or vulkan missing (the base install): one ExtraMissingError naming the extra, from the
    public names and from the binding's module; the pure tracker still imports."""
    for blocked, code, missing in (
            ("numpy", "from genspirv.runtime import Device", "numpy"),
            ("vulkan", "import genspirv.runtime._vk", "vulkan"),
            ("numpy", "from genspirv.runtime import HazardTracker; print('tracker')", None)):
        out = subprocess.run([sys.executable, "-c", f"import sys\nsys.modules[{blocked!r}] = None\n{code}"],
                             capture_output=True, text=True, timeout=60)
        if missing is None:                  # control: what needs neither still works
            assert out.returncode == 0 and out.stdout == "tracker\n", out.stderr
            continue
        assert out.returncode == 1, out.stderr
        assert out.stderr.splitlines()[-1] == (
            f"genspirv.errors.ExtraMissingError: genspirv.runtime needs {missing}, which this Python lacks: "
            "pip install 'genspirv[runtime]'"), out.stderr


def test_the_imports_the_docs_show_users_keep_working():
    """What README and GUIDE tell a user to import, wherever the modules behind it live."""
    code = """
from genspirv.errors import GenspirvError, ManifestError
from genspirv.manifest import load_manifest
from genspirv.runtime.hazards import Access, HazardTracker, Range
from genspirv.reflect import reflect, shared_memory_at
from genspirv.toolchain import find_tool
import genspirv.runtime
assert callable(load_manifest) and callable(find_tool) and issubclass(ManifestError, GenspirvError)
assert "Device" in genspirv.runtime.__all__
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


# What only compiling or running worker processes needs: a no-op build loads none.
_ONLY_TO_COMPILE = {"genspirv.toolchain.glslang_library", "genspirv.toolchain.validator_library",
                    "genspirv.toolchain.workers", "multiprocessing", "concurrent.futures", "ctypes", "benchmarks"}
_BUILD = """
import json, sys
import genspirv.buildsys.builder as builder
reflected = []
real = builder.reflect_blob
builder.reflect_blob = lambda *a: reflected.append(a[0]) or real(*a)
from genspirv.cli import main
code = main(["build", "--root", sys.argv[1], "--quiet"])
print(json.dumps([code, sorted(m for m, mod in sys.modules.items() if mod is not None), reflected]))
"""


def _build_loads(root) -> tuple[int, set[str], list[str]]:
    out = subprocess.run([sys.executable, "-c", _BUILD, str(root)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    code, loaded, reflected = json.loads(out.stdout.splitlines()[-1])
    return code, set(loaded), reflected


def test_a_fresh_clones_no_op_build_loads_nothing_only_a_compile_needs(built_tiny, tmp_path):
    """A fresh clone's no-op build (no .genspirv/: the plan and the committed manifest decide)
    imports no library binding, worker or thread pool and reflects no blob (the committed
    manifest's reflection renders the manifest it compares). Control: the same build after a
    source edit compiles, reflects what it compiled, and loads what compiling needs."""
    import shutil
    clone = tmp_path / "clone"
    shutil.copytree(built_tiny, clone, ignore=shutil.ignore_patterns(".genspirv"))
    code, loaded, reflected = _build_loads(clone)
    assert code == 0 and loaded & _ONLY_TO_COMPILE == set() and reflected == []
    source = clone / "glsl/neg.comp"
    source.write_text(source.read_text() + "\n// edited\n")
    code, loaded, reflected = _build_loads(clone)
    assert code == 0
    assert {"genspirv.toolchain.glslang_library", "concurrent.futures"} <= loaded


def test_the_plan_imports_only_what_planning_needs():
    """Keys and versions live below the plan: importing it loads the keys and the variants'
    vocabulary, not the config, the toolchain, the state or the stat log. Control: the loop
    that runs it loads those."""
    code = "import json, sys\nimport genspirv.buildsys.{}\n" \
           "print(json.dumps(sorted(m for m in sys.modules if m.startswith('genspirv'))))"
    plan = _loaded(code.format("plan"))
    assert plan == {"genspirv", "genspirv.errors", "genspirv.project", "genspirv.project.lint_rules",
                    "genspirv.project.variant_names", "genspirv.project.variants", "genspirv.buildsys",
                    "genspirv.buildsys.keys", "genspirv.buildsys.plan"}, plan
    loop = _loaded(code.format("builder"))
    assert {"genspirv.project.config", "genspirv.toolchain.compiler", "genspirv.buildsys.state",
            "genspirv.buildsys.statlog"} <= loop
