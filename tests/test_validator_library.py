"""spirv-val in its library (genspirv/toolchain/validator_library.py) against spirv-val's process.

The library must say what the process says, verdict and text, on valid blobs and
on each kind of invalid one; only a worker process (whose crash costs one variant)
uses it (tests/test_glslang_library.py: a worker's compile starts no process).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from genspirv.errors import ValidationError
from genspirv.toolchain import spirv_tools, validator_library
from genspirv.toolchain.tools import Tool, find_tool

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def allowed(monkeypatch):
    monkeypatch.setattr(validator_library, "_allowed", True)


def _process_verdict(tool: Tool, path: Path, env: str) -> tuple[bool, str]:
    proc = tool.run(["--target-env", env, str(path)], what="test")
    return proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace").strip()


def _blobs(tmp_path: Path) -> dict[str, bytes]:
    good = sorted((REPO / "spirv").glob("*.spv"))[:6]
    blobs = {p.name: p.read_bytes() for p in good}
    first = bytearray(blobs[good[0].name])
    first[5 * 4 + 4:5 * 4 + 8] = (0xFFFF).to_bytes(4, "little")      # an id past the bound
    blobs["id_past_bound"] = bytes(first)
    blobs["not_spirv"] = b"hello world!" * 4
    blobs["header_only"] = blobs[good[0].name][:20]
    return blobs


def test_the_library_says_what_the_process_says(tmp_path, allowed):
    tool = find_tool("spirv-val")
    library = validator_library.for_tool(tool)
    assert library is not None, "the SPIRV-Tools wheel ships its library beside spirv-val"
    refused = 0
    for name, blob in _blobs(tmp_path).items():
        path = tmp_path / f"{name}.spv"
        path.write_bytes(blob)
        for env in ("vulkan1.0", "vulkan1.2", "vulkan1.3"):        # a SPIR-V 1.5 blob is refused under 1.0
            want = _process_verdict(tool, path, env)
            assert library.check(blob, env) == want, (name, env)
            refused += not want[0]
    assert refused >= 3 * 3, "the corpus must hold blobs spirv-val refuses"


def test_what_the_library_does_not_read_goes_to_the_process(allowed):
    library = validator_library.for_tool(find_tool("spirv-val"))
    blob = (REPO / "spirv/add_f32.spv").read_bytes()
    assert library.check(blob, "vulkan9.9") is None            # spirv-val names the unknown environment
    assert library.check(blob[:-1], "vulkan1.2") is None        # not whole words: spirv-val says so
    assert library.check(b"", "vulkan1.2") is None


def test_only_an_allowed_process_and_the_wheels_own_tool_use_the_library(monkeypatch):
    tool = find_tool("spirv-val")
    monkeypatch.setattr(validator_library, "_allowed", False)
    assert validator_library.for_tool(tool) is None            # the build's own process: a spirv-val process
    monkeypatch.setattr(validator_library, "_allowed", True)
    assert validator_library.for_tool(tool) is not None
    elsewhere = dataclasses.replace(tool, lib_dir=None, origin="GENSPIRV_SPIRV_VAL")
    assert validator_library.for_tool(elsewhere) is None        # another spirv-val: its own process


def test_a_refusal_reads_the_same_from_the_library_and_the_process(tmp_path, monkeypatch):
    tool = find_tool("spirv-val")
    blob = _blobs(tmp_path)["id_past_bound"]
    path = tmp_path / "bad.spv"
    path.write_bytes(blob)
    said = {}
    for allowed in (False, True):
        monkeypatch.setattr(validator_library, "_allowed", allowed)
        commands = []
        with pytest.raises(ValidationError) as info:
            spirv_tools.validate(tool, lambda: path, blob, "vulkan1.2", "bad_variant", commands.append)
        said[allowed] = (str(info.value), commands)
    assert said[True] == said[False]
    assert "bad_variant: spirv-val --target-env vulkan1.2 refused the blob glslang made:\n  error: " in said[True][0]
    assert "line " not in said[True][0]
