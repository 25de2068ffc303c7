"""Secrets never reach a message, a file genspirv writes or another process (docs/SECURITY.md).

Negative controls in the strict sense: distinctive values are planted as the
remote cache's secret, bearer token and URL password (base64-like, with ``+``
and ``/``), every way genspirv can be made to talk is exercised against them
(builds, no-ops, ``check``, ``cache stats``, ``--explain``, ``-v``, ``--json``,
wrong credentials, an unreachable server, a server that echoes what it was
sent back into its entries, each refusal of a bad setting), and then every
form of each value (as given, percent-encoded, JSON- and repr-escaped, as the
basic-auth header carries it) is looked for in all stdout and stderr, in every
file under the projects, their ``.genspirv/``, the shared cache and the store,
and in the command line and environment of every process genspirv started
(a wrapper around glslangValidator and spirv-val records its own; a watcher
reads ``/proc`` for the rest, compile workers included). Each search has its
control: the value is shown to be in use (the store took the password, the
server received the token) and the search to find it where it is planted.

The servers are a real nginx (Debian nginx-light, ``benchmarks/webdav.py``) and
in-process fakes.
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

from benchmarks.webdav import StoreError, WebdavStore
from fake_store import serving
from genspirv.errors import ConfigError
from genspirv.remote.cache import RemoteCache, remote_settings
from genspirv.settings import SettingError

from conftest import TINY_FILES, TINY_PYPROJECT

REPO = Path(__file__).resolve().parent.parent
SECRET = "S3cr3t+Sig/Key==9f2c81d4e6"
TOKEN = "T0k3n+Bearer/Zz==a81b77c0"
PASSWORD = "Pa55+w/rd==77aa1c"
USER = "ci"
PLANTED = {"secret": SECRET, "token": TOKEN, "password": PASSWORD}
REMOTE_VARS = ("GENSPIRV_REMOTE_CACHE", "GENSPIRV_REMOTE_CACHE_MODE", "GENSPIRV_REMOTE_CACHE_SECRET",
               "GENSPIRV_REMOTE_CACHE_TOKEN", "GENSPIRV_REMOTE_CACHE_TIMEOUT")
GENERATOR = """\
    import os
    def variants():
        # A program the generator runs: what environment does it get?
        os.system(f"env > {os.environ['SECRETS_TEST_LOG']}/generator-program.$$")
        return [{"name": "gen_neg", "source": "neg.comp", "defines": {"GEN": "1"}}]
    """
TEMPLATE = "{% for s in shaders %}{{ s.name }} {{ s.sha256 }}\n{% endfor %}"


def forms(value: str) -> dict[str, bytes]:
    """Every way ``value`` could be written down by mistake."""
    raw = value.encode()
    return {"as given": raw, "percent-encoded": urllib.parse.quote(value, safe="").encode(),
            "JSON": json.dumps(value)[1:-1].encode(), "repr": repr(raw)[2:-1].encode(),
            "base64": base64.b64encode(raw), "basic auth": base64.b64encode(f"{USER}:{value}".encode())}


def leaks(data: bytes) -> list[str]:
    """Which planted value, in which form, ``data`` holds."""
    return [f"{name} ({how})" for name, value in PLANTED.items() for how, form in forms(value).items()
            if form in data]


def test_the_search_finds_each_form_where_it_is_planted():
    """The control of every search below: a planted form is found, and a near miss is not."""
    for name, value in PLANTED.items():
        for how, form in forms(value).items():
            assert f"{name} ({how})" in leaks(b"before " + form + b" after")
        assert leaks(value[:-1].encode()) == []
    assert leaks(urllib.parse.quote(PASSWORD, safe="").encode()) == ["password (percent-encoded)"]


def test_every_test_docs_security_names_exists():
    """docs/SECURITY.md backs each boundary with tests: each name it gives must be a real test,
    and every row names one."""
    doc = (REPO / "docs" / "SECURITY.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(?:tests/\w+\.py::)?(test_\w+)(?:\[[^\]]*\])?`", doc))
    defined = set()
    for path in (REPO / "tests").glob("test_*.py"):
        defined |= set(re.findall(r"^def (test_\w+)", path.read_text(encoding="utf-8"), re.M))
    assert len(named) >= 30 and sorted(named - defined) == []
    rows = [line for line in doc.splitlines() if line.startswith("| ") and not line.startswith("| rule")
            and not line.startswith("| ---")]
    assert rows and all(re.search(r"`(tests/\w+\.py::)?test_\w+", row) for row in rows)


# -- bad settings: one line naming the variable, never the value --------------------------------


def _url(password: str = urllib.parse.quote(PASSWORD, safe=""), host: str = "127.0.0.1:9") -> str:
    return f"http://{USER}:{password}@{host}/cache"


@pytest.mark.parametrize("env, expected", [
    # base64 passwords hold '/' and '+': unencoded, the '/' ends the authority early (was: the
    # refusal printed the URL with its password; or, with a numeric start, it was taken as host
    # 'ci', port and a path holding the password, which was then requested and printed).
    ({"GENSPIRV_REMOTE_CACHE": _url(PASSWORD)},
     "GENSPIRV_REMOTE_CACHE: expected http(s)://host[:port]/path, not 'http://***': an '@' stands past the host; "
     "percent-encode a '/', '?', '#' or '@' in the user info (%2F, %3F, %23, %40)"),
    ({"GENSPIRV_REMOTE_CACHE": _url("12/" + PASSWORD)},
     "GENSPIRV_REMOTE_CACHE: expected http(s)://host[:port]/path, not 'http://***': an '@' stands past the host; "
     "percent-encode a '/', '?', '#' or '@' in the user info (%2F, %3F, %23, %40)"),
    ({"GENSPIRV_REMOTE_CACHE": _url("a#" + PASSWORD)},
     "GENSPIRV_REMOTE_CACHE: expected http(s)://host[:port]/path, not 'http://***': an '@' stands past the host; "
     "percent-encode a '/', '?', '#' or '@' in the user info (%2F, %3F, %23, %40)"),
    ({"GENSPIRV_REMOTE_CACHE": _url(host="127.0.0.1:notaport")},
     "GENSPIRV_REMOTE_CACHE: expected http(s)://host[:port]/path, not 'http://***@127.0.0.1:notaport/cache'"),
    # A credential passed as a parameter, a presigned URL's signature (was: printed whole).
    ({"GENSPIRV_REMOTE_CACHE": f"https://cache.example/genspirv?token={TOKEN}#{SECRET}"},
     "GENSPIRV_REMOTE_CACHE: expected http(s)://host[:port]/path, not 'https://cache.example/genspirv?***#***'"),
    # A URL or a token read from a file saved with CRLF line ends (was: the URL's '\r' dropped
    # silently; the token printed inside a ValueError from the HTTP client).
    ({"GENSPIRV_REMOTE_CACHE": _url() + "\r"},
     "GENSPIRV_REMOTE_CACHE: the URL holds the control character '\\r' at its end (a file saved with CRLF line "
     "ends leaves one): give it alone, on one line (the URL is not shown: it may hold a password)"),
    ({"GENSPIRV_REMOTE_CACHE": _url(), "GENSPIRV_REMOTE_CACHE_TOKEN": TOKEN + "\r"},
     "GENSPIRV_REMOTE_CACHE_TOKEN holds the control character '\\r' at its end (a file saved with CRLF line ends "
     "leaves one): give the value alone, on one line; its value is not shown"),
    ({"GENSPIRV_REMOTE_CACHE": _url(), "GENSPIRV_REMOTE_CACHE_SECRET": SECRET + "\r\n"},
     "GENSPIRV_REMOTE_CACHE_SECRET holds the control character '\\r' at its end (a file saved with CRLF line "
     "ends leaves one): give the value alone, on one line; its value is not shown"),
    # A CI secret that did not expand (was: "no secret", unsigned entries then taken silently).
    ({"GENSPIRV_REMOTE_CACHE": _url(), "GENSPIRV_REMOTE_CACHE_SECRET": ""},
     "GENSPIRV_REMOTE_CACHE_SECRET is set but empty (a CI secret that did not expand gives this): give its value, "
     "or unset it"),
    ({"GENSPIRV_REMOTE_CACHE": _url(), "GENSPIRV_REMOTE_CACHE_TOKEN": ""},
     "GENSPIRV_REMOTE_CACHE_TOKEN is set but empty (a CI secret that did not expand gives this): give its value, "
     "or unset it"),
], ids=["slash", "slash-after-digits", "hash", "bad-port", "query", "url-crlf", "token-crlf", "secret-crlf",
        "empty-secret", "empty-token"])
def test_a_bad_remote_setting_is_one_line_naming_the_variable_and_never_its_value(monkeypatch, env, expected):
    for name in REMOTE_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises((ConfigError, SettingError)) as info:
        remote_settings()
    assert str(info.value) == expected
    assert leaks(str(info.value).encode()) == [] and "Pa55" not in str(info.value)


def test_the_same_settings_without_the_fault_are_taken(monkeypatch):
    """Negative control of the row above: the password percent-encoded, the token and secret
    without their line ends, each is taken as the value it is."""
    for name in REMOTE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE", _url())
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_TOKEN", TOKEN)
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_SECRET", SECRET)
    s = remote_settings()
    assert (s.url.base, s.url.username, s.url.password, s.token, s.secret) == \
        ("http://127.0.0.1:9/cache", USER, PASSWORD, TOKEN, SECRET)
    monkeypatch.delenv("GENSPIRV_REMOTE_CACHE_SECRET")
    assert remote_settings().secret is None                # unset is "no secret", as before


def test_a_warning_that_quotes_a_credential_in_any_form_shows_none(monkeypatch):
    """What an HTTP client or a server may put in an exception's text: the value, its repr,
    the URL's percent-encoded form, the basic-auth header's base64."""
    for name in REMOTE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE", _url())
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_TOKEN", TOKEN)
    monkeypatch.setenv("GENSPIRV_REMOTE_CACHE_SECRET", SECRET)
    said: list[str] = []
    cache = RemoteCache(remote_settings(), warn=said.append)
    quoted = [f"{how}: {form.decode()}" for name, value in PLANTED.items() for how, form in forms(value).items()
              if how != "base64" and (how != "basic auth" or name == "password")]
    cache._warn("; ".join(quoted) + f"; {repr(TOKEN + chr(13))}; {(TOKEN + chr(13)).encode()!r}")
    assert len(said) == 1 and "***" in said[0]
    assert [f for f in leaks(said[0].encode()) if not f.endswith("(base64)") and
            (not f.endswith("(basic auth)") or f.startswith("password"))] == []


# -- the whole surface, against a real store and hostile servers ------------------------------------


def _start(folder: Path, extra: str = "") -> WebdavStore:
    try:
        return WebdavStore(folder, extra=extra).start()
    except StoreError as exc:
        pytest.skip(f"nginx cannot start here: {exc}")


def _project(folder: Path) -> Path:
    files = {**TINY_FILES, "tools/gen.py": GENERATOR, "tools/table.j2": TEMPLATE}
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (folder / "pyproject.toml").write_text(TINY_PYPROJECT.replace(
        'glslang = "13.1.1"\n', 'glslang = "13.1.1"\ngenerator = "tools/gen.py"\n'
        'generate = [ { template = "tools/table.j2", output = "src/table.txt" } ]\n'))
    return folder


WRAPPER = """\
#!/bin/sh
# Records how genspirv started it (its command line, its environment), then runs the real tool.
tr '\\0' ' ' < /proc/$$/cmdline > "{log}/{name}.$$.cmdline"
tr '\\0' '\\n' < /proc/$$/environ > "{log}/{name}.$$.environ"
exec {real} "$@"
"""


class Watcher:
    """Reads the command line and environment of every process below ``pid`` while it runs.

    A fork of the build (a generator's or a template's child) is the build itself: same
    command line, the same environment block (the kernel shows the one it was started with);
    its command line is searched, its environment is the build's own. Every process that
    exec'd something else (a worker, a tool, a generator's program) is searched whole."""

    def __init__(self, pid: int):
        self.pid, self.seen, self._stop = pid, {}, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            own = _read(f"/proc/{self.pid}/cmdline")        # read again: at first, it may not have exec'd yet
            parents = {}
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    stat = _read(f"/proc/{entry}/stat")
                    if stat:
                        parents[int(entry)] = int(stat.rsplit(b")", 1)[1].split()[1])
            for pid in parents:
                p = pid
                while p in parents and p != self.pid:
                    p = parents[p]
                if p == self.pid and pid != self.pid and pid not in self.seen:
                    cmdline = _read(f"/proc/{pid}/cmdline")
                    environ = _read(f"/proc/{pid}/environ") if cmdline != own else b""
                    if cmdline:
                        self.seen[pid] = (cmdline, environ)
            time.sleep(0.002)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return self.seen


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


class Surface:
    """Everything the scenario made genspirv say, write and start."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.log = tmp / "log"
        self.log.mkdir()
        self.said: list[tuple[str, str]] = []       # (what ran, its stdout + stderr)
        self.processes: dict[int, tuple[bytes, bytes]] = {}
        self.written: list[Path] = []               # folders genspirv wrote into
        from genspirv.toolchain.tools import find_tool
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GENSPIRV_")}
        self.env.update(PYTHONPATH=str(REPO), SECRETS_TEST_LOG=str(self.log), GENSPIRV_CACHE_DIR=str(tmp / "shared"),
                        SECRETS_TEST_VISIBLE="a-value-every-child-shows")
        for tool, var in (("glslangValidator", "GENSPIRV_GLSLANG"), ("spirv-val", "GENSPIRV_SPIRV_VAL")):
            found = find_tool(tool)
            wrapper = tmp / "bin" / tool
            wrapper.parent.mkdir(exist_ok=True)
            wrapper.write_text(WRAPPER.format(log=self.log, name=tool, real=found.path))
            wrapper.chmod(0o755)
            self.env[var] = str(wrapper)
            if found.lib_dir is not None:
                self.env["LD_LIBRARY_PATH"] = str(found.lib_dir)

    def run(self, what: str, *args: str, **remote: str) -> subprocess.CompletedProcess:
        env = dict(self.env, **remote)
        proc = subprocess.Popen([sys.executable, "-m", "genspirv", *args], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        watcher = Watcher(proc.pid)
        out, err = proc.communicate(timeout=180)
        self.processes.update(watcher.stop())
        self.said.append((what, out + err))
        return subprocess.CompletedProcess(args, proc.returncode, out, err)


@contextlib.contextmanager
def echoing_server(secret_of_entries: str = "not-the-teams-secret"):
    """A hostile store: for every GET it answers an entry whose ``deps`` and key echo back what
    it was sent (the Authorization header, the path), so a careless warning would print them."""
    received: list[str] = []

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            auth = self.headers.get("Authorization", "")
            received.append(auth)
            key = self.path.rstrip("/").split("/")
            key = (key[-2] + key[-1]) if len(key) >= 2 else "0" * 64
            header = {"kind": "blob", "key": key, "deps": [f"../{auth}", auth, f"/{auth}"], "size": 0,
                      "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "signed": True}
            body = b"genspirv-remote-entry/1\n" + json.dumps(header).encode() + b"\n" + b"\0" * 32
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self):
            received.append(self.headers.get("Authorization", ""))
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(401, f"no: {self.headers.get('Authorization', '')}")
            self.end_headers()

        def log_message(self, *args):
            pass

    with serving(Echo) as host:
        yield host, received


def _refused_host() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(scope="module")
def surface(tmp_path_factory) -> Surface:
    """The scenario, run once: every command and fault, with the planted values set."""
    tmp = tmp_path_factory.mktemp("secrets")
    s = Surface(tmp)
    encoded = urllib.parse.quote(PASSWORD, safe="")
    users = tmp / "users"
    users.write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
    basic = _start(tmp / "basic", extra='limit_except GET HEAD {\n    auth_basic "writers";\n'
                                        f"    auth_basic_user_file {users};\n}}")
    bearer = _start(tmp / "bearer", extra=f'if ($http_authorization != "Bearer {TOKEN}") {{ return 401; }}')
    s.stores = (basic, bearer)
    a, b, c, d = (_project(tmp / name) for name in "abcd")
    s.written += [a, b, c, d, tmp / "shared", tmp / "shared-b", basic.root, bearer.root]
    try:
        url = basic.url.replace("http://", f"http://{USER}:{encoded}@")
        rw = {"GENSPIRV_REMOTE_CACHE": url, "GENSPIRV_REMOTE_CACHE_MODE": "read-write",
              "GENSPIRV_REMOTE_CACHE_SECRET": SECRET}
        s.first = s.run("build -v (stores)", "build", "-v", "--root", str(a), **rw)
        s.run("no-op build -v", "build", "-v", "--root", str(a), **rw)
        s.run("no-op build, plain", "build", "--root", str(a), **rw)
        s.run("check -v", "check", "-v", "--root", str(a), **rw)
        s.run("cache stats", "cache", "stats", "--root", str(a), **rw)
        s.run("cache stats --json", "cache", "stats", "--json", "--root", str(a), **rw)
        s.run("list", "list", "--root", str(a), **rw)
        s.second = s.run("build --explain --json - (remote hits)", "build", "-v", "--explain", "--json", "-",
                         "--root", str(b), **dict(rw, GENSPIRV_REMOTE_CACHE_MODE="read",
                                                   GENSPIRV_CACHE_DIR=str(tmp / "shared-b")))
        wrong = url.replace(encoded, urllib.parse.quote("wrong+" + PASSWORD[6:], safe=""))
        s.run("wrong password", "build", "-v", "--force", "--root", str(b), **dict(rw, GENSPIRV_REMOTE_CACHE=wrong))
        s.bearer = s.run("bearer, stores", "build", "-v", "--root", str(c), GENSPIRV_REMOTE_CACHE=bearer.url,
                         GENSPIRV_REMOTE_CACHE_MODE="read-write", GENSPIRV_REMOTE_CACHE_TOKEN=TOKEN,
                         GENSPIRV_REMOTE_CACHE_SECRET=SECRET)
        _fresh(c)
        s.run("bearer, wrong token", "build", "--root", str(c), GENSPIRV_REMOTE_CACHE=bearer.url,
              GENSPIRV_REMOTE_CACHE_TOKEN=TOKEN[::-1], GENSPIRV_REMOTE_CACHE_SECRET=SECRET)
        s.run("unreachable", "build", "--force", "--root", str(d),
              GENSPIRV_REMOTE_CACHE=_url(encoded, _refused_host()), GENSPIRV_REMOTE_CACHE_TOKEN=TOKEN,
              GENSPIRV_REMOTE_CACHE_SECRET=SECRET, GENSPIRV_REMOTE_CACHE_MODE="read-write")
        s.echoed = []
        for label, auth in (("token", {"GENSPIRV_REMOTE_CACHE_TOKEN": TOKEN}), ("basic", {})):
            with echoing_server() as (host, received):
                _fresh(d)
                s.run(f"an echoing store ({label})", "build", "-v", "--root", str(d),
                      GENSPIRV_REMOTE_CACHE=_url(encoded, host), GENSPIRV_REMOTE_CACHE_MODE="read-write",
                      GENSPIRV_REMOTE_CACHE_SECRET=SECRET, **auth)
            s.echoed += received
        s.refused = []
        for name, env in (("raw password", {"GENSPIRV_REMOTE_CACHE": _url(PASSWORD)}),
                          ("CRLF URL", {"GENSPIRV_REMOTE_CACHE": url + "\r"}),
                          ("CRLF token", {"GENSPIRV_REMOTE_CACHE": url, "GENSPIRV_REMOTE_CACHE_TOKEN": TOKEN + "\r"}),
                          ("CRLF secret", {"GENSPIRV_REMOTE_CACHE": url, "GENSPIRV_REMOTE_CACHE_SECRET": SECRET + "\r"}),
                          ("empty secret", {"GENSPIRV_REMOTE_CACHE": url, "GENSPIRV_REMOTE_CACHE_SECRET": ""})):
            _fresh(d)           # a fresh clone asks the store: with the old code, the request went out
            s.refused.append(s.run(name, "build", "--root", str(d), **env))
    finally:
        basic.stop()
        bearer.stop()
    return s


def _fresh(root: Path) -> None:
    """``root`` as a fresh clone: no state, no outputs, so its build asks the store for every variant."""
    import shutil
    for name in (".genspirv", "spirv", "manifests", "src"):
        shutil.rmtree(root / name, ignore_errors=True)


@pytest.mark.slow
def test_the_planted_values_were_in_use(surface):
    """The control of the searches below: the password stored entries (a wrong one did not), the
    token reached the bearer store and the echoing servers, the secret signed what was stored,
    and each refused setting stopped its build."""
    basic, bearer = surface.stores
    assert surface.first.returncode == 0, surface.first.stderr
    assert len(list((basic.root / "cache").glob("??/*"))) == 6          # 3 variants: blob + index each
    assert "0 compiled, 3 from the remote cache" in surface.second.stdout, surface.second.stdout
    assert surface.bearer.returncode == 0 and len(list((bearer.root / "cache").glob("??/*"))) == 6
    assert f"Bearer {TOKEN}" in surface.echoed
    assert "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode() in surface.echoed
    assert [r.returncode for r in surface.refused] == [2] * 5
    said = dict(surface.said)
    assert "refused to store an entry (HTTP 401)" in said["wrong password"]
    assert "answered HTTP 401 to a GET" in said["bearer, wrong token"]
    assert "refused the connection" in said["unreachable"]
    for label, scheme in (("token", "Bearer"), ("basic", "Basic")):
        warned = [line for line in said[f"an echoing store ({label})"].splitlines() if "warning" in line]
        assert len(warned) == 4 and all(line.startswith("genspirv: warning: remote cache") for line in warned)
        assert sum(f"header field 'deps' #0: path '../{scheme} ***' must not contain '..'" in line
                   for line in warned) == 3, warned



@pytest.mark.slow
def test_no_output_shows_a_secret(surface):
    """Every stdout and stderr, of builds, no-ops, check, list, cache stats, -v, --explain,
    --json, warnings and refusals (was: the URL password in a refusal, the CRLF token in a
    warning's ValueError)."""
    found = {what: leaks(text.encode()) for what, text in surface.said}
    assert {what: f for what, f in found.items() if f} == {}
    assert len(surface.said) == 19


@pytest.mark.slow
def test_no_process_genspirv_starts_is_given_a_secret(surface):
    """Tools (through the wrappers), compile workers and a generator's programs: neither their
    command lines nor their environments hold a credential (was: every tool and worker inherited
    the build's whole environment). Control: they do show the test's visible variable."""
    records = {p.name: p.read_bytes() for p in surface.log.iterdir()}
    assert any(n.startswith("glslangValidator.") and n.endswith(".environ") for n in records)
    assert any(n.startswith("generator-program.") for n in records)
    environments = [v for n, v in records.items() if not n.endswith(".cmdline")]
    environments += [env for _, env in surface.processes.values() if env]
    assert environments and all(b"SECRETS_TEST_VISIBLE=a-value-every-child-shows" in e for e in environments)
    assert {n: leaks(v) for n, v in records.items() if leaks(v)} == {}
    assert {p: leaks(c + e) for p, (c, e) in surface.processes.items() if leaks(c + e)} == {}
    assert any(b"genspirv.toolchain.workers" in c for c, _ in surface.processes.values()) or \
        any(n.startswith("glslangValidator.") for n in records)


def _files_holding_a_secret(surface) -> dict[str, list[str]]:
    found = {}
    for folder in surface.written:
        for path in Path(folder).rglob("*"):
            if path.is_file() and not path.is_symlink():
                hits = leaks(path.read_bytes())
                if hits:
                    found[str(path.relative_to(surface.tmp))] = hits
    return found


@pytest.mark.slow
def test_nothing_on_disk_holds_a_secret(surface):
    """Every file under the four projects (their .genspirv/ included, after builds and no-ops),
    the shared cache and the stores: none holds a credential in any form."""
    assert sum(1 for f in surface.written for p in Path(f).rglob("*") if p.is_file()) > 50
    assert _files_holding_a_secret(surface) == {}
