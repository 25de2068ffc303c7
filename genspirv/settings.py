"""The settings table: every ``GENSPIRV_*`` environment variable genspirv reads.

Takes the process environment; gives ``get(name)``, the parsed and checked
value of one variable (its default when unset or empty), and ``SETTINGS``, one
``Setting`` row per variable (name, parser, allowed values, default, one doc
line). A value outside what a row allows raises ``SettingError`` naming the
variable, the value and what is allowed. A credential's row (``secret``) is
the exception (docs/SECURITY.md): its value is never shown, not even in that
error, and set but empty is an error too, not "unset" (what a CI secret that
did not expand gives). The table in docs/GUIDE.md ("Environment") is
``markdown_table()``; a test keeps the two equal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from .errors import GenspirvError


class SettingError(GenspirvError):
    """A ``GENSPIRV_*`` environment variable holds a value outside what it allows."""

    exit_code = 2


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[str], object]    # raises ValueError on a value it does not allow
    allowed: str                      # what the parser accepts, in words
    default: object                   # used when the variable is unset or empty
    doc: str
    bounds: str = ""                  # the range, where ``allowed`` does not already say it
    secret: bool = False              # a credential: never shown, and set but empty is an error


def _number(kind, lo, hi=None, lo_open=False) -> Callable[[str], object]:
    def parse(raw: str):
        value = kind(raw)
        if value != value or (value <= lo if lo_open else value < lo) or (hi is not None and value > hi):
            raise ValueError(raw)
        return value
    return parse


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw not in choices:
            raise ValueError(raw)
        return raw
    return parse


def _flag(raw: str) -> bool:
    if raw not in ("0", "1"):
        raise ValueError(raw)
    return raw == "1"


def _text(raw: str) -> str:
    return raw


def control_character(text: str) -> Optional[str]:
    """The first control character in ``text`` and where, in words (``'\\r' at its end``: only
    control characters or spaces follow it), or None. Never the text around it: it may be a secret."""
    for i, ch in enumerate(text):
        if ch < " " or "\x7f" <= ch <= "\x9f":
            end = all(c <= " " or "\x7f" <= c <= "\x9f" for c in text[i:])
            hint = " (a file saved with CRLF line ends leaves one)" if ch == "\r" and end else ""
            return f"{ch!r} {'at its end' if end else 'inside it'}{hint}"
    return None


def _credential(raw: str) -> str:
    """A secret or a token as given; ValueError (saying why, never the value) when it holds a
    control character: a tab, or the ``\\r`` a CRLF file leaves at its end, is a copy accident
    that no server or other machine would agree with."""
    bad = control_character(raw)
    if bad is not None:
        raise ValueError(f"holds the control character {bad}: give the value alone, on one line")
    return raw


def _tool(name: str, tool: str) -> Setting:
    return Setting(name, _text, "a path", None,
                   f"`{tool}` to run instead of the wheel's or the one on PATH")


SETTINGS: tuple[Setting, ...] = (
    # -- runtime -------------------------------------------------------------------
    Setting("GENSPIRV_DEVICE", _text, "an index or a name substring", None,
            "the Vulkan device to open; unset, a discrete GPU is preferred"),
    Setting("GENSPIRV_BARRIERS", _choice("smart", "always", "none"), "smart, always or none", "smart",
            "barrier policy: only on a proven hazard, before every command, or never (tests only)"),
    Setting("GENSPIRV_INFLIGHT", _number(int, 1, 4), "1..4", 2,
            "batches in flight at once (in-flight slots)"),
    Setting("GENSPIRV_BATCH", _number(int, 1), "a whole number of dispatches", 64,
            "dispatches recorded into one batch before it is submitted", bounds="1 or more"),
    Setting("GENSPIRV_UPLOAD", _choice("staged", "blocking"), "staged or blocking", "staged",
            "uploads recorded into the open batch, or each submitted and waited for"),
    Setting("GENSPIRV_HOST_PROFILE", _flag, "0 or 1", False,
            "1: time the host's phases of dispatch and flush, printed at close"),
    Setting("GENSPIRV_COMPUTE_STREAM_COPY_MAX", _number(int, 0), "a byte count, 0 or more", None,
            "uploads above this many bytes go to the transfer queue; unset, measured on first use"),
    # -- build -----------------------------------------------------------------------
    Setting("GENSPIRV_COMPILER_TIMEOUT", _number(float, 0, lo_open=True), "a positive number of seconds",
            120.0, "seconds a compiler or tool may run before it is killed"),
    Setting("GENSPIRV_COMPILER_MEMORY_MB", _number(int, 0, lo_open=True), "a positive number of MiB",
            2048, "address space a compiler or tool may take, in MiB (a project template's render: past what it "
            "starts with)"),
    Setting("GENSPIRV_GENERATOR_TIMEOUT", _number(float, 0, lo_open=True), "a positive number of seconds",
            60.0, "seconds a `generator` file may take to give its variants, or a project template to render, "
            "before it is stopped"),
    Setting("GENSPIRV_MATRIX_MAX", _number(int, 1), "a whole number of variants", 4096,
            "the most variants one source's `matrix` may expand to; a larger one is refused before it "
            "expands", bounds="1 or more"),
    Setting("GENSPIRV_LOCK_TIMEOUT", _number(float, 0), "a number of seconds, 0 or more", 600.0,
            "seconds a build waits for another build of the project to release `.genspirv/lock`"),
    Setting("GENSPIRV_CACHE_DIR", _text, "a folder", None,
            "a content-addressed blob cache shared by clones and CI runs, beside each project's `.genspirv/cache`"),
    Setting("GENSPIRV_CACHE_MAX_MB", _number(float, 0, lo_open=True), "a positive number of MiB", 1024.0,
            "each blob cache is trimmed to this size, least recently used blobs first"),
    # The remote cache (docs/GUIDE.md, "Sharing compiles across machines"). The URL, the secret
    # and the token are read as given and never echoed: genspirv.remote.cache checks the URL
    # and names it with any user info redacted.
    Setting("GENSPIRV_REMOTE_CACHE", _text, "an http(s) URL, or off", None,
            "a compile cache machines share, entries at `<url>/<key[:2]>/<key[2:]>`; "
            "over `[tool.genspirv] remote_cache`, `off` for none"),
    Setting("GENSPIRV_REMOTE_CACHE_MODE", _choice("read", "read-write"), "read or read-write", "read",
            "`read`: take verified entries only; `read-write`: also store what the build compiles"),
    Setting("GENSPIRV_REMOTE_CACHE_SECRET", _credential, "a string without control characters", None,
            "entries are signed with it (HMAC-SHA256) and only entries it signed are taken; never printed; "
            "set but empty is an error", secret=True),
    Setting("GENSPIRV_REMOTE_CACHE_TOKEN", _credential, "a string without control characters", None,
            "sent as `Authorization: Bearer`; never printed; set but empty is an error (for basic auth, "
            "user info in the URL)", secret=True),
    Setting("GENSPIRV_REMOTE_CACHE_TIMEOUT", _number(float, 0, lo_open=True), "a positive number of seconds",
            3.0, "seconds one request to the remote cache may take (connecting: at most 1); past it the "
            "build stops asking"),
    _tool("GENSPIRV_GLSLANG", "glslangValidator"),
    _tool("GENSPIRV_SPIRV_VAL", "spirv-val"),
    _tool("GENSPIRV_SPIRV_DIS", "spirv-dis"),
    _tool("GENSPIRV_SPIRV_OPT", "spirv-opt"),
    _tool("GENSPIRV_SPIRV_AS", "spirv-as"),
    # -- benchmarks ------------------------------------------------------------------
    Setting("GENSPIRV_COMMIT", _text, "a commit hash", None,
            "the commit a benchmark report names, over what `.git` says (a copied tree may carry a stale one)"),
    Setting("GENSPIRV_BENCH_POOL_BYTES", _number(int, 1 << 20), "a byte count", None,
            "`bench kernel`: bytes of the weight pool its chains read (unset: 1.5 GiB, 64 MiB with --quick)",
            bounds="1048576 or more"),
    Setting("GENSPIRV_BENCH_BASELINE", _text, "a path", None,
            "`bench kernel`: another project's manifest whose `mul_mat_vec` is measured beside, as arm `before`"),
)

_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}

# What holds a credential (the URL may carry a password): no process genspirv starts is given
# these (``credentials_removed``); only the build's own process reads them.
CREDENTIALS = ("GENSPIRV_REMOTE_CACHE", *(s.name for s in SETTINGS if s.secret))


def credentials_removed(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without ``CREDENTIALS``: the environment of a tool, a worker or a generator's
    process, which never needs them, and whose environment its user can read (``/proc``)."""
    return {k: v for k, v in env.items() if k not in CREDENTIALS}


def get(name: str, environ: Optional[Mapping[str, str]] = None):
    """The value of ``name`` from ``environ`` (default: the process environment)."""
    row = _BY_NAME[name]
    raw = (os.environ if environ is None else environ).get(name)
    if row.secret:
        return _secret(row, raw)
    if not raw:
        return row.default
    try:
        return row.parse(raw.strip() if row.parse is not _text else raw)
    except (ValueError, OverflowError):
        bounds = f" (allowed: {row.bounds})" if row.bounds else ""
        raise SettingError(f"{name} must be {row.allowed}, not {raw!r}{bounds}") from None


def _secret(row: Setting, raw: Optional[str]):
    """A credential's value: the error names the variable and what is wrong, never the value."""
    if raw is None:
        return row.default
    if raw == "":
        raise SettingError(f"{row.name} is set but empty (a CI secret that did not expand gives this): "
                           "give its value, or unset it")
    try:
        return row.parse(raw)
    except ValueError as exc:
        raise SettingError(f"{row.name} {exc}; its value is not shown") from None


def markdown_table() -> str:
    """The table docs/GUIDE.md shows under "Environment"."""
    lines = ["| variable | allowed | default | what it sets |", "| --- | --- | --- | --- |"]
    for s in SETTINGS:
        default = "—" if s.default is None else f"`{_shown(s.default)}`"
        allowed = f"{s.allowed}, {s.bounds}" if s.bounds else s.allowed
        lines.append(f"| `{s.name}` | {allowed} | {default} | {s.doc} |")
    return "\n".join(lines)


def _shown(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
