"""The remote compile cache: content-keyed blobs on an HTTP store (docs/GUIDE.md, "Remote cache").

``entry`` packs and verifies one stored entry; ``entry_files`` says whether the
files it names are the project's to hash; ``cache`` is the client
(``RemoteCache``): fetches, background stores, the circuit breaker and the
counters. Takes a variant's content key; knows nothing of the build's plan,
which asks it through ``genspirv.buildsys.remote_fetches``.
"""
