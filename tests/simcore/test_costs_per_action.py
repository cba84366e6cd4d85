"""Costs of change per action (migration from state bytes over the slowest link) and per
policy in one run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cosim.errors import CosimError, InputError
from simcore.costs import COST_PRESETS, ChangeCosts, CostCharger, resolve_costs, state_bytes
from simcore.engine import Engine, EngineOptions
from simcore.perf import PerfModel
from simcore.prepare import build_jobs
from experiments.runner import RunConfig, run
from simcore.state import ClusterState
from tests.simcore.fakes import FakeComm, FakeZoo, fake_solve
from tests.simcore.helpers import Scripted, fake_backends, frame

HDR_NODE_BPS = 8 * 200e9 / 8  # DGX A100: 8 ConnectX-6 HDR NICs of 200 Gb/s = 200 GB/s per direction


@pytest.fixture(scope="module")
def dgx():
    import netmodel

    return netmodel.build_topology(netmodel.load_cluster("dgx-a100", num_nodes=4))


@pytest.fixture(scope="module")
def zoo():
    from calibration import zoo as z

    return z


def test_state_bytes_are_weights_plus_optimizer_state(zoo):
    bert, resnet = zoo.get("bert_base"), zoo.get("resnet50")
    assert (bert.optimizer, resnet.optimizer) == ("adam", "sgd")
    assert state_bytes(bert) == bert.params * 12.0  # fp32 weights + Adam's m and v: 3 words
    assert state_bytes(resnet) == resnet.params * 8.0  # fp32 weights + momentum: 2 words
    assert state_bytes(FakeZoo().get("small")) == 3 * 1e8  # no parameter count: 3 × gradient bytes


def test_migration_cost_by_hand(dgx, zoo):
    ch = CostCharger(ChangeCosts(restart_s=30.0, migrate_state=True), dgx, zoo)
    transfer = zoo.get("bert_base").params * 12.0 / HDR_NODE_BPS
    assert transfer == pytest.approx(1306718232 / 200e9)  # 108,893,186 parameters
    node0, node1 = tuple(range(0, 8)), tuple(range(8, 16))
    assert ch.change("bert_base", node0, node1) == ("migrate", pytest.approx(30.0 + transfer, rel=1e-12))
    # overlapping move (4 GPUs of node 0 kept, 4 of node 1 new): node 1 still needs the state
    assert ch.change("bert_base", node0, tuple(range(4, 12))) == ("migrate", pytest.approx(30.0 + transfer))
    # across leaves is no slower here (non-blocking fat tree: the NIC is the slowest link)
    assert ch.transfer_s("bert_base", node0, tuple(range(24, 32))) == pytest.approx(transfer)


def test_slowest_link_decides(dgx, zoo):
    """Halve node 3's NIC link: a move onto node 3 is bounded by it, a move onto node 1 not."""
    import dataclasses

    cap = dgx.link_capacity_Bps.copy()
    cap[dgx.link_id(1, 3)] /= 2
    slow = dataclasses.replace(dgx, link_capacity_Bps=cap)
    ch = CostCharger(ChangeCosts(restart_s=0.0, migrate_state=True), slow, zoo)
    b = zoo.get("resnet50").params * 8.0
    assert ch.transfer_s("resnet50", (0,), (24,)) == pytest.approx(b / (HDR_NODE_BPS / 2))
    assert ch.transfer_s("resnet50", (0,), (8,)) == pytest.approx(b / HDR_NODE_BPS)
    # two new hosts, pulled in parallel: the slower pull decides
    assert ch.transfer_s("resnet50", (0,), (8, 24)) == pytest.approx(b / (HDR_NODE_BPS / 2))


def test_same_host_moves_transfer_nothing(dgx, zoo):
    ch = CostCharger(ChangeCosts(restart_s=30.0, migrate_state=True), dgx, zoo)
    assert ch.change("bert_base", (0, 1), (2, 3)) == ("migrate", 30.0)
    assert ch.change("bert_base", (0, 1, 8, 9), (2, 3, 10, 11)) == ("migrate", 30.0)  # same two hosts
    assert ch.change("bert_base", (0, 1), (0, 1, 2, 3)) == ("resize", 30.0)  # scaling: resize cost
    assert ch.change("bert_base", (0, 1), (0, 1)) == ("rebatch", 30.0)


def test_engine_charges_migration_per_move(dgx, zoo):
    """One 1-GPU BERT job moved within node 0, then to node 1: the decisions' costs."""
    perf = PerfModel(dgx, zoo, FakeComm(dgx), fake_solve)
    jobs, bad = build_jobs(frame([dict(submit_time=0.0, num_gpus=1, model="bert_base", global_batch=32,
                                       total_iterations=10**6)]), perf, zoo)
    assert not bad
    pol = Scripted([(0.0, {0: ((0,), None)}), (100.0, {0: ((1,), None)}), (200.0, {0: ((8,), None)}),
                    (300.0, {})])
    res = Engine(jobs, ClusterState.from_topology(dgx), perf, pol, resolve_costs("migrate-state"),
                 options=EngineOptions(record_decisions=True, check_invariants=True)).run()
    d = {(t, a): c for t, a, c in zip(res.decisions["time_s"], res.decisions["action"], res.decisions["cost_s"])}
    assert d[(0.0, "start")] == 0.0
    assert d[(100.0, "migrate")] == 30.0
    assert d[(200.0, "migrate")] == pytest.approx(30.0 + zoo.get("bert_base").params * 12.0 / HDR_NODE_BPS)


def test_per_policy_costs_in_one_run():
    """The same script under two policy names: flat30 for one, inplace for the other."""
    script = [(0.0, {0: ((0, 1), None)}), (50.0, {0: ((0, 1, 2, 3), None)}), (120.0, {0: ((4, 5, 6, 7), None)})]
    pols = {"ckpt": lambda **kw: Scripted(list(script)), "elastic": lambda **kw: Scripted(list(script))}
    df = frame([dict(submit_time=0.0, num_gpus=2, min_gpus=1, max_gpus=4, global_batch=64,
                     total_iterations=20000)])
    cfg = RunConfig(policies=("ckpt", "elastic"), costs="flat30", policy_costs={"elastic": "inplace"},
                    write_decisions=True)
    res = run(cfg, None, backends=fake_backends(df, policies=pols))
    cost = {p: dict(zip(zip(d["time_s"], d["action"]), d["cost_s"])) for p, d in res.decisions.items()}
    assert cost["ckpt"][(50.0, "resize")] == 30.0 and cost["elastic"][(50.0, "resize")] == 1.0
    assert cost["ckpt"][(120.0, "migrate")] == 30.0 and cost["elastic"][(120.0, "migrate")] == 30.0
    assert cfg.to_dict()["policy_costs"] == {"elastic": "inplace"}
    assert "policy_costs" not in RunConfig().to_dict()  # outputs of runs without it are unchanged
    with pytest.raises(InputError, match="costs given for policy 'gavel'"):
        run(RunConfig(policies=("ckpt",), policy_costs={"gavel": "free"}), None,
            backends=fake_backends(df, policies=pols))
    with pytest.raises(CosimError, match="nope"):
        run(RunConfig(policies=("ckpt",), policy_costs={"ckpt": "nope"}), None,
            backends=fake_backends(df, policies=pols))


def test_presets_keep_their_meaning_and_aryl_scales_for_free():
    m = "resnet50"
    assert [COST_PRESETS["flat30"].restart_for(m), COST_PRESETS["flat30"].resize_for(m)] == [30.0, 30.0]
    assert COST_PRESETS["ares-paper"].restart_for("bert_base") == 73.0
    assert [COST_PRESETS["inplace"].resize_for(m), COST_PRESETS["inplace"].migrate_for(m)] == [1.0, 30.0]
    assert COST_PRESETS["free"].migrate_for(m) == 0.0
    aryl = COST_PRESETS["aryl"]  # EuroSys'22: 63 s per preemption, 0 s scaling
    assert [aryl.restart_for(m), aryl.migrate_for(m), aryl.resize_for(m), aryl.batch_change_for(m)] == \
        [63.0, 63.0, 0.0, 0.0]
    assert resolve_costs("45").restart_s == 45.0 and resolve_costs(12).restart_s == 12.0


def test_ares_paper_charges_allocation_changes_not_batch_changes():
    """Ares restarts a job when its allocation changes (the model's seconds); a new batch on the
    same GPUs is no restart (the Ares simulator is the Pollux simulator's, whose `reallocate`
    alone sets `rescale_time` and counts a restart; batches are re-tuned in `step`), so Pollux's
    re-batching is free and uncounted under `ares-paper` as under `pollux-sim`."""
    from simcore.costs import CostCharger

    c = COST_PRESETS["ares-paper"]
    assert [c.restart_for("bert_base"), c.resize_for("bert_base"), c.migrate_for("bert_base")] == [73.0] * 3
    assert c.batch_change_for("bert_base") == 0.0 == COST_PRESETS["pollux-sim"].batch_change_for("bert_base")
    ch = CostCharger(c)
    assert ch.change("resnet50", (0, 1), (0, 1)) == ("rebatch", 0.0)
    assert ch.change("resnet50", (0, 1), (0, 1, 2, 3)) == ("resize", 4.0)
    assert ch.change("resnet50", (0, 1), (2, 3)) == ("migrate", 4.0)


def test_cost_tables():
    c = resolve_costs({"base": "inplace", "migrate_s": "state",
                       "per_model_gpus_restart_s": {"bert_base": {"1": 40.0, "8": 90.0}}})
    assert c.migrate_state and c.resize_s == 1.0
    assert [c.restart_for("bert_base", n) for n in (1, 4, 8, 16)] == [40.0, 40.0, 90.0, 90.0]
    assert c.restart_for("resnet50", 8) == 30.0
    for bad, msg in [({"restart": 3}, r"policy_costs\.x\.restart"), ({"resize_s": -1}, r"seconds ≥ 0"),
                     ({"per_model_gpus_restart_s": {"m": {"0": 1.0}}}, "GPU counts ≥ 1")]:
        with pytest.raises(InputError, match=msg):
            resolve_costs(bad, "policy_costs.x")


def test_cli_and_sweep_forms():
    from cli.simulate_cmd import parse_costs
    from experiments.sweep.config import parse_sweep

    assert parse_costs(()) == ("flat30", {})
    assert parse_costs(["aryl", "ones=inplace", "optimus=flat30"]) == ("aryl", {"ones": "inplace",
                                                                               "optimus": "flat30"})
    with pytest.raises(CosimError, match="bogus"):
        parse_costs(["ones=bogus"])
    # fields after the preset make the sweep TOML's table, so the CLI expresses what a catalog does
    run, per = parse_costs(["20", "ones=inplace,restart_s=20,migrate_s=1", "sjf=flat30, migrate_s = state"])
    assert run == "20" and per == {"ones": {"base": "inplace", "restart_s": 20.0, "migrate_s": 1.0},
                                   "sjf": {"base": "flat30", "migrate_s": "state"}}
    assert resolve_costs(per["ones"]) == replace(COST_PRESETS["inplace"], restart_s=20.0, migrate_s=1.0)
    assert parse_costs(["inplace,restart_s=45"])[0] == {"base": "inplace", "restart_s": 45.0}
    for bad, msg in [("ones=inplace,restart_s", r"--costs ones.*FIELD=SECONDS"),
                     ("ones=inplace,restart_s=-1", r"--costs ones\.restart_s"),
                     ("ones=inplace,restart=3", r"--costs ones\.restart\b"),
                     ("ones=,restart_s=3", r"--costs")]:
        with pytest.raises(CosimError, match=msg):
            parse_costs([bad])
    sw = parse_sweep({"traces": ["synth:philly:10"], "policies": ["fifo", "sjf"], "costs": ["flat30", "free"],
                      "policy_costs": {"sjf": {"base": "flat30", "migrate_s": "state"}}})
    cells = [(c.policy.name, c.costs) for c in sw.cells()]
    assert cells == [("fifo", "flat30"), ("fifo", "free"), ("sjf", '{"base":"flat30","migrate_s":"state"}')]
    plain = parse_sweep({"traces": ["synth:philly:10"], "policies": ["fifo"]}).cells()[0]
    assert "costs" not in plain.coordinates()  # cell ids of sweeps without costs are unchanged
    with pytest.raises(InputError, match="policy_costs.gavel"):
        parse_sweep({"traces": ["synth:philly:10"], "policies": ["fifo"], "policy_costs": {"gavel": "free"}})
