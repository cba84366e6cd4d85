"""The `mechanisms-demo` test policy drives every mechanism of the policy contract:
epoch events, per-action costs, reclaims answered by choice, what-ifs and sharded memory, end to
end through `cosim simulate`'s runner on the `aryl` preset with a load series, plus properties
over random small traces and load series (deadlines met, every job accounted for, same seed →
identical Parquet bytes, no oracle readable)."""

from __future__ import annotations

import dataclasses
import math
import tempfile
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import netmodel
import policies
from experiments.runner import RunConfig, real_backends, run
from policies.mechanisms_demo import MechanismsDemo
from simcore.api import JobState, ReclaimDemand
from simcore.capacity import default_answer
from simcore.goodput import load_app
from tests.scratch import scratch_dir
from traces.io import write_jobs
from cosim.columns import TIMING_FILES

#: the run's costs for the demo: Aryl's (63 s preemption) with distinct, recognisable seconds
#: for the two actions the policy takes on epoch events
COSTS = {"base": "aryl", "batch_change_s": 2.0, "resize_s": 1.0}
POLICY = "mechanisms-demo"

# elastic yolov3 (resized at epoch ends), pollux-sia deepspeech2 on 1-2 GPUs (Pollux epochs under
# --progress goodput: resized once, then its batch grows at epoch ends), GPT-Neo 1.3B with ZeRO-3 sharding (FFT's
# LLM, on 16 GB T4s where plain data parallelism cannot hold it), a rigid replayed ResNet-50, and a late arrival so the policy sees every finished counter
ROWS = [
    dict(job_id="elastic-yolo", submit_time=0.0, num_gpus=2, min_gpus=1, max_gpus=8, model="yolov3"),
    # its trace batch is DeepSpeech2's default (20): launch-bound there, so a larger batch raises
    # its goodput and the demo grows it at epoch ends
    dict(job_id="pollux-ds2", submit_time=10.0, num_gpus=1, min_gpus=1, max_gpus=2, model="deepspeech2",
         global_batch=20),
    dict(job_id="llm-neo", submit_time=20.0, num_gpus=8, min_gpus=8, max_gpus=8, model="gpt_neo_1_3b",
         sharding="zero3", total_iterations=300.0, gpu_type="T4"),
    dict(job_id="rigid-r50", submit_time=30.0, num_gpus=4, min_gpus=4, max_gpus=4, model="resnet50",
         duration=1800.0),
    dict(job_id="late", submit_time=40000.0, num_gpus=1, min_gpus=1, max_gpus=1, model="resnet50",
         duration=300.0),
]


class Probe(MechanismsDemo):
    """The demo policy, recording what it was shown at each call (observable counters, epoch
    events) and whether any oracle field held a number."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.calls: list[tuple] = []
        self.epoch_events = 0
        self.oracle_leaks: list[str] = []

    def decide(self, view, now):
        j = view.jobs
        self.epoch_events += sum(e.kind == "epoch" for e in view.progress_events)
        for name in ("progress", "duration", "remaining_s"):
            if not np.isnan(getattr(j, name)).all():
                self.oracle_leaks.append(f"{name} at t={now}")
        self.calls.append((now, j.state.copy(), j.epochs_done.copy(), j.samples_done.copy(), j.batch_size.copy()))
        self.global_batch, self.job_ids = j.global_batch, list(j.job_id)
        return super().decide(view, now)


def _run(rows, out: Path, cluster="aryl", load_series="diurnal:0.1", progress="goodput", seed=0, grace_s=0.0,
         probe: Probe | None = None):
    out.mkdir(parents=True, exist_ok=True)
    trace = out.parent / "trace.parquet"  # one path: the config (and so the metadata) names it
    write_jobs(pd.DataFrame(rows), trace)
    cfg = RunConfig(trace=str(trace), cluster=cluster, policies=(POLICY,), seed=seed, progress=progress,
                    load_series=load_series, reclaim_grace_s=grace_s, write_decisions=True,
                    policy_costs={POLICY: COSTS})
    be = real_backends(cfg)
    if probe is not None:
        be = dataclasses.replace(be, make_policy=lambda name, params: probe)
    return run(cfg, out, backends=be)


def _replay_ownership(dec: pd.DataFrame, rec: pd.DataFrame, node_first: np.ndarray, node_num: np.ndarray) -> int:
    """Replay decisions.parquet instant by instant: no GPU is ever held by two jobs, and no GPU
    of a returned node is held right after its return. Returns the number of instants checked."""
    owner: dict[int, str] = {}
    held: dict[str, tuple[int, ...]] = {}
    returned = {}
    for r in rec.itertuples():
        if isinstance(r.returned_nodes, str) and r.returned_nodes:
            returned.setdefault(float(r.returned_at_s), []).extend(int(n) for n in r.returned_nodes.split(","))
    n = 0
    for t, group in dec.groupby("time_s", sort=True):
        for r in group.itertuples():  # releases first: the engine releases before it places
            if r.job_id in held and (r.action in ("finish", "preempt", "evicted") or r.gpus):
                for g in held.pop(r.job_id):
                    del owner[g]
        for r in group.itertuples():
            if r.gpus and r.action not in ("finish", "preempt", "evicted"):
                gpus = tuple(int(g) for g in r.gpus.split(","))
                assert len(gpus) == r.num_gpus
                for g in gpus:
                    assert g not in owner, f"GPU {g} held by {owner[g]} and {r.job_id} at t={t}"
                    owner[g] = r.job_id
                held[r.job_id] = gpus
        for node in returned.get(float(t), []):
            lo = int(node_first[node])
            busy = [g for g in range(lo, lo + int(node_num[node])) if g in owner]
            assert not busy, f"node {node} returned at t={t} but GPUs {busy} are held"
        n += 1
    return n


def _weighted_work(calls, j: int, app) -> float:
    """Σ samples × Pollux efficiency(batch, epoch) over the intervals between policy calls (the
    policy is called at every epoch end, so no interval spans two epochs)."""
    w = 0.0
    for (_, _, ep0, s0, _), (_, _, _, s1, b1) in pairwise(calls):
        ds = float(s1[j] - s0[j])
        if ds > 0:
            w += ds * app.efficiency(int(b1[j]), min(int(ep0[j]), app.epochs - 1))
    return w


@pytest.fixture(scope="module")
def demo(tmp_path_factory, request):
    shared = request.getfixturevalue("shared_data")  # goodput needs the pollux-sia profiles
    out = tmp_path_factory.mktemp("demo") / "run"
    probe = Probe(policies.make_config(POLICY))
    res = _run(ROWS, out, probe=probe)
    d = out / POLICY
    return SimpleNamespace(res=res, probe=probe, shared=shared, jobs=pd.read_parquet(d / "jobs.parquet"),
                           dec=pd.read_parquet(d / "decisions.parquet"), rec=pd.read_parquet(d / "reclaims.parquet"))


def test_epoch_events_drive_batch_changes_and_resizes_at_their_costs(demo):
    jobs = demo.jobs.set_index("job_id")
    assert demo.probe.epoch_events >= 100  # 50 yolov3 + 80 deepspeech2 epochs, the last ones at completion
    assert jobs.loc["elastic-yolo", "epochs_done"] == 50 and jobs.loc["pollux-ds2", "epochs_done"] == 80
    dec = demo.dec
    reb, res_ = dec[dec.action == "rebatch"], dec[dec.action == "resize"]
    assert len(reb) >= 1 and (reb.cost_s == COSTS["batch_change_s"]).all()
    assert "pollux-ds2" in set(reb.job_id) and jobs.loc["pollux-ds2", "final_batch"] > \
        dec[(dec.job_id == "pollux-ds2") & (dec.action == "start")].batch_size.iloc[0]
    assert len(res_) >= 1 and (res_.cost_s == COSTS["resize_s"]).all()
    yolo = dec[dec.job_id == "elastic-yolo"]
    assert (yolo.action == "resize").any() and yolo.num_gpus.max() > yolo.num_gpus.iloc[0]
    # each job's restart seconds are exactly the costs charged for its actions
    charged = dec.groupby("job_id").cost_s.sum()
    for jid, row in jobs.iterrows():
        assert row.restart_s == pytest.approx(charged.get(jid, 0.0), abs=1e-9)
    assert demo.res.summary["progress_model"].tolist() == ["goodput"]


def test_reclaims_answered_by_the_policy_and_deadlines_met(demo):
    rec = demo.rec
    assert len(rec) >= 1
    assert (rec.answered_by == POLICY).all()
    assert rec.deadline_met.all() and (rec.returned_at_s <= rec.deadline_s + 1e-9).all()
    assert (rec.demanded > 0).all()


def test_llm_finishes_no_gpu_double_booked_work_conserved(demo):
    jobs = demo.jobs.set_index("job_id")
    assert jobs.finished.all() and not demo.res.summary["stuck"].iloc[0]
    assert jobs.loc["llm-neo", "model"].startswith("gpt_neo")
    topo = netmodel.build_topology(netmodel.load_cluster("aryl"))
    llm = demo.dec[(demo.dec.job_id == "llm-neo") & (demo.dec.action == "start")]
    gpus = np.array([int(g) for g in llm.gpus.iloc[0].split(",")])
    assert {topo.gpu_type_names[t] for t in np.asarray(topo.gpu_type)[gpus]} == {"T4"}
    assert _replay_ownership(demo.dec, demo.rec, np.asarray(topo.node_first_gpu), np.asarray(topo.node_num_gpus)) \
        >= len(demo.dec.time_s.unique())
    assert not demo.probe.oracle_leaks
    calls = demo.probe.calls
    names = demo.probe.job_ids
    _, state, _, samples, batch = calls[-1]  # after the late arrival: every training job is done
    for jid in ("elastic-yolo", "pollux-ds2", "llm-neo", "rigid-r50"):
        assert state[names.index(jid)] == JobState.FINISHED
    # the LLM: a fixed number of iterations at a fixed batch
    k = names.index("llm-neo")
    assert samples[k] == pytest.approx(300 * int(batch[k]), rel=1e-9)
    # the Pollux jobs: efficiency-weighted samples equal the application's target steps × b0,
    # through resizes and batch changes
    for jid, app_name in (("pollux-ds2", "deepspeech2"), ("elastic-yolo", "yolov3")):
        app = load_app(demo.shared / "profiles" / "pollux-sia" / app_name, int(jobs.loc[jid, "epochs_done"]))
        assert _weighted_work(calls, names.index(jid), app) == pytest.approx(app.target * app.init_batch, rel=1e-6)


def test_the_llm_runs_only_sharded(demo, tmp_path):
    """The same GPT-Neo 1.3B job on 8 T4s without sharding cannot hold its state: rejected
    before the run, naming the job (the demo run above finished it under ZeRO-3)."""
    from cosim.errors import CosimError

    rows = [dict(r, sharding="none") if r["job_id"] == "llm-neo" else r for r in ROWS]
    with pytest.raises(CosimError, match="llm-neo: .*#none does not fit GPU memory"):
        _run(rows, tmp_path / "run")


def test_answer_is_the_policy_choice_not_the_default():
    """Two 8-GPU nodes. Job 0 (rigid, 1 GPU) on node 0; job 1 (elastic, min 2) on 2 GPUs of node 0
    and all of node 1. Returning node 0 evicts job 0; returning node 1 only scales job 1 in, so
    the default answer (fewest preemptions) returns node 1. The demo returns the node with the
    fewest busy GPUs: node 0 (3 busy against 8)."""
    first, num = np.array([0, 8]), np.array([8, 8])
    owner = np.full(16, -1)
    alloc = {0: (0,), 1: (1, 2, 8, 9, 10, 11, 12, 13, 14, 15)}
    for j, g in alloc.items():
        owner[list(g)] = j
    demand = ReclaimDemand("inference", 1, 0.0, np.array([0, 1], np.int32))
    assert default_answer(demand, first, num, owner, alloc, np.array([1, 2]), 0.0).nodes == (1,)
    view = SimpleNamespace(cluster=SimpleNamespace(gpu_owner=owner, node_first_gpu=first, node_num_gpus=num))
    ans = MechanismsDemo(policies.make_config(POLICY)).answer_reclaim(view, demand)
    assert ans.nodes == (0,) and ans.at_s is None


# ---- properties over random small traces and load series -----------------------------------

def _check_work(probe: Probe, rows: list[dict], modes: dict, progress: str, shared: Path) -> int:
    """Work conserved through the policy's batch changes and resizes and the reclaims'
    scale-ins and evictions, for every training-run job (no trace duration) finished by the
    policy's last call, in the unit of its work mode (`simcore.work`): ITERATIONS (the
    workload's training runs, iterations at the trace's batch) — samples equal those
    iterations × the trace's batch, ceil(epochs × samples per epoch / batch) × batch, whatever
    batches the policy ran; SAMPLES — samples equal epochs × samples per epoch (to one batch);
    EPOCHS (goodput) — the efficiency-weighted samples equal the application's target × b0.
    Returns the jobs checked."""
    from traces.workload import training_runs

    runs = training_runs()
    _, state, _, samples, _ = probe.calls[-1]
    checked = 0
    for r in rows:
        i = probe.job_ids.index(r["job_id"])
        if "duration" in r or state[i] != JobState.FINISHED:
            continue
        run_ = runs[r["model"]]
        b_ref = int(probe.global_batch[i])
        mode = modes[r["job_id"]]
        if mode == "epochs":
            app = load_app(shared / "profiles" / "pollux-sia" / _APP[r["model"]], math.ceil(run_.epochs))
            assert _weighted_work(probe.calls, i, app) == pytest.approx(app.target * app.init_batch, rel=1e-6)
        elif mode == "iterations":
            want = math.ceil(run_.epochs * run_.samples_per_epoch / b_ref) * b_ref
            assert samples[i] == pytest.approx(want, rel=1e-6)
        else:
            assert mode == "samples", mode
            assert abs(samples[i] - run_.epochs * run_.samples_per_epoch) <= b_ref
        checked += 1
    return checked


_SMALL: dict[str, str] = {}


def _small_aryl() -> str:
    """The aryl preset with 1 training and 3 inference servers (a cluster path for RunConfig):
    jobs spill onto the loaned T4 servers, so reclaims hit running jobs."""
    if "path" not in _SMALL:
        text = (Path(netmodel.__file__).parent / "presets" / "aryl.toml").read_text()
        text = text.replace('name = "aryl"', 'name = "aryl-small"').replace("nodes = 443", "nodes = 1") \
            .replace("nodes = 520", "nodes = 3")
        p = scratch_dir("cosim-aryl-small-") / "aryl-small.toml"
        p.write_text(text)
        _SMALL["path"] = str(p)
    return _SMALL["path"]


_MODELS = ("resnet50", "yolov3", "deepspeech2", "bert_base")
_APP = {"resnet50": "imagenet", "yolov3": "yolov3", "deepspeech2": "deepspeech2", "bert_base": "bert"}
job_st = st.fixed_dictionaries({
    "submit_time": st.integers(0, 1800).map(float),
    "num_gpus": st.sampled_from([1, 2, 4, 8]),
    "elastic": st.booleans(),
    "model": st.sampled_from(_MODELS),
    "duration": st.one_of(st.none(), st.integers(120, 3600).map(float)),
    "t4": st.booleans(),
})
load_st = st.lists(st.tuples(st.integers(0, 7200), st.integers(0, 3)), min_size=1, max_size=6)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(specs=st.lists(job_st, min_size=1, max_size=5), load=load_st, grace=st.sampled_from([0.0, 120.0]),
       progress=st.sampled_from(["plain", "goodput"]), seed=st.integers(0, 3))
def test_random_runs_meet_deadlines_conserve_work_account_every_job_and_are_deterministic(specs, load, grace, progress, seed):
    from tests.conftest import SHARED_DATA

    if progress == "goodput" and not SHARED_DATA.is_dir():
        progress = "plain"
    rows = []
    for i, s in enumerate(specs):
        n = s["num_gpus"]
        r = dict(job_id=f"j{i}", submit_time=s["submit_time"], num_gpus=n, min_gpus=1 if s["elastic"] else n,
                 max_gpus=8 if s["elastic"] else n, model=s["model"])
        if s["duration"] is not None:
            r["duration"] = s["duration"]
        if s["t4"]:
            r["gpu_type"] = "T4"
        rows.append(r)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        series = d / "load.csv"
        pd.DataFrame([(float(t), "inference", k) for t, k in sorted(load)],
                     columns=["time_s", "pool", "nodes_needed"]).to_csv(series, index=False)
        cluster = _small_aryl()
        kw = dict(cluster=cluster, load_series=str(series), progress=progress, seed=seed, grace_s=grace)
        probe = Probe(policies.make_config(POLICY))
        res = _run(rows, d / "a", probe=probe, **kw)
        _run(rows, d / "b", **kw)
        jobs = pd.read_parquet(d / "a" / POLICY / "jobs.parquet")
        rec = pd.read_parquet(d / "a" / POLICY / "reclaims.parquet")
        # every job is in jobs.parquet, finished with an end time or reported unfinished
        assert sorted(jobs.job_id) == sorted(r["job_id"] for r in rows)
        s = res.summary.iloc[0]
        assert s.finished + s.unfinished == len(rows) == len(jobs)
        fin = jobs[jobs.finished]
        assert np.isfinite(fin.end_time_s).all() and (fin.progress == 1.0).all()
        assert (jobs[~jobs.finished].progress < 1.0).all()
        # reclaim deadlines met, answered by the policy, no GPU shared or held on a returned node
        assert rec.deadline_met.all() and (rec[rec.demanded > 0].answered_by == POLICY).all()
        topo = netmodel.build_topology(netmodel.load_cluster(cluster))
        _replay_ownership(pd.read_parquet(d / "a" / POLICY / "decisions.parquet"), rec,
                          np.asarray(topo.node_first_gpu), np.asarray(topo.node_num_gpus))
        assert not probe.oracle_leaks
        _check_work(probe, rows, dict(zip(jobs.job_id, jobs.work_mode)), progress, SHARED_DATA)
        # same seed → identical bytes (the probe and the registry's policy decide alike)
        files = sorted(p.relative_to(d / "a") for p in (d / "a").rglob("*.parquet") if p.name not in TIMING_FILES)
        assert files and files == sorted(p.relative_to(d / "b") for p in (d / "b").rglob("*.parquet")
                                         if p.name not in TIMING_FILES)
        for f in files:
            assert (d / "a" / f).read_bytes() == (d / "b" / f).read_bytes(), f
    assert math.isfinite(float(s.end_time_s))
