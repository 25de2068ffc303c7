"""``genspirv cache stats|clear``: what the compile caches did and hold, and emptying them.

Takes what loads the project's config (not called for ``stats`` outside any
project) and the command's arguments; prints through the line printer it is
given and returns the exit status. ``stats`` shows the
counters builds keep (``genspirv.cachestats``: local and remote hits, misses,
stores, errors) and each local cache folder's entries and size on disk
(``--json``: the same as a document of schema ``genspirv-cache-stats/1``;
``--zero-stats``: then start the counters afresh, as ``ccache -s -z``).
``clear`` deletes every blob of the local caches (``.genspirv/cache/`` and
``GENSPIRV_CACHE_DIR``), keeping the counters, as ``ccache -C`` does; the
remote store is the server's to expire. ccache's spellings work too: ``cache
-s`` is ``cache stats``, ``cache -z`` zeroes the counters, ``cache -s -z``
shows them, then zeroes them. Outside any project ``stats`` shows the shared
cache (``GENSPIRV_CACHE_DIR``) alone, as ``ccache -s`` works anywhere: the
counters are a project's, so there are none to show there.
"""

from __future__ import annotations

import argparse
import enum
import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from .. import cachestats
from ..cachestats import Stat, human_size
from ..fsutil import find_project_root

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
    p.add_argument("-s", "--show-stats", dest="cache_show", action="store_true",
                   help="the same as `genspirv cache stats` (ccache -s)")
    p.add_argument("-z", "--zero-stats", dest="cache_zero", action="store_true",
                   help="start the counters afresh (ccache -z); with -s: show them first")
    sub = p.add_subparsers(dest="cache_action", metavar="ACTION")      # -s or -z: stats
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


def _outside_project(args: argparse.Namespace) -> bool:
    """No --root, no [tool.genspirv] at or above this folder, and no glsl/ here (a project of
    sources alone): the config would say "no genspirv project here"."""
    from ..project.config import DEFAULTS
    here = Path.cwd()
    return getattr(args, "root", None) is None and find_project_root(here.resolve()) is None and \
        not (here / DEFAULTS["glsl_dir"]).is_dir()


def _nothing_to_zero(say: Say) -> int:
    say("genspirv cache stats: no genspirv project here: no counters to zero (they live in a project)")
    return 0


def _shared_stats(as_json: bool, say: Say) -> int:
    """``cache stats`` outside any project: the shared cache's entries and size (the counters are kept
    per project, so none), the remote store in force; exit 0, as ccache -s."""
    from ..buildsys.blob_cache import BlobCache, shared_cache_dir
    from ..remote.cache import remote_settings
    shared = shared_cache_dir()
    usage = BlobCache([shared]).usage() if shared is not None else []
    remote = remote_settings()
    if as_json:
        say(json.dumps({**cachestats.Stats().to_json(), "remote": remote.url.base if remote else None,
                        "folders": [{"path": str(f), "entries": n, "bytes": size} for f, n, size in usage]},
                       indent=2, sort_keys=True))
        return 0
    where = "; the shared cache, GENSPIRV_CACHE_DIR:" if shared is not None else \
        ", and GENSPIRV_CACHE_DIR names no shared cache"
    say(f"genspirv cache stats: no genspirv project here, so no counters (each project keeps its own){where}")
    for folder, n, size in usage:
        say(f"  {folder}: {n} entries, {human_size(size)}")
    if remote is not None:
        say(f"  remote cache: {remote.url.base}")
    return 0


def run(load_config: Callable[[], Config], args: argparse.Namespace, say: Say) -> int:
    """The command on the project ``load_config`` gives (``stats`` outside any project: none)."""
    from ..buildsys.blob_cache import BlobCache, local_cache_dir
    if args.cache_action is None and not (args.cache_show or args.cache_zero):
        args.usage_of.error("name an action: stats or clear (or -s, -z as ccache)")
    if args.cache_action is not None and (args.cache_show or args.cache_zero):
        args.usage_of.error(f"-s and -z are `cache stats`; they take no action ({args.cache_action})")
    action = CacheAction(args.cache_action or CacheAction.STATS.value)
    as_json = getattr(args, "json", False)
    show = args.cache_action is not None or args.cache_show         # `cache -z` alone shows nothing first
    zero = getattr(args, "zero_stats", False) or args.cache_zero
    if action is CacheAction.STATS and _outside_project(args):
        return _shared_stats(as_json, say) if show else _nothing_to_zero(say)
    config = load_config()
    folder = local_cache_dir(config)
    if action is CacheAction.CLEAR:
        for where, n, size in BlobCache.for_config(config).clear():
            say(f"genspirv cache clear: removed {n} entries ({human_size(size)}) from {_shown(config, where)}")
        return 0
    if as_json:
        say(json.dumps(stats_document(config), indent=2, sort_keys=True))
    elif show:
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
    if zero:
        cachestats.zero(folder)
        if not as_json:
            say("genspirv cache stats: counters zeroed")
    return 0
