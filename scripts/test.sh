#!/usr/bin/env bash
# Builds arfit (CPU parts, and the CUDA kernels whenever nvcc exists) and runs the whole test suite with ctest.
# Installs missing Debian packages first (scripts/setup.sh), and the Python package's environment (scripts/setup_python.sh). Extra arguments go to ctest (e.g. -L unit).
#   ARFIT_BUILD_DIR  build directory (default: build)
#   ARFIT_JOBS       parallel build/test jobs (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# The Python package (python/) is built and its pytest suite run with the rest: its environment comes from PyPI.
PYTHON=$(bash scripts/setup_python.sh | tail -n 1)
BUILD=${ARFIT_BUILD_DIR:-build}
JOBS=${ARFIT_JOBS:-$(nproc)}

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DARFIT_BUILD_PYTHON=ON -DPython_EXECUTABLE="$PYTHON"
cmake --build "$BUILD" -j "$JOBS"
# Open MPI refuses to run as root without these; the mpi-labelled tests also set them themselves.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" "$@"
