"""The runtime's shape: layers, no import cycles, small modules, one recorder.

Read from the source with ``ast`` (nothing is imported): every import inside
genspirv/runtime/ (``if TYPE_CHECKING`` ones included) goes to a module of a
lower layer (docs/ARCHITECTURE.md lists them), so there is no cycle and no
import back up a layer; every module stays under 500 lines; and only
recorder.py calls the Vulkan entry points that record work into a command
buffer (_vk.py defines them). Each check carries a negative control: the
same check run over a made-up import or call that breaks it reports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import genspirv

RUNTIME = Path(genspirv.__file__).parent / "runtime"

# Lowest first; a module imports only from layers below its own.
LAYERS = [
    {"extra", "hazards", "sharing", "profile", "args", "push", "limits"},   # pure: no Vulkan
    {"trust"},                                        # pure: proofs over limits and reflection
    {"_vk"},                                          # the binding
    {"memory", "context", "kernel"},                  # Vulkan objects
    {"dispatch_plan", "recorder"},                    # checked arguments; recording
    {"slots"},                                        # what a batch owns
    {"submission"},                                   # the ring and every queue submit
    {"transfers", "replay", "observe"},               # work built on the ring
    {"device"},                                       # the public face
    {"__init__"},                                     # lazy names (importlib)
]
LAYER = {name: i for i, layer in enumerate(LAYERS) for name in layer}

# The _vk names that record work into a command buffer.
RECORDING_CALLS = {"cmd_dispatch", "cmd_bind_pipeline", "cmd_bind_descriptor_sets", "cmd_push_constants",
                   "cmd_pipeline_barrier", "cmd_copy", "cmd_timestamp", "vkCmdPipelineBarrier",
                   "vkCmdCopyBuffer", "vkCmdDispatch", "vkCmdWriteTimestamp", "vkCmdResetQueryPool",
                   "vkCmdPushConstants", "vkCmdBindPipeline", "vkCmdBindDescriptorSets"}


def runtime_imports(source: str) -> set[str]:
    """The runtime modules ``source`` imports (``from . import x``, ``from .x import y``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("genspirv.runtime."):
            found.add(node.module.split(".")[2])
    return found


def layer_violations(sources: dict[str, str]) -> list[str]:
    out = []
    for name, source in sources.items():
        for target in sorted(runtime_imports(source)):
            if LAYER.get(target, 99) >= LAYER[name]:
                out.append(f"{name} (layer {LAYER[name]}) imports {target} (layer {LAYER.get(target)})")
    return out


def recording_calls(source: str) -> set[str]:
    """The recording entry points ``source`` calls."""
    calls = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in RECORDING_CALLS:
                calls.add(name)
    return calls


def sources() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(RUNTIME.glob("*.py"))}


def test_every_runtime_module_has_a_layer():
    assert set(sources()) == set(LAYER)


def test_imports_go_down_the_layers_only():
    assert layer_violations(sources()) == []
    # Negative control: observe.py importing the device (as it once did under
    # TYPE_CHECKING), and the ring importing the transfers, are both reported.
    broken = dict(sources())
    broken["observe"] += "\nif TYPE_CHECKING:\n    from .device import Device\n"
    broken["submission"] += "\nfrom . import transfers\n"
    assert layer_violations(broken) == ["observe (layer 7) imports device (layer 8)",
                                        "submission (layer 6) imports transfers (layer 7)"]


def test_every_runtime_module_is_under_500_lines():
    lengths = {name: text.count("\n") for name, text in sources().items()}
    assert max(lengths.values()) < 500, {n: k for n, k in lengths.items() if k >= 500}


def test_only_the_recorder_records_work():
    calls = {name: recording_calls(text) for name, text in sources().items()}
    assert {name for name, c in calls.items() if c} <= {"recorder", "_vk"}
    # _vk's: the body of cmd_copy, which it defines (the rest it binds to names once).
    assert calls["_vk"] <= {"vkCmdCopyBuffer"}
    # Negative control: the recorder's calls are seen, and so would be one anywhere else.
    assert {"cmd_dispatch", "cmd_pipeline_barrier", "cmd_copy", "cmd_push_constants"} <= calls["recorder"]
    assert recording_calls("from ._vk import cmd_copy\ncmd_copy(cb, a, b, 0, 0, 4)\n") == {"cmd_copy"}
