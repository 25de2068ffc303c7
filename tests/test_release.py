"""Releases: the tag users install at is the package's version.

Users install genspirv at a tag (``pip install 'genspirv @ git+URL@v0.1.0'``,
pre-commit's ``rev: v0.1.0``), so every ``v*`` tag must name the version its
commit's pyproject.toml declares, and the docs must name the current
version's tag. ``tools/release.sh`` makes that tag (annotated, on HEAD, from
the version) and refuses a dirty tree, two different versions, and a tag of
that name on another commit.

What the repository check holds, and what it does not: on a clone with tags
it fails for any ``v*`` tag whose commit declares another version (a tag made
by hand, or moved); on a clone without tags, or before the current version's
tag has been made, it has nothing to compare and passes, since a release not
made yet is no error. That the release is made is the release script's job,
tested here in a scratch repository, and the install tests
(tests/test_install.py) install at the tag it makes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RELEASE = REPO / "tools" / "release.sh"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def pyproject_version(text: str) -> str:
    try:
        import tomllib
    except ModuleNotFoundError:   # Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)["project"]["version"]


def git(repo: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["git", "-c", "user.name=genspirv tests", "-c", "user.email=tests@genspirv.invalid",
                           "-C", str(repo), *args], capture_output=True, text=True, timeout=60)
    if ok:
        assert proc.returncode == 0, f"git {' '.join(args)}\n{proc.stdout}{proc.stderr}"
    return proc


def tags_off_their_version(repo: Path) -> list[str]:
    """Each ``v*`` tag of ``repo`` whose commit's pyproject.toml declares another version, with what it declares."""
    wrong = []
    for tag in git(repo, "tag", "--list", "v*").stdout.split():
        shown = git(repo, "show", f"{tag}:pyproject.toml", ok=False)
        declared = pyproject_version(shown.stdout) if shown.returncode == 0 else None
        if tag != f"v{declared}":
            wrong.append(f"{tag} (its commit declares {declared})")
    return wrong


def test_the_package_declares_one_version():
    import genspirv
    assert pyproject_version((REPO / "pyproject.toml").read_text(encoding="utf-8")) == genspirv.__version__


@needs_git
def test_every_release_tag_names_the_version_of_its_commit():
    if git(REPO, "rev-parse", "--git-dir", ok=False).returncode != 0:
        pytest.skip("not a git checkout")
    assert tags_off_their_version(REPO) == []


@needs_git
def test_a_tag_off_its_version_is_found(tmp_path):
    """Negative control for the check above: a tag naming another version than its commit's."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0.2.0"\n')
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "x")
    git(tmp_path, "tag", "v0.2.0")
    assert tags_off_their_version(tmp_path) == []
    git(tmp_path, "tag", "v0.1.0")
    assert tags_off_their_version(tmp_path) == ["v0.1.0 (its commit declares 0.2.0)"]


def _scratch_release_repo(tmp_path: Path) -> Path:
    """A repository holding what tools/release.sh reads: pyproject.toml, genspirv/__init__.py and itself."""
    repo = tmp_path / "repo"
    for rel in ("pyproject.toml", "genspirv/__init__.py", "tools/release.sh"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, repo / rel)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "release candidate")
    return repo


def release(repo: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(repo.parent), "GIT_AUTHOR_NAME": "genspirv tests",
           "GIT_AUTHOR_EMAIL": "tests@genspirv.invalid", "GIT_COMMITTER_NAME": "genspirv tests",
           "GIT_COMMITTER_EMAIL": "tests@genspirv.invalid"}
    return subprocess.run(["bash", str(repo / "tools" / "release.sh")], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=60)


@needs_git
@pytest.mark.skipif(shutil.which("python3", path="/usr/bin:/bin") is None, reason="needs python3")
def test_the_release_script_tags_head_with_the_version_and_refuses_what_would_mislead(tmp_path):
    import genspirv
    repo = _scratch_release_repo(tmp_path)
    tag = f"v{genspirv.__version__}"
    made = release(repo)
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == (f"tools/release.sh: tagged HEAD ({git(repo, 'rev-parse', '--short', 'HEAD').stdout.strip()})"
                                   f" {tag}; publish it with: git push origin {tag}")
    assert git(repo, "cat-file", "-t", tag).stdout.strip() == "tag"                      # annotated
    assert git(repo, "rev-parse", f"{tag}^{{commit}}").stdout == git(repo, "rev-parse", "HEAD").stdout
    assert tags_off_their_version(repo) == []
    again = release(repo)
    assert again.returncode == 0 and again.stdout.strip() == f"tools/release.sh: {tag} already tags HEAD"

    (repo / "README.md").write_text("changed\n")                  # a working tree with changes
    dirty = release(repo)
    assert dirty.returncode == 1 and "the working tree has changes" in dirty.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "after the release")
    moved = release(repo)                                           # the same version on a new commit
    assert moved.returncode == 1 and f"{tag} already tags " in moved.stderr and "raise the version" in moved.stderr
    init = repo / "genspirv" / "__init__.py"
    init.write_text(init.read_text().replace(f'"{genspirv.__version__}"', '"9.9.9"'))
    git(repo, "commit", "-q", "-am", "one version bumped, not the other")
    split = release(repo)
    assert split.returncode == 1 and "genspirv/__init__.py says 9.9.9" in split.stderr
    assert git(repo, "tag", "--list").stdout.split() == [tag]        # nothing tagged by the refusals


def _install_urls(text: str) -> list[str]:
    return re.findall(r"git\+\S+?@(v[0-9][^'\s`]*)", text)


def test_the_docs_install_at_the_current_versions_tag():
    """Every `git+URL@vX` and pre-commit `rev: vX` in the README, the guide and the hooks' comment is
    this version's tag (the one tools/release.sh makes); the README shows the file://localhost form
    Debian 12's pip needs for a clone on the same machine."""
    import genspirv
    tag = f"v{genspirv.__version__}"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    guide = (REPO / "docs" / "GUIDE.md").read_text(encoding="utf-8")
    named = _install_urls(readme) + _install_urls(guide) + re.findall(r"^\s*rev: (v\S+)", guide, re.M)
    assert len(named) >= 8 and set(named) == {tag}, named
    assert f"git+file://localhost/" in readme and "tools/release.sh" in readme
    assert _install_urls("pip install 'genspirv @ git+file://localhost/srv/genspirv@v0.0.9'") == ["v0.0.9"]
