"""ONES' convergence model (simcore.convergence): gradual batch growth keeps the epochs to target,
each doubling past 2x at once costs φ of them; the synthetic curve reaches the target
exactly at E; policies see the log only up to the epochs a job has finished."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from simcore.convergence import PHI, ConvergenceLog, ConvergenceModel, Curve, epochs_to_target_of, total_epochs

growth = st.lists(st.floats(0.25, 2.0), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(e=st.floats(1, 200), base=st.integers(1, 512), factors=growth)
def test_gradual_growth_from_the_base_batch_keeps_epochs(e, base, factors):
    batches = base * np.cumprod([1.0] + factors)
    assert ConvergenceModel().doublings(base, batches) == 0.0
    assert ConvergenceModel().epochs_to_target(e, base, batches) == e


@settings(max_examples=100, deadline=None)
@given(e=st.floats(1, 200), jump=st.floats(2.01, 64.0))
def test_a_sudden_jump_costs_phi_per_excess_doubling(e, jump):
    m = ConvergenceModel()
    got = m.epochs_to_target(e, 256, [256.0, 256.0 * jump, 256.0 * jump])
    assert got == pytest.approx(e * (1.0 + PHI * np.log2(jump / 2.0)))
    assert got > e
    assert ConvergenceModel(phi=0.0).epochs_to_target(e, 256, [256.0 * jump]) == e


def test_paper_examples_and_totals():
    m = ConvergenceModel()
    # Fig. 14: 256 → 1024 → 4096 every 30 epochs is two 4x jumps, one excess doubling each
    assert m.doublings(256, [256, 1024, 4096]) == pytest.approx(2.0)
    # Fig. 13: 256 → 4096 at once (16x): log2(8) = 3 excess doublings
    assert m.epochs_to_target(20, 256, [256, 4096]) == pytest.approx(20 * (1 + 3 * PHI))
    # a job started directly at 16 x its base batch (the baselines' ImageNet jobs) vs ONES' start
    assert m.intrinsic(30, 32, 512) == pytest.approx(30 / (1 + 3 * PHI))
    assert m.intrinsic(30, 32, 64) == 30.0  # 2x: no excess
    assert total_epochs(20, 10) == 29.0  # 10 consecutive epochs at the target, the first is epoch 20
    assert epochs_to_target_of(29, 10) == 20.0
    with pytest.raises(InputError):
        ConvergenceModel(phi=-1.0)


@settings(max_examples=100, deadline=None)
@given(target=st.floats(0.2, 0.95), e=st.integers(1, 80), classes=st.sampled_from([2.0, 10.0, 20.0]))
def test_curve_reaches_target_exactly_at_e(target, e, classes):
    c = Curve(target, float(e), float(np.log(classes)), classes)
    k = np.arange(1, e + 15, dtype=np.float64)
    acc = c.accuracy(k)
    assert acc[e - 1] == pytest.approx(target)
    assert (acc[: e - 1] < target).all() and (acc[e - 1:] >= target - 1e-12).all()
    assert (np.diff(acc) >= 0).all()  # non-decreasing (saturates at a∞ for small E)
    loss = c.loss(k)
    assert loss[-1] < c.initial_loss


def test_log_reveals_only_finished_epochs():
    attrs = {"target_acc": np.array([0.7, np.nan]), "patience": np.array([10, 10]),
             "task": np.array(["cifar", "x"], object), "epoch_size": np.array([20000.0, 1.0])}
    lg = ConvergenceLog(np.array([30.0, 5.0]), attrs, np.array(["a", "b"], object))
    assert lg.log(0, 0).loss.size == 0
    out = lg.log(0, 7)
    assert out.loss.size == 7 and out.accuracy.size == 7 and (out.accuracy < 0.7).all()
    assert lg.log(0, 21).accuracy[20] == pytest.approx(0.7)  # E = 30 - 10 + 1 = 21
    assert lg.log(1, 3) is None  # no target accuracy: no curve


def test_log_follows_the_curve_faster_under_a_scale():
    attrs = {"target_acc": np.array([0.7]), "patience": np.array([10]), "task": np.array(["cifar"], object),
             "epoch_size": np.array([20000.0])}
    lg = ConvergenceLog(np.array([30.0]), attrs, np.array(["a"], object))
    assert lg.log(0, 21).accuracy[20] == pytest.approx(0.7)
    assert lg.log(0, 14, scale=1.5).accuracy[13] == pytest.approx(0.7)  # 14 epochs x 1.5 = reference epoch 21
