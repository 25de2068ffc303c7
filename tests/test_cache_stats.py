"""Cache statistics and control: ``genspirv cache stats`` / ``clear``, ``--zero-stats``, and ``build --force``
re-seeding the caches.

Builds run through the fake compiler (``fake_genspirv``). The remote counters
are tested against nginx in tests/test_remote_cache.py.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import time

import pytest

from genspirv import cachestats
from genspirv.cachestats import Stat

CACHE = ".genspirv/cache"


def stats(run, root) -> dict:
    result = run("cache", "stats", "--json", "--root", root)
    assert result.code == 0, result.err
    return json.loads(result.out)


def cached_blobs(root) -> list:
    return sorted((root / CACHE).glob("??/*.spv"))


def test_stats_count_misses_hits_and_stores_and_say_the_size(tiny_project, fake_genspirv):
    root = tiny_project()
    assert fake_genspirv("build", "--root", root, "-q").code == 0          # 3 misses, 3 stores
    (root / "spirv/neg.spv").unlink()
    assert "1 from cache" in fake_genspirv("build", "--root", root, "-q").out     # 1 local hit
    stats_file = root / CACHE / "stats.json"
    before = stats_file.read_bytes(), stats_file.stat().st_mtime_ns
    assert fake_genspirv("build", "--root", root, "-q").code == 0          # a no-op counts and writes nothing
    assert (stats_file.read_bytes(), stats_file.stat().st_mtime_ns) == before

    doc = stats(fake_genspirv, root)
    assert doc["schema"] == "genspirv-cache-stats/1" and doc["builds"] == 2 and doc["since"]
    assert doc["counters"] == {"local_hits": 1, "local_misses": 3, "local_stores": 3, "local_errors": 0,
                               "remote_hits": 0, "remote_misses": 0, "remote_stores": 0, "remote_errors": 0}
    size = sum(p.stat().st_size for p in cached_blobs(root))
    assert doc["folders"] == [{"path": CACHE, "entries": 3, "bytes": size}] and doc["remote"] is None
    text = fake_genspirv("cache", "stats", "--root", root).out.splitlines()
    assert text[0].startswith("genspirv cache stats: 2 builds counted since ")
    assert text[1:] == ["  local cache:  1 hits, 3 misses (25.0 % hits), 3 stores, 0 errors",
                        "  remote cache: 0 hits, 0 misses, 0 stores, 0 errors (none set)",
                        f"  {CACHE}: 3 entries, {cachestats.human_size(size)}"]


def test_zero_stats_starts_the_counters_afresh_and_clear_empties_the_cache(tiny_project, fake_genspirv):
    root = tiny_project()
    assert fake_genspirv("build", "--root", root, "-q").code == 0
    zeroed = fake_genspirv("cache", "stats", "--zero-stats", "--root", root)
    assert "3 misses" in zeroed.out and zeroed.out.splitlines()[-1] == "genspirv cache stats: counters zeroed"
    assert stats(fake_genspirv, root)["counters"] == dict.fromkeys((s.value for s in Stat), 0)
    assert len(cached_blobs(root)) == 3                                     # the blobs stay

    cleared = fake_genspirv("cache", "clear", "--root", root)
    assert cleared.code == 0 and cleared.out.startswith(f"genspirv cache clear: removed 3 entries (")
    assert cached_blobs(root) == [] and (root / CACHE / "stats.json").is_file()   # the counters stay
    (root / "spirv/neg.spv").unlink()
    assert "1 compiled" in fake_genspirv("build", "--root", root, "-q").out       # no cache to take it from
    assert stats(fake_genspirv, root)["counters"]["local_misses"] == 1


def test_stats_outside_a_project_show_the_shared_cache_and_exit_0(tiny_project, fake_genspirv, tmp_path,
                                                                  monkeypatch):
    """As ccache -s, `cache stats` works anywhere: outside a project, the shared cache (no counters:
    each project keeps its own). Control: the same folder with --root, or inside the project, is the
    project's; `build` outside any project is still refused."""
    shared = tmp_path / "shared"
    root = tiny_project()
    assert fake_genspirv("build", "--root", root, "-q", env={"GENSPIRV_CACHE_DIR": str(shared)}).code == 0
    size = sum(p.stat().st_size for p in shared.glob("??/*.spv"))
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    monkeypatch.chdir(nowhere)
    env = {"GENSPIRV_CACHE_DIR": str(shared)}
    shown = fake_genspirv("cache", "stats", env=env)
    assert shown.code == 0, shown.err
    assert shown.out.splitlines() == [
        "genspirv cache stats: no genspirv project here, so no counters (each project keeps its own); "
        "the shared cache, GENSPIRV_CACHE_DIR:", f"  {shared}: 3 entries, {cachestats.human_size(size)}"]
    assert fake_genspirv("cache", "-s", env=env).out == shown.out
    doc = json.loads(fake_genspirv("cache", "stats", "--json", env=env).out)
    assert doc["folders"] == [{"path": str(shared), "entries": 3, "bytes": size}] and doc["builds"] == 0
    unset = fake_genspirv("cache", "stats")
    assert unset.code == 0 and "GENSPIRV_CACHE_DIR names no shared cache" in unset.out, unset.err
    assert fake_genspirv("build", "-q").code == 2                           # control: no project to build
    assert "3 misses" in fake_genspirv("cache", "stats", "--root", root, env=env).out    # the project's
    monkeypatch.chdir(root / "glsl")
    assert "3 misses" in fake_genspirv("cache", "-s", env=env).out


def test_cache_takes_ccaches_spellings(tiny_project, fake_genspirv):
    """`cache -s` is `cache stats`; `cache -z` zeroes the counters; `-s -z` shows them, then zeroes."""
    root = tiny_project()
    assert fake_genspirv("build", "--root", root, "-q").code == 0
    long = fake_genspirv("cache", "stats", "--root", root)
    assert fake_genspirv("cache", "-s", "--root", root).out == long.out and "3 misses" in long.out
    both = fake_genspirv("cache", "-s", "-z", "--root", root)
    assert both.out.splitlines() == [*long.out.splitlines(), "genspirv cache stats: counters zeroed"]
    assert stats(fake_genspirv, root)["counters"]["local_misses"] == 0
    (root / "spirv/neg.spv").unlink()
    assert fake_genspirv("build", "--root", root, "-q").code == 0           # 1 local hit
    zeroed = fake_genspirv("cache", "-z", "--root", root)
    assert zeroed.code == 0 and zeroed.out == "genspirv cache stats: counters zeroed\n"
    assert stats(fake_genspirv, root)["counters"]["local_hits"] == 0
    bare = fake_genspirv("cache", "--root", root)                          # control: no action, no flag
    assert bare.code == 2 and "name an action: stats or clear" in bare.err
    assert fake_genspirv("cache", "-s", "clear", "--root", root).code == 2


def test_force_replaces_a_damaged_cache_entry(tiny_project, fake_genspirv):
    """Re-seeding: --force compiles everything, asks no cache, and writes every blob afresh."""
    root = tiny_project()
    assert fake_genspirv("build", "--root", root, "-q").code == 0
    good = {p: p.read_bytes() for p in cached_blobs(root)}
    for path in good:
        path.write_bytes(b"\0" * 20)                # damaged in place, under its key
    assert fake_genspirv("build", "--force", "--root", root, "-q").code == 0
    assert {p: p.read_bytes() for p in cached_blobs(root)} == good
    counters = stats(fake_genspirv, root)["counters"]
    assert counters["local_stores"] == 6 and counters["local_misses"] == 3       # --force asks nothing


def _add_hits(folder, n: int) -> None:
    for _ in range(n):
        cachestats.record(folder, {Stat.LOCAL_HITS: 1})


def _racing_read(real):
    def read(folder):
        stats = real(folder)
        time.sleep(0.002)                           # widen the read-modify-write window
        return stats
    return read


@pytest.mark.slow
@pytest.mark.parametrize("locked", [True, False])
def test_builds_that_finish_together_lose_no_count(tmp_path, monkeypatch, locked):
    """Four processes add 25 counts each at once; with the lock every one is kept. The control
    (no lock, the same processes) loses some: the test can fail."""
    monkeypatch.setattr(cachestats, "read", _racing_read(cachestats.read))
    if not locked:
        monkeypatch.setattr(cachestats, "exclusive_lock", lambda path: contextlib.nullcontext())
    ctx = multiprocessing.get_context("fork")        # the children keep this test's patches
    procs = [ctx.Process(target=_add_hits, args=(tmp_path, 25)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 4
    kept = cachestats.read(tmp_path)
    if locked:
        assert kept[Stat.LOCAL_HITS] == 100 and kept.builds == 100
    else:
        assert kept[Stat.LOCAL_HITS] < 100
    assert json.loads((tmp_path / cachestats.STATS_FILE).read_text())["schema"] == cachestats.SCHEMA
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []


def test_counters_that_are_not_ours_start_again(tmp_path):
    (tmp_path / cachestats.STATS_FILE).write_text("{not json")
    assert cachestats.read(tmp_path) == cachestats.Stats()
    assert cachestats.record(tmp_path, {Stat.REMOTE_HITS: 2})
    assert cachestats.read(tmp_path)[Stat.REMOTE_HITS] == 2

