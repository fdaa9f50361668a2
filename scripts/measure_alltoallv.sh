#!/usr/bin/env bash
# The main job's all-to-allv measurement on the host backend (docs/model.md, "all-to-allv"): arbench's
# host-alltoallv preset, the uniform all-to-all curve and the uneven splits (DLRM tables, Zipf routing, a hot
# spot) of 8 K to 512 K per rank, in one launch so both see the same machine (on a shared VM a launch can
# run 2-3x slower than the next one, and stays so); REPEATS launches, whose median per case `arfit eval
# --protocol alltoallv` takes. Buffers are not rotated (--buffers 1): every rank's data stay in its cache,
# which keeps host timings repeatable (the cache-cold variant and why its best mode differs: docs/model.md).
#
#   usage: measure_alltoallv.sh ARBENCH OUTDIR [RANKS=2] [REPEATS=5]
# Writes OUTDIR/alltoallv-R.csv. More ranks than cores run oversubscribed.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 ARBENCH OUTDIR [RANKS] [REPEATS]" >&2
  exit 2
fi
ARBENCH=$1
OUT=$2
RANKS=${3:-2}
REPEATS=${4:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
launch=(mpirun -np "$RANKS")
if [ "$RANKS" -gt "$(nproc)" ]; then launch+=(--oversubscribe); fi
mkdir -p "$OUT"
rm -f "$OUT"/alltoallv-*.csv  # a previous run's extra repeats would otherwise join the median
for r in $(seq 1 "$REPEATS"); do
  "${launch[@]}" "$ARBENCH" --preset host-alltoallv --tp "$RANKS" --buffers 1 -w 10 -n 100 -q --overwrite \
    -o "$OUT/alltoallv-$r.csv"
done
