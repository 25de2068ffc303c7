"""Lint: a manifest in, findings about its bindings out.

``lint(manifest) -> list[Finding]`` looks at every shader's bindings as the
manifest records them, and at each blob's code (through
``reflect.binding_usage``) for what the manifest does not keep (whether a
binding is ever read).  It reports:

- ``never-written``: a ``read_write`` binding the code never writes.  Declare it
  ``readonly``: the runtime then never orders later readers after it.
- ``never-read``: a ``read_write`` binding the code never reads.  Declare it
  ``writeonly``: readers of what it overwrites need no barrier against it.
- ``never-accessed``: a binding no reachable code touches (its buffer is still
  bound, synchronised and counted against the kernel's binding_count).
- ``sparse-bindings``: binding numbers of a set that are not 0..n-1 (the masks
  number bindings by position, so gaps make bit *i* differ from binding *i*).
- ``spec-defaults-disagree``: constants sharing a specialisation id whose
  defaults differ, e.g. ``layout(local_size_x_id = 0)`` (default 1) beside
  ``layout(constant_id = 0) const uint BLOCK_SIZE = 64``.  Vulkan without
  specialisation runs each with its own default (1-wide workgroups here);
  genspirv's runtime gives all of them the named constant's default, other
  consumers may not.  Make the defaults agree (``local_size_x = 64``).
- ``portability``: a kernel past a limit every Vulkan 1.2 device is guaranteed
  (the spec's required minimums, ``runtime.limits.VULKAN_1_2_REQUIRED``): more
  than 128 bytes of push constants, 4 storage buffers, 12 uniform buffers or 4
  descriptor sets, a workgroup past 128 x 128 x 64 or 128 invocations, more
  than 16 KiB of shared memory, at the spec constants' defaults.  It runs
  where the device allows more (every desktop GPU does), and is refused by
  name where it does not.
- ``identical-blobs``: variants of one source whose blobs are byte-identical,
  named together with the defines (or, when those agree, the files read)
  they differ in: a define that changes nothing in the bytes, so one variant
  would serve them all.

No Vulkan, no side effects apart from reading the blobs.  The rule names are
``genspirv.project.lint_rules``; ``genspirv.lint.suppress`` takes away the findings a
project silences (``lint = { ignore = [...] }``, ``// genspirv: ignore[...]``).
The CLI prints one line per finding and exits 1 when there is any.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence

from ..project.lint_rules import Rule
from ..manifest import Manifest, ManifestEntry
from ..reflect import BindingUsage, ShaderInfo, binding_usage
from ..runtime.limits import VULKAN_1_2_REQUIRED, excesses

STORAGE_KINDS = ("storage_buffer", "storage_image", "storage_texel_buffer")


@dataclass(frozen=True)
class Finding:
    shader: str
    binding: Optional[int]      # None for a finding about a whole set
    kind: str                   # a lint_rules.Rule value
    message: str
    set: Optional[int] = 0          # None for a finding about the whole shader
    spec_id: Optional[int] = None   # set for a finding about spec constants
    where: str = ""                 # for a finding about no shader: the config key or file:line it is about

    def __str__(self) -> str:
        if self.where:
            return f"{self.where}: {self.message} [{self.kind}]"
        if self.spec_id is not None:
            where = f"spec id {self.spec_id}: "
        elif self.set is None:
            where = ""
        else:
            where = f"set {self.set}" + (f" binding {self.binding}" if self.binding is not None else "") + ": "
        return f"{self.shader}: {where}{self.message} [{self.kind}]"


def lint_info(shader: str, info: ShaderInfo,
              usage: Optional[Mapping[tuple[int, int], BindingUsage]] = None) -> list[Finding]:
    """Findings for one shader; without ``usage`` the never-read check is left out."""
    findings = []
    for b in info.bindings:
        label = f"{b.type} {b.name!r}" if b.name else b.type
        if not b.accessed:
            findings.append(Finding(shader, b.binding, Rule.NEVER_ACCESSED.value,
                                    f"{label} is never accessed by {info.entry_point!r}; use it or "
                                    "remove it (where binding numbers must stay, suppress it: "
                                    "// genspirv: ignore[never-accessed])", b.set))
            continue
        if b.access != "read_write" or b.type not in STORAGE_KINDS:
            continue
        if not b.written:
            findings.append(Finding(shader, b.binding, Rule.NEVER_WRITTEN.value,
                                    f"{label} is read_write but never written; declare it "
                                    "readonly (it costs barriers)", b.set))
        used = usage.get((b.set, b.binding)) if usage is not None else None
        if used is not None and not used.read:
            findings.append(Finding(shader, b.binding, Rule.NEVER_READ.value,
                                    f"{label} is read_write but never read; declare it "
                                    "writeonly", b.set))
    findings.extend(_sparse_sets(shader, info))
    findings.extend(_disagreeing_spec_defaults(shader, info))
    findings.extend(_portability(shader, info))
    return findings


def _portability(shader: str, info: ShaderInfo) -> Iterable[Finding]:
    for e in excesses(info, VULKAN_1_2_REQUIRED):
        yield Finding(shader, None, Rule.PORTABILITY.value,
                      f"{e.what}, past the {e.most} every Vulkan 1.2 device allows ({e.limit}): "
                      "a device allowing no more refuses it", set=None)


def _disagreeing_spec_defaults(shader: str, info: ShaderInfo) -> Iterable[Finding]:
    by_id: dict[int, list] = {}
    for s in info.spec_constants:
        by_id.setdefault(s.id, []).append(s)
    for spec_id, consts in sorted(by_id.items()):
        if len({(type(c.default), c.default) for c in consts}) < 2:
            continue
        listed = ", ".join(f"{c.name or _unnamed(info, spec_id)} = {c.default!r}" for c in consts)
        yield Finding(shader, None, Rule.SPEC_DEFAULTS_DISAGREE.value,
                      f"constants sharing spec id {spec_id} have different defaults ({listed}); "
                      "make them agree: unspecialised, Vulkan gives each its own", spec_id=spec_id)


def _unnamed(info: ShaderInfo, spec_id: int) -> str:
    axes = [a for a, sid in zip("xyz", info.local_size_spec_ids) if sid == spec_id]
    return f"unnamed (local_size_{axes[0]}_id)" if axes else "unnamed"


def _sparse_sets(shader: str, info: ShaderInfo) -> Iterable[Finding]:
    numbers: dict[int, list[int]] = {}
    for b in info.bindings:
        numbers.setdefault(b.set, []).append(b.binding)
    for dset, used in sorted(numbers.items()):
        distinct = sorted(set(used))
        if distinct[-1] + 1 != len(distinct):
            present = set(distinct)
            # Name the first few gaps; a stray binding 1000000 must not list them all.
            missing = [n for n in range(min(distinct[-1], 64)) if n not in present]
            gaps = ", ".join(map(str, missing[:16])) + (", ..." if len(missing) > 16 or
                                                       distinct[-1] > 64 else "")
            yield Finding(shader, None, Rule.SPARSE_BINDINGS.value,
                          f"binding numbers {distinct} are not dense (missing {gaps})", dset)


def lint_entry(manifest: Manifest, entry: ManifestEntry) -> list[Finding]:
    usage = binding_usage(manifest.read_blob(entry), entry.info.entry_point)
    return lint_info(entry.name, entry.info, usage)


def identical_blobs(entries: Sequence[ManifestEntry]) -> list[Finding]:
    """One finding per group of variants of one source with byte-identical blobs, on the first name."""
    groups: dict[tuple[str, str], list[ManifestEntry]] = {}
    for e in entries:
        groups.setdefault((e.source, e.sha256), []).append(e)
    findings = []
    for (source, _), group in groups.items():
        if len(group) < 2:
            continue
        names = ", ".join(e.name for e in group)
        findings.append(Finding(group[0].name, None, Rule.IDENTICAL_BLOBS.value,
                                f"{names} are byte-identical blobs of {source}: {_what_differs(group)}, which "
                                "changes nothing in the bytes; one variant would serve them all", set=None))
    return sorted(findings, key=lambda f: f.shader)


def _what_differs(group: Sequence[ManifestEntry]) -> str:
    """The defines the variants differ in (each variant's values), else the files they read."""
    names = sorted({k for e in group for k, _ in e.defines})
    differ = [k for k in names if len({e.defines_dict.get(k) for e in group}) > 1]
    if differ:
        each = "; ".join(f"{e.name}: " + ", ".join(f"{k}={e.defines_dict[k]}" if k in e.defines_dict
                                                   else f"no {k}" for k in differ) for e in group)
        return f"their defines differ ({each})"
    common = set.intersection(*(set(e.depends) for e in group))
    if any(set(e.depends) - common for e in group):
        each = "; ".join(f"{e.name}: {', '.join(sorted(set(e.depends) - common)) or 'none'}" for e in group)
        return f"the files they read differ ({each})"
    return "their settings differ"


def lint(manifest: Manifest) -> list[Finding]:
    """Every finding of every shader, in manifest order (shaders sorted by name), then the
    groups of identical blobs."""
    findings = []
    for entry in manifest.shaders:
        findings.extend(lint_entry(manifest, entry))
    return findings + identical_blobs(manifest.shaders)
