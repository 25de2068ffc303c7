"""Cache statistics: what the blob caches and the remote cache did, build after build (ccache's ``-s``).

A build counts into a ``Tally`` (thread-safe: the remote cache's pool counts
from its threads) and, when it is done, adds it to the counters kept beside the
project's local cache, ``.genspirv/cache/stats.json``, with ``record``: read,
add and write back (the one atomic writer, ``fsutil.atomic_write``) under
``.genspirv/cache/stats.lock`` (``fsutil.exclusive_lock``), so builds that
finish together each add their own counts and none is lost; a reader sees the
old file or the new one, never half of either. A build that counted nothing
writes nothing (a no-op build writes no file). ``read`` gives the ``Stats``;
``zero`` starts them afresh. Best effort, as the caches are: a counter that
cannot be written costs the count, never the build.
"""

from __future__ import annotations

import enum
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from .fsutil import CACHE_FILE_MAX, atomic_write, exclusive_lock, read_json

STATS_FILE = "stats.json"
LOCK_FILE = "stats.lock"
SCHEMA = "genspirv-cache-stats/1"


class Stat(enum.Enum):
    """One counter (docs/GUIDE.md, "Cache statistics" says what each counts)."""

    LOCAL_HITS = "local_hits"           # variants taken from a local blob cache
    LOCAL_MISSES = "local_misses"       # variants the local caches were asked for and did not hold
    LOCAL_STORES = "local_stores"       # blobs written into the local caches
    LOCAL_ERRORS = "local_errors"       # blobs a local cache could not take
    REMOTE_HITS = "remote_hits"         # variants taken from the remote cache
    REMOTE_MISSES = "remote_misses"     # variants asked of it that it had no verified entry for
    REMOTE_STORES = "remote_stores"     # blob entries stored in it
    REMOTE_ERRORS = "remote_errors"     # a server that failed or refused, an entry that did not verify


class Tally:
    """One build's counts, added to from any thread."""

    def __init__(self) -> None:
        self._counts: Counter = Counter()
        self._lock = threading.Lock()

    def add(self, stat: Stat, n: int = 1) -> None:
        if n:
            with self._lock:
                self._counts[stat] += n

    def counts(self) -> dict[Stat, int]:
        with self._lock:
            return dict(self._counts)


@dataclass(frozen=True)
class Stats:
    """The counters as kept: each ``Stat``, the builds that counted, and since when (UTC, ISO 8601)."""

    counts: Mapping[Stat, int] = field(default_factory=dict)
    builds: int = 0
    since: str = ""

    def __getitem__(self, stat: Stat) -> int:
        return self.counts.get(stat, 0)

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "builds": self.builds, "since": self.since,
                "counters": {s.value: self[s] for s in Stat}}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def read(folder: Path) -> Stats:
    """The counters kept in ``folder`` (the project's local cache); zeros when there are none yet."""
    try:
        doc = read_json(folder / STATS_FILE, CACHE_FILE_MAX)     # a FIFO or /dev/zero there: not ours
        counters = doc["counters"]
        counts = {s: int(counters.get(s.value, 0)) for s in Stat}
        return Stats(counts, int(doc.get("builds", 0)), str(doc.get("since", "")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Stats()          # none yet, or not ours: counting starts again


def _write(folder: Path, stats: Stats) -> None:
    data = json.dumps(stats.to_json(), indent=2, sort_keys=True) + "\n"
    atomic_write(folder / STATS_FILE, data.encode("utf-8"), durable=False)


def record(folder: Path, counts: Mapping[Stat, int]) -> bool:
    """Add one build's ``counts`` to the counters in ``folder``; False when they could not be written."""
    if not any(counts.values()):
        return True
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(folder / LOCK_FILE):
            old = read(folder)
            total = {s: old[s] + counts.get(s, 0) for s in Stat}
            _write(folder, Stats(total, old.builds + 1, old.since or _now()))
        return True
    except OSError:
        return False


def zero(folder: Path) -> None:
    """Start the counters afresh (``--zero-stats``); the cached blobs stay. No cache yet, no
    counters to zero: nothing is made (a folder made here would lack the state's .gitignore)."""
    if not folder.is_dir():
        return
    with exclusive_lock(folder / LOCK_FILE):
        _write(folder, Stats({}, 0, _now()))


def human_size(n: int) -> str:
    """Bytes as ccache prints a size: 0 B, 812 B, 4.2 KiB, 1.3 MiB."""
    if n < 1024:
        return f"{n} B"
    size, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.1f} {unit}"
