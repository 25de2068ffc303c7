#!/usr/bin/env bash
# Tag a release of genspirv: the annotated tag v<version> on HEAD, <version> being pyproject.toml's
# [project] version (genspirv/__init__.py's __version__ must say the same). Users install at that tag
# (README, "Installing it elsewhere"; pre-commit's `rev:`), and tests/test_release.py holds every v*
# tag of the repository to the version at its commit.
#
#   bash tools/release.sh          # in a clean checkout of the commit to release
#   git push origin v<version>     # then publish the tag
#
# Refuses (exit 1, one line) a working tree with changes, two different versions, and a tag of that
# name on another commit (raise the version first); a tag already on HEAD is left as it is (exit 0).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "tools/release.sh: $*"; }
version="$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
package="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' genspirv/__init__.py)"
tag="v$version"
if [[ "$package" != "$version" ]]; then
    say "pyproject.toml says $version, genspirv/__init__.py says ${package:-nothing}: make them the same first" >&2
    exit 1
fi
if [[ -n "$(git status --porcelain)" ]]; then
    say "the working tree has changes: commit them (or stash them) first" >&2
    exit 1
fi
if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
    tagged="$(git rev-parse "$tag^{commit}")"
    if [[ "$tagged" == "$(git rev-parse HEAD)" ]]; then
        say "$tag already tags HEAD"
        exit 0
    fi
    say "$tag already tags $(git rev-parse --short "$tagged"), not HEAD: raise the version in pyproject.toml and genspirv/__init__.py first" >&2
    exit 1
fi
git tag -a "$tag" -m "genspirv $version"
say "tagged HEAD ($(git rev-parse --short HEAD)) $tag; publish it with: git push origin $tag"
