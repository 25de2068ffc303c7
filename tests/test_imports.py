"""What imports what: the pure cores without Vulkan or numpy; a no-op build without what only compiling needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


# Each module of the runtime imported in turn with numpy, vulkan or both hidden (None in sys.modules:
# `import numpy` fails and find_spec says it is not there, as on a base install). Per module: "ok", or
# the last line of the error and the files of the traceback's frames inside genspirv.
_EACH_RUNTIME_MODULE = """
import json, pkgutil, sys, traceback
for hidden in sys.argv[1].split(","):
    sys.modules[hidden] = None
import genspirv.runtime
outcome = {}
for module in sorted(m.name for m in pkgutil.iter_modules(genspirv.runtime.__path__)):
    try:
        exec(compile(f"import genspirv.runtime.{module}", "<caller>", "exec"), {})
    except BaseException as exc:
        package = genspirv.runtime.__path__[0]
        frames = [f.filename for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(package)]
        outcome[module] = [traceback.format_exception_only(exc)[-1].strip(), frames]
    else:
        outcome[module] = "ok"
print(json.dumps(outcome))
"""


def _each_runtime_module(hidden: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _EACH_RUNTIME_MODULE, hidden], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("hidden, named", [
    ("numpy,vulkan", "numpy and vulkan"),                  # the base install
    pytest.param("numpy", "numpy", marks=pytest.mark.slow),
    pytest.param("vulkan", "vulkan", marks=pytest.mark.slow),
])
def test_every_runtime_module_without_the_extra_is_one_line_naming_it(hidden, named):
    """Without numpy, vulkan or both, importing any module of the runtime that needs them is the one
    ExtraMissingError line, raised by that module's own first statement (one frame inside genspirv), not
    `No module named 'numpy'` from a module it imports; the pure ones (extra.PURE) import as before."""
    from genspirv.runtime.extra import PURE
    outcome = _each_runtime_module(hidden)
    assert {m for m, o in outcome.items() if o == "ok"} == PURE, (hidden, outcome)
    refused = {m: o for m, o in outcome.items() if o != "ok"}
    assert len(refused) >= 10, refused
    for module, (last, frames) in refused.items():
        assert last == (f"genspirv.errors.ExtraMissingError: genspirv.runtime needs {named}, which this "
                        "Python lacks: pip install 'genspirv[runtime]'"), (hidden, module, last)
        assert [Path(f).name for f in frames] == [f"{module}.py"], (hidden, module, frames)


def test_the_import_the_issue_names_prints_a_short_traceback():
    """`import genspirv.runtime.device` without numpy, as a user sees it: the caller's frame, the
    module's, and the line naming the extra. Control: a module that imports a missing one plainly
    gives Python's bare line, which the probe above would catch."""
    out = subprocess.run([sys.executable, "-c", "import sys\nsys.modules['numpy'] = None\n"
                          "import genspirv.runtime.device"], capture_output=True, text=True, timeout=60)
    lines = out.stderr.splitlines()
    assert out.returncode == 1 and lines[0] == "Traceback (most recent call last):", out.stderr
    assert len([line for line in lines if line.startswith("  File ")]) == 2, out.stderr
    assert lines[-1].endswith("genspirv.runtime needs numpy, which this Python lacks: pip install 'genspirv[runtime]'")
    bare = subprocess.run([sys.executable, "-c", "import sys\nsys.modules['numpy'] = None\n"
                           "import genspirv.runtime.hazards, numpy"], capture_output=True, text=True, timeout=60)
    assert bare.stderr.splitlines()[-1].startswith("ModuleNotFoundError: import of numpy halted")


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
import genspirv.buildsys.variant_compile as variant_compile
reflected = []
real = variant_compile.reflect_blob
variant_compile.reflect_blob = lambda *a: reflected.append(a[0]) or real(*a)
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
