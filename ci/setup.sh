#!/usr/bin/env bash
# Installs what genspirv's build and tests need on Debian 12: the Vulkan
# loader, Mesa's CPU Vulkan device (lavapipe), the Khronos validation layers,
# spirv-cross, and cmake + ninja (the CMake package's tests) from apt, then
# this package with its test extra (which pulls the pinned compiler wheels).
# Run from anywhere; idempotent.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
apt_packages=(mesa-vulkan-drivers libvulkan1 vulkan-validationlayers spirv-cross cmake ninja-build)

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

python -m pip install -q -e "$repo[test]"
