"""The names of lint's rules: what ``genspirv lint`` reports and what a suppression may name.

A closed set, here below every module that needs it: ``genspirv.lint.findings`` reports
findings of these kinds, the config refuses a ``lint.ignore`` entry that
names none of them, and ``genspirv.lint.suppress`` reports a suppression that
silences nothing as ``unused-suppression``. No genspirv imports.
"""

from __future__ import annotations

import enum


class Rule(str, enum.Enum):
    NEVER_WRITTEN = "never-written"                    # a read_write binding the code never writes
    NEVER_READ = "never-read"                          # a read_write binding the code never reads
    NEVER_ACCESSED = "never-accessed"                  # a binding no reachable code touches
    SPARSE_BINDINGS = "sparse-bindings"                # a set's binding numbers are not 0..n-1
    SPEC_DEFAULTS_DISAGREE = "spec-defaults-disagree"  # constants sharing a spec id, different defaults
    IDENTICAL_BLOBS = "identical-blobs"                # variants of one source with byte-identical blobs
    PORTABILITY = "portability"                        # past a limit every Vulkan 1.2 device guarantees
    UNUSED_SUPPRESSION = "unused-suppression"          # a suppression that silences no finding


# What a suppression may name: every rule but the one about suppressions themselves.
SUPPRESSIBLE = tuple(r.value for r in Rule if r is not Rule.UNUSED_SUPPRESSION)
