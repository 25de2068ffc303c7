"""Build: a ``Config`` in, committed blobs, manifest and generated files out.

Plans which variants are stale (content key over the source, every file its
last depfile named, defines, compiler version, flags and target env), compiles
those in parallel with the pinned glslang, validates each blob with
``spirv-val``, reflects every blob and writes what changed, under a lock file.

Nothing committed is half-written: every file goes through a temp file in its
own folder and ``os.replace``. A failed compile writes nothing at all. A no-op
build writes no file: each output is compared with what is on disk first.
``build()`` returns a ``BuildReport``; tests assert on it, not on timing.

Also home of the compile step that ``check`` shares (``compile_variants``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional, Sequence

from . import manifest as manifest_mod
from . import settings
from .config import Config, Variant
from .errors import (CompileError, GenspirvError, LockError, OutputError, ReflectError, SpirvError,
                     ToolchainError)
from .fsutil import atomic_write
from .manifest import Manifest, ManifestEntry, Toolchain
from . import reflect as reflect_mod
from .reflect import ShaderInfo
from .toolchain import Compiler, Tool, compile_glsl, find_glslang, find_tool, validate

STATE_DIR = ".genspirv"
STATE_FILE = "state.json"
LOCK_FILE = "lock"
STATE_SCHEMA = "genspirv-state/1"

Log = Optional[Callable[[str], None]]


# -- files --------------------------------------------------------------------


def write_if_changed(path: Path, data: bytes) -> bool:
    """Atomically write ``data`` unless the file already holds exactly those bytes.

    Any OSError (a full disk, no permission, a file where a folder should be) is
    an OutputError naming the file; the temp file is gone and ``path`` untouched.
    """
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return True


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@contextlib.contextmanager
def project_lock(root: Path, timeout: Optional[float] = None, log: Log = None) -> Iterator[None]:
    """Hold ``.genspirv/lock`` (fcntl.flock) for the duration; LockError after ``timeout``."""
    if timeout is None:
        timeout = settings.get("GENSPIRV_LOCK_TIMEOUT")
    path = root / STATE_DIR / LOCK_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock_file = open(path, "a+b")
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the build lock: {exc.strerror or exc}") from None
    with lock_file as f:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise LockError(f"cannot lock {path}: {exc.strerror}") from None
            if not told:
                print(f"genspirv: waiting for {path}: another build of this project is running",
                      file=sys.stderr, flush=True)
                told = True
            if time.monotonic() >= deadline:
                raise LockError(f"{path} is still held by another build after {timeout:g} s "
                                "(set GENSPIRV_LOCK_TIMEOUT to wait longer)")
            time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# -- compiling ----------------------------------------------------------------


@dataclass(frozen=True)
class Tools:
    compiler: Compiler
    spirv_val: Tool


def find_tools(config: Config) -> Tools:
    return Tools(compiler=find_glslang(config.glslang), spirv_val=find_tool("spirv-val"))


@dataclass(frozen=True)
class Compiled:
    variant: Variant
    blob: bytes
    deps: tuple[str, ...]        # every file the compile read, relative to the root where inside it
    info: ShaderInfo


def include_dirs(config: Config) -> tuple[str, ...]:
    return (config.include_dir,) if config.path(config.include_dir).is_dir() else ()


def _dep_path(root: Path, dep: str) -> str:
    # glslang names dependencies relative to its working directory, the root.
    path = Path(os.path.normpath(root / dep))
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def reflect_blob(name: str, where: str, blob: bytes) -> ShaderInfo:
    """reflect(), with the variant and file named in any refusal."""
    try:
        return reflect_mod.reflect(blob)
    except SpirvError as exc:
        raise SpirvError(f"{name} ({where}): {exc}") from None
    except ReflectError as exc:
        raise ReflectError(f"{name} ({where}): {exc}") from None


def compile_variant(config: Config, tools: Tools, variant: Variant, workdir: Path) -> Compiled:
    """Compile, validate and reflect one variant; files land in ``workdir`` only."""
    out = workdir / f"{variant.name}.spv"
    result = compile_glsl(tools.compiler, source=variant.source, output=out,
                          depfile=workdir / f"{variant.name}.d", cwd=config.root,
                          target_env=config.target_env, defines=variant.defines_dict,
                          include_dirs=include_dirs(config), flags=config.flags,
                          what=variant.name)
    validate(tools.spirv_val, out, config.target_env, variant.name)
    deps = [variant.source] + [_dep_path(config.root, d) for d in result.deps]
    info = reflect_blob(variant.name, variant.source, result.blob)
    return Compiled(variant, result.blob, tuple(dict.fromkeys(deps)), info)


def compile_variants(config: Config, tools: Tools, variants: Sequence[Variant], workdir: Path,
                     jobs: Optional[int] = None, log: Log = None) -> list[Compiled]:
    """Compile ``variants`` in parallel; any failure fails the lot, naming every failed variant."""
    if not variants:
        return []
    jobs = max(1, jobs or os.cpu_count() or 1)
    done: dict[str, Compiled] = {}
    failures: list[GenspirvError] = []
    with ThreadPoolExecutor(max_workers=min(jobs, len(variants))) as pool:
        futures = {pool.submit(compile_variant, config, tools, v, workdir): v for v in variants}
        try:
            for n, future in enumerate(as_completed(futures), 1):
                variant = futures[future]
                if future.cancelled():
                    continue
                try:
                    done[variant.name] = future.result()
                except GenspirvError as exc:
                    failures.append(exc)
                    if log:
                        log(f"[{n}/{len(variants)}] {variant.name} FAILED")
                    if isinstance(exc, ToolchainError):
                        # A compiler that hangs or crashes once will do it again: don't wait for
                        # every queued variant to time out too.
                        for other in futures:
                            other.cancel()
                    continue
                if log:
                    log(f"[{n}/{len(variants)}] {variant.name}")
        except BaseException:
            # Ctrl-C: leave without starting every queued compile first (the
            # running ones finish; nothing has been written yet).
            for other in futures:
                other.cancel()
            raise
    if failures:
        failures.sort(key=str)
        message = "\n".join(str(f) for f in failures)
        if len(failures) > 1:
            message = f"{len(failures)} variants failed:\n{message}"
        # A broken toolchain outranks a broken shader: it is exit 2, not 1.
        worst = next((f for f in failures if isinstance(f, ToolchainError)), failures[0])
        raise type(worst)(message)
    return [done[v.name] for v in variants]


# -- content keys and state ---------------------------------------------------


def content_key(config: Config, compiler_version: str, variant: Variant,
                deps: Sequence[str]) -> Optional[str]:
    """sha256 over everything that decides the blob's bytes; None if a dependency is gone."""
    files = []
    for dep in sorted(set(deps) | {variant.source}):
        try:
            files.append([dep, sha256_hex(config.path(dep).read_bytes())])
        except OSError:
            return None
    doc = {"source": variant.source, "defines": variant.defines, "compiler": compiler_version,
           "flags": config.flags, "target_env": config.target_env,
           "include_dirs": include_dirs(config), "files": files}
    return sha256_hex(json.dumps(doc, sort_keys=True).encode())


def state_path(config: Config) -> Path:
    return config.root / STATE_DIR / STATE_FILE


def load_state_file(config: Config) -> dict:
    """The last build's state document; an unreadable state is just a cold cache."""
    try:
        data = json.loads(state_path(config).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("schema") != STATE_SCHEMA or \
            not isinstance(data.get("variants"), dict):
        return {}
    return data


def outputs_key(config: Config, compiler_version: str, variant_keys: Mapping[str, str]) -> str:
    """What the manifest and generated files are a function of, besides the blobs' keys."""
    doc = {"variants": [[v.name, v.source, list(v.defines), config.blob_relpath(v), variant_keys[v.name]]
                        for v in config.variants],
           "manifest": str(config.manifest), "generate": [list(map(str, (g.target, g.output)))
                                                      + _template_key(config, g)
                                                      for g in config.generate],
           "toolchain": [compiler_version, config.target_env, list(config.flags)]}
    return sha256_hex(json.dumps(doc, sort_keys=True).encode())


def _template_key(config: Config, g) -> list[str]:
    """A project template's path and bytes: editing it re-renders its output."""
    if getattr(g, "template", None) is None:
        return []
    try:
        return [g.template, sha256_hex(config.path(g.template).read_bytes())]
    except OSError:
        return [g.template, "unreadable"]   # render then names the problem


def _outputs_current(config: Config, recorded: object, key: str) -> bool:
    """The last build wrote these outputs from the same inputs, and nobody touched them since."""
    if not isinstance(recorded, dict) or recorded.get("key") != key or \
            not isinstance(recorded.get("files"), dict) or not recorded["files"]:
        return False
    for rel, digest in recorded["files"].items():
        try:
            if sha256_hex(config.path(rel).read_bytes()) != digest:
                return False
        except OSError:
            return False
    return True


def _is_up_to_date(config: Config, compiler_version: str, variant: Variant, record: object) -> bool:
    if not isinstance(record, dict) or not isinstance(record.get("deps"), list):
        return False
    try:
        blob = config.path(config.blob_relpath(variant)).read_bytes()
    except OSError:
        return False
    return (sha256_hex(blob) == record.get("sha256")
            and content_key(config, compiler_version, variant, record["deps"]) == record.get("key"))


# -- the manifest and generated files -----------------------------------------


def manifest_entry(config: Config, compiled: Compiled) -> ManifestEntry:
    v = compiled.variant
    return ManifestEntry(name=v.name, source=v.source, defines=v.defines,
                         spirv=config.blob_relpath(v), sha256=sha256_hex(compiled.blob),
                         size=len(compiled.blob), info=compiled.info)


def render_outputs(config: Config, compiled: Sequence[Compiled]) -> dict[str, bytes]:
    """The manifest and every generated file, as {posix path relative to root: bytes}."""
    manifest = Manifest(toolchain=Toolchain(glslang=config.glslang, target_env=config.target_env,
                                            flags=config.flags),
                        shaders=tuple(sorted((manifest_entry(config, c) for c in compiled),
                                             key=lambda e: e.name)),
                        root=config.root)
    outputs = {config.manifest: manifest_mod.dumps(manifest)}
    if config.generate:
        from . import codegen   # only projects that ask for generated code need jinja2 templates
        for g in config.generate:
            # The blobs are not written yet: hand codegen the fresh bytes, not the old files.
            blobs = {c.variant.name: c.blob for c in compiled}
            for rel, data in codegen.render(g.target, manifest, g.output, blobs=blobs, template=g.template).items():
                outputs[rel] = data
    return outputs


def orphan_blobs(config: Config) -> list[str]:
    """``*.spv`` files in spirv_dir that belong to no variant (relative to the root)."""
    folder = config.path(config.spirv_dir)
    if not folder.is_dir():
        return []
    known = {f"{v.name}.spv" for v in config.variants}
    return sorted(f"{config.spirv_dir}/{p.name}" for p in folder.glob("*.spv")
                  if p.is_file() and p.name not in known)


def stale_temp_files(config: Config) -> list[Path]:
    """Temp files of atomic writes a killed build left in the output folders.

    ``atomic_write`` names them ``.NAME.XXXXXXXX.tmp`` (tempfile's 8 random
    characters) next to NAME. Only a build holding the lock writes there, so
    under the lock every such file is garbage.
    """
    folders = {config.path(config.spirv_dir), config.path(config.manifest).parent,
               config.root / STATE_DIR}
    folders |= {config.path(g.output).parent for g in config.generate}
    found = []
    for folder in sorted(folders):
        if folder.is_dir():
            found += sorted(p for p in folder.iterdir() if _TEMP_NAME.match(p.name) and p.is_file())
    return found


_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def remove_stale_temp_files(config: Config, log: Log = None) -> None:
    """Delete what interrupted builds left: temp files and compile folders (call under the lock)."""
    for path in stale_temp_files(config):
        with contextlib.suppress(OSError):
            path.unlink()
            if log:
                log(f"removed {path.relative_to(config.root).as_posix()} (left by an interrupted build)")
    state_dir = config.root / STATE_DIR
    if state_dir.is_dir():
        for folder in state_dir.glob("compile-*"):
            shutil.rmtree(folder, ignore_errors=True)


# -- build --------------------------------------------------------------------


@dataclass(frozen=True)
class BuildReport:
    compiled: tuple[str, ...]      # variant names compiled this time
    up_to_date: tuple[str, ...]    # variant names reused from the last build
    removed: tuple[str, ...]       # orphan blobs deleted (paths relative to the root)
    written: tuple[str, ...]       # files written (paths relative to the root)

    def summary(self) -> str:
        return (f"{len(self.compiled)} compiled, {len(self.up_to_date)} up to date, "
                f"{len(self.removed)} removed, {len(self.written)} files written")


def build(config: Config, jobs: Optional[int] = None, force: bool = False, log: Log = None) -> BuildReport:
    """Bring blobs, manifest and generated files up to date with the sources."""
    tools = find_tools(config)
    with project_lock(config.root, log=log):
        remove_stale_temp_files(config, log)
        state_doc = {} if force else load_state_file(config)
        state = state_doc.get("variants", {})
        stale = [v for v in config.variants
                 if not _is_up_to_date(config, tools.compiler.version, v, state.get(v.name))]
        fresh = [v for v in config.variants if v not in stale]
        variant_keys = {v.name: state[v.name]["key"] for v in fresh}
        # Nothing changed (ninja-style): no compile, no reflection, no rendering, no write.
        if not stale and not orphan_blobs(config) and _outputs_current(
                config, state_doc.get("outputs"), outputs_key(config, tools.compiler.version, variant_keys)):
            return BuildReport(compiled=(), up_to_date=tuple(v.name for v in fresh), removed=(), written=())
        work = config.root / STATE_DIR
        with tempfile.TemporaryDirectory(prefix="compile-", dir=work) as tmp:
            compiled = {c.variant.name: c for c in
                        compile_variants(config, tools, stale, Path(tmp), jobs=jobs, log=log)}
        for v in fresh:
            rel = config.blob_relpath(v)
            blob = config.path(rel).read_bytes()
            compiled[v.name] = Compiled(v, blob, tuple(state[v.name]["deps"]), reflect_blob(v.name, rel, blob))
        ordered = [compiled[v.name] for v in config.variants]

        # Render everything before writing anything, so a codegen failure leaves no mix.
        outputs = render_outputs(config, ordered)
        written = []
        for c in ordered:
            rel = config.blob_relpath(c.variant)
            if write_if_changed(config.path(rel), c.blob):
                written.append(rel)
        removed = orphan_blobs(config)
        for rel in removed:
            config.path(rel).unlink()
            if log:
                log(f"removed {rel} (no variant {Path(rel).stem} any more)")
        for rel, data in outputs.items():
            if write_if_changed(config.path(rel), data):
                written.append(rel)

        new_state = {"schema": STATE_SCHEMA, "variants": {
            c.variant.name: {"key": content_key(config, tools.compiler.version, c.variant, c.deps),
                             "deps": list(c.deps), "sha256": sha256_hex(c.blob)}
            for c in ordered}}
        keys = {name: record["key"] for name, record in new_state["variants"].items()}
        new_state["outputs"] = {"key": outputs_key(config, tools.compiler.version, keys),
                                "files": {rel: sha256_hex(data) for rel, data in sorted(outputs.items())}}
        write_if_changed(state_path(config), (json.dumps(new_state, indent=1, sort_keys=True) + "\n").encode())
    return BuildReport(compiled=tuple(v.name for v in stale), up_to_date=tuple(v.name for v in fresh),
                       removed=tuple(removed), written=tuple(written))
