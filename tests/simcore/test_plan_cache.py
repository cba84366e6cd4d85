"""`PerfModel.placed` / `phases_of`: the validator's per-allocation caches return exactly
what the uncached path builds (sorted read-only int32 GPU ids, the one GPU type or -2 when
mixed, the same `Phases` values), and a decision the cache serves is validated as before."""

from __future__ import annotations

import numpy as np
import pytest

from simcore.perf import PerfModel
from tests.simcore.fakes import FakeComm, FakeZoo, fake_topology


def _perf(types=(0, 0, 1, 1)):
    topo = fake_topology(nodes=4, gpus_per_node=4, types=types)
    return PerfModel(topo, FakeZoo(), FakeComm(topo), None, contention=False)


def test_placed_sorts_and_types():
    perf = _perf()
    gpus, ty = perf.placed((5, 1, 4))
    assert gpus.dtype == np.int32 and gpus.tolist() == [1, 4, 5] and not gpus.flags.writeable
    assert ty == 0  # nodes 0 and 1 are type A
    assert perf.placed((9, 8))[1] == 1  # node 2: type B
    assert perf.placed((3, 8))[1] == -2  # A and B: mixed
    assert perf.placed((5, 1, 4))[0] is gpus  # cached per tuple


@pytest.mark.parametrize("gpus_t,batch", [((0,), 32), ((3, 1, 2, 0), 64), ((4, 0), 16), ((8, 12, 9), 48)])
def test_phases_of_equals_phases(gpus_t, batch):
    perf = _perf()
    model = next(iter(FakeZoo.MODELS))
    arr, _ = perf.placed(gpus_t)
    got = perf.phases_of(model, gpus_t, arr, batch)
    want = _perf().phases(model, np.sort(np.asarray(gpus_t, np.int32)), batch)
    assert (got is None) == (want is None)
    if want is not None:
        assert (got.compute_s, got.comm_start_s, got.comm_s, got.accumulation_steps) == \
               (want.compute_s, want.comm_start_s, want.comm_s, want.accumulation_steps)
        assert got.link_ids.tolist() == want.link_ids.tolist()
        assert got.link_bytes.tolist() == want.link_bytes.tolist()
    assert perf.phases_of(model, gpus_t, arr, batch) is got  # cached
