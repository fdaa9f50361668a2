#!/usr/bin/env bash
# Builds arfit (CPU parts, and the CUDA kernels whenever nvcc exists) and runs the whole test suite with ctest.
# Installs missing Debian packages first (scripts/setup.sh). Extra arguments go to ctest (e.g. -L unit).
#   ARFIT_BUILD_DIR  build directory (default: build)
#   ARFIT_JOBS       parallel build/test jobs (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
BUILD=${ARFIT_BUILD_DIR:-build}
JOBS=${ARFIT_JOBS:-$(nproc)}

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j "$JOBS"
# Open MPI refuses to run as root without these; the mpi-labelled tests also set them themselves.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" "$@"
