#!/bin/bash
# Paired check of the full-Philly run: Tiresias on the full Philly trace (philly-512,
# contention on), alternating two checkouts, each run in a fresh process; prints cpu_s (process
# CPU of the run, the comparable number on a shared host), wall_s and policy_s, and the jobs table's
# hash (`jobs_sha1`, where the checkout's `_child_philly` reports it: equal hashes, equal outputs).
#   bash benchmarks/bench_tiresias_pair.sh BASE_DIR THIS_DIR [ROUNDS]
# Round 0 is a warm-up that fills each checkout's numba cache; compare rounds 1.. only.
base=${1:?base checkout}; this=${2:?this checkout}; rounds=${3:-3}
for i in $(seq 0 "$rounds"); do
  for t in "$base" "$this"; do
    (cd "$t" && python -c "
import simcore
from benchmarks.bench_engine import _child_philly
r = _child_philly('tiresias', None)
print('$t', 'round $i', {k: round(r[k], 3) for k in ('cpu_s', 'wall_s', 'policy_s', 'events')}, r.get('jobs_sha1'),
      simcore.__file__, flush=True)
" 2>&1 | tail -1)
  done
done
