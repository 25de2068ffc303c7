"""An HTTP server in this process, for tests that play a hostile remote store.

``serving(handler)`` starts ``http.server.ThreadingHTTPServer`` on 127.0.0.1
with ``handler`` (a ``BaseHTTPRequestHandler`` subclass) and yields its
``host:port``; it stops the server on exit. The real store is nginx
(benchmarks/webdav.py); a fake one says what nginx never would.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
from typing import Iterator


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
