"""A remote compile cache's URL: checked, and shown without its credentials.

Takes the text of ``GENSPIRV_REMOTE_CACHE`` or of ``[tool.genspirv]
remote_cache`` and gives a ``RemoteUrl`` (the base URL with the user info split
off), or a ``ConfigError`` naming where the text came from and the form
expected. ``redact_url`` is the only way a URL reaches a message: user info
becomes ``***``; ``redact`` hides the secrets in any other text. Here, beneath the configuration, so the configuration can
refuse a bad key when it is read; the cache itself is ``genspirv.remote.cache``.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Iterable, Optional

from ..errors import ConfigError

URL_FORM = "http(s)://host[:port]/path"
STRONG_SECRET_BYTES = 16       # shorter, a secret is called weak (and may occur in text by chance)


@dataclass(frozen=True)
class RemoteUrl:
    base: str                       # scheme://host[:port]/path: no user info, no trailing slash
    username: Optional[str] = None
    password: Optional[str] = None

    def entry_url(self, key: str) -> str:
        return f"{self.base}/{key[:2]}/{key[2:]}"


def parse_url(raw: str, where: str, allow_credentials: bool = True) -> RemoteUrl:
    """``raw`` as a remote cache URL; ConfigError naming ``where`` (never echoing credentials)."""
    try:
        parts = urllib.parse.urlsplit(raw.strip())
        port = parts.port
    except ValueError:
        parts = port = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname \
            or parts.query or parts.fragment:
        raise ConfigError(f"{where}: expected {URL_FORM}, not {redact_url(raw)!r}")
    if not allow_credentials and (parts.username is not None or parts.password is not None):
        raise ConfigError(f"{where}: credentials do not belong in a committed file: give them in "
                          "GENSPIRV_REMOTE_CACHE's URL or GENSPIRV_REMOTE_CACHE_TOKEN")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host + (f":{port}" if port is not None else "")
    base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    unquote = urllib.parse.unquote
    return RemoteUrl(base, None if parts.username is None else unquote(parts.username),
                     None if parts.password is None else unquote(parts.password))


def redact_url(raw: str) -> str:
    """``raw`` with any user info replaced by ``***``: the only way a URL reaches a message."""
    scheme, sep, rest = raw.partition("://")
    if not sep:
        return "***" if "@" in raw else raw
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    return f"{scheme}://{authority}{slash}{path}"


def redact(text: str, hidden: Iterable[str]) -> str:
    """``text`` with each of ``hidden`` replaced by ``***``: a secret of 16 bytes or more wherever
    it appears (it does not occur by chance), a shorter one only where it stands whole, not
    inside a longer word (a one-letter secret would otherwise turn every such letter into ***)."""
    for secret in sorted(hidden, key=len, reverse=True):
        if len(secret.encode("utf-8")) >= STRONG_SECRET_BYTES:
            text = text.replace(secret, "***")
        else:
            text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(secret)}(?![A-Za-z0-9_])", "***", text)
    return text


def weak_secret(secret: Optional[str], name: str) -> Optional[str]:
    """The warning for a secret shorter than 16 bytes (None when there is none, or it is long enough)."""
    size = len(secret.encode("utf-8")) if secret else 0
    if not secret or size >= STRONG_SECRET_BYTES:
        return None
    return (f"{name} is {size} byte{'s' if size != 1 else ''} long: a secret shorter than "
            f"{STRONG_SECRET_BYTES} bytes is weak; use a random one of 32 bytes or more")
