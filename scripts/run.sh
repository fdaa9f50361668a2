#!/usr/bin/env bash
# The main job: install what is missing, build, then measure -> fit -> predict -> codegen -> plots into out/.
#
# On a machine without GPUs (the default here) it measures real collectives between 2 MPI processes on the
# host backend (MPI_Allreduce vs host one-shot / two-shot all-reduce over a shared-memory window, with and
# without the fused residual+RMSNorm epilogue), over a tokens x hidden grid with the adaptive plan: rounds that
# measure what the models are least sure of, within a budget of measuring seconds (ARFIT_BUDGET, default 15s),
# then a stop report (why it stopped, what it measured, the table's expected regret); the rest is predicted. With GPUs (nvidia-smi lists one and the build has
# CUDA) it measures the custom kernels (one-shot/two-shot, virtual ranks when there is a single GPU) and NCCL.
# On the host it also measures an all-to-all + all-to-allv set (DLRM, Zipf and hot-spot splits,
# scripts/measure_alltoallv.sh) and evaluates each effective-size mode on it.
#
#   ARFIT_BUILD_DIR  build directory (default: build)     ARFIT_OUT  output directory (default: out)
#   ARFIT_JOBS       parallel build jobs (default: cores)  ARFIT_BACKEND  host|gpu (default: detected)
#   ARFIT_BUDGET     the host run's --budget (default 15s)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
BUILD=${ARFIT_BUILD_DIR:-build}
OUT=${ARFIT_OUT:-out}
JOBS=${ARFIT_JOBS:-$(nproc)}
mkdir -p "$BUILD"  # the configure log goes inside the build directory, never into the source tree
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release > "$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$JOBS" --target arfit arbench

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ARFIT="$BUILD/cli/arfit"
ARBENCH="$BUILD/bench/arbench"
mkdir -p "$OUT/generated" "$OUT/figures"
start=$(date +%s)
step() { printf '\n== %s (%ds)\n' "$1" "$(( $(date +%s) - start ))"; }

backend=${ARFIT_BACKEND:-}
if [ -z "$backend" ]; then
  backend=host
  if grep -q 'ARFIT_HAVE_CUDA:INTERNAL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    backend=gpu
  fi
fi

if [ "$backend" = gpu ]; then
  ngpu=$(nvidia-smi -L | wc -l)
  step "measure on $ngpu GPU(s): custom kernels and NCCL, trtllm grid, lattice:2 plan"
  if [ "$ngpu" -ge 2 ]; then
    mpirun -np "$ngpu" "$ARBENCH" --backend custom --preset trtllm --plan lattice:2 --overwrite -o "$OUT/samples-custom.csv"
    mpirun -np "$ngpu" "$ARBENCH" --backend nccl --preset trtllm --plan lattice:2 --overwrite -o "$OUT/samples-nccl.csv"
  else
    # One GPU: the custom kernels run as virtual ranks (correctness and a lower bound, not NVLink performance).
    mpirun -np 1 "$ARBENCH" --backend custom --virtual-ranks --preset trtllm --plan lattice:2 --overwrite -o "$OUT/samples-custom.csv"
  fi
  SAMPLES=("$OUT"/samples-*.csv)
  GRID=(--tp 2,4,8 --hidden 128:8192 --tokens 1:16384)
  TRTLLM_MAP=()
else
  step "measure: arbench host backend, 2 ranks, preset host-main, adaptive plan within ${ARFIT_BUDGET:-15s} of measuring"
  # -q: no line per case or round; the stop report is printed (and kept in out/stop-report.txt).
  mpirun -np 2 "$ARBENCH" --preset host-main --plan adaptive --budget "${ARFIT_BUDGET:-15s}" -q --overwrite \
    -o "$OUT/samples.csv" | tee "$OUT/stop-report.txt"
  SAMPLES=("$OUT/samples.csv")
  GRID=(--tp 2 --fusion NONE,RESIDUAL_RMS_NORM --hidden 256:4096 --tokens 1:1024)
  TRTLLM_MAP=(--map MPI=NCCL)  # MPI_Allreduce stands in for the library collective
fi

step "fit: one model per strategy and fusion, family chosen by cross-validation"
"$ARFIT" fit "${SAMPLES[@]}" -o "$OUT/models.json"

step "predict: example predictions with 90 % intervals"
"$ARFIT" predict "$OUT/models.json" --collective allreduce --strategy ONESHOT --nranks 2 --bytes 1K:16M | tee "$OUT/predict-oneshot.txt"

if [ "$backend" = host ]; then
  # A new machine in minutes (docs/fit.md): 3 sizes per curve measured now, the shape of the rest borrowed
  # from a prior through them. On a CPU-only runner the only other measurement at hand is this host's own
  # main grid above, so this is a quick re-calibration of the same machine, not a second machine.
  step "new machine in minutes: anchors:3 measured, fitted with the main grid's models as prior"
  mpirun -np 2 "$ARBENCH" --preset host-main --plan anchors:3 -q --overwrite -o "$OUT/samples-anchors.csv"
  "$ARFIT" fit "$OUT/samples-anchors.csv" --prior "$OUT/models.json" -o "$OUT/models-anchors.json"
  "$ARFIT" predict "$OUT/models-anchors.json" --collective allreduce --strategy ONESHOT --nranks 2 --bytes 1K:16M | tee "$OUT/predict-anchors.txt"

  # The quantising strategies' own code on the CPU (docs/bench.md): LOWPRECISION transport (e4m3 groups, checked
  # against its error bound) and the NVFP4 epilogue (checked element by element). CPU times, not GPU ones; kept apart
  # from the main grid's samples, so the models above are the exact strategies'.
  step "quantised strategies on the CPU: LOWPRECISION transport and the NVFP4 epilogue, every case checked"
  mpirun -np 2 "$ARBENCH" --backend host --strategy TWOSHOT,LOWPRECISION --bytes 1K,16K --dtype bf16 -w 3 -n 20 \
    --overwrite -o "$OUT/samples-lowprecision.csv"
  mpirun -np 2 "$ARBENCH" --backend host --strategy ONESHOT,TWOSHOT \
    --fusion RESIDUAL_RMS_NORM,RESIDUAL_RMS_NORM_QUANT_NVFP4 --tokens 1,16 --hidden 4096 -w 3 -n 20 \
    --overwrite -o "$OUT/samples-nvfp4.csv"
fi

step "codegen: best-strategy tables over the full grid"
"$ARFIT" codegen "$OUT/models.json" "${GRID[@]}" --format json -o "$OUT/generated/best_strategy.json"
"$ARFIT" codegen "$OUT/models.json" "${GRID[@]}" --format header -o "$OUT/generated/arfit_select.h"
# The TensorRT-LLM table always has TensorRT-LLM's own axes (its lookup indexes by position).
"$ARFIT" codegen "$OUT/models.json" "${TRTLLM_MAP[@]}" --format trtllm -o "$OUT/generated/allreduce_best_strategy_table.h"
"$ARFIT" suggest "$OUT/models.json" "${GRID[@]}" --top 10 | tee "$OUT/suggest.txt"

step "eval: how good choices made from a sparse subset of the measured cells are (regret)"
"$ARFIT" eval "${SAMPLES[@]}" --protocol select --json "$OUT/eval-select.json" | tee "$OUT/eval-select.txt"

if [ "$backend" = host ]; then
  step "all-to-allv: uniform all-to-all + DLRM / Zipf / hot-spot splits, 2 ranks, 5 launches; predicted per mode"
  bash scripts/measure_alltoallv.sh "$ARBENCH" "$OUT/alltoallv" 2 5
  "$ARFIT" eval "$OUT"/alltoallv/*.csv --protocol alltoallv --json "$OUT/eval-alltoallv.json" | tee "$OUT/eval-alltoallv.txt"
  "$ARFIT" fit "$OUT"/alltoallv/*.csv -o "$OUT/models-alltoallv.json"
  "$ARFIT" plot alltoallv "$OUT"/alltoallv/*.csv "$OUT/models-alltoallv.json" -o "$OUT/figures"
fi

step "plots: figures and out/index.html"
"$ARFIT" plot all "${SAMPLES[@]}" "$OUT/models.json" "$OUT/generated/best_strategy.json" "$OUT/eval-select.json" \
  -o "$OUT/figures" --index "$OUT/index.html"

step "done"
echo "outputs in $OUT/: samples, models.json, generated/ (tables), figures/, index.html"
