"""``genspirv cache stats|clear``: what the compile caches did and hold, and emptying them.

Takes the project's config and the command's arguments; prints through the
line printer it is given and returns the exit status. ``stats`` shows the
counters builds keep (``genspirv.cachestats``: local and remote hits, misses,
stores, errors) and each local cache folder's entries and size on disk
(``--json``: the same as a document of schema ``genspirv-cache-stats/1``;
``--zero-stats``: then start the counters afresh, as ``ccache -s -z``).
``clear`` deletes every blob of the local caches (``.genspirv/cache/`` and
``GENSPIRV_CACHE_DIR``), keeping the counters, as ``ccache -C`` does; the
remote store is the server's to expire.
"""

from __future__ import annotations

import argparse
import enum
import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from .. import cachestats
from ..cachestats import Stat, human_size

if TYPE_CHECKING:       # the command line adds these options before any build module loads
    from ..project.config import Config

Say = Callable[[str], None]


class CacheAction(enum.Enum):
    STATS = "stats"
    CLEAR = "clear"


def add_arguments(p: argparse.ArgumentParser) -> None:
    root = argparse.ArgumentParser(add_help=False)
    root.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS,
                      help="the project to work on (as before the command)")
    sub = p.add_subparsers(dest="cache_action", metavar="ACTION", required=True)
    stats = sub.add_parser(CacheAction.STATS.value, parents=[root], help="hits, misses, stores, errors and size",
                           description="the counters builds keep, and each local cache's entries and size")
    stats.add_argument("--json", action="store_true", help="print them as JSON (schema genspirv-cache-stats/1)")
    stats.add_argument("-z", "--zero-stats", action="store_true",
                       help="then start the counters afresh (ccache -z); the cached blobs stay")
    stats.set_defaults(usage_of=stats)
    clear = sub.add_parser(CacheAction.CLEAR.value, parents=[root], help="delete every blob of the local caches",
                           description="delete every blob of .genspirv/cache/ and GENSPIRV_CACHE_DIR "
                                       "(the counters stay)")
    clear.set_defaults(usage_of=clear)


def _shown(config: Config, folder: Path) -> str:
    try:
        return folder.relative_to(config.root).as_posix()
    except ValueError:
        return str(folder)


def _remote_url(config: Config) -> Optional[str]:
    from ..remote.cache import remote_settings
    remote = remote_settings(config.remote_cache)
    return remote.url.base if remote is not None else None


def _level(stats: cachestats.Stats, hits: Stat, misses: Stat, stores: Stat, errors: Stat) -> str:
    asked = stats[hits] + stats[misses]
    rate = f" ({100 * stats[hits] / asked:.1f} % hits)" if asked else ""
    return (f"{stats[hits]} hits, {stats[misses]} misses{rate}, {stats[stores]} stores, "
            f"{stats[errors]} errors")


def stats_document(config: Config) -> dict:
    """What ``cache stats --json`` prints."""
    from ..buildsys.blob_cache import BlobCache, local_cache_dir
    stats = cachestats.read(local_cache_dir(config))
    folders = [{"path": _shown(config, f), "entries": n, "bytes": size}
               for f, n, size in BlobCache.for_config(config).usage()]
    return {**stats.to_json(), "folders": folders, "remote": _remote_url(config)}


def run(config: Config, args: argparse.Namespace, say: Say) -> int:
    from ..buildsys.blob_cache import BlobCache, local_cache_dir
    folder = local_cache_dir(config)
    if CacheAction(args.cache_action) is CacheAction.CLEAR:
        for where, n, size in BlobCache.for_config(config).clear():
            say(f"genspirv cache clear: removed {n} entries ({human_size(size)}) from {_shown(config, where)}")
        return 0
    if args.json:
        say(json.dumps(stats_document(config), indent=2, sort_keys=True))
    else:
        stats = cachestats.read(folder)
        since = f" since {stats.since}" if stats.since else ""
        say(f"genspirv cache stats: {stats.builds} build{'' if stats.builds == 1 else 's'} counted{since}")
        say("  local cache:  " + _level(stats, Stat.LOCAL_HITS, Stat.LOCAL_MISSES, Stat.LOCAL_STORES,
                                          Stat.LOCAL_ERRORS))
        url = _remote_url(config)
        say("  remote cache: " + _level(stats, Stat.REMOTE_HITS, Stat.REMOTE_MISSES, Stat.REMOTE_STORES,
                                          Stat.REMOTE_ERRORS) + (f" ({url})" if url else " (none set)"))
        for where, n, size in BlobCache.for_config(config).usage():
            say(f"  {_shown(config, where)}: {n} entries, {human_size(size)}")
    if args.zero_stats:
        cachestats.zero(folder)
        if not args.json:
            say("genspirv cache stats: counters zeroed")
    return 0
