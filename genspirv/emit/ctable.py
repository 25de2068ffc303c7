"""The C table: a ``Manifest`` (and fresh blobs) in, ``<output>.h`` and ``<output>.c`` out.

``render_c(source, output) -> {relative posix path: bytes}`` renders
the jinja2 templates under ``genspirv/templates/c/``: files usable from C99
and C++11 holding each blob's words (8 per line, ``0x%08x``) and a
``genspirv_module`` table with the reflection a host needs to build and check
a pipeline (entry point, spec constants with id, name, type and default, each
binding's set/binding/type/count/access/min_size, writable/readable masks,
push-constant size, local size and its spec ids, shared memory, and the
sizes a spec-sized array changes as ``genspirv_spec_step`` arrays in reverse
Polish order, which ``genspirv/vulkan.h`` evaluates at a kernel's values, and
the capabilities and extensions a device must enable, as bits), plus
``genspirv_module_count``, ``genspirv_find_module(name)`` and the variants the
build reported unavailable. ``genspirv/vulkan.h`` builds pipelines from it.

Every path or name that lands in a C comment or string goes through
``ctext.c_escape``, so no source path or name can end a comment or a literal
early. The words come from ``source`` (``render_input.RenderInput``: the
manifest and its blobs, each verified once against its entry's size and
sha256, shared by every output of a build). The output depends only on the
manifest, the blobs and ``output``: no timestamps, no absolute paths, modules
sorted by name.
"""

from __future__ import annotations

import functools
import json
import re
import struct
from pathlib import PurePosixPath
from typing import Mapping, Optional

import jinja2

from ..errors import CodegenError
from ..manifest import ManifestEntry
from ..project.config import BlobMode
from ..reflect import DESCRIPTOR_TYPES, SPEC_TYPES
from ..reflect import spec_sizes
from ..runtime.limits import CAPABILITY_FEATURES, EXTENSION_DEVICE_EXTENSIONS, SUBGROUP_BITS
from .cblobs import blob_path, prelude, word_array, word_order_check
from .ctext import BANNER, Words, c_escape, c_string, word_lines
from .render_input import RenderInput, sorted_entries

MASK_BITS = 64  # the C table's masks are uint64_t

# The capabilities genspirv/vulkan.h checks against the features a device enabled (the bits
# of genspirv_module.capabilities), with the feature or subgroup operation each needs; and
# the SPIR-V extensions that need a device extension (the bits of .extensions).
C_CAPABILITIES = tuple((cap, vk_name) for cap, (_, vk_name) in CAPABILITY_FEATURES.items()) + tuple(
    (cap, f"VK_SUBGROUP_FEATURE_{flag}_BIT") for cap, (_, flag) in SUBGROUP_BITS.items())
C_EXTENSIONS = tuple(EXTENSION_DEVICE_EXTENSIONS.items())


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("genspirv", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def include_guard(output: str) -> str:
    return "GENSPIRV_" + re.sub(r"[^A-Za-z0-9]", "_", output).upper() + "_H"


# Byte size of a specialisation constant's value in VkSpecializationInfo data
# (a bool is a VkBool32) and how its default packs into those bytes.
SPEC_LAYOUT = {"bool": (4, "<I"), "int8": (1, "<b"), "uint8": (1, "<B"), "int16": (2, "<h"),
               "uint16": (2, "<H"), "int32": (4, "<i"), "uint32": (4, "<I"), "int64": (8, "<q"),
               "uint64": (8, "<Q"), "float16": (2, "<e"), "float32": (4, "<f"), "float64": (8, "<d")}


def c_enum(prefix: str, word: str) -> str:
    """The C enumerator for a manifest word: ("GENSPIRV_ACCESS", "read_write") -> GENSPIRV_ACCESS_READ_WRITE."""
    return f"{prefix}_{re.sub(r'[^A-Za-z0-9]', '_', word).upper()}"


def spec_default_bits(spec_type: str, default, where: str) -> int:
    """The bit pattern of a spec constant's default, as the unsigned integer of its data bytes."""
    if spec_type not in SPEC_LAYOUT:
        raise CodegenError(f"{where}: spec constant type {spec_type!r} has no C form "
                           f"(known: {', '.join(SPEC_LAYOUT)})")
    size, fmt = SPEC_LAYOUT[spec_type]
    value = int(default) if spec_type == "bool" else default
    try:
        data = struct.pack(fmt, value)
    except (struct.error, OverflowError, TypeError) as exc:
        raise CodegenError(f"{where}: default {default!r} does not fit {spec_type}: {exc}") from None
    return int.from_bytes(data, "little")


_STEP_KINDS = {"spec": "GENSPIRV_STEP_SPEC", "len": "GENSPIRV_STEP_LEN", "add": "GENSPIRV_STEP_ADD",
               "mul": "GENSPIRV_STEP_MUL", "max": "GENSPIRV_STEP_MAX"}


def spec_steps(expr) -> list[str]:
    """A ``SpecExpr`` (genspirv/reflect/spec_sizes.py) as the initialisers of its
    ``genspirv_spec_step``s, in reverse Polish order (operands before their operation)."""
    def step(kind: str, value: int = 0, arity: int = 0, bits: int = 0, signed: int = 0,
             widths: tuple = (), opcode: int = 0) -> str:
        w = ", ".join(str(x) for x in (tuple(widths) + (0, 0, 0))[:3])
        return f"{{ {kind}, {arity}u, {bits}u, {signed}u, {{ {w} }}, {opcode}u, INT64_C({value}) }}"

    if type(expr) is not tuple:
        return [step("GENSPIRV_STEP_NUMBER", int(expr))]
    kind = expr[0]
    if kind == "spec":
        return [step("GENSPIRV_STEP_SPEC", expr[1])]
    if kind == "op":
        _, opcode, type_name, widths, *args = expr
        out = [s for a in args for s in spec_steps(a)]
        return out + [step("GENSPIRV_STEP_OP", arity=len(args), bits=spec_sizes.type_width(type_name),
                           signed=int(type_name.startswith("int")), widths=widths, opcode=opcode)]
    return [s for a in expr[1:] for s in spec_steps(a)] + [step(_STEP_KINDS[kind])]


def _steps_view(ident: str, expr, comment: str, arrays: list) -> tuple[str, int]:
    """(the C pointer, the step count) of a size's expression; ("NULL", 0) when fixed."""
    if expr is None:
        return "NULL", 0
    steps = spec_steps(expr)
    arrays.append({"ident": ident, "steps": steps, "comment": c_escape(comment)})
    return ident, len(steps)


def _binding_view(b: Mapping, min_size_steps: tuple[str, int] = ("NULL", 0)) -> dict:
    view = {"set": b["set"], "binding": b["binding"], "name_literal": c_string(b["name"]),
            "type_enum": c_enum("GENSPIRV_DESCRIPTOR", b["type"]), "count": b["count"],
            "access_enum": c_enum("GENSPIRV_ACCESS", b["access"]),
            "min_size_spec": min_size_steps[0], "min_size_steps": min_size_steps[1]}
    # Fields newer manifests carry; the C table has them only when the manifest does.
    for key in OPTIONAL_BINDING_FIELDS:
        if key in b:
            view[key] = b[key]
    return view


OPTIONAL_BINDING_FIELDS = ("min_size", "array_stride")


def _module_view(index: int, entry: ManifestEntry, d: Mapping, words: Words, file: str = "") -> dict:
    """One module's values for the templates; ``file`` (files mode): its blob's path from the
    source file's folder, its words then ``cblobs.word_array``, not an initialiser."""
    info = entry.info
    if info.binding_count > MASK_BITS:
        raise CodegenError(f"shader {entry.name!r}: {info.binding_count} bindings do not fit the "
                           f"C table's {MASK_BITS}-bit masks")
    specs = d["spec_constants"]
    arrays: list = []
    push_steps = _steps_view(f"genspirv_push_size_spec_{index}", info.push_constant_size_spec,
                             d.get("push_constant_size_spec", ""), arrays)
    shared_steps = _steps_view(f"genspirv_shared_memory_spec_{index}", info.shared_memory_spec,
                               d.get("shared_memory_spec", ""), arrays)
    bindings = [_binding_view(b, _steps_view(f"genspirv_min_size_spec_{index}_{i}", ib.min_size_spec,
                                             b.get("min_size_spec", ""), arrays))
                for i, (b, ib) in enumerate(zip(d["bindings"], info.bindings))]
    return {
        "name": entry.name,
        "name_comment": c_escape(entry.name),
        "source_comment": c_escape(entry.source),
        "name_literal": c_string(entry.name),
        "entry_point_literal": c_string(info.entry_point),
        "words_ident": f"genspirv_words_{index}",
        "word_count": len(words),
        "word_lines": [] if file else word_lines(words),
        "blob_text": word_array(f"genspirv_words_{index}", file, entry.size, entry.sha256).rstrip("\n")
        if file else "",
        "spec_ids_ident": f"genspirv_spec_ids_{index}",
        "spec_names_ident": f"genspirv_spec_names_{index}",
        "spec_constants_ident": f"genspirv_spec_constants_{index}",
        "bindings_ident": f"genspirv_bindings_{index}",
        "spec_ids": [f"{s['id']}u" for s in specs],
        "spec_names": [c_string(s["name"]) for s in specs],
        "spec_constants": [
            {"id": s["id"], "name_literal": c_string(s["name"]),
             "type_enum": c_enum("GENSPIRV_SPEC", s["type"]), "size": SPEC_LAYOUT.get(s["type"], (0,))[0],
             "default_bits": f"0x{spec_default_bits(s['type'], s['default'], f'shader {entry.name!r}'):x}",
             "default_comment": c_escape(json.dumps(s["default"]))}
            for s in specs],
        "bindings": bindings,
        "step_arrays": arrays,
        "push_constant_size_spec": push_steps[0], "push_constant_size_steps": push_steps[1],
        "shared_memory_spec": shared_steps[0], "shared_memory_steps": shared_steps[1],
        "binding_count": info.binding_count,
        "writable_mask": f"0x{info.writable_mask:x}",
        "readable_mask": f"0x{info.readable_mask:x}",
        "push_constant_size": info.push_constant_size,
        "local_size": list(info.local_size),
        "local_size_spec_ids": ["-1" if i is None else str(i) for i in info.local_size_spec_ids],
        "sha256": entry.sha256,
        "shared_memory": info.shared_memory,
        "capabilities": f"0x{_bits(info.capabilities, C_CAPABILITIES):x}",
        "extensions": f"0x{_bits(info.extensions, C_EXTENSIONS):x}",
    }


def _bits(names, table) -> int:
    return sum(1 << i for i, (name, _) in enumerate(table) if name in names)


def _unavailable_view(u: Mapping) -> dict:
    missing = u.get("missing", "")
    if isinstance(missing, (list, tuple)):
        missing = ", ".join(map(str, missing))
    return {"name_literal": c_string(str(u.get("name", ""))),
            "source_literal": c_string(str(u.get("source", ""))),
            "missing_literal": c_string(str(missing))}


def render_c(source: RenderInput, output: str, blobs: BlobMode = BlobMode.ARRAYS,
             blob_root: Optional[str] = None) -> dict[str, bytes]:
    env = _environment()
    header = f"{output}.h"
    header_name = check_header_name(PurePosixPath(header).name)
    as_dict = source.doc
    dicts = {d["name"]: d for d in as_dict["shaders"]}
    entries = sorted_entries(source.manifest)
    files = BlobMode(blobs) is BlobMode.FILES
    paths = {e.name: blob_path(f"{output}.c", e.spirv, blob_root) if files else "" for e in entries}
    modules = [_module_view(i, e, dicts[e.name], Words(source.blobs[e.name], e.spirv), paths[e.name])
               for i, e in enumerate(entries)]
    files_prelude = ""
    if files and entries:
        orders = {Words(source.blobs[e.name], e.spirv).order for e in entries}
        if len(orders) > 1:
            raise CodegenError(f"{output}.c: blobs = \"files\" needs every blob in one byte order; these are "
                               "mixed (their bytes become the words): use blobs = \"arrays\"")
        files_prelude = (prelude(paths[entries[0].name]) + word_order_check(orders.pop())).rstrip("\n")
    binding_fields = [k for k in OPTIONAL_BINDING_FIELDS
                      if any(k in b for m in modules for b in m["bindings"])]
    context = {
        "banner": BANNER,
        "files_prelude": files_prelude,
        "toolchain": {k: c_escape(str(v)) for k, v in as_dict["toolchain"].items()},
        "guard": include_guard(output),
        "header_name": header_name,
        "modules": modules,
        "binding_fields": binding_fields,
        "descriptor_enums": [c_enum("GENSPIRV_DESCRIPTOR", t) for t in DESCRIPTOR_TYPES],
        "spec_enums": [c_enum("GENSPIRV_SPEC", t) for t in SPEC_TYPES],
        "descriptor_words": [(c_enum("GENSPIRV_DESCRIPTOR", t), c_escape(t)) for t in DESCRIPTOR_TYPES],
        "spec_words": [(c_enum("GENSPIRV_SPEC", t), c_escape(t)) for t in SPEC_TYPES],
        "capability_words": [(c_enum("GENSPIRV_CAP", cap), cap, need) for cap, need in C_CAPABILITIES],
        "extension_words": [(c_enum("GENSPIRV_EXT", ext), ext, need) for ext, need in C_EXTENSIONS],
        "unavailable": [_unavailable_view(u) for u in as_dict.get("unavailable", [])],
    }
    return {
        header: env.get_template("c/module_table.h.j2").render(context).encode("utf-8"),
        f"{output}.c": env.get_template("c/module_table.c.j2").render(context).encode("utf-8"),
    }


def check_header_name(name: str) -> str:
    """The header's file name goes into ``#include "..."``, where no escape exists."""
    if any(ch in name for ch in "\"'") or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
        raise CodegenError(f"generate output {name!r}: a header name cannot hold quotes, backslashes "
                           "or control characters (it is #included)")
    return name
