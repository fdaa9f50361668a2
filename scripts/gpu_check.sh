#!/usr/bin/env bash
# The GPU check, for a machine with one or more NVIDIA GPUs: build for this GPU's architecture only, run the GPU
# tests (ctest -L gpu), measure the custom kernels (virtual ranks on one GPU) and NCCL, run the adaptive plan for one
# minute, fit and generate tables. Every step's output goes into one report file; the last lines say which steps
# passed. About 8 minutes on one GPU. Without a GPU it says so and runs nothing (exit 2).
#
#   ARFIT_BUILD_DIR  build directory (default: build-gpu)   ARFIT_OUT  output directory (default: out)
#   ARFIT_JOBS       parallel build jobs (default: cores)
# Exit status: 0 every step passed, 1 a step failed (the report says which), 2 no GPU here.
set -uo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check.sh: no NVIDIA GPU on this machine (nvidia-smi lists none); this check needs one, so nothing was run" >&2
  exit 2
fi

BUILD=${ARFIT_BUILD_DIR:-build-gpu}
OUT=${ARFIT_OUT:-out}
JOBS=${ARFIT_JOBS:-$(nproc)}
REPORT="$OUT/gpu-check.txt"
ngpu=$(nvidia-smi -L | wc -l)
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '. ')  # 9.0 -> 90
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
{
  echo "# arfit GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi -L
  echo "# sm_$arch, $ngpu GPU(s), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} > "$REPORT"

failed=()
# step NAME COMMAND...: runs the command, its output into the report, and one PASS/FAIL line with its seconds.
step() {
  local name=$1 start=$SECONDS
  shift
  echo -e "\n== $name: $*" >> "$REPORT"
  if "$@" >> "$REPORT" 2>&1; then
    echo "== $name: PASS ($((SECONDS - start)) s)" | tee -a "$REPORT"
  else
    echo "== $name: FAIL ($((SECONDS - start)) s)" | tee -a "$REPORT"
    failed+=("$name")
  fi
}

ARBENCH="$BUILD/bench/arbench"
ARFIT="$BUILD/cli/arfit"
# One rank per GPU; a single GPU plays every TP rank of the custom kernels (virtual ranks).
if [ "$ngpu" -ge 2 ]; then custom=(mpirun -np "$ngpu" "$ARBENCH" --backend custom); else custom=(mpirun -np 1 "$ARBENCH" --backend custom --virtual-ranks); fi

# Only what the steps run: the tools and the gpu-labelled tests (the IPC test where NCCL was found).
build() {
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" || return 1
  local targets=(arfit arbench bench_gpu_test test_kernels_gpu)
  cmake --build "$BUILD" --target help | grep -q test_kernels_ipc && targets+=(test_kernels_ipc kernels_ipc_check)
  cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"
}
step build build
step gpu-tests ctest --test-dir "$BUILD" -L gpu --timeout 240 --output-on-failure
step custom "${custom[@]}" --tokens 1:1024:x4 --hidden 1024,4096 --fusion NONE,RESIDUAL_RMS_NORM -q --overwrite \
  -o "$OUT/gpu-custom.csv"
step nccl mpirun -np "$ngpu" "$ARBENCH" --backend nccl --collective allreduce,allgather,reducescatter -b 8 -e 64M -f 4 -q \
  --overwrite -o "$OUT/gpu-nccl.csv"
step adaptive "${custom[@]}" --preset trtllm --plan adaptive --budget 1min -q --overwrite -o "$OUT/gpu-adaptive.csv"
step fit "$ARFIT" fit "$OUT/gpu-adaptive.csv" "$OUT/gpu-nccl.csv" -o "$OUT/gpu-models.json"
step codegen bash -c "'$ARFIT' codegen '$OUT/gpu-models.json' --format json -o '$OUT/gpu-best_strategy.json' \
  && '$ARFIT' codegen '$OUT/gpu-models.json' --format header -o '$OUT/gpu-arfit_select.h'"

if [ ${#failed[@]} -eq 0 ]; then
  echo "gpu_check.sh: every step passed; report in $REPORT" | tee -a "$REPORT"
  exit 0
fi
echo "gpu_check.sh: failed: ${failed[*]}; report in $REPORT" | tee -a "$REPORT"
exit 1
