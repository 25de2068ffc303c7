"""A remote store's entries are not trusted, signed or not (docs/SECURITY.md).

The secret may be empty or leaked, so each hostile entry here is signed with the
team's own secret. An entry lists the files its key was made from; every path
must be inside the project, a regular file, and nothing else is opened: a
``../`` or absolute path, ``/dev/zero``, a FIFO, a folder, a symlink out of the
project, thousands of files, a huge entry, a header nested past the JSON
reader's depth, fields of the wrong type are each refused quickly, as a miss
with one warning line, and never read. What reaches the build is watched two
ways: the ``key_of`` the build hands the cache (the build's hashing of an
entry's files) records every path it is asked about, and an audit hook records
every file this process opens while the cache answers.

The store is an in-process HTTP server holding the entries in a dict; one test
runs the real build against a real nginx store (benchmarks/webdav.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from fake_store import serving
from genspirv.remote.cache import Lookup, RemoteCache, remote_settings
from genspirv.remote.entry import MAGIC, MAX_DEPS, Entry, EntryKind, encode, index_key

SECRET = "team-secret-leaked-9f2c81d4"
SOURCE_KEY = hashlib.sha256(b"the source's key").hexdigest()
GOOD_DEPS = ("glsl/a.comp", "glsl/include/inc.glsl")
BLOB = b"\x03\x02\x23\x07" + b"\0" * 60


class _Variant:
    name = "a"


# -- the watchers -------------------------------------------------------------------------------

_opened: list[str] = []
_watching = threading.Event()


_PYTHON = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix})


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _watching.is_set() and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        if not os.path.realpath(path).startswith(_PYTHON):     # a module imported on the way
            _opened.append(path)


sys.addaudithook(_audit)


@contextlib.contextmanager
def opens():
    """The files this process opens inside the block (a list filled as it runs)."""
    _opened.clear()
    _watching.set()
    try:
        yield _opened
    finally:
        _watching.clear()


# -- the store and the project -----------------------------------------------------------------------


@contextlib.contextmanager
def store(entries: dict[str, bytes], endless: bool = False):
    """An HTTP store serving ``entries`` by key (``<url>/<key[:2]>/<key[2:]>``); ``endless``: every
    GET is a 200 whose body never ends."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            parts = self.path.split("/")
            data = entries.get(parts[-2] + parts[-1]) if len(parts) >= 2 else None
            if endless:
                self.send_response(200)
                self.send_header("Content-Length", str(1 << 40))
                self.end_headers()
                chunk = MAGIC + b"\0" * (1 << 20)
                with contextlib.suppress(OSError):
                    while True:
                        self.wfile.write(chunk)
            if data is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    with serving(Handler) as host:
        yield f"http://{host}/cache"


@pytest.fixture
def project(tmp_path):
    """A project with every kind of file an entry may name: sources, a FIFO, a folder, symlinks
    out of it (to a file, to a folder) and one inside it; and a file outside it."""
    root = tmp_path / "proj"
    (root / "glsl/include").mkdir(parents=True)
    (root / "glsl/a.comp").write_text("#version 450\nvoid main() {}\n")
    (root / "glsl/include/inc.glsl").write_text("#define X 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.txt").write_text("not the project's\n")
    os.mkfifo(root / "glsl/fifo")
    (root / "glsl/dir").mkdir()
    (root / "glsl/out").symlink_to(outside / "private.txt")
    (root / "glsl/outdir").symlink_to(outside)
    (root / "glsl/in").symlink_to(root / "glsl/a.comp")
    return root


def key_of_files(root: Path, asked: list):
    """The build's hashing of an entry's files, as the cache calls it: (variant, deps) -> key.
    Records every list of paths it is asked about; the key is the files' sha256s."""
    def key_of(variant, deps):
        asked.append(tuple(deps))
        if not deps:
            return SOURCE_KEY
        digest = hashlib.sha256()
        for dep in sorted(deps):
            path = root / dep
            digest.update(dep.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"-"))
        return digest.hexdigest()
    return key_of


def entries_for(deps, root: Path, *, blob_deps=None, raw_index: bytes | None = None) -> tuple[dict, str]:
    """The store's entries for the variant: an index entry naming ``deps`` and the blob entry the
    good files give, both signed with SECRET; and the key of that blob."""
    key = key_of_files(root, [])(None, GOOD_DEPS)
    where = index_key(SOURCE_KEY)
    index = raw_index if raw_index is not None else encode(Entry(EntryKind.INDEX, where, tuple(deps), content_key=key), SECRET)
    blob = encode(Entry(EntryKind.BLOB, key, tuple(blob_deps if blob_deps is not None else GOOD_DEPS), BLOB), SECRET)
    return {where: index, key: blob}, key


def ask(url: str, root: Path, lookup: Lookup, monkeypatch) -> tuple[dict, list[str], list[tuple], list[str], float]:
    """One fetch: (hits, warnings, paths the build was asked to hash, files opened, seconds)."""
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE", url)
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_SECRET", SECRET)
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_TIMEOUT", "10")
    said, asked = [], []
    start = time.monotonic()
    with opens() as opened, RemoteCache(remote_settings(), warn=said.append, root=root) as cache:
        hits = cache.fetch([lookup], key_of_files(root, asked), lambda k: None, lambda v, b: "reflected")
    return hits, said, asked, list(opened), time.monotonic() - start


def test_a_signed_entry_of_the_projects_files_is_taken(project, monkeypatch):
    """The control of every refusal below: the same entry naming the project's own files (one
    through a symlink that stays inside) is a hit, and only those files are opened."""
    for deps in (GOOD_DEPS, ("glsl/in", "glsl/include/inc.glsl")):
        entries, key = entries_for(deps, project, blob_deps=deps)
        entries = {k: v for k, v in entries.items()}
        if deps != GOOD_DEPS:       # the index names the symlink; the blob entry it points at too
            key = key_of_files(project, [])(None, deps)
            entries = entries_for(deps, project, blob_deps=deps)[0]
            entries[index_key(SOURCE_KEY)] = encode(Entry(EntryKind.INDEX, index_key(SOURCE_KEY), deps,
                                                          content_key=key), SECRET)
            entries[key] = encode(Entry(EntryKind.BLOB, key, deps, BLOB), SECRET)
        with store(entries) as url:
            hits, said, asked, opened, _ = ask(url, project, Lookup(_Variant()), monkeypatch)
        assert list(hits) == ["a"] and said == [], said
        assert asked == [(), deps, deps]
        assert {Path(p).resolve() for p in opened} <= {(project / d).resolve() for d in deps}


HOSTILE = {
    "parent": (["../outside/private.txt"], "path '../outside/private.txt' must not contain '..'"),
    "deep parent": (["glsl/../../outside/private.txt"], "must not contain '..'"),
    "absolute": (["/etc/passwd"], "path '/etc/passwd' must be relative to the project root"),
    "device": (["glsl/a.comp", "/dev/zero"], "#1: path '/dev/zero' must be relative to the project root"),
    "windows": (["C:/Windows/win.ini"], "must be relative to the project root"),
    "backslash": (["glsl\\..\\..\\x"], "must be relative to the project root"),
    "not normalised": (["glsl/./a.comp"], "is not a normalised posix path"),
    "empty": ([""], "#0 is not a file name"),
    "escape": (["glsl/\x1b]0;owned\x07a.comp"], "holds the control character '\\x1b' inside it"),
    "nul": (["glsl/a.comp\0.txt"], "holds the control character '\\x00' inside it"),
    "fifo": (["glsl/fifo"], "names 'glsl/fifo', which is not a regular file"),
    "folder": (["glsl/dir"], "names 'glsl/dir', which is not a regular file"),
    "symlink out": (["glsl/out"], "names 'glsl/out', which leads out of the project"),
    "through a symlinked folder": (["glsl/outdir/private.txt"], "which leads out of the project"),
    "too many": ([f"glsl/{i}.glsl" for i in range(MAX_DEPS + 1)], "header field 'deps' missing or malformed"),
    "too long": (["glsl/" + "x" * 5000], "#0 is not a file name"),
    "wrong type": ([["glsl/a.comp"]], "#0 is not a file name"),
    "number": ([7], "#0 is not a file name"),
}


@pytest.mark.parametrize("case", list(HOSTILE), ids=list(HOSTILE))
def test_a_hostile_index_entry_is_a_miss_before_anything_is_opened(project, monkeypatch, case):
    """A fresh clone asks the index entry which files to hash: (was: the build hashed whatever it
    named: read a file outside the project, hung on the FIFO, read /dev/zero without end)."""
    deps, reason = HOSTILE[case]
    where = index_key(SOURCE_KEY)
    header = {"kind": "index", "key": where, "deps": deps, "size": 0, "signed": True,
              "sha256": hashlib.sha256(b"").hexdigest(), "content_key": "ab" * 32}
    entries, _ = entries_for(GOOD_DEPS, project, raw_index=_signed(header))
    with store(entries) as url:
        hits, said, asked, opened, seconds = ask(url, project, Lookup(_Variant()), monkeypatch)
    assert hits == {} and seconds < 3
    assert len(said) == 1 and said[0].startswith(f"genspirv: warning: remote cache: entry {where} for a ignored (")
    assert reason in said[0] and said[0].endswith("; compiled here instead"), said[0]
    assert "\x1b" not in said[0] and "\0" not in said[0]
    assert asked == [()]                  # the entry's files never reached the build
    assert opened == []


@pytest.mark.parametrize("case", ["parent", "device", "fifo", "symlink out"])
def test_a_hostile_blob_entry_under_a_recorded_key_is_a_miss_too(project, monkeypatch, case):
    """A machine that built before asks the blob entry by its recorded key: the same checks."""
    deps, reason = HOSTILE[case]
    entries, key = entries_for(GOOD_DEPS, project, blob_deps=deps)
    with store(entries) as url:
        hits, said, asked, opened, seconds = ask(url, project, Lookup(_Variant(), key), monkeypatch)
    assert hits == {} and seconds < 3 and asked == [(), GOOD_DEPS]
    assert len(said) == 1 and reason in said[0] and f"entry {key} for a ignored" in said[0], said
    assert all(Path(p).resolve().is_relative_to(project.resolve()) for p in opened)
    assert not any(p.endswith(("fifo", "private.txt", "zero")) for p in opened)


def _signed(header: dict, blob: bytes = b"") -> bytes:
    import hmac
    body = MAGIC + json.dumps(header, sort_keys=True, separators=(",", ":")).encode() + b"\n" + blob
    return body + hmac.new(SECRET.encode(), body, hashlib.sha256).digest()


@pytest.mark.parametrize("case, data, reason", [
    ("deeply nested", MAGIC + b"[" * 200_000 + b"\n", "unreadable header"),
    ("nested object", MAGIC + b'{"a":' * 200_000 + b"\n", "unreadable header"),
    ("header without end", MAGIC + b"{" + b" " * (2 << 20), "truncated header"),
    ("not json", MAGIC + b"\xff\xfe\n", "unreadable header"),
    ("a list", MAGIC + b"[1, 2]\n", "unreadable header"),
    ("size a string", None, "header field 'size' missing or malformed"),
    ("deps a string", None, "header field 'deps' missing or malformed"),
    ("huge number", MAGIC + b'{"size": ' + b"9" * 5000 + b"}\n", "unreadable header"),
])
def test_a_malformed_entry_is_refused_quickly_in_one_line(project, monkeypatch, case, data, reason):
    """Junk in the header (was: a header nested 200,000 deep escaped as a RecursionError: the
    whole remote cache given up with a warning naming the exception)."""
    where = index_key(SOURCE_KEY)
    if data is None:
        header = {"kind": "index", "key": where, "deps": list(GOOD_DEPS), "size": 0, "signed": True,
                  "sha256": hashlib.sha256(b"").hexdigest(), "content_key": "ab" * 32}
        header.update({"size": "0"} if case == "size a string" else {"deps": "glsl/a.comp"})
        data = _signed(header)
    with store({where: data}) as url:
        hits, said, asked, opened, seconds = ask(url, project, Lookup(_Variant()), monkeypatch)
    assert hits == {} and seconds < 3 and asked == [()] and opened == []
    assert said == [f"genspirv: warning: remote cache: entry {where} for a ignored ({reason}); compiled here instead"]


def test_thousands_of_files_inside_the_project_are_hashed_as_missing_quickly(project, monkeypatch):
    """MAX_DEPS paths, none there: within the format, so the build is asked, finds them gone
    (its key is not the entry's): a miss, without a warning, in well under a second."""
    deps = [f"glsl/gen/{i}.glsl" for i in range(MAX_DEPS)]
    entries, _ = entries_for(deps, project)
    with store(entries) as url:
        hits, said, asked, opened, seconds = ask(url, project, Lookup(_Variant()), monkeypatch)
    assert hits == {} and said == [] and seconds < 3
    assert asked == [(), tuple(deps)] and opened == []


def test_an_entry_that_never_ends_is_cut_at_its_size_limit(project, monkeypatch):
    """A body of a terabyte, sent as fast as the socket takes it: read no further than 64 MiB."""
    with store({}, endless=True) as url:
        hits, said, asked, opened, seconds = ask(url, project, Lookup(_Variant()), monkeypatch)
    assert hits == {} and seconds < 10 and asked == [()]
    assert len(said) == 1 and "ignored (larger than 64 MiB)" in said[0]


def test_a_real_build_against_nginx_compiles_locally_over_a_hostile_signed_entry(tmp_path, monkeypatch):
    """End to end: a first machine stores signed entries in nginx; the index entry of one variant
    is replaced by one naming the FIFO and a file outside the project, signed with the (leaked)
    secret. A fresh clone compiles that variant itself, with one warning, and takes the others
    from the store; the FIFO is never opened (a build that opened it would hang: a writer is
    attached after the deadline to release it)."""
    from benchmarks.webdav import StoreError, WebdavStore
    from fake_compiler import FakeCompiler
    from genspirv.buildsys.builder import build
    from genspirv.project.config import load_config
    from conftest import TINY_FILES, TINY_PYPROJECT
    import textwrap

    def clone(folder: Path) -> Path:
        for rel, text in TINY_FILES.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(textwrap.dedent(text))
        (folder / "pyproject.toml").write_text(TINY_PYPROJECT)
        os.mkfifo(folder / "glsl/include/pipe.glsl")
        return folder

    try:
        s = WebdavStore(tmp_path / "server").start()
    except StoreError as exc:
        pytest.skip(f"nginx cannot start here: {exc}")
    try:
        for name in ("GENSPIRV_REMOTE_CACHE_TOKEN", "GENSPIRV_CACHE_DIR"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("GENSPIRV_REMOTE_CACHE", s.url)
        monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_SECRET", SECRET)
        monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_MODE", "read-write")
        build(load_config(clone(tmp_path / "a")), compiler=FakeCompiler(), jobs=1)
        (tmp_path / "outside.glsl").write_text("// not the project's\n")
        stored = {p.parent.name + p.name: p for p in (s.root / "cache").glob("??/*")}
        indexes = {}
        for key, path in stored.items():
            header = json.loads(path.read_bytes()[len(MAGIC):].split(b"\n", 1)[0])
            if header["kind"] == "index":
                indexes[key] = header
        assert len(indexes) == 3
        key, header = sorted(indexes.items())[0]
        header["deps"] = [*header["deps"], "glsl/include/pipe.glsl", "glsl/../../outside.glsl"]
        stored[key].write_bytes(_signed(header))
        monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_MODE", "read")
        b = clone(tmp_path / "b")
        done: list = []
        said: list[str] = []
        import genspirv.remote.cache as cache_mod
        monkeypatch.setattr(cache_mod.RemoteCache, "_say", lambda self, text: said.append(text))
        worker = threading.Thread(target=lambda: done.append(build(load_config(b), compiler=FakeCompiler(), jobs=1)),
                                  daemon=True)
        with opens() as opened:
            worker.start()
            worker.join(30)
            hung = worker.is_alive()
            if hung:                                  # release a build stuck opening the FIFO
                fd = os.open(b / "glsl/include/pipe.glsl", os.O_WRONLY | os.O_NONBLOCK)
                os.close(fd)
                worker.join(30)
        assert not hung, "the build opened the FIFO an entry named"
        report = done[0]
        assert len(report.compiled) == 1 and len(report.remote) == 2, report.summary()
        assert len(said) == 1 and key in said[0] and "must not contain '..'" in said[0], said
        assert not any(p.endswith(("pipe.glsl", "outside.glsl")) for p in opened)
    finally:
        s.stop()
