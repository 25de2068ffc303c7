#!/usr/bin/env bash
# Set-up for genspirv on Debian 12, from a clone of this repository.
#
# 1. apt: what the build and the tests need from the system — the Vulkan
#    loader, Mesa's CPU Vulkan device (lavapipe), the Khronos validation
#    layers, spirv-cross, cmake + ninja + gcc/g++ + the Vulkan headers (the CMake
#    package's tests, the C headers' tests, the worked C backend in examples/), clang-19
#    (a compiler with C23 #embed: the blobs = "files" tables are linked with it as well),
#    nginx-light (a WebDAV store for the remote cache's tests and benchmark),
#    python3-venv (Debian's python3 makes no virtual environment without it),
#    git (the tests that a build leaves `git status` clean).
# 2. The project's own virtual environment, .venv/ in the repository, made by
#    the system python3: Debian marks its python3 externally managed (PEP 668)
#    and has no `python` command, so nothing is installed into the system.
#    The README's commands run .venv/bin/python; no `activate` is needed.
# 3. This package with its test extra into .venv (pip install -e '.[test]'),
#    which pulls the pinned compiler wheels. Skipped when pyproject.toml has
#    not changed since the last set-up, so running this again costs a second.
#
# Run from anywhere, as root or as a user with sudo; idempotent.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
apt_packages=(python3 python3-venv mesa-vulkan-drivers libvulkan1 vulkan-validationlayers spirv-cross
              cmake ninja-build gcc g++ libvulkan-dev git nginx-light clang-19)

missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]]; then
        sudo=()
    elif command -v sudo >/dev/null; then
        sudo=(sudo)
    else
        echo "ci/setup.sh: need root (or sudo) to install: ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# A venv whose interpreter is gone (moved checkout, another python3) is made anew.
if ! "$venv/bin/python" -c "import sys; sys.exit(sys.prefix == sys.base_prefix)" 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
fi

stamp="$venv/.genspirv-setup"
want="$(sha256sum "$repo/pyproject.toml" | cut -d' ' -f1) $repo"
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]] || ! (cd / && "$venv/bin/python" -c "import genspirv") 2>/dev/null; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$repo[test]"
    echo "$want" >"$stamp"
fi
