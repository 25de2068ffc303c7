"""The build, and the check that rebuilds and compares: a ``Config`` in, committed outputs out.

In data-flow order: ``state`` (what the last build recorded, the content keys'
inputs), ``statlog`` (the stat() results it logged), ``plan`` (per variant: up
to date, from the cache, compile or unavailable, and why), ``selection``
(``build NAME...``), ``blob_cache`` (local blobs by content key),
``remote_fetches`` (the remote cache's fetches inside the plan),
``variant_compile`` (one variant compiled, optimised, validated and reflected),
``compile_workers`` (the same in worker processes), ``compile`` (every
variant's, in parallel, on threads or in those workers), ``outputs`` (blobs,
manifest and generated code from the results), ``commit`` (all of them in place
or none), ``noopstamp`` (a no-op decided from stat() alone), ``noopreplay`` (a
plain ``genspirv build`` that repeats one, answered before the config is
loaded), ``report`` (what a build did); ``run`` (the plan run build and check
share: the planner's lookups on the project, the compiles); ``builder`` runs a
build (``Builder``) and ``check`` a check.
"""
