"""Dally Table I from the per-layer workload files on `dally-3tier` defaults.

Table I (notes/dally.md §5.1), exposed communication as % of compute, 8 GPUs:

    model        machine  rack  network
    VGG11             1%    6%       7%
    AlexNet           2%   13%     100%
    MobileNetV3      42%  940%   19592%
    ResNet18          7%  116%    2749%
    ResNet50         12%   12%      38%
    BERT-large        8%   23%     715%

Checked here: machine ≤ rack ≤ network for every model, and at the network tier MobileNetV3 ≫
ResNet18 ≫ BERT > AlexNet > ResNet50 > VGG11 ("≫" taken as ≥ 2×). Placements (the paper does not
give its 8-GPU shapes): machine = one node ``8``; rack = ``4,4`` and ``2,2,2,2``; network =
``2,2/2,2`` (four machines in two racks, the fragmented allocation a first-free network
placement yields). Compute = Σ cycles × the artifact's compute-scale at 1 GHz (ASTRA-sim's
cycle). Exact percentages are calibration's job.

Two models of the same cluster: the NCCL-like costs (`CommParams()` defaults, "auto" over
ring / tree / hierarchical) on the `dally-3tier` link table with the PyTorch-DDP loop — the
ordering tests — and the preset as shipped (the authors' ASTRA-sim inputs, ``multidim``)
with the authors' simulator (`ASTRA_RATIO`: ASTRA-sim 1.0's loop, update delays, collective plan
and link semantics), pinned in `test_astra_inputs_table`.
"""

from __future__ import annotations

import numpy as np
import pytest

import netmodel
from collectives import CommModel, CommParams
from collectives.layers import ASTRA_LOOP, comm_ratio, iteration_comm, read_layers
from collectives.placement import placement_gpus

ORDER = ["mobilenet_v3", "resnet18", "BERT-large", "alexnet", "resnet50", "vgg11"]


@pytest.fixture(scope="module")
def layer_models(request):
    shared = request.getfixturevalue("shared_data")
    files = sorted((shared / "models" / "layers").glob("*.csv"))
    models = {m.name: m for m in map(read_layers, files)}
    assert set(ORDER) <= set(models), sorted(models)
    return models


@pytest.fixture(scope="module")
def dally():
    topo = netmodel.build_topology(netmodel.load_cluster("dally-3tier"))
    return topo, CommModel(topo, CommParams())


def ratios(layer_models, dally, shape):
    topo, comm = dally
    g = placement_gpus(topo, shape)
    return {name: comm_ratio(layer_models[name], comm, g) for name in ORDER}


def test_layer_files_parse(layer_models):
    alex = layer_models["alexnet"]
    assert len(alex.layer_names) == 8 and alex.layer_names[1] == "features.3"   # glued number stripped
    assert alex.trailing_value == 18356271
    assert alex.grad_bytes == pytest.approx(244.4e6, rel=1e-3)
    bert = layer_models["BERT-large"]
    assert bert.declared_layers == 145 and len(bert.layer_names) == 66
    assert layer_models["mobilenet_v3"].compute_scale() == 0.00639
    # the last field: ASTRA-sim's wg_update_time (cycles, not compute-scaled)
    r50 = layer_models["resnet50"]
    assert r50.update_cycles.sum() == 27e6 and np.count_nonzero(r50.update_cycles) == 8
    assert r50.update_cycles[r50.layer_names.index("layer2.2.conv2")] == 6e6
    vgg = layer_models["vgg11"]
    assert vgg.update_cycles.sum() == 1e6 and vgg.update_cycles[vgg.layer_names.index("classifier.0")] == 1e6
    assert r50.update_s().sum() == pytest.approx(0.027)
    for name in ("alexnet", "mobilenet_v3", "resnet18", "BERT-large"):
        assert layer_models[name].update_cycles.sum() == 0, name
    # the number glued to the names is the file's total forward cycles
    assert alex.trailing_value == alex.fwd_cycles.sum()


@pytest.mark.shared_data
def test_per_tier_ordering_every_model(layer_models, dally):
    machine = ratios(layer_models, dally, "8")
    racks = [ratios(layer_models, dally, s) for s in ("4,4", "2,2,2,2")]
    network = ratios(layer_models, dally, "2,2/2,2")
    for name in ORDER:
        for rack in racks:
            assert machine[name] <= rack[name] <= network[name], (name, machine[name], rack[name], network[name])
        assert network[name] > machine[name]


@pytest.mark.shared_data
def test_cross_model_ordering_at_network_tier(layer_models, dally):
    r = ratios(layer_models, dally, "2,2/2,2")
    vals = [r[n] for n in ORDER]
    assert all(a > b for a, b in zip(vals, vals[1:])), dict(zip(ORDER, vals))
    assert r["mobilenet_v3"] >= 2 * r["resnet18"] and r["resnet18"] >= 2 * r["BERT-large"]


@pytest.mark.shared_data
def test_astra_inputs_table(layer_models):
    """The preset as shipped with the authors' simulator (`ASTRA_RATIO`: one pass, unscaled
    update delays, LIFO per-dimension pipeline, ASTRA-sim's baseline collective and link
    semantics, ASTRA-sim's step chain per phase and whole-cycle loop). Pinned (paper in
    brackets): machine ``8`` within 3 points for every model but MobileNetV3 (35.6 [42]);
    rack ``4,4`` within a factor 2 for all six (VGG-11 6.0 [6], AlexNet 13.1 [13], MobileNetV3
    935 [940], ResNet-18 113 [116], ResNet-50 12.4 [12], BERT 14.0 [23]); network ``4/4``
    within 5 % for MobileNetV3, ResNet-18, BERT, within 25 % for AlexNet (124 [100]) and 1.5x
    for ResNet-50 (49 [38]); VGG-11 28.9 [7] is the known miss."""
    from collectives.layers import ASTRA_RATIO

    topo = netmodel.build_topology(netmodel.load_cluster("dally-3tier"))
    comm = CommModel(topo)
    assert comm.params.algorithm == "multidim"
    r = {t: {n: 100 * comm_ratio(layer_models[n], comm, placement_gpus(topo, s), **ASTRA_RATIO) for n in ORDER}
         for t, s in (("machine", "8"), ("rack", "4,4"), ("network", "4/4"))}
    paper = {"vgg11": (1, 6, 7), "alexnet": (2, 13, 100), "mobilenet_v3": (42, 940, 19592),
             "resnet18": (7, 116, 2749), "resnet50": (12, 12, 38), "BERT-large": (8, 23, 715)}
    for name, (m, k, n) in paper.items():
        if name != "mobilenet_v3":
            assert abs(r["machine"][name] - m) <= 3, (name, r["machine"][name])
        assert 0.5 < r["rack"][name] / k < 2, (name, r["rack"][name])
        assert 0.1 < r["network"][name] / n < 10, (name, r["network"][name])
        assert r["machine"][name] <= r["rack"][name] <= r["network"][name], name
    assert 30 < r["machine"]["mobilenet_v3"] < 38                       # known miss
    for name in ("mobilenet_v3", "resnet18", "BERT-large"):
        assert r["network"][name] == pytest.approx(paper[name][2], rel=0.05), name
    assert r["network"]["alexnet"] == pytest.approx(100, rel=0.25)
    assert r["network"]["resnet50"] == pytest.approx(38, rel=0.5)
    assert r["rack"]["alexnet"] == pytest.approx(13, rel=0.1) and r["rack"]["vgg11"] == pytest.approx(6, rel=0.1)
    # ResNet-50's 12 % at machine and rack is its unscaled update delay, not the network
    assert r["machine"]["resnet50"] == pytest.approx(r["rack"]["resnet50"], abs=0.5)
    net = [r["network"][n] for n in ORDER]
    assert all(a > b for a, b in zip(net, net[1:])), dict(zip(ORDER, net))
    # the cross-model order at every tier is the paper's (machine: MobileNetV3 > ResNet-50 >
    # BERT > ResNet-18 > AlexNet > VGG-11; rack: MobileNetV3 > ResNet-18 > BERT > AlexNet >
    # ResNet-50 > VGG-11)
    for t, col in (("machine", 0), ("rack", 1), ("network", 2)):
        ours = sorted(paper, key=lambda n: -r[t][n])
        assert ours == sorted(paper, key=lambda n: -paper[n][col]), (t, ours)


@pytest.mark.shared_data
def test_update_delay_is_the_resnet50_mechanism(layer_models):
    """Without the update delays (or scaled like compute) ResNet-50 has ~0 % at machine and
    rack; with them, unscaled (ASTRA-sim's parser), 12 %. Models without update cycles do not
    change."""
    from collectives.layers import ASTRA_RATIO

    topo = netmodel.build_topology(netmodel.load_cluster("dally-3tier"))
    comm = CommModel(topo)
    g = placement_gpus(topo, "8")
    r50 = layer_models["resnet50"]
    by = {u: 100 * comm_ratio(r50, comm, g, **dict(ASTRA_RATIO, update=u)) for u in ("unscaled", "scaled", "none")}
    assert by["none"] < 0.5 and by["scaled"] < 1.0 and by["unscaled"] == pytest.approx(12.3, abs=0.3)
    bert = layer_models["BERT-large"]
    assert comm_ratio(bert, comm, g, **ASTRA_RATIO) == comm_ratio(bert, comm, g, **dict(ASTRA_RATIO, update="none"))


def test_update_delay_hand_example():
    """Two layers (fwd 1, ig 0.25, wg 0.25 at scale 1; update 0.5 / 0 cycles at clock 1 Hz),
    comm 1 s each, FIFO = LIFO here. One pass: backward from 2: wg1 ends 2.25 → c1 2.25→3.25,
    held to 3.75 by its update; ig1 → 2.5, wg0 → 2.75 → c0 3.25→4.25. End = 4.25; compute
    2.75 → exposed 1.5. With update 3 on layer 1: c1 held to 6.25 → exposed 3.5 (end − compute).
    Steady state: the next forward of layer 0 waits to 4.25 (+1), layer 1 to max(5.25, 3.75)
    → 6.25; ideal 2.75 + 2 = 4.75 → 1.5; with update 3: 6.25 + 1 = 7.25 → 2.5. Scaled update
    (scale 0.5 here, compute cycles doubled to keep compute): the delay halves."""
    from collectives.layers import LayerModel

    def toy(upd, scale=1.0):
        return LayerModel("toy", "-", ("a", "b"), np.array([1.0, 1.0]) / scale, np.array([0.25, 0.25]) / scale,
                          np.array([0.25, 0.25]) / scale, np.array([10.0, 10.0]), 2, None, np.array(upd))

    kw = dict(clock_hz=1.0, compute_scale=1.0, scheduling="lifo", issue="after_wg")
    c = np.array([1.0, 1.0])
    assert iteration_comm(toy([0.0, 0.5]), c, passes=1, update="unscaled", **kw) == pytest.approx((2.75, 1.5))
    assert iteration_comm(toy([0.0, 3.0]), c, passes=1, update="unscaled", **kw)[1] == pytest.approx(3.5)
    assert iteration_comm(toy([0.0, 3.0]), c, passes=1, update="none", **kw)[1] == pytest.approx(1.5)
    assert iteration_comm(toy([0.0, 0.5]), c, update="unscaled", **kw)[1] == pytest.approx(1.5)
    assert iteration_comm(toy([0.0, 3.0]), c, update="unscaled", **kw)[1] == pytest.approx(2.5)
    half = dict(kw, compute_scale=0.5)
    assert iteration_comm(toy([0.0, 6.0], 0.5), c, passes=1, update="scaled", **half)[1] == pytest.approx(3.5)
    assert iteration_comm(toy([0.0, 6.0], 0.5), c, passes=1, update="unscaled", **half)[1] == pytest.approx(6.5)
    # a layer without a collective never applies its update
    assert iteration_comm(toy([9.0, 0.0]), np.array([0.0, 1.0]), passes=1, update="unscaled", **kw)[1] == \
        pytest.approx(iteration_comm(toy([0.0, 0.0]), np.array([0.0, 1.0]), passes=1, update="unscaled", **kw)[1])
    with pytest.raises(Exception, match="update"):
        iteration_comm(toy([0.0, 0.0]), c, update="later", **kw)


def test_astra_loop_hand_example():
    """after_wg + LIFO, two layers (fwd 1, ig 0.25, wg 0.25 each; layer 0's ig skipped):
    compute = 2 + 0.5 + 0.25 = 2.75. Backward from t=2: wg1 ends 2.25 (issue c1), ig1 2.5,
    wg0 2.75 (issue c0), end 2.75. c1 = 1 s runs 2.25→3.25; c0 = 1 s: 3.25→4.25. Next
    forward: layer 0 waits to 4.25 (+1 → 5.25), layer 1 ready at 3.25 → ends 6.25; ideal
    2.75 + 2 = 4.75 → 1.5 s exposed. With FIFO the same (one request pending at a time);
    with three requests LIFO serves the latest issued first."""
    from collectives.layers import LayerModel

    m = LayerModel("toy", "-", ("a", "b"), np.array([1.0, 1.0]), np.array([0.25, 0.25]), np.array([0.25, 0.25]),
                   np.array([10.0, 10.0]), 2)
    cont = dict(ASTRA_LOOP, ticks=False)       # continuous time (the whole-cycle loop: below)
    compute, exposed = iteration_comm(m, np.array([1.0, 1.0]), clock_hz=1.0, compute_scale=1.0, **cont)
    assert compute == 2.75 and exposed == pytest.approx(1.5)
    # three layers, fwd 1 and wg 0.1 each, comm 1 s each. Backward from 3: c2 issued 3.1 runs
    # 3.1→4.1; c1 (3.2) and c0 (3.3) wait. LIFO: c0 4.1→5.1, c1 5.1→6.1; next forward 5.1→6.1,
    # 6.1→7.1, 7.1→8.1: exposed 8.1 − 3.3 − 3 = 1.8. FIFO: c1 then c0 (6.1): forward ends 9.1 → 2.8.
    m3 = LayerModel("toy3", "-", ("a", "b", "c"), np.ones(3), np.zeros(3), np.full(3, 0.1), np.ones(3), 3)
    c3 = np.ones(3)
    _, lifo = iteration_comm(m3, c3, clock_hz=1.0, compute_scale=1.0, scheduling="lifo", issue="after_wg")
    _, fifo = iteration_comm(m3, c3, clock_hz=1.0, compute_scale=1.0, scheduling="fifo", issue="after_wg")
    assert lifo == pytest.approx(1.8) and fifo == pytest.approx(2.8)
    # one pass from a cold start, ended when all comms are done (6.1): compute 3.3 → 2.8
    _, one = iteration_comm(m3, c3, clock_hz=1.0, compute_scale=1.0, scheduling="lifo", issue="after_wg", passes=1)
    assert one == pytest.approx(2.8)
    with pytest.raises(Exception, match="scheduling"):
        iteration_comm(m3, c3, scheduling="random")


def test_dimension_pipeline_hand_example():
    """Two layers (wg 0.5 s each, nothing else), every all-reduce = stages q0 1 s, q1 1 s,
    q0 1 s. c1 ready 0.5, c0 ready 1.0. Pipeline: c1 q0 0.5→1.5, q1 1.5→2.5; c0 q0 1.5→2.5,
    q1 2.5→3.5; c1 q0 2.5→3.5; c0 q0 3.5→4.5 → next forward waits to 4.5: exposed 3.5.
    One engine (3 s each): c1 0.5→3.5, c0 3.5→6.5 → exposed 5.5."""
    from collectives.layers import LayerModel

    m = LayerModel("toy", "-", ("a", "b"), np.zeros(2), np.zeros(2), np.array([0.5, 0.5]), np.ones(2), 2)
    st = [(np.array([1.0, 1.0, 1.0]), np.array([0, 1, 0]))] * 2
    kw = dict(clock_hz=1.0, compute_scale=1.0, scheduling="lifo", issue="after_wg")
    compute, piped = iteration_comm(m, np.full(2, 3.0), stages=st, **kw)
    assert compute == 1.0 and piped == pytest.approx(3.5)
    assert iteration_comm(m, np.full(2, 3.0), **kw)[1] == pytest.approx(5.5)


def test_overlap_model_hand_example():
    """Two layers, compute 1 s each way: comm of the last layer hides under the first's backward."""
    from collectives.layers import LayerModel

    m = LayerModel("toy", "-", ("a", "b"), np.array([1.0, 1.0]), np.array([0.5, 0.5]), np.array([0.5, 0.5]),
                   np.array([10.0, 10.0]), 2)
    # forward 2 s, backward: b ends at 3 s, a at 4 s; comm b 3→4.5, comm a 4.5→6.5;
    # next forward: a waits until 6.5 (+1), b ready (4.5) → ends 8.5; ideal 4 + 2 = 6 → 2.5 s exposed
    compute, exposed = iteration_comm(m, np.array([2.0, 1.5]), clock_hz=1.0, compute_scale=1.0)
    assert compute == 4.0 and exposed == pytest.approx(2.5)
    assert iteration_comm(m, np.zeros(2), clock_hz=1.0, compute_scale=1.0)[1] == 0.0


def test_bad_layer_file(tmp_path):
    from cosim.errors import InputError

    p = tmp_path / "x.csv"
    p.write_text("MODEL\n1\n")
    with pytest.raises(InputError, match="DATA"):
        read_layers(p)
    p.write_text("DATA\n1\nconv\t-1\tabc\tNONE\t0\t1\tNONE\t0\t1\tALLREDUCE\t4\t0\n")
    with pytest.raises(InputError, match="row 3"):
        read_layers(p)
    p.write_text("DATA\n1\nconv\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLREDUCE\t4\n")   # no update field
    with pytest.raises(InputError, match="12 tab-separated"):
        read_layers(p)
    p.write_text("DATA\n1\nconv\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLTOALL\t4\t0\n")
    with pytest.raises(InputError, match="wg comm type"):
        read_layers(p)
    p.write_text("DATA\n1\nconv\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t4\t7\n")
    m = read_layers(p)
    assert m.wg_bytes.tolist() == [0.0] and m.update_cycles.tolist() == [7.0]


def test_whole_cycle_loop_hand_example():
    """``ticks`` (ASTRA-sim's loop on whole cycles), clock 1 Hz, scale 1, two rows of a file
    that declares three layers (one missing row), fwd 2.5 / 2.0, ig 1 / 1, wg 1 / 1.7 cycles,
    comm 1 s each, one engine, LIFO, one pass. Truncated: fwd 2 / 2, wg 1 / 1 → compute
    2 + 2 + 1 + 1 + 1 (layer 0's ig never runs) = 7. Forward: 2 + 1, 2 + 1, missing row + 1
    → 7; backward: missing row 2 steps → 9; wg1 → 10 (issue c1: 10→11), +1, ig1 → 12, +1 → 13;
    wg0 → 14 (issue c0: 14→15), +1 → 15. End 15: exposed 15 − 7 = 8 (the 3·3 − 1 transitions).
    Continuous: compute 8.2, c0 issued at 8.2 ends 9.2 → exposed 1.0."""
    from collectives.layers import LayerModel

    m = LayerModel("toy", "-", ("a", "b"), np.array([2.5, 2.0]), np.array([1.0, 1.0]), np.array([1.0, 1.7]),
                   np.array([10.0, 10.0]), 3)
    kw = dict(clock_hz=1.0, compute_scale=1.0, scheduling="lifo", issue="after_wg", passes=1)
    assert iteration_comm(m, np.ones(2), ticks=True, **kw) == pytest.approx((7.0, 8.0))
    assert iteration_comm(m, np.ones(2), ticks=False, **kw) == pytest.approx((8.2, 1.0))
    # the float32 product is truncated: 3 cycles × 0.1f = 0.3000000119 → 0; 10 × 0.1f → 1
    m2 = LayerModel("toy", "-", ("a",), np.array([10.0]), np.array([3.0]), np.array([3.0]), np.array([0.0]), 1)
    kw2 = dict(kw, compute_scale=0.1)
    assert iteration_comm(m2, np.zeros(1), ticks=True, **kw2)[0] == pytest.approx(1.0)


@pytest.mark.shared_data
def test_astra_step_chain_moves_mobilenet_about_one_point(layer_models):
    """ASTRA-sim's per-step costs (one more endpoint hand-off per ring phase, reduction memory
    operations, whole-ns messages, whole-cycle loop) add 1.2 points to MobileNetV3's machine
    tier (34.4 → 35.6 %, the paper's 42 stays out of reach) and ≤ 0.3 to every other model's:
    they are latency terms, and MobileNetV3 is the most latency-bound model."""
    from collectives.layers import ASTRA_RATIO

    topo = netmodel.build_topology(netmodel.load_cluster("dally-3tier"))
    comm = CommModel(topo)
    g = placement_gpus(topo, "8")
    old = dict(ASTRA_RATIO, phase_cost="alpha_beta", ticks=False)
    for name in ORDER:
        new_r = 100 * comm_ratio(layer_models[name], comm, g, **ASTRA_RATIO)
        old_r = 100 * comm_ratio(layer_models[name], comm, g, **old)
        assert new_r >= old_r - 1e-9, name
        if name == "mobilenet_v3":
            assert new_r == pytest.approx(35.6, abs=0.1) and old_r == pytest.approx(34.4, abs=0.1)
        else:
            assert new_r - old_r <= 0.3, (name, old_r, new_r)
    from cosim.errors import InputError

    with pytest.raises(InputError, match="phase_cost"):
        comm_ratio(layer_models["alexnet"], comm, g, **dict(ASTRA_RATIO, phase_cost="exact"))
    with pytest.raises(InputError, match="phase_cost"):
        comm_ratio(layer_models["alexnet"], comm, g, phase_cost="astra_steps")
