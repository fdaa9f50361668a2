#!/usr/bin/env bash
# Installs the Debian packages arfit needs, only when some are missing.
# Idempotent: a second run checks dpkg and returns in well under a second.
# Failures are not hidden: any apt-get error stops the script with its exit status.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libceres-dev libeigen3-dev nlohmann-json3-dev
  libgnuplot-iostream-dev libboost-iostreams-dev libboost-system-dev libboost-filesystem-dev
  libboost-context-dev       # fibers of the kernels' CPU execution (kernels/device/host_executor.cpp)
  gnuplot-nox
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  libcli11-dev
  libre2-dev   # kernel-name rules of arfit breakdown/whatif (linear-time regular expressions)
  clang libclang-rt-14-dev   # libFuzzer targets of the ingest readers (ctest -L fuzz)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  [ "${ARFIT_SETUP_QUIET:-0}" = 1 ] || echo "setup: all ${#PACKAGES[@]} Debian packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: done"
