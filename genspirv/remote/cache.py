"""The remote compile cache: compiled blobs shared by machines through a plain HTTP store.

Takes the remote settings (``GENSPIRV_REMOTE_CACHE`` or ``[tool.genspirv]
remote_cache``, and ``GENSPIRV_REMOTE_CACHE_MODE``, ``_SECRET``, ``_TOKEN``,
``_TIMEOUT``) and gives a ``RemoteCache``, the level under the local blob
caches:

- ``ask(lookup, ...)`` queues one variant's request on a bounded pool and
  gives a future of its ``Hit``, None for a miss (the entries that verify,
  ``genspirv.remote.entry``: the blob's files hash to its key here, and the
  blob reflects): the build gates each variant's compile on its own future,
  so compiles start while other requests are in flight, and the hits become
  remote hits in the plan (``genspirv.buildsys.plan.found_step``); ``fetch(lookups,
  ...)`` waits for all of a list (what ``--explain`` resolves first);
  ``finish_asking()`` then counts the unverified entries past the named ones;
- ``publish(...)`` queues a compiled blob for the background pool to store
  (read-write mode only), so the build calls it as each compile finishes;
  ``close()`` waits for those stores.

It counts its hits, misses, stores and errors into a ``cachestats.Tally``
(``genspirv cache stats``).

Entries live at ``<url>/<key[:2]>/<key[2:]>`` (ccache's HTTP layout: GET, HEAD,
PUT; an nginx WebDAV location or an S3-style gateway). The store is never
needed: a refused connection, an HTTP error or a request slower than the
time-out costs one warning, after which the build asks that server nothing
more and compiles locally; an entry that does not verify costs a warning
naming its key and a local compile. Credentials (user info in the URL, the
bearer token) and the secret never appear in a message. The rules are in
docs/GUIDE.md, "Sharing compiles across machines".

The store is not trusted (docs/SECURITY.md), signed entries included: an entry
naming a file that is not a regular file inside the project
(``genspirv.remote.entry_files``) is a miss, with its warning, before anything is opened.
"""

from __future__ import annotations

import enum
import hashlib
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from .. import settings
from ..cachestats import Stat, Tally
from ..errors import GenspirvError
from .entry import Entry, EntryError, EntryKind, decode, encode, index_key
from .entry_files import foreign_dep
from ..project.remote_url import RemoteUrl, parse_url, redact, weak_secret
from ..project.variants import CompilerName

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

COMPILER_NAMES = frozenset(c.value for c in CompilerName)

WORKERS = 8                     # requests in flight: enough to hide a network's latency
CONNECT_TIMEOUT = 1.0           # seconds to open a connection, at most (less when the time-out is less)
MAX_ENTRY_BYTES = 64 << 20      # a fetched entry past this is junk, not a shader
NAMED_WARNINGS = 5              # unverified entries named one by one; the rest are counted


class Mode(enum.Enum):
    READ = "read"
    READ_WRITE = "read-write"


@dataclass(frozen=True)
class RemoteSettings:
    url: RemoteUrl
    mode: Mode = Mode.READ
    secret: Optional[str] = None
    token: Optional[str] = None
    timeout: float = 3.0

    @property
    def hidden(self) -> tuple[str, ...]:
        """Every string no message may show."""
        return tuple(s for s in (self.secret, self.token, *self.url.hidden) if s)


def remote_settings(config_url: Optional[str] = None) -> Optional[RemoteSettings]:
    """The settings in force: the env var over the config key; None when neither names a server."""
    raw = settings.get("GENSPIRV_REMOTE_CACHE")
    if raw is not None and raw.strip().lower() == "off":
        return None
    if raw:
        url = parse_url(raw, "GENSPIRV_REMOTE_CACHE")
    elif config_url:
        url = parse_url(config_url, "tool.genspirv.remote_cache", allow_credentials=False)
    else:
        return None
    return RemoteSettings(url, Mode(settings.get("GENSPIRV_REMOTE_CACHE_MODE")),
                          settings.get("GENSPIRV_REMOTE_CACHE_SECRET"),
                          settings.get("GENSPIRV_REMOTE_CACHE_TOKEN"),
                          settings.get("GENSPIRV_REMOTE_CACHE_TIMEOUT"))


# -- HTTP ---------------------------------------------------------------------


class _Unavailable(Exception):
    """The server cannot be used for the rest of the build; the text says why."""


class _Refused(Exception):
    """The server refused to store an entry (it may still serve reads)."""


class _Http:
    """GET and PUT of entries over one urllib3 pool: keep-alive connections, time-outs, no retries."""

    def __init__(self, s: RemoteSettings):
        import urllib3     # here, not at import: a no-op build never pays for it

        self._urllib3 = urllib3
        self.url, self.timeout = s.url, s.timeout
        self.connect_timeout = min(CONNECT_TIMEOUT, s.timeout)
        headers = {"User-Agent": "genspirv"}
        if s.token:
            headers["Authorization"] = f"Bearer {s.token}"
        elif s.url.username is not None:
            headers.update(urllib3.util.make_headers(basic_auth=f"{s.url.username}:{s.url.password or ''}"))
        self.headers = headers
        self.pool = urllib3.PoolManager(num_pools=2, maxsize=WORKERS, retries=False,
                                        timeout=urllib3.Timeout(connect=self.connect_timeout, read=s.timeout))

    def get(self, key: str) -> Optional[bytes]:
        """The entry at ``key``, None when the store has none; _Unavailable when it cannot answer."""
        start = time.monotonic()
        resp = self._request("GET", key)
        try:
            if resp.status == 404:
                return None
            if resp.status != 200:
                raise _Unavailable(f"answered HTTP {resp.status} to a GET{_status_hint(resp.status)}")
            return self._body(resp, start)
        finally:
            resp.release_conn()

    def put(self, key: str, data: bytes) -> None:
        resp = self._request("PUT", key, data)
        resp.release_conn()
        if resp.status in (200, 201, 204):
            return
        if resp.status >= 500:
            raise _Unavailable(f"answered HTTP {resp.status} to a PUT")
        raise _Refused(f"refused to store an entry (HTTP {resp.status}){_status_hint(resp.status)}")

    def close(self) -> None:
        self.pool.clear()

    def _request(self, method: str, key: str, body: Optional[bytes] = None):
        headers = dict(self.headers, **({"Content-Type": "application/octet-stream"} if body is not None else {}))
        try:
            resp = self.pool.request(method, self.url.entry_url(key), body=body, headers=headers,
                                     preload_content=False, redirect=False)
        except self._urllib3.exceptions.HTTPError as exc:
            raise _Unavailable(self._reason(exc)) from None
        if method != "GET" or resp.status != 200:
            try:
                resp.drain_conn()     # the connection goes back clean for the next request
            except self._urllib3.exceptions.HTTPError as exc:
                raise _Unavailable(self._reason(exc)) from None
        return resp

    def _body(self, resp, start: float) -> bytes:
        """The whole body, within the time-out from the request's start: a server that trickles
        a byte at a time is as slow as one that never answers."""
        chunks, size = [], 0
        try:
            while True:
                chunk = resp.read1(1 << 16)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_ENTRY_BYTES:
                    resp.close()
                    raise EntryError(f"larger than {MAX_ENTRY_BYTES >> 20} MiB")
                if time.monotonic() - start > self.timeout:
                    resp.close()
                    raise _Unavailable(f"took more than {self.timeout:g} s to send an entry")
        except self._urllib3.exceptions.HTTPError as exc:
            raise _Unavailable(self._reason(exc)) from None

    def _reason(self, exc: Exception) -> str:
        e = self._urllib3.exceptions
        # Most specific first: urllib3 makes a failed connection a kind of connect time-out.
        if isinstance(exc, e.NameResolutionError):
            return "names a host that does not resolve"
        if isinstance(exc, e.NewConnectionError):
            return "refused the connection" if "refused" in str(exc).lower() else "is unreachable"
        if isinstance(exc, e.ConnectTimeoutError):
            return f"did not accept a connection within {self.connect_timeout:g} s"
        if isinstance(exc, (e.ReadTimeoutError, e.TimeoutError)):
            return f"did not answer within {self.timeout:g} s"
        if isinstance(exc, e.SSLError):
            return "failed the TLS handshake"
        return "dropped the connection"


def _status_hint(status: int) -> str:
    return {401: ": check the credentials (user info in the URL, or GENSPIRV_REMOTE_CACHE_TOKEN)",
            403: ": check the credentials and the store's permissions",
            405: ": the location takes no PUT (nginx: dav_methods PUT)",
            413: ": the entry is larger than the store takes (nginx: client_max_body_size)"}.get(status, "")


# -- the cache level --------------------------------------------------------------


@dataclass(frozen=True)
class Lookup:
    """A variant the build would compile, and what its last record says about it."""

    variant: Any                  # config.Variant
    key: Optional[str] = None     # its content key from the last record, when it has one
    sha256: Optional[str] = None  # the blob that record expects


@dataclass(frozen=True)
class Hit:
    key: str
    deps: tuple[str, ...]
    blob: bytes
    info: Any                     # the blob's reflection; None when it came from a local cache
    remote: bool                  # False: the index named a key a local cache already held
    compiler: Optional[str] = None   # the compiler that built it, when not the default


KeyOf = Callable[[Any, Sequence[str]], Optional[str]]     # (variant, deps) -> content key here
Then = Callable[[Lookup, Hit], Any]         # what a hit becomes for the build, on the pool thread


class RemoteCache:
    """One build's use of the remote store; a disabled one (no URL set) does nothing."""

    def __init__(self, remote: Optional[RemoteSettings], warn: Optional[Callable[[str], None]] = None,
                 tally: Optional[Tally] = None, root: Optional[Path] = None):
        """``root``: the project whose files entries may name (None: only the entry format's
        check of each path, for a caller that hashes nothing from disk)."""
        self.settings = remote
        self._root = os.path.realpath(root) if root is not None else None
        self.tally = tally or Tally()
        self._warn_to = warn
        self._lock = threading.Lock()
        self._http: Optional[_Http] = None
        self._pool: Optional[ThreadPoolExecutor] = None
        self._down = False              # after the first failure: ask nothing more
        self._refused = False           # the server took no store: store nothing more
        self._unverified = 0
        weak = weak_secret(remote.secret, "GENSPIRV_REMOTE_CACHE_SECRET") if remote is not None else None
        if weak is not None:        # once per build; the line holds no secret, so nothing is redacted
            self._say(weak)

    @classmethod
    def for_config(cls, config, tally: Optional[Tally] = None) -> "RemoteCache":
        return cls(remote_settings(getattr(config, "remote_cache", None)), tally=tally, root=config.root)

    @property
    def enabled(self) -> bool:
        return self.settings is not None

    @property
    def writable(self) -> bool:
        return self.enabled and self.settings.mode is Mode.READ_WRITE

    # -- fetching ---------------------------------------------------------------

    def ask(self, lk: Lookup, key_of: KeyOf, local_get: Callable[[str], Optional[bytes]],
            reflect: Callable[[Any, bytes], Any], then: Then = lambda lk, hit: hit) -> Future:
        """A future of ``then(lk, hit)`` for ``lk``'s verified entry, or None for a miss (the build's
        to compile), its request queued behind the others (WORKERS at a time). A fault on the
        pool is a warning and a miss (``_guarded``)."""
        return self._executor().submit(self._guarded, self._counted, lk, key_of, local_get, reflect, then)

    def fetch(self, lookups: Sequence[Lookup], key_of: KeyOf, local_get: Callable[[str], Optional[bytes]],
              reflect: Callable[[Any, bytes], Any], then: Then = lambda lk, hit: hit) -> dict[str, Any]:
        """Verified entries for ``lookups`` (``then(lk, hit)`` of each), by variant name, every
        request answered before it returns; the rest are the build's to compile."""
        if not self.enabled or not lookups or self._down:
            return {}
        futures = [(lk, self.ask(lk, key_of, local_get, reflect, then)) for lk in lookups]
        hits = {}
        try:
            for lk, future in futures:
                hit = future.result()
                if hit is not None:
                    hits[lk.variant.name] = hit
        except BaseException:
            self.stop_asking([f for _, f in futures])
            raise
        self.finish_asking()
        return hits

    def stop_asking(self, futures: Sequence[Future]) -> None:
        """An interrupt: leave the queued requests unasked."""
        self._down = True
        for future in futures:
            future.cancel()

    def finish_asking(self) -> None:
        """After the last answer: one line for the unverified entries past the named ones."""
        if self._unverified > NAMED_WARNINGS:
            self._warn(f"remote cache {self.settings.url.base}: {self._unverified - NAMED_WARNINGS} more "
                       "entries did not verify and were compiled here")

    def _counted(self, lk: Lookup, key_of: KeyOf, local_get, reflect, then) -> Any:
        hit = None
        try:
            hit = self._lookup(lk, key_of, local_get, reflect)
        finally:        # a fault (a warning, from _guarded) counts as the miss it is
            self._count(hit)
        return None if hit is None else then(lk, hit)

    def _count(self, hit: Optional[Hit]) -> None:
        if hit is not None:
            self.tally.add(Stat.REMOTE_HITS, hit.remote)
        else:
            self.tally.add(Stat.REMOTE_MISSES)

    def _lookup(self, lk: Lookup, key_of: KeyOf, local_get, reflect) -> Optional[Hit]:
        """The record's key first; else the index names the key the variant's files give here."""
        v = lk.variant
        if lk.key is not None:
            hit = self._blob_hit(v, lk.key, lk.sha256, key_of, reflect)
            if hit is not None or self._down:
                return hit
        source_key = key_of(v, ())
        if source_key is None:
            return None
        where = index_key(source_key)
        data = self._get(where)
        if data is None:
            return None
        try:
            entry = self._decode(data, where, EntryKind.INDEX)
        except EntryError as exc:
            self._unverified_entry(where, v, str(exc))
            return None
        key = key_of(v, entry.deps)
        if key is None or key != entry.content_key or key == lk.key:
            return None        # stored by a build of other headers: a miss, not an attack
        blob = local_get(key)
        if blob is not None:
            return Hit(key, entry.deps, blob, None, remote=False, compiler=entry.compiler)
        return self._blob_hit(v, key, None, key_of, reflect)

    def _blob_hit(self, v, key: str, sha: Optional[str], key_of: KeyOf, reflect) -> Optional[Hit]:
        data = self._get(key)
        if data is None:
            return None
        try:
            entry = self._decode(data, key, EntryKind.BLOB)
            if key_of(v, entry.deps) != key:
                raise EntryError("its files do not give its key here")
            if sha is not None and hashlib.sha256(entry.blob).hexdigest() != sha:
                raise EntryError("not the blob the last build recorded for this key")
            if entry.compiler is not None and entry.compiler not in COMPILER_NAMES:
                raise EntryError(f"built by a compiler this genspirv does not know ({entry.compiler})")
            info = reflect(v, entry.blob)        # the module must parse, as a local cache hit's does
        except GenspirvError as exc:
            self._unverified_entry(key, v, str(exc))
            return None
        except Exception as exc:                 # noqa: BLE001 - a reader's bug on junk is still junk
            self._unverified_entry(key, v, f"does not reflect: {type(exc).__name__}")
            return None
        return Hit(key, entry.deps, entry.blob, info, remote=True, compiler=entry.compiler)

    def _decode(self, data: bytes, key: str, kind: EntryKind) -> Entry:
        """The entry ``data`` holds, verified, every file it names one the build may hash;
        EntryError otherwise."""
        entry = decode(data, key, kind, self.settings.secret)
        foreign = foreign_dep(self._root, entry.deps) if self._root is not None else None
        if foreign is not None:
            raise EntryError(foreign)
        return entry

    def _get(self, key: str) -> Optional[bytes]:
        if self._down:
            return None
        try:
            return self._client().get(key)
        except _Unavailable as exc:
            self._go_down(str(exc))
        except EntryError as exc:
            self._unverified_entry(key, None, str(exc))
        return None

    # -- storing ----------------------------------------------------------------

    def publish(self, key: str, deps: Sequence[str], blob: bytes, source_key: Optional[str],
                compiler: Optional[str] = None) -> None:
        """Store a compiled blob under ``key`` (with the name of the ``compiler`` that built it,
        when not the default), then its index entry under ``source_key``'s (read-write only). Only queued here: encoding and PUTs run on the pool, so the build's
        progress loop, which calls this as each compile finishes, never waits for the network."""
        if not self.writable or self._down or self._refused:
            return
        self._executor().submit(self._guarded, self._store, key, tuple(deps), blob, source_key, compiler)

    def _store(self, key: str, deps: tuple[str, ...], blob: bytes, source_key: Optional[str],
               compiler: Optional[str]) -> None:
        secret = self.settings.secret
        puts = [(key, encode(Entry(EntryKind.BLOB, key, deps, blob, compiler=compiler), secret))]
        if source_key is not None:       # the blob first: an index never names a blob not yet stored
            where = index_key(source_key)
            puts.append((where, encode(Entry(EntryKind.INDEX, where, deps, content_key=key, compiler=compiler),
                                       secret)))
        for where, data in puts:
            if self._down or self._refused:
                return
            try:
                self._client().put(where, data)
                self.tally.add(Stat.REMOTE_STORES, where == key)     # blob entries; not their index
            except _Unavailable as exc:
                self._go_down(str(exc))
            except _Refused as exc:
                with self._lock:
                    first, self._refused = not self._refused, True
                if first:
                    self.tally.add(Stat.REMOTE_ERRORS)
                    self._warn(f"remote cache {self.settings.url.base} {exc}; this build stores nothing more")

    def close(self, wait: bool = True) -> None:
        """Wait for the stores (each bounded by the time-out), or drop the queued ones."""
        if self._pool is not None:
            if not wait:
                self._down = True
            self._pool.shutdown(wait=wait, cancel_futures=not wait)
        if self._http is not None and wait:
            self._http.close()

    def __enter__(self) -> "RemoteCache":
        return self

    def __exit__(self, exc_type, *_exc) -> None:
        # A failed build still stores what it compiled; an interrupt does not wait.
        self.close(wait=exc_type is None or issubclass(exc_type, Exception))

    # -- shared -------------------------------------------------------------------

    def _guarded(self, work, *args):
        """``work(*args)`` on a pool thread: whatever goes wrong there ends the remote cache's
        part in the build with a warning, never the build."""
        try:
            return work(*args)
        except Exception as exc:                 # noqa: BLE001 - the store is never needed
            self._go_down(f"could not be used ({type(exc).__name__}: {exc})")
            return None

    def _client(self) -> _Http:
        with self._lock:
            if self._http is None:
                self._http = _Http(self.settings)
            return self._http

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor     # with the first request
                self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="genspirv-remote")
            return self._pool

    def _go_down(self, reason: str) -> None:
        with self._lock:
            first, self._down = not self._down, True
        if first:
            self.tally.add(Stat.REMOTE_ERRORS)
            self._warn(f"remote cache {self.settings.url.base} {reason}; "
                       "this build asks it nothing more and compiles locally")

    def _unverified_entry(self, key: str, variant, reason: str) -> None:
        self.tally.add(Stat.REMOTE_ERRORS)
        with self._lock:
            self._unverified += 1
            named = self._unverified <= NAMED_WARNINGS
        if named:
            what = f" for {variant.name}" if variant is not None else ""
            self._warn(f"remote cache: entry {key}{what} ignored ({reason}); compiled here instead")

    def _warn(self, text: str) -> None:
        self._say(redact(text, self.settings.hidden))

    def _say(self, text: str) -> None:
        line = f"genspirv: warning: {text}"
        if self._warn_to is not None:
            self._warn_to(line)
        else:       # one write: print's two (the text, then its newline) ran lines from pool threads together
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
