"""The remote compile cache against a real nginx WebDAV store on 127.0.0.1.

Machines are simulated by separate project copies (each with its own
``.genspirv/``, and no shared local cache). Each safety case has its control:
the tampered, forged or unsigned entry is shown to be taken, or the store to
be written, where the rule under test does not apply.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from fake_compiler import FakeCompiler
from benchmarks.webdav import StoreError, WebdavStore, server_block
from genspirv.buildsys.builder import BuildInterrupted, build
from genspirv.buildsys.builder import check
from genspirv.project.config import load_config
from genspirv.errors import ConfigError
from genspirv.buildsys.plan import Action, Reason
from genspirv.remote.cache import WORKERS, Lookup, RemoteCache, remote_settings
from genspirv.remote.entry import Entry, EntryKind, decode, encode

from conftest import TINY_FILES, TINY_PYPROJECT, TINY_VARIANTS

REPO = Path(__file__).resolve().parent.parent
SECRET = "team-secret-9f2c"
REMOTE_VARS = ("GENSPIRV_REMOTE_CACHE", "GENSPIRV_REMOTE_CACHE_MODE", "GENSPIRV_REMOTE_CACHE_SECRET",
               "GENSPIRV_REMOTE_CACHE_TOKEN", "GENSPIRV_REMOTE_CACHE_TIMEOUT", "GENSPIRV_CACHE_DIR")


def _start(folder: Path, extra: str = "") -> WebdavStore:
    try:
        return WebdavStore(folder, extra=extra).start()
    except StoreError as exc:
        pytest.skip(f"nginx cannot start here: {exc}")


@pytest.fixture
def store(tmp_path):
    s = _start(tmp_path / "server")
    yield s
    s.stop()


@pytest.fixture
def remote(monkeypatch):
    """remote(url, mode=..., secret=..., token=..., timeout=...): the remote settings of this test."""
    for name in REMOTE_VARS:
        monkeypatch.delenv(name, raising=False)

    def configure(url=None, mode=None, secret=None, token=None, timeout=None):
        for name, value in zip(REMOTE_VARS, (url, mode, secret, token, timeout)):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, str(value))
    return configure


def entries(s: WebdavStore) -> dict[str, bytes]:
    """Every entry in the store by key (<key[:2]>/<key[2:]> on disk)."""
    base = s.root / s.path.strip("/")
    return {p.parent.name + p.name: p.read_bytes() for p in base.glob("??/*") if p.is_file()} \
        if base.is_dir() else {}


def blobs(root: Path) -> dict[str, bytes]:
    return {n: (root / "spirv" / f"{n}.spv").read_bytes() for n in TINY_VARIANTS}


def warnings_of(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("genspirv: warning:")]


def summary_of(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("genspirv build:"))


def _tiny_copy(folder: Path) -> Path:
    for rel, text in TINY_FILES.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (folder / "pyproject.toml").write_text(TINY_PYPROJECT)
    return folder


@pytest.fixture(scope="module")
def _first_machines(tmp_path_factory):
    """{secret: (project, entries)}: the tiny project built once in read-write mode against an
    empty store, signed with SECRET and unsigned; tests start their stores from those entries."""
    made = {}
    for secret in (SECRET, None):
        folder = tmp_path_factory.mktemp("first-machine")
        s = _start(folder / "server")
        try:
            with pytest.MonkeyPatch.context() as m:
                for name in REMOTE_VARS:
                    m.delenv(name, raising=False)
                m.setenv("GENSPIRV_REMOTE_CACHE", s.url)
                m.setenv("GENSPIRV_REMOTE_CACHE_MODE", "read-write")
                if secret:
                    m.setenv("GENSPIRV_REMOTE_CACHE_SECRET", secret)
                root = _tiny_copy(folder / "a")
                report = build(load_config(root))
        finally:
            s.stop()
        assert report.summary().startswith("3 compiled, 0 from the remote cache,")
        made[secret] = (root, entries(s))
    return made


@pytest.fixture
def first_machine(_first_machines):
    """first_machine(store, secret=SECRET) -> the first machine's project, its entries in ``store``."""

    def fill(store: WebdavStore, secret=SECRET) -> Path:
        root, stored = _first_machines[secret]
        for key, data in stored.items():
            path = _entry_path(store, key)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return root
    return fill


# -- sharing ----------------------------------------------------------------------


def test_a_second_machine_compiles_nothing_and_gets_the_same_bytes(tiny_project, store, remote, genspirv, first_machine):
    a = first_machine(store)
    stored = entries(store)
    assert len(stored) == 6           # a blob entry and an index entry per variant
    kinds = []
    for key, data in stored.items():
        for kind in EntryKind:
            with contextlib.suppress(Exception):
                decode(data, key, kind, SECRET)
                kinds.append(kind)
    assert sorted(k.value for k in kinds) == ["blob"] * 3 + ["index"] * 3

    remote(store.url, None, SECRET)                     # the default mode: read
    b = tiny_project()
    result = genspirv("build", "--root", b)
    assert result.code == 0 and warnings_of(result.err) == []
    assert summary_of(result.out) == ("genspirv build: 0 compiled, 3 from the remote cache, "
                                      "0 up to date, 0 removed, 4 files written")
    assert blobs(b) == blobs(a)
    assert (b / "manifests/shaders.json").read_bytes() == (a / "manifests/shaders.json").read_bytes()
    assert len(entries(store)) == 6                     # read mode stored nothing

    # The hits landed in b's local cache: with the server gone, they come from there.
    store.stop()
    for p in (b / "spirv").glob("*.spv"):
        p.unlink()
    result = genspirv("build", "--root", b)
    assert summary_of(result.out).startswith("genspirv build: 0 compiled, 0 from the remote cache, 3 from cache")
    assert warnings_of(result.err) == [] and blobs(b) == blobs(a)


@pytest.mark.slow
def test_a_clone_after_a_header_edit_takes_the_edited_variants_from_the_remote(tiny_project, store, remote):
    """The committed manifest's provenance gives the keys: no index needed, a direct GET."""
    remote(store.url, "read-write", SECRET)
    a = tiny_project()
    build(load_config(a))
    clone = a.parent / (a.name + "-clone")
    shutil.copytree(a, clone, ignore=shutil.ignore_patterns(".genspirv"))
    for root in (a, clone):
        header = root / "glsl/include/common.glsl"
        header.write_text(header.read_text() + "#define TWO 2\n")
    assert build(load_config(a)).summary().startswith("2 compiled, 0 from the remote cache, 1 up to date")
    remote(store.url, "read", SECRET)
    report = build(load_config(clone))
    assert sorted(report.remote) == ["add_f32", "add_i32"] and report.compiled == ()
    assert report.up_to_date == ("neg",) and blobs(clone) == blobs(a)


@pytest.mark.slow
def test_read_mode_stores_nothing(tiny_project, store, remote):
    remote(store.url, "read", SECRET)
    report = build(load_config(tiny_project()))
    assert len(report.compiled) == 3 and entries(store) == {}
    remote(store.url, "read-write", SECRET)             # control: the same build in read-write stores
    build(load_config(tiny_project()))
    assert len(entries(store)) == 6


@pytest.mark.slow
def test_force_recompiles_without_asking(tiny_project, store, remote, first_machine):
    first_machine(store)
    remote(store.url, "read", SECRET)
    report = build(load_config(tiny_project()), force=True)
    assert len(report.compiled) == 3 and report.remote == ()


# -- entries that do not verify ----------------------------------------------------


def _blob_key(s: WebdavStore, name: str, root: Path) -> str:
    """The key of the blob entry holding ``name``'s blob."""
    blob = (root / "spirv" / f"{name}.spv").read_bytes()
    for key, data in entries(s).items():
        with contextlib.suppress(Exception):
            if decode(data, key, EntryKind.BLOB).blob == blob:
                return key
    raise AssertionError(f"no entry holds {name}")


def _entry_path(s: WebdavStore, key: str) -> Path:
    return s.root / s.path.strip("/") / key[:2] / key[2:]


@pytest.mark.slow
def test_tampered_and_junk_entries_are_compiled_locally_with_a_warning_each(tiny_project, store, remote, genspirv, first_machine):
    a = first_machine(store)
    flipped, junk = _blob_key(store, "add_f32", a), _blob_key(store, "neg", a)
    path = _entry_path(store, flipped)
    data = bytearray(path.read_bytes())
    data[-40] ^= 0x10                                   # a bit of the blob
    path.write_bytes(bytes(data))
    _entry_path(store, junk).write_bytes(b"<html>not an entry</html>")

    remote(store.url, "read", SECRET)
    b = tiny_project()
    result = genspirv("build", "--root", b)
    assert result.code == 0
    assert summary_of(result.out).startswith("genspirv build: 2 compiled, 1 from the remote cache,")
    warned = warnings_of(result.err)
    assert len(warned) == 2
    assert any(flipped in w and "add_f32" in w and "bad signature" in w for w in warned)
    assert any(junk in w and "neg" in w and "not a genspirv entry" in w for w in warned)
    assert blobs(b) == blobs(a)

    remote(store.url, "read", None)                     # without a secret the sha256 still catches it
    result = genspirv("build", "--root", tiny_project())
    assert any(flipped in w and "sha256" in w for w in warnings_of(result.err))


def test_a_forged_entry_is_refused_with_a_secret_and_taken_without(tiny_project, store, remote, first_machine):
    """A writable store alone cannot inject a blob when a secret is set; without one it can
    (the control, and the reason the guide asks trusted writers for a secret)."""
    a = first_machine(store)
    target = _blob_key(store, "add_f32", a)
    original = decode(_entry_path(store, target).read_bytes(), target, EntryKind.BLOB, SECRET)
    evil = (a / "spirv/add_i32.spv").read_bytes()       # valid SPIR-V, the wrong program
    _entry_path(store, target).write_bytes(encode(Entry(EntryKind.BLOB, target, original.deps, evil)))

    remote(store.url, "read", SECRET)
    b = tiny_project()
    report = build(load_config(b))
    assert "add_f32" in report.compiled and blobs(b) == blobs(a)

    remote(store.url, "read", None)
    c = tiny_project()
    report = build(load_config(c))
    assert "add_f32" in report.remote and (c / "spirv/add_f32.spv").read_bytes() == evil


@pytest.mark.slow
def test_the_wrong_secret_compiles_everything_and_names_the_entries(tiny_project, store, remote, genspirv, first_machine):
    a = first_machine(store)
    remote(store.url, "read", "not-the-team-secret")
    b = tiny_project()
    result = genspirv("build", "--root", b)
    assert result.code == 0 and summary_of(result.out).startswith("genspirv build: 3 compiled, 0 from the remote cache")
    warned = warnings_of(result.err)
    assert len(warned) == 3 and all("bad signature" in w and re.search(r"entry [0-9a-f]{64} for ", w) for w in warned)
    assert blobs(b) == blobs(a)


@pytest.mark.slow
def test_unsigned_entries_are_refused_under_a_secret(tiny_project, store, remote, first_machine):
    first_machine(store, secret=None)
    remote(store.url, "read", SECRET)
    assert len(build(load_config(tiny_project())).compiled) == 3
    remote(store.url, "read", None)                     # control: without a secret they are taken
    assert len(build(load_config(tiny_project())).remote) == 3


def test_a_signed_entry_that_is_not_spirv_is_compiled_locally(tiny_project, store, remote, capsys, first_machine):
    """Verified is not enough: a remote blob is reflected like a local cache hit, and one that
    does not parse is compiled here (a warning, not a failed build)."""
    a = first_machine(store)
    target = _blob_key(store, "neg", a)
    deps = decode(_entry_path(store, target).read_bytes(), target, EntryKind.BLOB).deps
    _entry_path(store, target).write_bytes(encode(Entry(EntryKind.BLOB, target, deps, b"\0" * 64), SECRET))
    remote(store.url, "read", SECRET)
    b = tiny_project()
    report = build(load_config(b))
    assert report.compiled == ("neg",) and blobs(b) == blobs(a)
    assert any(target in w and "neg" in w for w in warnings_of(capsys.readouterr().err))


# -- a server that cannot serve ------------------------------------------------------


def _refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/cache"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["read", "read-write"])
def test_an_unreachable_server_costs_one_warning(tiny_project, remote, genspirv, mode):
    remote(_refused_url(), mode, SECRET)
    result = genspirv("build", "--root", tiny_project())
    assert result.code == 0 and summary_of(result.out).startswith("genspirv build: 3 compiled, 0 from the remote cache")
    warned = warnings_of(result.err)
    assert len(warned) == 1 and "refused the connection" in warned[0] and "compiles locally" in warned[0]


@pytest.mark.slow
def test_an_http_error_costs_one_warning(tiny_project, tmp_path, remote, genspirv):
    s = _start(tmp_path / "server", extra="return 503;")
    try:
        remote(s.url, "read-write", SECRET)
        result = genspirv("build", "--root", tiny_project())
    finally:
        s.stop()
    assert result.code == 0 and summary_of(result.out).startswith("genspirv build: 3 compiled")
    warned = warnings_of(result.err)
    assert len(warned) == 1 and "HTTP 503" in warned[0]


def test_a_store_that_refuses_puts_is_still_read(tiny_project, tmp_path, remote, genspirv, first_machine):
    s = _start(tmp_path / "server")
    first_machine(s)
    s.stop()
    s = _start(tmp_path / "server", extra="limit_except GET HEAD { deny all; }")
    try:
        remote(s.url, "read-write", SECRET)
        b = _one_more_variant(tiny_project)
        result = genspirv("build", "--root", b)
    finally:
        s.stop()
    assert result.code == 0
    assert summary_of(result.out).startswith("genspirv build: 1 compiled, 3 from the remote cache")
    warned = warnings_of(result.err)
    assert len(warned) == 1 and "refused to store an entry (HTTP 403)" in warned[0]


@contextlib.contextmanager
def silent_listener(trickle: bool = False):
    """A server that accepts connections and never answers (or, ``trickle``, sends a 200 with a
    long body one byte every 50 ms); yields (url, accepted connections)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.settimeout(0.05)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            accepted.append(conn)
            if trickle:
                threading.Thread(target=_trickle, args=(conn, stop), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/cache", accepted
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        sock.close()


def _trickle(conn: socket.socket, stop: threading.Event) -> None:
    with contextlib.suppress(OSError):
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        while not stop.wait(0.05):
            conn.sendall(b"x")


MANY = 24


def _many_project(tiny_project) -> Path:
    matrix = ", ".join(f'k{i} = "{i}"' for i in range(MANY))
    return tiny_project(files={"glsl/many.comp": """\
        #version 450
        layout(local_size_x = 32) in;
        layout(std430, binding = 0) buffer XBuf { float data[]; } X;
        void main() { X.data[gl_GlobalInvocationID.x] += float(K); }
        """}, pyproject=f'[tool.genspirv.shaders."many.comp"]\nmatrix = {{ K = {{ {matrix} }} }}\n')


@pytest.mark.slow
def test_a_server_that_never_answers_costs_the_timeout_once(tiny_project, remote, genspirv):
    """24 variants, two requests each, would wait 6 s eight at a time; the first time-out ends it."""
    root = _many_project(tiny_project)
    remote()
    t0 = time.monotonic()
    assert genspirv("build", "--root", root).code == 0
    baseline = time.monotonic() - t0
    shutil.rmtree(root / ".genspirv")
    for p in (root / "spirv").glob("*.spv"):
        p.unlink()
    with silent_listener() as (url, accepted):
        remote(url, "read-write", SECRET, timeout=1)
        t0 = time.monotonic()
        result = genspirv("build", "--root", root)
        elapsed = time.monotonic() - t0
        connections = len(accepted)
    assert result.code == 0 and summary_of(result.out).startswith(f"genspirv build: {MANY} compiled")
    warned = warnings_of(result.err)
    assert len(warned) == 1 and "did not answer within 1 s" in warned[0]
    assert connections <= WORKERS                     # no request after the first time-out (no PUT either)
    assert elapsed < baseline + 1.0 + 2.5, (elapsed, baseline)   # asking on: 6 s more


@pytest.mark.slow
def test_a_server_that_trickles_is_as_slow_as_a_silent_one(remote):
    with silent_listener(trickle=True) as (url, _):
        remote(url, "read", None, timeout=0.5)
        cache = RemoteCache(remote_settings(), warn=lambda line: said.append(line))
        said: list[str] = []
        t0 = time.monotonic()
        with cache:
            hits = cache.fetch([Lookup(_Named("v"), "ab" * 32)], lambda v, deps: None, lambda k: None,
                               lambda v, b: None)
        elapsed = time.monotonic() - t0
    assert hits == {} and elapsed < 1.5, elapsed
    assert len(said) == 1 and "more than 0.5 s" in said[0]


def test_past_five_unverified_entries_the_rest_are_counted(store, remote):
    keys = {f"v{i}": hashlib.sha256(bytes([i])).hexdigest() for i in range(8)}
    for name, key in keys.items():
        path = _entry_path(store, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode(Entry(EntryKind.BLOB, key, ("glsl/v.comp",), b"blob"), "their-secret"))
    remote(store.url, "read", SECRET)
    said: list[str] = []
    with RemoteCache(remote_settings(), warn=said.append) as cache:
        hits = cache.fetch([Lookup(_Named(n), k) for n, k in keys.items()], lambda v, deps: keys[v.name],
                           lambda k: None, lambda v, b: None)
    assert hits == {} and len(said) == 6
    assert sum("bad signature" in line for line in said) == 5 and "3 more entries did not verify" in said[-1]


def test_a_fault_on_a_pool_thread_costs_a_warning_not_the_build(remote):
    remote(_refused_url(), "read-write", SECRET)
    said: list[str] = []

    def key_of(variant, deps):
        raise RuntimeError("boom")

    with RemoteCache(remote_settings(), warn=said.append) as cache:
        assert cache.fetch([Lookup(_Named("v"))], key_of, lambda k: None, lambda v, b: None) == {}
        cache.publish("ab" * 32, ("glsl/v.comp",), b"blob", "cd" * 32)   # asked nothing more
    assert len(said) == 1 and "could not be used (RuntimeError: boom)" in said[0]


class _Named:
    def __init__(self, name: str):
        self.name = name


# -- concurrency -------------------------------------------------------------------------


@pytest.mark.slow
def test_concurrent_stores_of_one_key_leave_one_valid_entry(store, remote):
    """Two writers PUT different entries under one key while readers GET it: every read is
    absent or one whole entry (nginx writes the body aside and renames it)."""
    key = "cd" * 32
    versions = [encode(Entry(EntryKind.BLOB, key, ("glsl/a.comp",), bytes([i]) * (2 << 20)), SECRET)
                for i in (1, 2)]
    remote(store.url, "read-write", SECRET)
    bad, reads, stop = [], [0], threading.Event()

    def write(data: bytes) -> None:
        cache = RemoteCache(remote_settings())
        for _ in range(15):
            cache._client().put(key, data)
        cache.close()

    def read() -> None:
        cache = RemoteCache(remote_settings())
        while not stop.is_set():
            try:
                data = cache._client().get(key)
            except Exception as exc:        # noqa: BLE001 - a dropped or short answer is a bad read
                bad.append(repr(exc))
                continue
            reads[0] += 1
            if data is not None and data not in versions:
                bad.append(len(data))
        cache.close()

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(v,)) for v in versions]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert bad == [] and reads[0] > 10
    assert list(entries(store)) == [key] and entries(store)[key] in versions
    assert [p for p in (store.folder / "tmp/body").rglob("*") if p.is_file()] == []


@pytest.mark.slow
def test_the_reader_check_sees_a_write_in_place(store, remote):
    """Control for the test above: a store that rewrote an entry in place would be caught."""
    key = "cd" * 32
    data = encode(Entry(EntryKind.BLOB, key, ("glsl/a.comp",), b"\1" * (2 << 20)), SECRET)
    remote(store.url, "read", SECRET)
    path = _entry_path(store, key)
    path.parent.mkdir(parents=True)
    seen, done = [], threading.Event()

    def write_in_place() -> None:
        for _ in range(5):
            with open(path, "wb") as f:
                for i in range(0, len(data), 1 << 18):
                    f.write(data[i:i + (1 << 18)])
                    f.flush()
                    time.sleep(0.005)
        done.set()

    cache = RemoteCache(remote_settings())
    writer = threading.Thread(target=write_in_place)
    writer.start()
    while not done.is_set():
        try:
            got = cache._client().get(key)
        except Exception as exc:            # noqa: BLE001 - nginx cut the answer short: a bad read too
            seen.append(repr(exc))
            continue
        if got is not None and got != data:
            seen.append(len(got))
    writer.join()
    cache.close()
    assert seen, "a partial entry was never read: the concurrency test above could not fail"


@pytest.mark.slow
def test_two_builds_storing_at_once_leave_valid_entries(tiny_project, store, remote):
    remote(store.url, "read-write", SECRET)
    roots = [tiny_project(), tiny_project()]
    errors = []

    def run(root: Path) -> None:
        try:
            build(load_config(root))
        except Exception as exc:            # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(r,)) for r in roots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stored = entries(store)
    assert len(stored) == 6
    for key, data in stored.items():
        assert any(_decodes(data, key, kind) for kind in EntryKind), key
    remote(store.url, "read", SECRET)
    c = tiny_project()
    assert len(build(load_config(c)).remote) == 3 and blobs(c) == blobs(roots[0])


def _decodes(data: bytes, key: str, kind: EntryKind) -> bool:
    try:
        decode(data, key, kind, SECRET)
    except Exception:                       # noqa: BLE001 - any refusal is a no
        return False
    return True


# -- credentials -----------------------------------------------------------------------------

PASSWORD, TOKEN = "pa55-w0rd-xyz", "tok-7a8b9c"


def _writers_only(users: Path) -> str:
    """The guide's writer authentication, with the test's password file."""
    return ('limit_except GET HEAD {\n    auth_basic "build cache writers";\n'
            f"    auth_basic_user_file {users};\n}}")


def _with_user(url: str, user: str, password: str) -> str:
    return url.replace("http://", f"http://{user}:{password}@")


def _one_more_variant(tiny_project) -> Path:
    return tiny_project(extra={"glsl/extra.comp": "#version 450\nlayout(local_size_x = 8) in;\nvoid main() {}\n"})


@pytest.mark.slow
def test_basic_and_bearer_credentials_work_and_never_show(tiny_project, tmp_path, remote, genspirv):
    hidden = (PASSWORD, TOKEN, SECRET, "wrong-pass-123")
    said = []
    users = tmp_path / "users"
    users.write_text(f"ci:{{PLAIN}}{PASSWORD}\n")
    s = _start(tmp_path / "basic", extra=_writers_only(users))
    try:
        remote(_with_user(s.url, "ci", PASSWORD), "read-write", SECRET)
        said.append(genspirv("build", "--root", tiny_project()))
        assert len(entries(s)) == 6                                     # the right password stores
        for url in (_with_user(s.url, "ci", "wrong-pass-123"), s.url):  # a wrong one, and none
            remote(url, "read-write", SECRET)
            result = genspirv("build", "--root", _one_more_variant(tiny_project))
            said.append(result)
            assert summary_of(result.out).startswith("genspirv build: 1 compiled, 3 from the remote cache")
            warned = warnings_of(result.err)
            assert len(warned) == 1 and "refused to store an entry (HTTP 401): check the credentials" in warned[0]
            assert len(entries(s)) == 6
    finally:
        s.stop()
    s = _start(tmp_path / "bearer", extra=f'if ($http_authorization != "Bearer {TOKEN}") {{ return 401; }}')
    try:
        remote(s.url, "read-write", SECRET, token=TOKEN)
        said.append(genspirv("build", "--root", tiny_project()))
        assert len(entries(s)) == 6
        remote(s.url, "read", SECRET, token=TOKEN)
        right = genspirv("build", "--root", tiny_project())
        said.append(right)
        assert summary_of(right.out).startswith("genspirv build: 0 compiled, 3 from the remote cache")
        remote(s.url, "read", SECRET, token="tok-wrong")                # control: the server checks it
        assert "answered HTTP 401 to a GET" in genspirv("build", "--root", tiny_project()).err
    finally:
        s.stop()
    remote(_with_user(_refused_url(), "ci", PASSWORD), "read", SECRET, token=TOKEN)
    refused = genspirv("build", "--root", tiny_project())
    said.append(refused)
    assert "refused the connection" in refused.err and "http://127.0.0.1:" in refused.err
    remote(f"http://ci:{PASSWORD}@127.0.0.1:notaport/cache")
    bad = genspirv("build", "--root", tiny_project())
    said.append(bad)
    assert bad.code == 2 and "GENSPIRV_REMOTE_CACHE: expected http(s)://host[:port]/path" in bad.err
    assert "***@127.0.0.1:notaport" in bad.err
    for result in said:
        for secret in hidden:
            assert secret not in result.out + result.err


# -- configuration -------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_config_key_names_the_server_and_the_env_var_overrides_it(tiny_project, store, remote, genspirv, first_machine):
    from conftest import TINY_PYPROJECT
    first_machine(store)
    remote(None, "read", SECRET)
    pyproject = TINY_PYPROJECT.replace('glslang = "13.1.1"', f'glslang = "13.1.1"\nremote_cache = "{store.url}"')
    result = genspirv("build", "--root", tiny_project(pyproject=pyproject))
    assert summary_of(result.out).startswith("genspirv build: 0 compiled, 3 from the remote cache")
    remote("off", "read", SECRET)
    result = genspirv("build", "--root", tiny_project(pyproject=pyproject))
    assert summary_of(result.out).startswith("genspirv build: 3 compiled, 0 up to date")
    remote(_refused_url(), "read", SECRET)
    result = genspirv("build", "--root", tiny_project(pyproject=pyproject))
    assert "refused the connection" in result.err and store.url not in result.err


@pytest.mark.parametrize("value, message", [
    ('"http://ci:pw@cache.example/genspirv"', "credentials do not belong in a committed file"),
    ('"ftp://cache.example/x"', "expected http(s)://host[:port]/path"),
    ("42", "expected a URL"),
])
def test_a_bad_config_key_is_one_clear_error(tiny_project, value, message, remote):
    from conftest import TINY_PYPROJECT
    root = tiny_project(pyproject=TINY_PYPROJECT.replace('glslang = "13.1.1"',
                                                         f'glslang = "13.1.1"\nremote_cache = {value}'))
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        load_config(root)
    assert "tool.genspirv.remote_cache" in str(info.value) and "pw" not in str(info.value)


@pytest.mark.slow
def test_no_setting_means_no_remote_cache(tiny_project, remote):
    remote()
    report = build(load_config(tiny_project()))
    assert report.remote is None and "remote" not in report.summary()


# -- the guide's server ------------------------------------------------------------------------------


def test_the_guide_shows_the_server_block_the_tests_run():
    guide = (REPO / "docs" / "GUIDE.md").read_text(encoding="utf-8")
    block = re.search(r"```nginx\n(server \{.*?\n\})\n```", guide, re.S)
    assert block, "docs/GUIDE.md shows no nginx server block"
    expected = server_block("8080", "/srv/build-cache/store", "/srv/build-cache/tmp",
                            extra=_writers_only(Path("/etc/nginx/build-cache.htpasswd")))
    assert block.group(1) + "\n" == expected


# -- the benchmark ---------------------------------------------------------------------------------


def _bench_remote(tiny_project, repeat: int):
    from benchmarks.harness import BenchOptions, RunLog
    from benchmarks.remote_suite import bench_remote
    rec = RunLog("build-generator")
    bench_remote(BenchOptions(suite="build-generator", sizes=(4,), jobs=(2,), repeat=repeat, quiet=True,
                              root=tiny_project(), per_source=1, remote=True), rec)
    return rec


@pytest.mark.slow
def test_the_remote_benchmark_records_three_cold_builds_and_checks_the_second(tiny_project, remote):
    remote()
    try:
        rec = _bench_remote(tiny_project, repeat=2)
    except StoreError as exc:
        pytest.skip(f"nginx cannot start here: {exc}")
    arms = [(r["repeat"], r["arm"]) for r in rec.runs]
    assert arms == [(0, "cold"), (0, "first machine"), (0, "store entries"), (0, "second machine"),
                    (1, "first machine"), (1, "store entries"), (1, "cold"), (1, "second machine")]
    assert [r["value"] for r in rec.runs if r["arm"] == "store entries"] == [8, 8]   # a fresh store each run
    from benchmarks import harness
    labels = {d["label"] for d in harness.resolve_derived(harness.summarize(rec.runs), rec.derived)}
    assert {"second machine / first machine", "second machine / first machine, CPU time"} <= labels


@pytest.mark.slow
def test_the_remote_benchmark_refuses_a_second_machine_that_compiled(tiny_project, remote, monkeypatch):
    """Control for the check above: a second machine without the store must fail the run."""
    from benchmarks import remote_suite
    from benchmarks.harness import BenchError
    remote()
    env = remote_suite._env
    monkeypatch.setattr(remote_suite, "_env", lambda code, **kw: env(code) if kw.get("mode") == "read"
                        else env(code, **kw))
    try:
        with pytest.raises(BenchError, match="the second machine compiled 4 and took 0 of 4"):
            _bench_remote(tiny_project, repeat=1)
    except StoreError as exc:
        pytest.skip(f"nginx cannot start here: {exc}")


# -- the build plan's seams ------------------------------------------------------------------
#
# FakeCompiler (tests/fake_compiler.py) behind the compiler seam: builds take milliseconds and
# say exactly what was compiled; its blobs are keyed with its own version, so the first
# machine here is a fake-compiled one too.


def _fake_first_machine(tiny_project, store, remote, secret=SECRET, **fake) -> Path:
    remote(store.url, "read-write", secret)
    root = tiny_project()
    report = build(load_config(root), compiler=FakeCompiler(**fake), jobs=1)
    assert len(report.compiled) == 3 and len(entries(store)) == 6
    return root


def test_explain_says_remote_hit_and_the_plan_holds_the_step(tiny_project, store, remote):
    a = _fake_first_machine(tiny_project, store, remote)
    remote(store.url, "read", SECRET)
    b = _one_more_variant(tiny_project)
    fake, lines = FakeCompiler(), []
    report = build(load_config(b), compiler=fake, jobs=1, explain=lines.append)
    assert sorted(report.remote) == list(TINY_VARIANTS) and report.compiled == ("extra",)
    assert dict(fake.compiles) == {"extra": 1}              # the compiler was asked for the miss only
    assert {s.name: s.action for s in report.plan.steps} == {
        "add_f32": Action.FROM_REMOTE, "add_i32": Action.FROM_REMOTE, "neg": Action.FROM_REMOTE,
        "extra": Action.COMPILE}
    assert "explain: neg: remote hit: new variant (no earlier build of it); the remote cache has its blob" in lines
    assert "explain: extra: compile: new variant (no earlier build of it)" in lines     # the control
    assert blobs(b) == blobs(a)
    assert report.summary().startswith("1 compiled, 3 from the remote cache, 0 up to date")


def test_a_remote_hit_keeps_the_reason_its_variant_was_stale(tiny_project, store, remote):
    """A clone edits a header the first machine edited too: the hit says which file changed."""
    remote(store.url, "read-write", SECRET)
    a = tiny_project()
    build(load_config(a), compiler=FakeCompiler(), jobs=1)
    clone = a.parent / (a.name + "-clone")
    shutil.copytree(a, clone)
    for root in (a, clone):
        header = root / "glsl/include/common.glsl"
        header.write_text(header.read_text() + "#define TWO 2\n")
    build(load_config(a), compiler=FakeCompiler(), jobs=1)
    remote(store.url, "read", SECRET)
    lines: list[str] = []
    report = build(load_config(clone), compiler=FakeCompiler(), jobs=1, explain=lines.append)
    assert sorted(report.remote) == ["add_f32", "add_i32"] and report.compiled == ()
    assert [s.reason for s in report.plan.from_remote] == [Reason.INCLUDE_CHANGED] * 2
    assert ("explain: add_f32: remote hit: glsl/include/common.glsl changed; the remote cache has its blob"
            in lines)


def test_remote_hits_are_kept_when_the_build_is_interrupted(tiny_project, store, remote):
    """Each hit lands in the local cache and the journal as its fetch returns (its progress
    line follows): interrupted at the compile's line, the next build, with the server gone,
    takes locally every hit that had returned and the compile, and compiles only the rest."""
    _fake_first_machine(tiny_project, store, remote)
    remote(store.url, "read", SECRET)
    b = _one_more_variant(tiny_project)
    hits: list[str] = []

    def interrupt(line: str) -> None:
        name, _, what = line.split(" ", 1)[1].partition(" ")
        if name == "extra":
            raise KeyboardInterrupt      # as SIGINT does, on the thread that collects the compiles
        assert what == "(remote hit)", line
        hits.append(name)

    with pytest.raises(BuildInterrupted) as info:
        build(load_config(b), compiler=FakeCompiler(), jobs=1, log=interrupt)
    assert (info.value.kept, info.value.total) == (1, 4 - len(hits))   # the compile, not the hits
    store.stop()
    report = build(load_config(b), compiler=FakeCompiler(), jobs=1)
    assert report.remote == () and sorted(report.cached) == sorted(hits + ["extra"])
    assert sorted(report.compiled) == sorted(set(TINY_VARIANTS) - set(hits))


def _publish_deferred(monkeypatch) -> None:
    """The control's build: every store queued only when the build closes the remote cache."""
    held: list = []
    publish, close = RemoteCache.publish, RemoteCache.close
    monkeypatch.setattr(RemoteCache, "publish", lambda self, *a: held.append((self, a)))

    def close_then(self, wait=True):
        for cache, args in held:
            publish(cache, *args)
        held.clear()
        close(self, wait)
    monkeypatch.setattr(RemoteCache, "close", close_then)


@pytest.mark.slow
@pytest.mark.parametrize("deferred", [False, True], ids=["as-each-compile-finishes", "control-at-the-end"])
def test_stores_run_alongside_the_compiles(tiny_project, store, remote, monkeypatch, deferred):
    """The last compile waits (at most 2 s) for an earlier compiled variant's blob in the store:
    it is there, since the build hands each blob to the background stores as its compile
    finishes. The control stores only at the end, and the last compile sees an empty store
    (it waits 0.5 s: no wait would show it one)."""
    if deferred:
        _publish_deferred(monkeypatch)
    remote(store.url, "read-write", SECRET)
    seen: list[int] = []
    started: list[str] = []

    def wait_for_a_store(job) -> None:
        started.append(job.variant.name)
        # The last of three, one at a time: which variant that is depends on the order the
        # fetches' misses come back in, so it is counted, not named.
        if len(started) == 3:
            deadline = time.monotonic() + (0.5 if deferred else 2.0)
            while not entries(store) and time.monotonic() < deadline:
                time.sleep(0.02)
            seen.append(len(entries(store)))

    report = build(load_config(tiny_project()), compiler=FakeCompiler(on_compile=wait_for_a_store), jobs=1)
    assert len(report.compiled) == 3 and len(entries(store)) == 6      # every store done on return
    assert (seen[0] == 0) if deferred else (seen[0] >= 1), seen


@contextlib.contextmanager
def held_put_server():
    """An HTTP store whose PUTs wait until released: yields (url, put_arrived, release)."""
    arrived, release = threading.Event(), threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            arrived.set()
            release.wait(10)
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/cache", arrived, release
    finally:
        release.set()
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def held_get_server(release: threading.Event, hold: float):
    """An HTTP store that holds none: the first GET waits for ``release`` (at most ``hold``
    seconds) before its 404, the others answer at once. Yields (url, told): ``told`` has
    True when ``release`` freed the held GET, False when its hold ran out."""
    told: list[bool] = []
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with lock:
                first = not told and not getattr(server, "held", False)
                server.held = True
            if first:
                told.append(release.wait(hold))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/cache", told
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def _held_build(tiny_project, remote, hold: float, explain: bool) -> tuple[list[bool], object]:
    """A build of the tiny project against a store that holds its first GET until a compile
    has started: what freed the GET, and the build's report."""
    compiling = threading.Event()
    with held_get_server(compiling, hold) as (url, told):
        remote(url, "read", SECRET, timeout=5)
        report = build(load_config(tiny_project()), compiler=FakeCompiler(on_compile=lambda job: compiling.set()),
                       jobs=1, explain=[].append if explain else None)
    return told, report


@pytest.mark.slow
def test_compiles_start_while_a_fetch_is_in_flight(tiny_project, remote):
    """The store holds one GET until a compile has started (5 s at most): the misses' compiles
    start while it is held, so a compile frees it, and the build compiles all three."""
    told, report = _held_build(tiny_project, remote, hold=5, explain=False)
    assert told == [True]
    assert sorted(report.compiled) == sorted(TINY_VARIANTS) and report.remote == ()


@pytest.mark.slow
def test_explain_answers_every_fetch_before_the_first_compile(tiny_project, remote):
    """The control: --explain, a dry run of the exact plan, resolves every fetch first, so no
    compile frees the held GET; its hold runs out (0.5 s) and only then do the compiles start."""
    told, report = _held_build(tiny_project, remote, hold=0.5, explain=True)
    assert told == [False]
    assert sorted(report.compiled) == sorted(TINY_VARIANTS)


@pytest.mark.slow
def test_publish_returns_before_its_store_is_answered(remote):
    """The build's progress loop calls publish: it queues and returns. Here the server holds
    the PUT until the test releases it, after publish has returned; were publish to send it
    itself, it would return only at the 2 s time-out, with a warning."""
    said: list[str] = []
    with held_put_server() as (url, arrived, release):
        remote(url, "read-write", SECRET, timeout=2)
        with RemoteCache(remote_settings(), warn=said.append) as cache:
            cache.publish("ab" * 32, ("glsl/v.comp",), b"blob", None)
            assert arrived.wait(5), "the PUT never reached the server"
            assert said == [] and not release.is_set()       # returned while its PUT was held
            release.set()
    assert said == []                                         # the store then finished cleanly


@pytest.mark.slow
def test_check_uses_no_cache_local_or_remote(tiny_project, store, remote, first_machine):
    """A forged entry a build without a secret takes (into its local cache too) does not fool
    check: it compiles every variant and names the blob. And it sends the store nothing."""
    a = first_machine(store)
    target = _blob_key(store, "add_f32", a)
    original = decode(_entry_path(store, target).read_bytes(), target, EntryKind.BLOB, SECRET)
    evil = (a / "spirv/add_i32.spv").read_bytes()
    _entry_path(store, target).write_bytes(encode(Entry(EntryKind.BLOB, target, original.deps, evil)))
    remote(store.url, "read", None)
    b = tiny_project()
    assert "add_f32" in build(load_config(b)).remote          # the control: the build took it
    assert (b / "spirv/add_f32.spv").read_bytes() == evil
    report = check(load_config(b))
    assert [(d.kind, d.path) for d in report.differences] == [("differs", "spirv/add_f32.spv"),
                                                              ("differs", "manifests/shaders.json")]
    with silent_listener() as (url, accepted):
        remote(url, "read", None, timeout=1)
        assert check(load_config(b)).differences == report.differences
        assert accepted == []                                 # not one connection


@pytest.mark.slow
def test_a_template_driven_backend_shares_its_generated_variants(tmp_path, store, remote):
    """Generated sources are hashed from their text (never written on the second machine,
    which compiles nothing): the index entries give a machine with no state every key."""
    from template_backend import make_backend
    remote(store.url, "read-write", SECRET)
    a = make_backend(tmp_path / "a")
    first = build(load_config(a), compiler=FakeCompiler(), jobs=1)
    assert len(first.compiled) == 51 and len(entries(store)) == 102
    remote(store.url, "read", SECRET)
    b = make_backend(tmp_path / "b")
    fake = FakeCompiler()
    report = build(load_config(b), compiler=fake, jobs=1)
    assert len(report.remote) == 51 and report.compiled == () and not fake.compiles
    assert (b / "manifests/shaders.json").read_bytes() == (a / "manifests/shaders.json").read_bytes()
    assert {p.name: p.read_bytes() for p in (b / "spirv").glob("*.spv")} == \
        {p.name: p.read_bytes() for p in (a / "spirv").glob("*.spv")}


# -- a blob another compiler built ------------------------------------------------------

SLANG_SHADER = """\
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Y { float y[]; };
void main() { y[gl_GlobalInvocationID.x] *= 2.0; }
"""


@pytest.mark.slow
def test_a_blob_another_compiler_built_keeps_its_name_on_the_second_machine(tmp_path, store, remote):
    """The manifest names the compiler that built a variant (``"compiler": "slang-glslang"``):
    a second machine that takes the blob from the store writes the first machine's manifest,
    byte for byte, so `check` agrees on both."""
    from genspirv.toolchain.slang import library
    from genspirv.errors import ToolchainError
    try:
        library.find_library()
    except ToolchainError as exc:
        pytest.skip(f"slang-glslang unavailable: {exc}")

    def project(folder: Path) -> Path:
        (folder / "glsl").mkdir(parents=True)
        (folder / "glsl/twice.comp").write_text(SLANG_SHADER)
        (folder / "pyproject.toml").write_text('[tool.genspirv]\ncompiler = "slang-glslang"\n')
        return folder

    remote(store.url, "read-write", SECRET)
    a = project(tmp_path / "a")
    first = build(load_config(a))
    assert first.compiled == ("twice",) and first.compiled_by == (("twice", "slang-glslang"),)
    remote(store.url, None, SECRET)
    b = project(tmp_path / "b")
    second = build(load_config(b))
    assert second.compiled == () and second.remote == ("twice",)
    manifest = (b / "manifests/shaders.json").read_bytes()
    assert b'"compiler": "slang-glslang"' in manifest
    assert manifest == (a / "manifests/shaders.json").read_bytes()
    assert check(load_config(b)).ok


# -- counters and re-seeding ---------------------------------------------------------


def _counters(run, root) -> dict:
    import json
    result = run("cache", "stats", "--json", "--root", root)
    assert result.code == 0, result.err
    return json.loads(result.out)


@pytest.mark.slow
def test_cache_stats_count_the_remote_misses_stores_hits_and_errors(tiny_project, store, remote, fake_genspirv):
    remote(store.url, "read-write", SECRET)
    a = tiny_project()
    assert fake_genspirv("build", "--root", a, "-q").code == 0
    doc = _counters(fake_genspirv, a)
    assert doc["remote"] == store.url.rstrip("/")
    assert {k: v for k, v in doc["counters"].items() if k.startswith("remote_")} == \
        {"remote_hits": 0, "remote_misses": 3, "remote_stores": 3, "remote_errors": 0}

    remote(store.url, "read", SECRET)
    b = tiny_project()
    assert "3 from the remote cache" in fake_genspirv("build", "--root", b, "-q").out
    counters = _counters(fake_genspirv, b)["counters"]
    assert (counters["remote_hits"], counters["remote_misses"], counters["remote_stores"]) == (3, 0, 0)
    assert (counters["local_misses"], counters["local_stores"]) == (3, 3)   # asked locally first; kept there

    remote(store.url, "read", "another-secret")                 # every entry fails to verify: errors
    c = tiny_project()
    assert "3 compiled" in fake_genspirv("build", "--root", c, "-q").out
    counters = _counters(fake_genspirv, c)["counters"]
    assert counters["remote_errors"] >= 3 and counters["remote_hits"] == 0


@pytest.mark.slow
def test_force_stores_every_blob_afresh_over_damaged_entries(tiny_project, store, remote, fake_genspirv):
    """Re-seeding a store: --force in read-write mode compiles everything and stores it all again."""
    remote(store.url, "read-write", SECRET)
    a = tiny_project()
    assert fake_genspirv("build", "--root", a, "-q").code == 0
    good = entries(store)
    for key in good:
        _entry_path(store, key).write_bytes(b"damaged")
    result = fake_genspirv("build", "--force", "--root", a, "-q")
    assert result.code == 0 and warnings_of(result.err) == []
    assert entries(store) == good
    assert _counters(fake_genspirv, a)["counters"]["remote_stores"] == 6     # 3 + 3 again


# -- the guide's set-up, as written, with a non-root worker ---------------------------------------

GUIDE_CACHE, GUIDE_USERS = "/srv/build-cache", "/etc/nginx/build-cache.htpasswd"


def _guide_nginx_section() -> tuple[str, str]:
    """The set-up commands (```sh) and the server block (```nginx) of the guide's nginx section."""
    guide = (REPO / "docs" / "GUIDE.md").read_text(encoding="utf-8")
    section = guide.split("### A store with nginx", 1)[1].split("\n### ", 1)[0]
    setup = re.search(r"```sh\n(.*?)```", section, re.S)
    assert setup, "the guide's nginx section shows no set-up commands (```sh) for the store's folders"
    block = re.search(r"```nginx\n(server \{.*?\n\})\n```", section, re.S)
    return setup.group(1), block.group(1)


def _serve_as_www_data(scratch: Path, block: str) -> tuple[subprocess.Popen, int]:
    """nginx with the block, its master root and its workers www-data (Debian's `user`)."""
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    number = port.getsockname()[1]
    port.close()
    block = block.replace("listen 8080;", f"listen 127.0.0.1:{number};")
    conf = scratch / "nginx.conf"
    conf.write_text("\n".join([
        "user www-data;", "daemon off;", f"pid {scratch / 'nginx.pid'};",
        f"error_log {scratch / 'error.log'} warn;", "events { worker_connections 64; }", "http {",
        "    access_log off;",
        *(f"    {name}_temp_path {scratch / ('nginx-' + name)};" for name in ("proxy", "fastcgi", "uwsgi", "scgi")),
        block, "}", ""]))
    proc = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-p", str(scratch), "-e",
                             str(scratch / "error.log"), "-c", str(conf)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", number), timeout=0.2):
            return proc, number
        assert proc.poll() is None, (scratch / "error.log").read_text()
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("nginx did not answer")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="runs nginx's master as root")
@pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").is_file(), reason="needs nginx")
@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl (the guide's password file)")
def test_the_guides_nginx_set_up_stores_with_a_non_root_worker(tiny_project, remote, genspirv):
    try:
        pwd.getpwnam("www-data")
    except KeyError:
        pytest.skip("no www-data user")
    setup, block = _guide_nginx_section()
    scratch = Path(tempfile.mkdtemp(prefix="genspirv-nginx-", dir="/tmp"))
    try:
        scratch.chmod(0o755)        # the worker walks into it, as into /srv
        here = lambda text: text.replace(GUIDE_CACHE, str(scratch / "build-cache")).replace(  # noqa: E731
            GUIDE_USERS, str(scratch / "build-cache.htpasswd"))
        subprocess.run(["bash", "-euc", here(setup)], env={**os.environ, "CACHE_PASSWORD": PASSWORD}, check=True,
                       timeout=60)
        store = scratch / "build-cache" / "store"
        proc, port = _serve_as_www_data(scratch, here(block))
        try:
            remote(f"http://ci:{PASSWORD}@127.0.0.1:{port}/genspirv", "read-write", SECRET)
            stored = genspirv("build", "--root", tiny_project())
            assert stored.code == 0 and not warnings_of(stored.err), stored.err
            written = [p for p in store.rglob("*") if p.is_file()]
            assert len(written) == 6 and {pwd.getpwuid(p.stat().st_uid).pw_name for p in written} == {"www-data"}
            remote(f"http://127.0.0.1:{port}/genspirv", "read", SECRET)      # a reader needs no password
            fetched = genspirv("build", "--root", tiny_project())
            assert summary_of(fetched.out).startswith("genspirv build: 0 compiled, 3 from the remote cache")
        finally:
            _stop(proc)
        # Control: the same block over a store the worker cannot write refuses the first PUT.
        shutil.rmtree(store)
        store.mkdir(mode=0o755)
        proc, port = _serve_as_www_data(scratch, here(block))
        try:
            remote(f"http://ci:{PASSWORD}@127.0.0.1:{port}/genspirv", "read-write", SECRET)
            refused = genspirv("build", "--root", tiny_project())
        finally:
            _stop(proc)
        warned = warnings_of(refused.err)
        assert len(warned) == 1 and "HTTP 500" in warned[0], refused.err
        assert re.search(r'\[crit\].* mkdir\(\) "[^"]*/store/genspirv/..?" failed', (scratch / "error.log").read_text())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
