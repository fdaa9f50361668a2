#!/usr/bin/env bash
# The Python side of arfit's setup: a virtual environment (default .venv, or $ARFIT_VENV) with what the Python
# package builds with (scikit-build-core, nanobind) and what its tests and examples use (numpy, pandas, pytest,
# matplotlib), from the Python package index, pinned. Idempotent: a second run checks the imports and returns.
# Prints the environment's python on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${ARFIT_VENV:-.venv}
REQUIREMENTS=(
  "scikit-build-core==1.1.2" "nanobind==2.9.2"
  "numpy>=1.24" "pandas>=2.0" "pytest>=7" "matplotlib>=3.7"
)
PY="$VENV/bin/python"
if [ -x "$PY" ] && "$PY" -c "import scikit_build_core, nanobind, numpy, pandas, pytest, matplotlib" 2>/dev/null; then
  [ "${ARFIT_SETUP_QUIET:-0}" = 1 ] || echo "setup: Python environment $VENV present" >&2
else
  echo "setup: creating the Python environment $VENV" >&2
  python3 -m venv "$VENV"
  "$PY" -m pip install -q --upgrade pip >&2
  "$PY" -m pip install -q "${REQUIREMENTS[@]}" >&2
fi
echo "$PWD/$VENV/bin/python"
