#!/bin/bash
# Engine time (benchmarks/bench_inproc.py) interleaved across trees, a fresh process per run:
# BASE (a checkout of the code before, with benchmarks/bench_inproc.py copied in), BASE with one
# OpenBLAS thread, and this tree. Run from this tree's root:
#   git worktree add /tmp/base-tree <commit> && cp benchmarks/bench_inproc.py /tmp/base-tree/benchmarks/
#   BASE=/tmp/base-tree nice -n 10 benchmarks/interleave_inproc.sh [repeats]
# WORKLOADS, POLICIES (space-separated) narrow the grid; BLAS1=0 skips the one-OpenBLAS-thread run.
TREE=$(pwd)
BASE=${BASE:?set BASE to the checkout to compare with}
export COSIM_SHARED_DATA=${COSIM_SHARED_DATA:-$TREE/../shared/data}
for r in $(seq 1 "${1:-2}"); do
 for p in ${POLICIES:-tiresias-pollux optimus}; do
  for w in ${WORKLOADS:-1 2 3 4 5}; do
     cd "$BASE" && echo -n "base       " && python -m benchmarks.bench_inproc time --policies $p --workloads $w 2>/dev/null
     if [ "${BLAS1:-1}" != 0 ]; then
       cd "$BASE" && echo -n "base-blas1 " && OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_inproc time --policies $p --workloads $w 2>/dev/null
     fi
     cd "$TREE" && echo -n "this       " && python -m benchmarks.bench_inproc time --policies $p --workloads $w 2>/dev/null
  done
 done
done
