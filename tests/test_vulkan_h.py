"""genspirv/vulkan.h on a real device (lavapipe): specialisation as the Python runtime does it,
binding layouts from the reflected types, and every refusal with its code and message.

tests/c/checks is a small project (a kernel writing back its spec constants, a
uniform buffer in set 1, a storage image, a buffer array, 64 KiB of shared
memory, a 512-byte push block, 33 storage buffers, Int64 with subgroup
arithmetic) built in a temp folder; tests/c/vk_checks.c runs against its table
through the example's device.c, compiled as C99 and as C++17 with warnings as
errors, under the validation layer where it is installed. Each refusal must
name the kernel, the binding and the numbers, and record nothing (no command,
no tracker change, no cache entry). The spec values the kernel wrote are
compared with what ``genspirv.runtime`` gets for the same overrides.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHECKS = REPO / "tests" / "c" / "checks"
INCLUDE = REPO / "genspirv" / "cmake" / "include"
DEVICE_C = REPO / "examples" / "c-backend" / "src"
WARNINGS = ["-Wall", "-Wextra", "-Werror", "-pedantic"]

pytestmark = pytest.mark.skipif(
    shutil.which("cc") is None or shutil.which("g++") is None or not Path("/usr/include/vulkan/vulkan.h").exists(),
    reason="needs cc, g++ and the Vulkan headers (apt-get install gcc g++ libvulkan-dev)")


def env() -> dict:
    return dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))


def compile_program(project: Path, out: Path, cxx: bool) -> None:
    sources = [REPO / "tests" / "c" / "vk_checks.c", DEVICE_C / "device.c", project / "gen" / "checks.c"]
    flags = [*WARNINGS, f"-I{project / 'gen'}", f"-I{INCLUDE}", f"-I{DEVICE_C}"]
    if cxx:
        cmd = ["g++", "-std=c++17", *flags, *[a for s in sources for a in ("-x", "c++", str(s))]]
    else:
        cmd = ["cc", "-std=c99", *flags, *map(str, sources)]
    proc = subprocess.run([*cmd, "-lvulkan", "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def validation_available() -> bool:
    return Path("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json").exists()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict:
    """The checks program built (~5 s: its tests are slow) and run, C and C++."""
    from genspirv.cli import main
    work = tmp_path_factory.mktemp("vk-checks")
    project = work / "checks"
    shutil.copytree(CHECKS, project)
    assert main(["--root", str(project), "build", "-q"]) == 0
    results = {"project": project}
    for lang in ("c", "cxx"):
        program = work / f"checks_{lang}"
        compile_program(project, program, cxx=lang == "cxx")
        args = [str(program)] + (["--validate"] if validation_available() else [])
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env())
        assert proc.returncode == 0, proc.stdout + proc.stderr
        results[lang] = proc.stdout
    return results


def checks(output: str) -> dict[str, tuple[int, bool, str]]:
    out = {}
    for m in re.finditer(r"^check (\w+): (\d+) ([01]) ?(.*)$", output, re.M):
        out[m[1]] = (int(m[2]), m[3] == "1", m[4])
    return out


def runs(output: str) -> dict[str, list[int]]:
    return {m[1]: [int(w) for w in m[2].split()] for m in re.finditer(r"^run (\w+): ([\d ]+)$", output, re.M)}


# code, and what the message must say (kernel, binding, both numbers).
REFUSALS = {
    "before_begin": (12, ["before genspirv_vk_begin"]),
    "binding_count": (1, ["kernel spec: 2 buffer(s) bound, the kernel has 1 binding(s) (Out)"]),
    "push_size": (2, ["kernel spec: 3 byte(s) of push data, the kernel's push constants are 4 bytes"]),
    "push_null": (2, ["kernel spec: 0 byte(s) of push data"]),
    "min_size": (3, ["kernel spec, binding Out: view of 16 bytes", "at least 32 bytes (min_size)"]),
    "alignment": (4, ["kernel spec, binding Out: view offset 8", "16-byte storage_buffer offset alignment"]),
    "uniform_alignment": (4, ["kernel uniform, binding U: view offset 8", "uniform_buffer offset alignment"]),
    "whole_size": (5, ["kernel spec, binding Out", "not VK_WHOLE_SIZE"]),
    "storage_range": (5, ["kernel spec, binding Out: view of 134217744 bytes", "at most 134217728"]),
    "groups_zero": (6, ["kernel spec: 0 groups along y"]),
    "groups_past": (6, ["kernel spec: 65536 groups along x, the device allows at most 65535"]),
    "spec_unknown": (7, ["kernel spec: unknown spec constant NOPE (known: BLOCK, OFFSET, SCALE, FLAG, WIDE)"]),
    "spec_bool": (7, ["spec constant FLAG (bool) needs a bool"]),
    "spec_range": (7, ["spec constant OFFSET (int32): 2147483648 is outside its range"]),
    "spec_negative": (7, ["spec constant WIDE (uint32): -1 is outside its range"]),
    "spec_float": (7, ["spec constant WIDE (uint32) needs an integer"]),
    "workgroup": (8, ["kernel spec: workgroup size x = 4096", "1 to 1024", "maxComputeWorkGroupSize"]),
    "shared_memory": (8, ["kernel shared_big declares 65536 bytes of shared memory", "at most 32768"]),
    "push_limit": (14, ["kernel push_big: 512 bytes of push constants, the device allows at most 128 "
                        "(maxPushConstantsSize)"]),
    "spec_push_limit": (14, ["kernel spec_push: 132 bytes of push constants at its spec values, the device allows "
                             "at most 128 (maxPushConstantsSize)"]),
    "storage_limit": (14, ["kernel wide: 33 storage buffers in the compute stage, the device allows at most 32 "
                           "(maxPerStageDescriptorStorageBuffers)"]),
    "feature_int64": (15, ["kernel wide_int needs device feature shaderInt64 (for OpCapability Int64), which "
                           "this device does not enable"]),
    "feature_subgroup": (15, ["kernel wide_int needs subgroup operation VK_SUBGROUP_FEATURE_ARITHMETIC_BIT (for "
                              "OpCapability GroupNonUniformArithmetic), which this device lacks in compute"]),
    "image": (9, ["kernel image: binding img is a storage_image"]),
    "array": (9, ["kernel array: binding bufs is an array of 2"]),
    "update_size": (11, ["update of 6 bytes"]),
    "copy_overlap": (11, ["source [0, 32) overlaps destination [16, 48)"]),
    "fill_size": (11, ["fill of 8 bytes at offset 2"]),
    "spec_push_size": (2, ["kernel spec_push: 8 byte(s) of push data, the kernel's push constants are 32 bytes"]),
    "spec_min_size": (3, ["kernel spec_push, binding inp: view of 8 bytes", "at least 32 bytes (min_size)"]),
    "spec_length": (7, ["kernel spec_push: with its spec values an array length", "is 0"]),
    "descriptors_full": (10, ["kernel spec: the descriptor cache holds 3", "genspirv_vk_descriptors_reset"]),
}
@pytest.mark.slow
def test_every_refusal_has_its_code_a_message_and_records_nothing(outputs):
    found = checks(outputs["c"])
    assert set(REFUSALS) <= set(found), sorted(set(REFUSALS) - set(found))
    for name, (code, parts) in REFUSALS.items():
        got_code, nothing_recorded, message = found[name]
        assert got_code == code, (name, found[name])
        assert nothing_recorded, f"{name}: a refused call changed the context"
        assert message.startswith("genspirv: "), (name, message)
        for part in parts:
            assert part in message, (name, message)
    # The positive control of the cache check: after a reset the same dispatch goes through.
    assert found["after_reset"][0] == 0 and not found["after_reset"][1]
    # ... and of the capability checks: with shaderInt64 and subgroup arithmetic given, accepted.
    assert found["feature_enabled"][0] == 0
@pytest.mark.slow
def test_c_and_cxx_builds_behave_the_same(outputs):
    assert outputs["c"] == outputs["cxx"]


@pytest.mark.slow
@pytest.mark.skipif(not validation_available(), reason="needs the Khronos validation layer")
def test_the_header_uses_vulkan_as_the_validation_layer_allows(outputs):
    assert "validation: 0 sync hazards, 0 other errors" in outputs["c"]
@pytest.mark.slow
def test_specialisation_is_the_python_runtimes(outputs):
    """Defaults (the shared id 0 runs with BLOCK's 64, not the workgroup constant's 1),
    overrides by name, an unsigned value for an int and an integer for a float: the words
    the kernel wrote equal what genspirv.runtime's pipeline writes for the same spec."""
    import numpy as np

    from genspirv.runtime import Device
    got = runs(outputs["c"])
    cases = {"defaults": {}, "named": {"BLOCK": 32, "OFFSET": 7, "SCALE": 2.0, "FLAG": True, "WIDE": 9},
             "mixed": {"OFFSET": 5, "SCALE": 3}}
    with Device(manifest=outputs["project"] / "manifests" / "checks.json") as dev:
        for i, (case, spec) in enumerate(cases.items()):
            out = dev.buffer(32)
            dev.dispatch(dev.kernel("spec", spec=spec), [out], groups=3, push=np.array([100 + i], np.uint32))
            words = dev.download(out, dtype="uint32").tolist()
            local = words[0]
            assert got[case] == [local, 1, 1, *words], (case, got[case], words)
    assert got["defaults"][:4] == [64, 1, 1, 64]              # the named default wins the shared id
    assert got["named"][3:9] == [32, 32, 7, 0x40000000, 1, 9]
@pytest.mark.slow
def test_a_spec_sized_push_array_and_block_are_sized_at_the_kernels_values(outputs):
    # N = 8: a 32-byte push range, all 8 pushed words read, and all 8 of the 32-byte block.
    assert runs(outputs["c"])["spec_push"] == [32, *range(10, 18), *range(20, 28)]


@pytest.mark.slow
def test_uniform_buffer_in_set_one_with_set_zero_empty(outputs):
    assert runs(outputs["c"])["uniform"] == [2, 1000, 1001, 1002, 1003]


@pytest.mark.parametrize("include,says", [
    ('#include "genspirv/vulkan.h"', "include the generated table's header"),
    ('#include "shaders.h"\n#include "genspirv/vulkan/spec.h"', "include genspirv/vulkan.h, not its parts"),
])
def test_wrong_includes_say_what_to_include(tmp_path, include, says):
    src = tmp_path / "alone.c"
    src.write_text(f"{include}\nint main(void) {{ return 0; }}\n")
    proc = subprocess.run(["cc", "-std=c99", f"-I{INCLUDE}", f"-I{REPO / 'manifests'}", "-c", str(src),
                           "-o", str(tmp_path / "a.o")], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert says in proc.stderr


def test_header_is_c99_and_cxx17_clean_over_the_repos_own_table(tmp_path):
    """Every function instantiated (taken by address), over the table this repository ships."""
    src = tmp_path / "all.c"
    text = "".join(p.read_text() for p in (INCLUDE / "genspirv" / "vulkan").glob("*.h"))
    names = re.findall(r"^static inline [^(]*?\b(genspirv_vk_\w+)\(", text, re.M)
    assert len(names) > 15
    body = "\n".join(f"    (void)&{n};" for n in sorted(set(names)))
    src.write_text(f'#include "shaders.h"\n#include "genspirv/vulkan.h"\nint main(void) {{\n{body}\n    return 0;\n}}\n')
    for cmd in (["cc", "-std=c99"], ["g++", "-std=c++17", "-x", "c++"]):
        proc = subprocess.run([*cmd, *WARNINGS, "-O2", f"-I{REPO / 'manifests'}", f"-I{INCLUDE}", "-c", str(src),
                               "-o", str(tmp_path / "all.o")], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr


def test_the_header_reads_every_feature_the_python_runtime_enables():
    """features.h maps the features chain to the table's capability bits; every capability
    whose feature genspirv.runtime enables (context.py's dev.features) and every subgroup
    operation must be read there, or the C side would refuse what the Python side runs."""
    from genspirv.emit.ctable import c_enum
    from genspirv.runtime.limits import CAPABILITY_FEATURES, SUBGROUP_BITS
    header = (INCLUDE / "genspirv" / "vulkan" / "features.h").read_text()
    context = (REPO / "genspirv" / "runtime" / "context.py").read_text()
    enabled = set(re.findall(r'^\s+"(\w+)": bool\(', context, re.M))
    assert {"shader_int64", "storage_buffer_16bit_access", "shader_integer_dot_product"} <= enabled
    wanted = [cap for cap, (key, _) in CAPABILITY_FEATURES.items() if key in enabled] + list(SUBGROUP_BITS)
    missing = [cap for cap in wanted if c_enum("GENSPIRV_CAP", cap) not in header]
    assert missing == []
    # Negative control: a capability the Python runtime never enables is not read.
    assert c_enum("GENSPIRV_CAP", "AtomicFloat32AddEXT") not in header
