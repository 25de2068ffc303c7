"""``genspirv lint``: findings from the manifest and the blobs, and the suppressions that silence them.

``findings`` reports each shader's findings (the rules are named in
``genspirv.project.lint_rules``, where the config can see them); ``suppress``
applies the project's ``lint.ignore`` entries and reports one that silences
nothing.
"""
