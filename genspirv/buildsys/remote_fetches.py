"""The remote cache's part in a build's plan: which compile steps to ask the store for, and how.

Takes a ``Plan``, the ``RemoteCache``, the last build's records, the planner's
``Lookups`` and the local blob cache; gives either a compile gate
(``remote_fetch``: for each compile step, a future of it as a remote hit,
asked when its compile job is queued, which ``compile.compile_all`` waits on
before compiling, so compiles run while other fetches are in flight) or, for
``--explain``, the whole plan with every answer in (``ask_remote``). Rules in
docs/GUIDE.md, "Sharing compiles across machines".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional

if TYPE_CHECKING:
    from concurrent.futures import Future

from .blob_cache import BlobCache
from .keys import Record
from .compile import Fetch, Fetched, reflect_blob
from ..project.config import Variant
from .plan import Found, Lookups, Plan, Reason, found_step, replaced
from ..remote.cache import Hit, Lookup, RemoteCache
from ..project.variants import CompilerName


def ask_remote(plan: Plan, remote: RemoteCache, records: Mapping[str, Record], lookups: Lookups,
               cache: BlobCache) -> Plan:
    """``plan`` with what the remote cache holds of its compile steps taken from there
    (docs/GUIDE.md, "Sharing compiles across machines"), every answer in before it returns:
    what ``--explain`` prints, a dry run's exact plan. ``--force`` asks nothing."""
    asking = _asking(plan, remote, records, lookups, cache)
    if asking is None:
        return plan
    asked, lookup, how = asking
    found = remote.fetch([lookup(s) for s in asked.values()], *how)
    return replaced(plan, {name: f.found for name, f in found.items()})


def remote_fetch(plan: Plan, remote: RemoteCache, records: Mapping[str, Record], lookups: Lookups,
                 cache: BlobCache) -> Fetch:
    """Each compile step's request to the remote cache, asked when its compile job is queued
    (``compile_all``'s ``fetch``): a future of the step as a remote hit (``Fetched``), or None
    for a miss. None when there is nothing to ask (no remote cache, ``--force``)."""
    asking = _asking(plan, remote, records, lookups, cache)
    if asking is None:
        return None
    asked, lookup, how = asking

    def fetch(v: Variant) -> Optional[Future]:
        step = asked.get(v.name)
        return None if step is None else remote.ask(lookup(step), *how)
    return fetch


def _asking(plan: Plan, remote: RemoteCache, records: Mapping[str, Record], lookups: Lookups, cache: BlobCache):
    """(the steps to ask for by name, each one's ``Lookup``, the rest of ``RemoteCache.ask``'s
    arguments); None when there is nothing to ask."""
    # A stripped (-g0) blob has lost the names its reflection reads: such a variant compiles.
    asked = {s.name: s for s in plan.to_compile if s.reason is not Reason.FORCED and not s.variant.strip_debug}
    if not remote.enabled or not asked:
        return None

    def lookup(step) -> Lookup:
        # A key the last build's files give now is fetched directly; else the store's index
        # entry says which files to hash. The recorded sha256 holds only for the same key.
        record = records.get(step.name)
        if record is None or record.unavailable:
            return Lookup(step.variant)
        key = lookups.inputs(step.variant, record.deps).key
        return Lookup(step.variant, key, record.sha256 if key == record.key else None)

    def fetched(lk: Lookup, h: Hit) -> Fetched:
        found = found_step(asked[lk.variant.name], Found(h.deps, h.blob, h.info, h.remote,
                           CompilerName(h.compiler) if h.compiler else CompilerName.GLSLANG), lookups)
        return Fetched(found, f" ({found.action.value})")

    return asked, lookup, (lambda v, deps: lookups.inputs(v, deps).key, cache.get,
                           lambda v, blob: reflect_blob(v.name, "remote cache", blob), fetched)
