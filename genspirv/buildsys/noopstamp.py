"""The no-op stamp: a build decided from stat() alone when nothing it read has changed.

Takes the loaded config, the compiler versions, the state (its file's sha256 and
records) and the stat log's list of the files a build consulted; gives the plan
a no-op build would make, without making it, or None.

A build that finds nothing to do (every variant up to date, the outputs as it
wrote them) writes ``.genspirv/noop.json``: the sha256 of everything that
decided it besides files (the config as loaded, the generator's variants and
files included; the compiler versions; the state file; genspirv's version;
what the generated files are rendered with: its renderers or a project's template;
the include path, on which ``glsl_dir/include`` is while it exists)
and the stat() signature of every file it consulted (sources, includes,
committed blobs, the manifest, generated outputs), each one the stat log had
logged (``genspirv.buildsys.statlog``: not racily new). A later build whose digest is
the same and whose every listed file has the same stat() would compute the
same content keys and so the same plan: it takes that plan from the records
and computes no key. Anything else (another digest, one stat that differs, a
file gone, a journal left by an interrupted build, ``--force``, named
variants) falls back to the full plan, which decides exactly; a stamp is only
ever a shortcut to the answer that plan gave, with the stat log's own trust
in an unchanged stat().

A build that compiled stamps the no-op that follows it (``save_after_build``):
once the racy window of what it wrote has passed, each output is hashed again
through the stat log and must hold what the build wrote; the inputs are the
ones its plan and compiles consulted, with the stat() each had when read. So
the no-op after a build is decided as the ones after it are.

A no-op's stamp is then sealed (``seal``, by the CLI, with what it printed) for
``genspirv.buildsys.noopreplay``, which answers the next plain ``genspirv build``
before the config is even loaded: the seal adds every other input of the
build's outcome (the config's files, what the generator read, the settings,
the tools and where they are looked up, the interpreter) and the lines to print.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Mapping, Optional

from .state import STATE_DIR, TOOLS_FILE, Record, State, journal_path, state_path
from ..toolchain.compiler import Versions
from ..project.config import Config
from ..fsutil import atomic_write
from .plan import Action, Plan, Reason, Step
from .outputs import generate_keys
from ..emit import renderer_files
from ..project.reads import WHOLE_ENVIRONMENT
from . import noopreplay
from . import statlog
from .statlog import StatLog, racy, signature

STAMP_FILE = "noop.json"
STAMP_SCHEMA = "genspirv-noop/1"


def stamp_path(config: Config) -> Path:
    return config.root / STATE_DIR / STAMP_FILE


def digest(config: Config, versions: Versions, state_sha: Optional[str]) -> str:
    """The sha256 of what decides a no-op besides the files' contents. Pickle writes each of the
    config's fields (equal bytes only for equal configs; not what a build cached on it since);
    a sharing of objects that differs between two loads of the same config only makes a stamp
    miss, never match wrongly."""
    from .. import __version__
    h = hashlib.sha256()
    for part in (STAMP_SCHEMA, __version__, repr(versions), state_sha or ""):
        h.update(part.encode("utf-8") + b"\0")
    h.update(pickle.dumps([getattr(config, f.name) for f in dataclasses.fields(config)], pickle.HIGHEST_PROTOCOL))
    # What the generated files are rendered with: genspirv's renderers, a project's template;
    # and the include path, which has glsl_dir/include only while that folder exists.
    h.update(json.dumps([generate_keys(config), config.include_dirs]).encode())
    return h.hexdigest()


def holds(config: Config, versions: Versions, state: State) -> bool:
    """The stamp is this build's: the same digest, every file it lists with the same stat()."""
    if state.sha256 is None or journal_path(config).exists():
        return False
    try:
        doc = json.loads(stamp_path(config).read_bytes())
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or doc.get("schema") != STAMP_SCHEMA or not isinstance(doc.get("files"), dict):
        return False
    if doc.get("digest") != digest(config, versions, state.sha256):
        return False
    root = str(config.root) + os.sep
    for rel, sig in doc["files"].items():
        try:
            if signature(os.stat(root + rel)) != sig:
                return False
        except OSError:
            return False
    return True


def unchanged_plan(config: Config, records: Mapping[str, Record]) -> Optional[Plan]:
    """The plan ``plan.make_plan`` gives when no input changed since a no-op: each variant up to
    date, or unavailable as recorded; None where some variant would not be (no record, or
    unavailable but no longer optional)."""
    steps = []
    for v in config.variants:
        record = records.get(v.name)
        if record is None or record.key is None:
            return None
        if record.unavailable:
            if not v.optional:
                return None
            steps.append(Step(v, Action.UNAVAILABLE, Reason.UNCHANGED, f"lacks {', '.join(record.missing)}", record))
        elif record.sha256 is None:
            return None
        else:
            steps.append(Step(v, Action.UP_TO_DATE, Reason.UNCHANGED, "", record))
    return Plan(tuple(steps))


def save(config: Config, versions: Versions, stats: StatLog) -> bool:
    """Stamp the no-op just decided, when every file it consulted was logged (else remove the
    old stamp: it no longer says what this build read). Reads the state file as it is now
    (the no-op may have just saved it). Written atomically; a stamp lost costs one full plan.
    True: the stamp on disk is this one."""
    path = stamp_path(config)
    files = stats.consulted
    try:
        state_sha = hashlib.sha256(state_path(config).read_bytes()).hexdigest()
    except OSError:
        state_sha = None
    if state_sha is None or journal_path(config).exists() or any(sig is None for sig in files.values()):
        try:
            path.unlink()
        except OSError:
            pass
        return False
    data = (json.dumps({"schema": STAMP_SCHEMA, "digest": digest(config, versions, state_sha), "files": files},
                       sort_keys=True, separators=(",", ":")) + "\n").encode()
    try:
        if path.read_bytes() == data:
            return True
    except OSError:
        pass
    try:
        atomic_write(path, data, durable=False)
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()
        return False        # the stamp is a shortcut only: without it the next build plans in full
    return True


def save_after_build(config: Config, versions: Versions, stats: StatLog, outputs: Mapping[str, str],
                     written_ns: int) -> bool:
    """Stamp the no-op the next build would be, after a build that wrote ``outputs`` (path -> the
    sha256 it wrote; blobs, generated files, the manifest) by ``written_ns`` (time.time_ns()).
    Waits out their racy window (at most ``statlog.RACY_S``), hashes each through the stat log (so it is
    logged), then ``save``: every output must hold what the build wrote. Inputs are never hashed
    again here: their stat() is the one they had when the build read them, so a source edited
    while it compiled misses the stamp. False: no stamp; the next build plans in full."""
    if stats.path is None:
        return False
    time.sleep(max(0.0, statlog.RACY_S - (time.time_ns() - written_ns) / 1e9 + 0.002))
    # One thread: a blob is ~10 KB, so each file's Python work, not its hashing, is the cost
    # (threads were slower: ~20 ms for 2,000 blobs here, ~40 ms on 2-8 threads).
    if any(stats.sha256(rel) != sha for rel, sha in outputs.items()):
        return False        # changed since it was written (or unreadable): the next build decides
    if stats.changed:
        try:
            atomic_write(stats.path, stats.data(), durable=False)
        except OSError:
            return False
        stats.changed = False
    return save(config, versions, stats)


# -- the seal: the inputs of the config and the tools, for a no-op replayed before either ----


def _walked_folders(config: Config) -> list[str]:
    """glsl_dir and every folder under it that discovering sources enters (symlinked ones are not)."""
    base = str(config.path(config.glsl_dir))
    found = [base]
    for folder, dirs, _ in os.walk(base):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        found.extend(os.path.join(folder, d) for d in dirs)
    return found


def _tool_paths(config: Config) -> list[str]:
    """The tools the version cache knows (each binary and its folder, where the others lie too)
    and every folder tools are looked up in (genspirv.toolchain.tools.find_tool's order)."""
    from ..toolchain.tools import checkout_venv_sites
    cache = config.root / STATE_DIR / TOOLS_FILE
    paths = [str(cache)]
    try:
        known = json.loads(cache.read_bytes())
    except (OSError, ValueError):
        known = {}
    for entry in known.values() if isinstance(known, dict) else ():
        if isinstance(entry, list) and entry and isinstance(entry[0], str):
            paths += [entry[0], os.path.dirname(entry[0])]
    lookup = [*sys.path, *checkout_venv_sites(), *os.environ.get("PATH", "").split(os.pathsep)]
    return paths + [os.path.abspath(p) for p in lookup if p and os.path.isdir(p)]


def seal(config: Config, lines: list[str]) -> None:
    """Add the replay section to the stamp a no-op just left (or left in place), so the next plain
    build is answered by ``noopreplay``; no stamp, a racily new input, or a stamp already sealed
    the same: nothing written. A seal lost costs one full no-op."""
    path = stamp_path(config)
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return
    if not isinstance(doc, dict) or doc.get("schema") != STAMP_SCHEMA or not isinstance(doc.get("files"), dict):
        return
    root = str(config.root) + os.sep
    reads = config.generator_reads
    paths = [root + rel for rel in doc["files"]]
    paths += [root + "pyproject.toml", str(state_path(config)), *_walked_folders(config), *_tool_paths(config)]
    if config.generator is not None:
        paths.append(root + config.generator)
    for g in config.generate:       # what generate_keys hashed: a project's template, genspirv's renderers
        paths += [root + g.template] if g.template is not None else map(str, renderer_files(g.target))
    if reads is not None:
        paths += [*reads.files, *reads.folders]
    files = {}
    now = time.time_ns()
    for p in dict.fromkeys(paths):
        try:
            st = os.stat(p)
        except OSError:
            files[p] = None
            continue
        if racy(st, now):
            return          # it may change again within its timestamp's tick: not stamped
        files[p] = signature(st)
    env = noopreplay.settings_env()
    if reads is not None:
        if WHOLE_ENVIRONMENT in reads.env:     # the generator walked it: the seal keeps it whole
            env = {noopreplay.WHOLE_ENVIRONMENT: dict(os.environ)}
        else:
            env.update({name: os.environ.get(name) for name in reads.env})
    section = {"python": noopreplay.python_identity(), "cwd": reads.cwd if reads is not None else None,
               "env": env, "files": files, "lines": list(lines)}
    if doc.get(noopreplay.REPLAY) == section:
        return
    doc[noopreplay.REPLAY] = section
    try:
        atomic_write(path, (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode(), durable=False)
    except OSError:
        pass
