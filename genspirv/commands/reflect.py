"""``genspirv reflect FILE.spv``: the reflection of any blob, in words or in the manifest's entry format.

Takes the command's arguments and a line printer; gives the exit status (a
blob that is not SPIR-V raises ``SpirvError`` naming the file).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable

from ..errors import GenspirvError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE.spv", help="a SPIR-V module")
    p.add_argument("--json", action="store_true", help="print the manifest's entry format")
    p.add_argument("--entry", metavar="NAME", default=None, help="only this entry point")


def _describe_info(info) -> list[str]:
    size = "x".join(str(n) for n in info.local_size)
    spec = [f"{'xyz'[i]}=spec {s}" for i, s in enumerate(info.local_size_spec_ids) if s is not None]
    lines = [f"entry point {info.entry_point}: local size {size}" + (f" ({', '.join(spec)})" if spec else ""),
             f"  push constants: {info.push_constant_size} bytes",
             f"  shared memory: {info.shared_memory} bytes"]
    if info.capabilities or info.extensions:
        lines.append(f"  capabilities: {', '.join(info.capabilities) or 'none'}"
                     + (f"; extensions: {', '.join(info.extensions)}" if info.extensions else ""))
    for b in info.bindings:
        use = "written" if b.written else "accessed" if b.accessed else "unused"
        count = "" if b.count == 1 else f"[{b.count or ''}]"
        lines.append(f"  set {b.set} binding {b.binding}: {b.name}{count} {b.type} {b.access} ({use})")
    for s in info.spec_constants:
        lines.append(f"  spec constant {s.id}: {s.name or '(unnamed)'} {s.type} = {s.default!r}")
    return lines


def run(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    from .. import reflect as reflect_mod
    from ..manifest import info_to_dict
    try:
        blob = Path(args.file).read_bytes()
    except OSError as exc:
        raise GenspirvError(f"{args.file}: cannot read: {exc.strerror}") from None
    reflect_module = getattr(reflect_mod, "reflect_module", None)
    try:
        if args.entry is not None or reflect_module is None:
            infos = [reflect_mod.reflect(blob, args.entry)]
        else:
            infos = list(reflect_module(blob))
    except GenspirvError as exc:
        raise exc.naming(args.file) from None
    if args.json:
        dicts = [info_to_dict(i) for i in infos]
        # One entry point gives one entry, as in the manifest; several give a list.
        doc = dicts[0] if len(dicts) == 1 else dicts
        say(json.dumps(doc, indent=2, sort_keys=True))
    else:
        say(f"{args.file}:")
        for info in infos:
            for line in _describe_info(info):
                say("  " + line)
    return 0
