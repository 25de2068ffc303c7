"""Preambles: a file's text placed before a source's first line, as a backend's build script writes it.

Takes a preamble's and a source's paths (relative to the project root) and
texts; gives a ``Composed``: the text the compiler reads (the preamble, a
newline when its last line lacks one, then the source: the very text a
script that writes ``header + source`` to a file compiles, so the blob is the
same) and the way back from a line of that text to the file and line it came
from, so the compiler's messages keep the preamble's and the source's own
``file:line``. No ``#line`` directive goes into the text: the one that names
a file needs an extension glslang records in the blob (docs/RULES.md,
"Preambles"). Refuses, before any compile, a ``#version`` in both files and
a source's ``#version`` with preamble text before it, naming both files.

Also the hint for a source compiled with no ``#version`` at all, and the
refusal of a byte order mark before it. Pure apart from ``read_text``,
``refuse_byte_order_mark`` and ``write_composed``, which the compiler calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Optional

from ..errors import CompileError, OutputError

_VERSION = re.compile(r"^[ \t]*#[ \t]*version\b", re.M)
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# glslang's complaint when a compute shader has no #version (it assumes 100): no file:line.
_NO_VERSION_MESSAGE = re.compile(r"^(ERROR: )?#version: ")


def version_line(text: str) -> Optional[int]:
    """The line of the first ``#version`` directive outside comments (1-based); None when none."""
    code = _COMMENTS.sub(lambda m: "\n" * m.group().count("\n"), text)
    m = _VERSION.search(code)
    return None if m is None else code.count("\n", 0, m.start()) + 1


def _has_code(text: str) -> bool:
    """Anything besides comments and blank space (a #version may follow only those)."""
    return bool(_COMMENTS.sub("", text).strip())


@dataclass(frozen=True)
class Composed:
    """A preamble and a source as one text, and where each of its lines came from."""

    preamble: str           # root-relative paths, as messages name them
    source: str
    text: str
    preamble_lines: int     # the text's first lines that are the preamble's

    def origin(self, line: int) -> tuple[str, int]:
        """The file and line that line ``line`` of ``text`` came from."""
        if line <= self.preamble_lines:
            return self.preamble, line
        return self.source, line - self.preamble_lines

    def remap(self, messages: str, compiled: str) -> str:
        """The compiler's messages about ``compiled`` (the name the composed text was given)
        as messages about the preamble and the source, each at its own line."""
        named = re.compile(re.escape(compiled) + r":(\d+):")
        return named.sub(lambda m: "{}:{}:".format(*self.origin(int(m.group(1)))), messages)


def compose(preamble: str, preamble_text: str, source: str, source_text: str, what: str = "") -> Composed:
    """The preamble's text, then the source's; a ``CompileError`` in ``file:line`` form when
    the two ``#version`` lines cannot both stand (docs/RULES.md, "Preambles")."""
    what = what or source
    in_preamble, in_source = version_line(preamble_text), version_line(source_text)
    problem = None
    if in_preamble is not None and in_source is not None:
        problem = (f"{source}:{in_source}: error: #version here and in its preamble {preamble}:{in_preamble}: "
                   "the preamble's text goes before the source's first line, so keep one: delete the "
                   "source's #version line (or the preamble's)")
    elif in_source is not None and _has_code(preamble_text):
        problem = (f"{source}:{in_source}: error: #version must come first, but its preamble {preamble} "
                   "goes before it: move the #version line into the preamble (its first line)")
    if problem is not None:
        raise CompileError(f"{what}: {source} does not compile:\n{problem}", messages=problem, source=source)
    head = preamble_text if not preamble_text or preamble_text.endswith("\n") else preamble_text + "\n"
    return Composed(preamble, source, head + source_text, head.count("\n"))


def missing_version(messages: str, text: str, source: str, preamble: Optional[str] = None) -> Optional[str]:
    """The compiler's messages with its ``#version:`` complaints (which name no file) replaced
    by one ``file:1: error:`` line and the fix, when ``text`` has no ``#version`` line; None
    when the failure has another cause."""
    if version_line(text) is not None or not any(_NO_VERSION_MESSAGE.match(ln) for ln in messages.splitlines()):
        return None
    if preamble is None:
        hint = (f"{source}:1: error: no #version line: add `#version 450` as its first line, or give it a "
                "preamble that holds one (preamble = \"path/header.glsl\" in [tool.genspirv])")
    else:
        hint = (f"{preamble}:1: error: no #version line, neither in this preamble nor in {source}: "
                "add `#version 450` as the preamble's first line")
    rest = [ln for ln in messages.splitlines() if ln.strip() and not _NO_VERSION_MESSAGE.match(ln)]
    return "\n".join([hint, *rest])


UTF8_BOM = b"\xef\xbb\xbf"


def refuse_byte_order_mark(files: dict[str, Path], what: str, source: str) -> None:
    """A ``CompileError`` at ``file:1`` when a source or preamble (root-relative name: path) starts
    with a UTF-8 byte order mark. glslang reads it as a stray character before ``#version`` and
    then complains of the version, naming no file; stripping it here instead would compile
    bytes other than the file's, which glslang run by hand (or a backend's script) refuses."""
    for rel, path in files.items():
        try:
            with open(path, "rb") as f:
                head = f.read(len(UTF8_BOM))
        except OSError:
            continue            # the compile names a file it cannot read
        if head == UTF8_BOM:
            text = (f"{rel}:1: error: the file starts with a UTF-8 byte order mark (bytes EF BB BF), which "
                    "glslang reads as a stray character before #version: save it as UTF-8 without a BOM")
            raise CompileError(f"{what}: {source} does not compile:\n{text}", messages=text, source=source)


def read_text(root: Path, rel: str, what: str, source: str) -> str:
    """A source or preamble as text, every byte kept (written back, it is the same file)."""
    try:
        return (root / rel).read_bytes().decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise CompileError(f"{what}: cannot read {rel}: {exc.strerror}", source=source) from None


def write_composed(root: Path, preamble: str, source: str, folder: Path, what: str = "") -> tuple[Composed, Path]:
    """The preamble and the source (relative to ``root``) composed, and written into ``folder``
    under the source's own file name."""
    what = what or source
    composed = compose(preamble, read_text(root, preamble, what, source), source,
                       read_text(root, source, what, source), what)
    path = folder / PurePosixPath(source).name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_bytes(composed.text.encode("utf-8", "surrogateescape"))
    except OSError as exc:
        raise OutputError(f"{what}: cannot write {path}: {exc.strerror}") from None
    return composed, path
