#!/usr/bin/env bash
# Installs nvcc 11.8 from Debian bookworm's nvidia-cuda-toolkit (contrib/non-free).
# Idempotent: does nothing when a CUDA 11.8 nvcc is already on PATH.
set -euo pipefail
if command -v nvcc >/dev/null 2>&1 && nvcc --version | grep -q 'release 11.8'; then
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
src=/etc/apt/sources.list.d/debian.sources
if [ -f "$src" ] && ! grep -q 'non-free' "$src"; then
  # Enable contrib and non-free next to main on every stanza of the deb822 file.
  $SUDO sed -i -E 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$src"
elif [ -f /etc/apt/sources.list ] && ! grep -q 'non-free' /etc/apt/sources.list; then
  $SUDO sed -i -E 's/^(deb .* main)$/\1 contrib non-free non-free-firmware/' /etc/apt/sources.list
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends nvidia-cuda-toolkit
nvcc --version | tail -n 2
