"""ONES' convergence model (simcore.convergence): gradual batch growth keeps the epochs to target,
a jump past 2x costs epochs only with the named penalty; the synthetic curve reaches the target
exactly at E; policies see the log only up to the epochs a job has finished."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.errors import InputError
from simcore.convergence import ConvergenceLog, ConvergenceModel, Curve, epochs_to_target_of, total_epochs

growth = st.lists(st.floats(0.25, 2.0), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(e=st.floats(1, 200), start=st.integers(1, 4096), factors=growth, penalty=st.sampled_from(["none", "log2"]))
def test_gradual_growth_keeps_epochs(e, start, factors, penalty):
    batches = start * np.cumprod([1.0] + factors)
    assert ConvergenceModel(jump_penalty=penalty).epochs_to_target(e, batches) == pytest.approx(e)


@settings(max_examples=100, deadline=None)
@given(e=st.floats(1, 200), jump=st.floats(2.01, 64.0))
def test_a_sudden_jump_costs_epochs_only_with_the_penalty(e, jump):
    batches = [256.0, 256.0 * jump, 256.0 * jump]
    assert ConvergenceModel().epochs_to_target(e, batches) == e  # off by default
    m = ConvergenceModel(jump_penalty="log2", penalty_epochs=3.0)
    assert m.epochs_to_target(e, batches) == pytest.approx(e + 3.0 * np.log2(jump / 2.0))
    assert m.epochs_to_target(e, batches) > e


def test_paper_examples_and_totals():
    m = ConvergenceModel(jump_penalty="log2", penalty_epochs=3.0)
    # Fig. 14: 256 → 1024 → 4096 every 30 epochs is two 4x jumps: 3 epochs each past the 2x limit
    hist = [256] * 30 + [1024] * 30 + [4096] * 30
    assert m.epochs_to_target(90, hist) == pytest.approx(96.0)
    # Fig. 13: 256 → 4096 at once (16x): 3 × log2(8) = 9 extra epochs
    assert m.epochs_to_target(90, [256] * 30 + [4096] * 60) == pytest.approx(99.0)
    assert total_epochs(20, 10) == 29.0  # 10 consecutive epochs at the target, the first is epoch 20
    assert epochs_to_target_of(29, 10) == 20.0
    with pytest.raises(InputError):
        ConvergenceModel(jump_penalty="cubic")


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
