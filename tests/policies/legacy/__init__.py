"""Frozen copies of the baseline policies before the incremental-cost rewrite (issue 4).

Only for `test_equivalence.py`: the optimised policies must return exactly the decisions of
these straightforward versions. Not registered; do not use elsewhere.
"""
