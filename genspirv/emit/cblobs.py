"""Blobs in the binary without their bytes in the text: C/C++ that ``#embed``s or ``.incbin``s each file.

Pure text for a ``generate`` entry with ``blobs = "files"`` (and the arrays
it stands in for, so one template helper serves both modes):

- ``prelude(probe)``: once per generated file, before its first blob. It picks
  the mechanism when the build has not (``-DGENSPIRV_BLOBS_EMBED`` or
  ``-DGENSPIRV_BLOBS_INCBIN``): the assembler's ``.incbin`` (GCC and Clang on
  ELF and Mach-O), else C23 ``#embed`` where the compiler has it and finds
  ``probe`` (the file's first blob), else an ``#error`` saying to use arrays
  (MSVC); and the macros the blobs below use. ``.incbin`` first: the compiler
  reads none of the bytes, where ``#embed`` still has it read each one (clang 19,
  a 2,000-variant project's C++ tables: 3.6 s with ``.incbin``, 4.4 s with
  ``#embed``, 12.6 s as hex; docs/BENCHMARKS.md, "Generated tables at a
  backend's scale"). ``#embed`` looks for a path
  beside the including file first (or in ``--embed-dir=``), ``.incbin`` in the
  working folder and the ``-I`` folders: the paths are relative to the
  generated file's folder (``blob_path``), and CMake renders its own copies
  with absolute ones.
- ``byte_array(name, path, size, sha256)``: ``const unsigned char name[size]``
  with external linkage (an ``extern`` declaration first, so C++ gives the
  const array external linkage too), 4-byte aligned: the shape of a backend's
  ``name_data`` arrays; ``byte_array_lines`` is the same from hex lines.
- ``word_array(ident, path, count, sha256)``: the C table's words, a
  ``uint32_t[count]`` local to its object (a union of the bytes and the words
  under ``#embed``, a local assembler symbol under ``.incbin``).
- ``blob_path(output, spirv, root=None)``: a blob's path from the generated
  file's folder (with ``root``, an absolute folder: from there, for a copy
  rendered outside the project), refused (CodegenError) where it holds what
  neither directive can quote.

The sha256 of each blob is in a comment beside it: a blob that changes changes
the text, so a build system that recompiles on a changed source recompiles.
The words of a blob are its bytes: the file refuses a target whose byte order
is not the blobs' (``word_order_check``).
"""

from __future__ import annotations

import posixpath
import re
from typing import Optional

from ..errors import CodegenError

EMBED = "GENSPIRV_BLOBS_EMBED"
_UNQUOTABLE = re.compile(r'["\\\x00-\x1f\x7f]')

_PRELUDE = r"""/* The blobs are not in this file: each is put into the object from its file, by the
 * assembler's .incbin (GCC and Clang on ELF and Mach-O: the paths are relative to this
 * file's folder: compile here, or add -I<this folder>), else by #embed where the compiler
 * has it and finds the file (here, or with --embed-dir=<this folder>).
 * -DGENSPIRV_BLOBS_EMBED or -DGENSPIRV_BLOBS_INCBIN picks one. */
#ifndef GENSPIRV_BLOBS_PRELUDE
#define GENSPIRV_BLOBS_PRELUDE 1
#if !defined(GENSPIRV_BLOBS_EMBED) && !defined(GENSPIRV_BLOBS_INCBIN)
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__ELF__) || defined(__MACH__))
#define GENSPIRV_BLOBS_INCBIN 1
#elif defined(__has_embed)
#if __has_embed("@PROBE@") == __STDC_EMBED_FOUND__
#define GENSPIRV_BLOBS_EMBED 1
#endif
#endif
#endif
#if defined(GENSPIRV_BLOBS_EMBED) + defined(GENSPIRV_BLOBS_INCBIN) != 1
#error "genspirv: this compiler has neither #embed nor .incbin (GCC, Clang on ELF or Mach-O): generate this file with blobs = \"arrays\" (genspirv's CMake package does so by itself)"
#endif
#if defined(GENSPIRV_BLOBS_EMBED)
#if defined(__clang__)
#define GENSPIRV_EMBED_BEGIN _Pragma("clang diagnostic push") _Pragma("clang diagnostic ignored \"-Wc23-extensions\"")
#define GENSPIRV_EMBED_END _Pragma("clang diagnostic pop")
#elif defined(__GNUC__)
#define GENSPIRV_EMBED_BEGIN _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wpedantic\"")
#define GENSPIRV_EMBED_END _Pragma("GCC diagnostic pop")
#else
#define GENSPIRV_EMBED_BEGIN
#define GENSPIRV_EMBED_END
#endif
#if defined(__GNUC__) || defined(__clang__)
#define GENSPIRV_ALIGNED __attribute__((aligned(4)))
#elif defined(__cplusplus)
#define GENSPIRV_ALIGNED alignas(4)
#else
#define GENSPIRV_ALIGNED _Alignas(4)
#endif
#else
#define GENSPIRV_STRING_(x) #x
#define GENSPIRV_STRING(x) GENSPIRV_STRING_(x)
#define GENSPIRV_SYMBOL(name) GENSPIRV_STRING(__USER_LABEL_PREFIX__) #name
#if defined(__MACH__)
#define GENSPIRV_RODATA "__TEXT,__const"
#define GENSPIRV_SIZE(symbol) ""
#else
#define GENSPIRV_RODATA ".rodata"
#define GENSPIRV_SIZE(symbol) ".type " symbol ", %object\n.size " symbol ", .-" symbol "\n"
#endif
/* The file's bytes under the C name `name`, 4-byte aligned, in read-only data; `global`
 * is "" (local to this object) or GENSPIRV_GLOBAL(name). */
#define GENSPIRV_GLOBAL(name) ".globl " GENSPIRV_SYMBOL(name) "\n"
#define GENSPIRV_INCBIN(name, global, path) __asm__(".pushsection " GENSPIRV_RODATA "\n.balign 4\n" global \
    GENSPIRV_SYMBOL(name) ":\n.incbin \"" path "\"\n" GENSPIRV_SIZE(GENSPIRV_SYMBOL(name)) ".popsection\n")
#endif
#endif
"""


def blob_path(output: str, spirv: str, root: Optional[str] = None) -> str:
    """``spirv`` (root-relative) as a path from the folder of ``output`` (a root-relative file),
    or under ``root`` (a posix folder) when one is given."""
    rel = f"{root.rstrip('/')}/{spirv}" if root else posixpath.relpath(spirv, posixpath.dirname(output) or ".")
    if _UNQUOTABLE.search(rel):
        raise CodegenError(f"{output}: blob path {rel!r} holds a quote, a backslash or a control character, "
                           'which #embed and .incbin cannot quote; use blobs = "arrays" for it')
    return rel


def prelude(probe: str) -> str:
    """The text before a file's first blob; ``probe``: a blob path the file names (``blob_path``)."""
    return _PRELUDE.replace("@PROBE@", probe)


def word_order_check(order: str) -> str:
    """Refuse a target whose byte order is not the blobs' (``<`` or ``>``): their bytes are the words."""
    want, other = ("LITTLE", "big") if order == "<" else ("BIG", "little")
    return (f"#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_{want}_ENDIAN__\n"
            f'#error "genspirv: the blobs are {want.lower()}-endian SPIR-V, their words are not this '
            f'{other}-endian target\'s: generate this file with blobs = \\"arrays\\""\n#endif\n')


def _check_ident(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or ""):
        raise CodegenError(f"blob_array: {name!r} is not a C identifier (c_ident makes one)")
    return name


def _comment(path: str, size: int, sha256: str) -> str:
    return f"/* {path}: {size} bytes, sha256 {sha256} */\n"


def byte_array(name: str, path: str, size: int, sha256: str) -> str:
    """``const unsigned char name[size]`` holding the file ``path``, external linkage, 4-byte aligned."""
    name = _check_ident(name)
    return (f"{_comment(path, size, sha256)}"
            f"extern const unsigned char {name}[{size}];\n"
            f"#if defined({EMBED})\n"
            f"GENSPIRV_EMBED_BEGIN\n"
            f"GENSPIRV_ALIGNED const unsigned char {name}[{size}] = {{\n"
            f'#embed "{path}"\n'
            f"}};\n"
            f"GENSPIRV_EMBED_END\n"
            f"#else\n"
            f'GENSPIRV_INCBIN({name}, GENSPIRV_GLOBAL({name}), "{path}");\n'
            f"#endif\n")


def byte_array_lines(name: str, size: int, lines: list[str]) -> str:
    """``byte_array``'s declaration as a C initialiser of ``lines`` (``hex_bytes``' lines)."""
    name = _check_ident(name)
    body = ",\n    ".join(lines)
    return (f"extern const unsigned char {name}[{size}];\n"
            f"const unsigned char {name}[{size}] = {{\n    {body}\n}};\n")


def word_array(ident: str, path: str, size: int, sha256: str) -> str:
    """The C table's ``uint32_t ident[size / 4]`` holding the file ``path``, local to its object."""
    count = size // 4
    return (f"{_comment(path, size, sha256)}"
            f"#if defined({EMBED})\n"
            f"GENSPIRV_EMBED_BEGIN\n"
            f"static const union {{ unsigned char bytes[{size}]; uint32_t words[{count}]; }} {ident}_blob = {{ {{\n"
            f'#embed "{path}"\n'
            f"}} }};\n"
            f"GENSPIRV_EMBED_END\n"
            f"#define {ident} ({ident}_blob.words)\n"
            f"#else\n"
            f"extern const uint32_t {ident}[{count}];\n"
            f'GENSPIRV_INCBIN({ident}, "", "{path}");\n'
            f"#endif\n")
