"""Commands of the CLI that are more than a call: ``--json`` and annotations (``results``),
``genspirv cache`` (``cache``) and ``genspirv reflect`` (``reflect``). Used by ``genspirv.cli`` only.
"""
