"""A private nginx WebDAV store on 127.0.0.1: the remote cache benchmark's server and the tests'.

Takes a scratch folder (and optionally location directives to add, e.g. auth);
gives ``WebdavStore``, a context manager that writes an nginx configuration
there, starts ``nginx`` on a free port in the foreground (its pid file, logs
and temp folders inside the scratch folder, so it needs no system path and
leaves nothing behind), waits until it answers and stops it on exit. Its
``url`` is what ``GENSPIRV_REMOTE_CACHE`` takes.

``server_block`` is the ``server { ... }`` docs/GUIDE.md shows for a real
cache server ("Sharing compiles across machines"; a test keeps the two equal):
``dav_methods PUT`` with ``create_full_put_path``, and the request bodies'
temp folder on the store's file system, so a PUT lands by rename and a reader
sees the old entry or the new one, never a part.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Optional

from genspirv.errors import GenspirvError

START_TIMEOUT = 10.0


class StoreError(GenspirvError):
    """nginx is missing or would not start; the text says why."""

    exit_code = 2


def server_block(listen: str, store: str, temp: str, extra: str = "") -> str:
    """The ``server`` block of a cache store: entries under ``store``, PUT bodies in ``temp``."""
    lines = [
        "server {",
        f"    listen {listen};",
        f"    root {store};",
        "    location / {",
        "        dav_methods PUT;                 # GET and HEAD need nothing more",
        "        create_full_put_path on;         # makes <url>/<key[:2]>/ on the first PUT there",
        "        dav_access user:rw group:r all:r;",
        "        client_max_body_size 64m;",
        f"        client_body_temp_path {temp};   # same file system as root: a PUT is a rename",
    ]
    lines += [f"        {line}" for line in extra.splitlines() if line.strip()]
    return "\n".join(lines + ["    }", "}"]) + "\n"


def nginx_conf(folder: Path, port: int, extra: str = "") -> str:
    """A whole configuration for a private instance in ``folder`` listening on 127.0.0.1:``port``."""
    temp = folder / "tmp"
    return "\n".join([
        "daemon off;",
        "master_process off;                  # one process: nothing outlives a stop",
        f"pid {folder / 'nginx.pid'};",
        f"error_log {folder / 'error.log'} warn;",
        "events { worker_connections 256; }",
        "http {",
        "    access_log off;",
        "    default_type application/octet-stream;",
        "    keepalive_requests 100000;",
        *(f"    {name}_temp_path {temp / name};" for name in ("proxy", "fastcgi", "uwsgi", "scgi")),
        *("    " + line for line in server_block(f"127.0.0.1:{port}", str(folder / "store"),
                                                    str(temp / "body"), extra).splitlines()),
        "}",
    ]) + "\n"


def find_nginx() -> Optional[str]:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).is_file()), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebdavStore:
    """``with WebdavStore(folder) as store: store.url``: nginx serving ``folder/store``."""

    def __init__(self, folder: Path, extra: str = "", path: str = "/cache"):
        self.folder, self.extra, self.path = Path(folder), extra, path
        self.port: Optional[int] = None
        self.proc: Optional[subprocess.Popen] = None

    @property
    def root(self) -> Path:
        """Where the entries are, as files: ``root / <path> / <key[:2]> / <key[2:]>``."""
        return self.folder / "store"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def start(self) -> "WebdavStore":
        nginx = find_nginx()
        if nginx is None:
            raise StoreError("nginx is not installed (Debian: apt-get install nginx-light)")
        for name in ("store", "tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi"):
            (self.folder / name).mkdir(parents=True, exist_ok=True)
        for _ in range(3):           # another process may take the free port first
            self.port = _free_port()
            conf = self.folder / "nginx.conf"
            conf.write_text(nginx_conf(self.folder, self.port, self.extra))
            self.proc = subprocess.Popen([nginx, "-p", str(self.folder), "-e", str(self.folder / "error.log"),
                                          "-c", str(conf)], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if self._wait_ready():
                return self
        raise StoreError(f"nginx would not start: {self._log_tail()}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return True
            except OSError:
                time.sleep(0.02)
        self.stop()
        return False

    def _log_tail(self) -> str:
        err = b""
        if self.proc is not None and self.proc.stderr is not None and self.proc.poll() is not None:
            err = self.proc.stderr.read() or b""
        try:
            err += (self.folder / "error.log").read_bytes()
        except OSError:
            pass
        return err.decode("utf-8", "replace").strip()[-600:] or "no message"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()

    def __enter__(self) -> "WebdavStore":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
