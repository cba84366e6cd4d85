"""cosim.nsort's sorts give exactly numpy's answers (they replace np.sort / np.argsort(kind=
"mergesort") / np.unique inside kernels, so any difference would change simulation outputs)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cosim.nsort import argsort_stable, sorted_copy, unique_sorted

# few distinct values so that ties (where stability matters) are common; lengths across the
# insertion-run size (16) and several merge widths
INTS = st.lists(st.integers(-5, 5), max_size=80)
FLOATS = st.lists(st.sampled_from([-2.5, -0.0, 0.0, 1.0, 3.25, np.inf, -np.inf, np.nan]), max_size=80)


@settings(max_examples=150, deadline=None)
@given(INTS)
def test_int_sorts_equal_numpy(values):
    for dtype in (np.int64, np.int32):
        a = np.array(values, dtype)
        np.testing.assert_array_equal(argsort_stable(a), np.argsort(a, kind="mergesort"))
        s = sorted_copy(a)
        assert s.dtype == a.dtype
        np.testing.assert_array_equal(s, np.sort(a))
        np.testing.assert_array_equal(unique_sorted(a), np.unique(a))


@settings(max_examples=150, deadline=None)
@given(FLOATS)
def test_float_sorts_equal_numpy_nan_last(values):
    a = np.array(values, np.float64)
    np.testing.assert_array_equal(argsort_stable(a), np.argsort(a, kind="mergesort"))
    np.testing.assert_array_equal(sorted_copy(a), np.sort(a))  # NaN last, as numpy
    finite = a[~np.isnan(a)]
    np.testing.assert_array_equal(unique_sorted(finite), np.unique(finite))


def test_readonly_input_is_not_touched():
    a = np.array([3, 1, 2, 1], np.int64)
    a.setflags(write=False)
    assert list(argsort_stable(a)) == [1, 3, 2, 0]
    assert list(sorted_copy(a)) == [1, 1, 2, 3]
    assert list(a) == [3, 1, 2, 1]
