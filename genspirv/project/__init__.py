"""The project's vocabulary: what a build is asked to make, before anything is compiled.

``config`` reads ``pyproject.toml`` into a ``Config``; ``variants`` expands a
source's table, matrix or list into ``Variant`` s and names the compilers
(``CompilerName``); ``variant_names`` checks a name; ``generator`` runs a
generator file (in a child, ``isolated``, which records what it read there:
``reads``) and checks what it returns;
``generated`` is the generated sources' files and notes; ``remote_url`` reads
the remote cache's address; ``lint_rules`` names lint's rules, which the config
may suppress. Pure but for reading the project's files; imports nothing above
``settings``, ``fsutil`` and ``errors``.
"""
