"""A claim's rows that the paper itself excepts (`except_rows`): checked the other way round, or shown
unjudged, and a row name no size has is a one-line error naming the file and the claim."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from cosim.errors import InputError
from experiments.compare import (DIRECTION_ONLY, LARGEST, NOT_CHECKED, NOT_REPRODUCED, REPRODUCES, counted,
                                 verdicts)
from experiments.reproduction_report import claims_summary
from experiments.spec import load_experiment, names, parse_experiment

TRACES = [{"synth": "synth:philly:4", "name": n} for n in ("t1", "t2", "t3")]


def _exp(claim, rows="trace", grids=None):
    grids = grids or {"g": {"policies": ["fifo", "sjf"], "small": {"traces": TRACES}}}
    return {"name": "x", "paper": "P", "grids": grids,
            "figures": [{"name": "f", "grid": "g", "metric": "avg_jct_s", "rows": rows, "claims": [claim]}]}


def _found(claim, values, size="small"):
    """The claim checked on the rows of `values` (row → (sjf, fifo) average JCT, lower is better)."""
    fig = parse_experiment(_exp(claim)).figures[0]
    rows = [(r, p, x) for r, (s, f) in values.items() for p, x in (("sjf", s), ("fifo", f))]
    table = pd.DataFrame({"row": [r for r, _, _ in rows], "policy": [p for _, p, _ in rows],
                          "value": [x for _, _, x in rows], "std": 0.0, "n": 1, "paper": math.nan})
    return verdicts(table, fig, lambda v: f"{v:g}", size=size)


UP_TO = {"better": "sjf", "worse": "fifo", "factor": 2.0, "qualifier": "up to"}
LINE = "the paper: FIFO wins on t2"


def test_an_excepted_row_is_checked_the_other_way_round_as_a_claim_of_its_own():
    values = {"t1": (1.0, 1.5), "t2": (2.0, 1.0), "t3": (1.0, 1.8)}  # FIFO wins on t2, as the paper says
    plain = _found(UP_TO, values)  # without the exception, t2 reverses the claim
    assert [(v.row, v.verdict) for v in plain] == [
        ("t1", REPRODUCES), ("t2", NOT_REPRODUCED), ("t3", REPRODUCES), (f"{LARGEST} (t3)", DIRECTION_ONLY)]
    found = _found(UP_TO | {"except_rows": {"t2": LINE}}, values)
    got = [(v.row, v.claim.better, v.claim.worse, v.result, v.verdict) for v in found]
    assert got == [("t1", "sjf", "fifo", "yes", REPRODUCES), ("t2", "fifo", "sjf", "yes", REPRODUCES),
                   ("t3", "sjf", "fifo", "yes", REPRODUCES), (f"{LARGEST} (t3)", "sjf", "fifo", "yes", REPRODUCES)]
    rev = found[1]
    assert rev.claim.checked_by == "direction" and rev.claim.factor is None and rev.claim.row == "t2"
    assert rev.claim.note == f"the paper's exception to sjf better than fifo (up to 2×): {LINE}"
    assert rev.factor == pytest.approx(2.0) and math.isnan(rev.ratio)
    # the reversed line counts as a claim of its own beside the up-to claim's largest-row line
    lines = pd.DataFrame([{"figure": "f", "row": v.row, "better": v.claim.better, "worse": v.claim.worse,
                           "qualifier": v.claim.qualifier} for v in found])
    assert counted(lines).tolist() == [False, True, False, True]
    assert claims_summary({"f": found}).startswith("2 of 2 claims checked: 2 reproduces, 0 direction only, ")


def test_the_largest_row_is_taken_over_the_rows_that_are_not_excepted():
    # t2's 9× is on the paper's exception row: it neither sets the largest nor holds the paper's reverse
    found = _found(UP_TO | {"except_rows": {"t2": LINE}}, {"t1": (1.0, 1.5), "t2": (1.0, 9.0), "t3": (1.0, 1.8)})
    assert found[-1].row == f"{LARGEST} (t3)" and found[-1].factor == pytest.approx(1.8)
    rev = found[1]  # cosim's SJF wins where the paper says FIFO does: that exception does not reproduce
    assert (rev.row, rev.claim.better, rev.result, rev.verdict) == ("t2", "fifo", "no", NOT_REPRODUCED)


def test_skip_shows_the_row_unjudged_with_the_papers_line():
    found = _found(UP_TO | {"except_rows": {"t2": LINE}, "except_as": "skip"},
                   {"t1": (1.0, 1.5), "t2": (2.0, 1.0), "t3": (1.0, 1.8)})
    assert [(v.row, v.claim.better, v.result, v.verdict) for v in found] == [
        ("t1", "sjf", "yes", REPRODUCES), ("t2", "sjf", "n/a", NOT_CHECKED), ("t3", "sjf", "yes", REPRODUCES),
        (f"{LARGEST} (t3)", "sjf", "yes", REPRODUCES)]
    assert found[1].why == f"the paper's exception: {LINE}" and "(0.50×)" in found[1].cosim
    assert parse_experiment(_exp(UP_TO | {"except_rows": {"t2": LINE}, "except_as": "skip"})).figures[0].all_claims() \
        == parse_experiment(_exp(UP_TO | {"except_rows": {"t2": LINE}, "except_as": "skip"})).figures[0].claims


def test_a_size_whose_every_row_is_excepted_lists_the_claim_once_unchecked():
    found = _found(UP_TO | {"except_rows": {"t2": LINE}}, {"t2": (2.0, 1.0)})
    assert [(v.row, v.claim.better, v.verdict) for v in found] == [("t2", "sjf", NOT_CHECKED),
                                                                  ("t2", "fifo", REPRODUCES)]
    assert found[0].why == f"the paper excepts row t2: {LINE}" and found[0].result == "n/a"
    # a size the claim's not_at names cannot check the exception either (the same pair, the same metric)
    small = _found(UP_TO | {"except_rows": {"t2": LINE}, "not_at": {"small": "too few jobs"}}, {"t2": (2.0, 1.0)})
    assert [(v.claim.better, v.verdict, v.why) for v in small] == [("sjf", NOT_CHECKED, "too few jobs"),
                                                                  ("fifo", NOT_CHECKED, "too few jobs")]
    # a size without the excepted row: the reversed claim is listed as not run there
    other = _found(UP_TO | {"except_rows": {"t2": LINE}}, {"t1": (1.0, 1.5)})
    assert [(v.row, v.claim.better, v.verdict, v.why) for v in other] == [
        ("t1", "sjf", REPRODUCES, ""), ("t2", "fifo", NOT_CHECKED, "row t2 is not run at this size")]


@pytest.mark.parametrize("claim, field, needle", [
    (UP_TO | {"except_rows": {"t9": LINE}}, "except_rows", "got 't9': claim sjf better than fifo"),
    (UP_TO | {"except_rows": {"t2": ""}}, "except_rows", "the paper's line"),
    (UP_TO | {"except_rows": ["t2"]}, "except_rows", "the paper's line"),
    (UP_TO | {"except_rows": {"t2": LINE}, "except_as": "flip"}, "except_as", "reverse or skip"),
    ({"better": "sjf@t1", "worse": "fifo@t1", "except_rows": {"t2": LINE}}, "except_rows", "not x@row"),
])
def test_bad_exceptions_are_one_line_errors_naming_the_file_and_the_claim(claim, field, needle):
    with pytest.raises(InputError) as err:
        parse_experiment(_exp(claim), source="cat.toml")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"cat.toml: field 'figures[0].claims[0].{field}'") and needle in msg


def test_rows_are_known_from_every_size_of_the_figures_grids():
    nodes = {"g": {"policies": ["fifo", "sjf"], "clusters": [{"preset": "dally-3tier", "nodes": [16, 32]}],
                   "traces": ["synth:philly:4"], "full": {"clusters": [{"preset": "dally-3tier", "nodes": [64]}]}}}
    ok = parse_experiment(_exp(UP_TO | {"except_rows": {"64": LINE}}, "cluster_nodes", nodes))
    assert dict(ok.figures[0].claims[0].except_rows) == {"64": LINE}
    with pytest.raises(InputError, match=re.escape("expected a row of figure 'f' at some size (16, 32, 64)")):
        parse_experiment(_exp(UP_TO | {"except_rows": {"128": LINE}}, "cluster_nodes", nodes), source="cat.toml")
    groups = {"g": {"policies": ["fifo", "sjf"], "traces": [{"synth": "synth:philly:4", "name": "a", "group": "p"}]}}
    parse_experiment(_exp(UP_TO | {"except_rows": {"p": LINE}}, "group", groups))
    with pytest.raises(InputError, match="got 'a'"):
        parse_experiment(_exp(UP_TO | {"except_rows": {"a": LINE}}, "group", groups))


def test_the_catalogs_exceptions_are_the_papers_and_name_real_rows():
    """Every catalog loads (an unknown excepted row would stop it), and Dally's three exceptions are
    checked reversed on the paper's rack counts (8 nodes per rack)."""
    excepted = {(n, f.name, c.better, c.worse, r, c.except_as) for n in names() for f in load_experiment(n).figures
                for c in f.claims for r in c.except_rows}
    assert excepted == {("dally", "fig7-makespan", "tiresias-dally", "dally-nowait", "16", "reverse"),
                        ("dally", "fig13a-jct-batch", "dally", "gandiva", "16", "reverse"),
                        ("dally", "fig13b-jct-poisson", "dally", "tiresias-dally", "32", "reverse")}
