"""Rebuild the test-only kernels: glsl/*.comp -> spirv/*.spv + manifests/shaders.json.

Used until `genspirv build --root tests/shaders_rt` can do it; the reflection
here comes from `spirv-cross --reflect` (the project's test oracle), so it
covers only what these few kernels use: storage and uniform buffers, push
constants, scalar spec constants. Run: python tests/shaders_rt/make_manifest.py
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from genspirv.manifest import Manifest, ManifestEntry, Toolchain, dumps  # noqa: E402
from genspirv.reflect import Binding, ShaderInfo, SpecConstant  # noqa: E402

SPEC_TYPES = {"uint": "uint32", "int": "int32", "bool": "bool", "float": "float32",
              "uint64_t": "uint64", "int64_t": "int64", "double": "float64"}


def _push_size(refl: dict) -> int:
    pcs = refl.get("push_constants", [])
    if not pcs:
        return 0
    members = refl["types"][pcs[0]["type"]]["members"]
    last = max(members, key=lambda m: m["offset"])
    return last["offset"] + 4   # every member here is a 32-bit scalar


def _default_from_disassembly(spv: Path, name: str):
    # spirv-cross leaves out 64-bit defaults; the disassembly has the literal.
    text = subprocess.run(["spirv-dis", str(spv)], check=True, capture_output=True,
                          timeout=60, text=True).stdout
    for line in text.splitlines():
        parts = line.split()
        if parts[:3] == [f"%{name}", "=", "OpSpecConstant"]:
            return int(parts[4])
    raise SystemExit(f"{spv}: no default for spec constant {name}")


def _info(refl: dict, spv: Path) -> ShaderInfo:
    bindings = []
    for kind, key in (("storage_buffer", "ssbos"), ("uniform_buffer", "ubos")):
        for b in refl.get(key, []):
            if kind == "uniform_buffer":
                access = "read"
            elif b.get("readonly"):
                access = "read"
            elif b.get("writeonly"):
                access = "write"
            else:
                access = "read_write"
            bindings.append(Binding(set=b["set"], binding=b["binding"], name=b["name"], type=kind,
                                    count=1, access=access, accessed=True,
                                    written=access != "read"))
    bindings.sort(key=lambda b: (b.set, b.binding))
    specs = tuple(SpecConstant(id=s["id"], name=s["name"], type=SPEC_TYPES[s["type"]],
                               default=s["default_value"] if "default_value" in s
                               else _default_from_disassembly(spv, s["name"]))
                  for s in sorted(refl.get("specialization_constants", []), key=lambda s: s["id"]))
    ep = refl["entryPoints"][0]
    return ShaderInfo(entry_point=ep["name"], local_size=tuple(ep["workgroup_size"]),
                      local_size_spec_ids=(None, None, None), bindings=tuple(bindings),
                      spec_constants=specs, push_constant_size=_push_size(refl))


def main() -> None:
    (HERE / "spirv").mkdir(exist_ok=True)
    (HERE / "manifests").mkdir(exist_ok=True)
    entries = []
    for src in sorted((HERE / "glsl").glob("*.comp")):
        name = src.stem
        out = HERE / "spirv" / f"{name}.spv"
        subprocess.run(["glslangValidator", "-V", "--target-env", "vulkan1.2", "-o", str(out), str(src)],
                       check=True, capture_output=True, timeout=60)
        blob = out.read_bytes()
        refl = json.loads(subprocess.run(["spirv-cross", str(out), "--reflect"], check=True,
                                         capture_output=True, timeout=60, text=True).stdout)
        entries.append(ManifestEntry(name=name, source=f"glsl/{src.name}", defines=(),
                                     spirv=f"spirv/{name}.spv", sha256=hashlib.sha256(blob).hexdigest(),
                                     size=len(blob), info=_info(refl, out)))
    data = dumps(Manifest(toolchain=Toolchain(glslang="13.1.1", target_env="vulkan1.2"),
                          shaders=tuple(entries)))
    target = HERE / "manifests" / "shaders.json"
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, target)
    print(f"wrote {len(entries)} kernels to {target}")


if __name__ == "__main__":
    main()
