"""Lint suppressions: which findings the config and GLSL comments silence, and which silence nothing.

Takes lint's findings, the manifest they are about and, for a project, its
``Config``; gives the findings no suppression covers, plus one
``unused-suppression`` finding for each suppression that silenced nothing
(``lint_project``). Suppressions, as docs/GUIDE.md ("Lint suppressions")
describes them:

- in the config, ``lint = { ignore = ["never-accessed"] }`` at the top level
  (``[tool.genspirv.lint]``), in a source's table, on a variant or on a
  generator's variant; they accumulate (``Variant.lint_ignore``);
- in the GLSL, ``// genspirv: ignore[rule, ...]`` on the line that declares a
  binding (its literal ``binding = N``, with ``set = N``; where the number is a
  macro, the binding's name on that line) or a specialisation constant
  (``constant_id = N``, ``local_size_x_id = N``); ``// genspirv:
  ignore-file[rule, ...]`` anywhere in a file covers every finding of every
  shader compiled from it (as its source or an include).

The files a shader was compiled from are its manifest entry's ``depends``
(a generated one read from the generator's text, never its templates).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional

from ..project.config import Config
from ..project.generated import compiled_deps
from .findings import Finding, lint
from ..project.lint_rules import SUPPRESSIBLE, Rule
from ..manifest import Manifest, ManifestEntry
from ..fsutil import read_regular

SOURCE_MAX = 16 << 20       # bytes read of a source for its comments: far past any real one

_COMMENT = re.compile(r"//\s*genspirv:\s*ignore(-file)?\[([^\]]*)\]")
_BINDING = re.compile(r"\bbinding\s*=\s*(\d+)\b")
_SET = re.compile(r"\bset\s*=\s*(\d+)\b")
_SPEC = re.compile(r"\b(?:constant_id|local_size_[xyz]_id)\s*=\s*(\d+)\b")
_WORD = re.compile(r"[A-Za-z_]\w*")

Read = Callable[[str], Optional[str]]      # a root-relative path -> its text, None when unreadable


@dataclass(frozen=True)
class Comment:
    """One ``// genspirv: ignore[...]`` comment and what its line declares."""

    path: str
    line: int
    rules: tuple[str, ...]
    whole_file: bool                           # ignore-file[...]
    binding: Optional[tuple[int, int]] = None  # (set, binding) of a literal ``binding = N`` on the line
    spec_id: Optional[int] = None              # a literal ``constant_id = N`` / ``local_size_x_id = N``
    words: frozenset = frozenset()             # the line's identifiers (a binding named, not numbered)

    def covers(self, f: Finding, binding_name: str) -> bool:
        if f.kind not in self.rules:
            return False
        if self.whole_file:
            return True
        if f.spec_id is not None:
            return self.spec_id == f.spec_id
        if f.binding is None:
            return False            # a whole set's finding: only ignore-file reaches it
        if self.binding is not None:
            return self.binding == (f.set, f.binding)
        return bool(binding_name) and binding_name in self.words


def comments_in(path: str, text: str) -> list[Comment]:
    """Every suppression comment of a file."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        m = _COMMENT.search(line)
        if m is None:
            continue
        code = line[:m.start()]
        rules = tuple(r.strip() for r in m.group(2).split(",") if r.strip())
        binding = _BINDING.search(code)
        dset = _SET.search(code)
        spec = _SPEC.search(code)
        found.append(Comment(path, n, rules, bool(m.group(1)),
                             (int(dset.group(1)) if dset else 0, int(binding.group(1))) if binding else None,
                             int(spec.group(1)) if spec else None, frozenset(_WORD.findall(code))))
    return found


def project_reader(root: Path, config: Optional[Config]) -> Read:
    """A file's text: a generated file's from the generator, any other from disk."""
    generated = config.generated_files if config is not None else {}

    def read(rel: str) -> Optional[str]:
        if rel in generated:
            return generated[rel].text
        try:
            # A manifest's depends may be hand-edited to name a FIFO or a link to /dev/zero.
            return read_regular(root / rel, SOURCE_MAX).decode("utf-8", errors="replace")
        except OSError:
            return None
    return read


def lint_project(manifest: Manifest, config: Optional[Config] = None, read: Optional[Read] = None) -> list[Finding]:
    """lint's findings less the suppressed ones, then one per suppression that silenced nothing."""
    read = read or project_reader(manifest.root or Path("."), config)
    return apply(lint(manifest), manifest, config, read)


def _files(entry: ManifestEntry, config: Optional[Config]) -> tuple[str, ...]:
    depends = entry.depends or (entry.source,)
    if config is None:
        return depends
    return compiled_deps(depends, config.generated_files, config.generator, config.glsl_dir)


def apply(findings: Iterable[Finding], manifest: Manifest, config: Optional[Config], read: Read) -> list[Finding]:
    variants = {v.name: v for v in config.variants} if config is not None else {}
    entries = {e.name: e for e in manifest.shaders}
    parsed: dict[str, list[Comment]] = {}

    def comments_of(entry: ManifestEntry) -> list[Comment]:
        out = []
        for path in _files(entry, config):
            if path not in parsed:
                text = read(path)
                parsed[path] = comments_in(path, text) if text is not None else []
            out += parsed[path]
        return out

    used: set = set()            # (rule, key) of the config, (path, line, rule) of a comment
    kept = []
    for f in findings:
        entry = entries.get(f.shader)
        if entry is None:
            kept.append(f)
            continue
        name = next((b.name for b in entry.info.bindings if (b.set, b.binding) == (f.set, f.binding)), "")
        hits = {(rule, key) for rule, key in variants[f.shader].lint_ignore if rule == f.kind} \
            if f.shader in variants else set()
        hits |= {(c.path, c.line, f.kind) for c in comments_of(entry) if c.covers(f, name)}
        used |= hits
        if not hits:
            kept.append(f)
    for e in manifest.shaders:          # files no finding led to are read too: their comments may be unused
        comments_of(e)
    return kept + _unused(variants.values(), parsed, used)


def _unused(variants, parsed: dict[str, list[Comment]], used: set) -> list[Finding]:
    out = []
    declared = dict.fromkeys(pair for v in variants for pair in v.lint_ignore)
    for rule, key in declared:
        if (rule, key) not in used:
            out.append(_unused_finding(key, f"ignoring {rule!r} silences nothing: no shader it covers has that "
                                            "finding; remove it"))
    for comments in parsed.values():
        for c in comments:
            for rule in c.rules:
                if rule not in SUPPRESSIBLE:
                    out.append(_unused_finding(f"{c.path}:{c.line}", f"genspirv: ignore names no lint rule {rule!r} "
                                                                     f"(rules: {', '.join(SUPPRESSIBLE)})"))
                elif (c.path, c.line, rule) not in used:
                    what = "file" if c.whole_file else "line"
                    out.append(_unused_finding(f"{c.path}:{c.line}", f"genspirv: ignore{'-file' * c.whole_file}"
                                               f"[{rule}] silences nothing on this {what}; remove it"))
    return out


def _unused_finding(where: str, message: str) -> Finding:
    return Finding("", None, Rule.UNUSED_SUPPRESSION.value, message, where=where)
