"""A remote compile cache's URL: checked, and shown without its credentials.

Takes the text of ``GENSPIRV_REMOTE_CACHE`` or of ``[tool.genspirv]
remote_cache`` and gives a ``RemoteUrl`` (the base URL with the user info split
off), or a ``ConfigError`` naming where the text came from and the form
expected, which never shows a credential. ``redact_url`` is the only way a URL
reaches a message: the user info of the parsed URL becomes ``***``; ``redact``
hides the secrets in any other text. Here, beneath the configuration, so the
configuration can refuse a bad key when it is read; the cache itself is
``genspirv.remote.cache``. The threat model is docs/SECURITY.md.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ..errors import ConfigError
from ..settings import control_character

URL_FORM = "http(s)://host[:port]/path"
STRONG_SECRET_BYTES = 16       # shorter, a secret is called weak (and may occur in text by chance)


@dataclass(frozen=True)
class RemoteUrl:
    base: str                       # scheme://host[:port]/path: no user info, no trailing slash
    username: Optional[str] = None
    password: Optional[str] = None
    password_as_given: Optional[str] = field(default=None, repr=False)    # percent-encoded, as in the URL

    def entry_url(self, key: str) -> str:
        return f"{self.base}/{key[:2]}/{key[2:]}"

    @property
    def hidden(self) -> tuple[str, ...]:
        """The password as given, as decoded and as the basic-auth header carries it (base64 of
        ``user:password``, which a server may echo back): what no message may show."""
        if not self.password:
            return ()
        basic = base64.b64encode(f"{self.username or ''}:{self.password}".encode("utf-8")).decode("ascii")
        return tuple(dict.fromkeys((self.password, self.password_as_given or self.password, basic)))


def parse_url(raw: str, where: str, allow_credentials: bool = True) -> RemoteUrl:
    """``raw`` as a remote cache URL; ConfigError naming ``where`` (never echoing credentials).

    A control character is refused rather than dropped (urllib drops tabs and line ends
    silently: a URL read from a CRLF file would lose its ``\\r`` here and keep it elsewhere),
    and so is an ``@`` past the authority: a password holding an unencoded ``/``, ``?`` or ``#``
    (base64 has ``/``) ends the authority early, leaving the rest of it in the path, where it
    would be requested and printed."""
    bad = control_character(raw)
    if bad is not None:
        raise ConfigError(f"{where}: the URL holds the control character {bad}: give it alone, on one line "
                          "(the URL is not shown: it may hold a password)")
    text = raw.strip()
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        parts = None
    if parts is not None and "@" in text and not _authority_holds_every_at(parts):
        raise ConfigError(f"{where}: expected {URL_FORM}, not {redact_url(text)!r}: an '@' stands past the "
                          "host; percent-encode a '/', '?', '#' or '@' in the user info (%2F, %3F, %23, %40)")
    try:
        port = parts.port if parts is not None else None
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname \
            or parts.query or parts.fragment:
        raise ConfigError(f"{where}: expected {URL_FORM}, not {redact_url(text)!r}")
    if not allow_credentials and (parts.username is not None or parts.password is not None):
        raise ConfigError(f"{where}: credentials do not belong in a committed file: give them in "
                          "GENSPIRV_REMOTE_CACHE's URL or GENSPIRV_REMOTE_CACHE_TOKEN")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host + (f":{port}" if port is not None else "")
    base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    unquote = urllib.parse.unquote
    return RemoteUrl(base, None if parts.username is None else unquote(parts.username),
                     None if parts.password is None else unquote(parts.password), parts.password)


def _authority_holds_every_at(parts: urllib.parse.SplitResult) -> bool:
    return "@" not in parts.path + parts.query + parts.fragment and "@" in parts.netloc


def redact_url(raw: str) -> str:
    """``raw`` as a message may show it: the only way a URL reaches a message.

    Redacted by the parsed URL, not by a pattern: the user info of the authority urllib
    finds becomes ``***``, and so do a query and a fragment (a presigned URL's signature, a
    token passed as a parameter). When an ``@`` stands anywhere else (a password with an
    unencoded ``/``, ``?`` or ``#`` splits where no reader can tell user info from host and
    path), any part but an http(s) scheme may be the password: only that scheme is shown."""
    try:
        parts = urllib.parse.urlsplit(raw)
    except ValueError:
        return "***"
    if "@" in raw and not _authority_holds_every_at(parts):
        return f"{parts.scheme}://***" if parts.scheme in ("http", "https") else "***"
    netloc = f"***@{parts.netloc.rpartition('@')[2]}" if "@" in parts.netloc else parts.netloc
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "***" if parts.query else "",
                                    "***" if parts.fragment else ""))


def redact(text: str, hidden: Iterable[str]) -> str:
    """``text`` with each of ``hidden`` replaced by ``***``: a secret of 16 bytes or more wherever
    it appears (it does not occur by chance), a shorter one only where it stands whole, not
    inside a longer word (a one-letter secret would otherwise turn every such letter into ***).
    Each also in the forms an exception's text may quote it in: escaped as a repr gives it, and
    percent-encoded as in a URL."""
    forms = {form for secret in hidden if secret
             for form in (secret, ascii(secret)[1:-1], repr(secret.encode("utf-8"))[2:-1],
                          urllib.parse.quote(secret, safe=""))}
    for secret in sorted(forms, key=len, reverse=True):
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
