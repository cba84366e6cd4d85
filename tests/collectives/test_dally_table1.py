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
with the authors' ASTRA-sim loop (`ASTRA_LOOP`), pinned in `test_astra_inputs_table`.
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
    """The preset as shipped (multidim over FC(4) x Ring(2) / Ring / Switch) with the authors'
    loop and per-dimension pipeline (`ASTRA_RATIO`): network `4/4` within 5 % of Table I for
    MobileNetV3, ResNet-18, BERT, AlexNet (19,566 / 2,740 / 697 / 101 vs 19,592 / 2,749 / 715 /
    100) and VGG-11 within 1.5x (7.7 vs 7); machine `8` within 3 points for VGG-11, AlexNet,
    ResNet-18. Known misses pinned: machine MobileNetV3 (24 vs 42), BERT (2.2 vs 8), ResNet-50
    (≈0 vs 12 at machine and rack, 2.6 vs 38 at network)."""
    from collectives.layers import ASTRA_RATIO

    topo = netmodel.build_topology(netmodel.load_cluster("dally-3tier"))
    comm = CommModel(topo)
    assert comm.params.algorithm == "multidim"
    r = {t: {n: 100 * comm_ratio(layer_models[n], comm, placement_gpus(topo, s), **ASTRA_RATIO) for n in ORDER}
         for t, s in (("machine", "8"), ("rack", "4,4"), ("network", "4/4"))}
    for name, p in {"vgg11": 1, "alexnet": 2, "resnet18": 7}.items():
        assert abs(r["machine"][name] - p) <= 3, (name, r["machine"][name])
    for name, p in {"mobilenet_v3": 19592, "resnet18": 2749, "BERT-large": 715, "alexnet": 100}.items():
        assert r["network"][name] == pytest.approx(p, rel=0.05), name
    assert r["network"]["vgg11"] == pytest.approx(7, rel=0.5)
    assert r["rack"]["mobilenet_v3"] == pytest.approx(940, rel=0.05)
    assert 15 < r["machine"]["mobilenet_v3"] < 35 and r["machine"]["resnet50"] < 1 and r["network"]["resnet50"] < 5
    for name in ORDER:
        assert r["machine"][name] <= r["rack"][name] <= r["network"][name]
    # the pipeline matters: one collective at a time gives more exposed time
    serial = 100 * comm_ratio(layer_models["BERT-large"], comm, placement_gpus(topo, "4/4"), **ASTRA_LOOP)
    assert serial > r["network"]["BERT-large"]


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
    compute, exposed = iteration_comm(m, np.array([1.0, 1.0]), clock_hz=1.0, compute_scale=1.0, **ASTRA_LOOP)
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
