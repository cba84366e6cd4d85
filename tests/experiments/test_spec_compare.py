"""Experiments as data and the "same ordering?" rule, on constructed inputs (no simulation)."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from cosim.errors import InputError, UnknownNameError
from experiments.compare import TIE_TOL, check_claim, figure_table, rank_order, row_verdict, seed_values, verdicts
from experiments.catalog_traces import resolve_traces
from experiments.spec import Claim, load_experiment, names, parse_experiment


def _fmt(v):
    return f"{v:g}"


def _exp(**figure):
    fig = {"name": "f", "grid": "g", "metric": "avg_jct_s"} | figure
    return {"name": "x", "paper": "P", "grids": {"g": {"policies": ["fifo", "sjf"], "small": {"traces": ["synth:philly:4"]}}},
            "figures": [fig]}


def test_catalog_lists_the_worked_example_and_rejects_unknown_names():
    assert "tiresias-vs-fifo" in names()
    exp = load_experiment("tiresias-vs-fifo")
    assert [f.name for f in exp.figures] == ["avg-jct", "p99-jct"]
    assert set(exp.sizes) == {"small", "full"} and all(exp.sizes.values())
    claim = exp.figure("avg-jct").claims[0]
    assert (claim.better, claim.worse, claim.factor) == ("tiresias", "fifo", 5.5)
    with pytest.raises(UnknownNameError, match="valid: " + ", ".join(sorted(names()))):
        load_experiment("no-such-paper")
    with pytest.raises(UnknownNameError, match="valid: avg-jct, p99-jct"):
        exp.figure("fig-99")
    with pytest.raises(UnknownNameError, match="valid: full, small"):
        exp.grid("workloads", "medium")


@pytest.mark.parametrize("figure, field", [
    ({"colour": "red"}, "figures[0].colour"),
    ({"grid": "nope"}, "figures[0].grid"),
    ({"better": "smaller"}, "figures[0].better"),
    ({"rows": "policy"}, "figures[0].rows"),
    ({"claims": [{"better": "sjf", "worse": "fifo", "factor": -2}]}, "figures[0].claims[0].factor"),
    ({"claims": [{"better": "sjf"}]}, "figures[0].claims[0].worse"),
    ({"values": {"row": {"fifo": "fast"}}}, "figures[0].values"),
])
def test_bad_experiment_files_name_the_field(figure, field):
    with pytest.raises(InputError, match=re.escape(f"field '{field}'")):
        parse_experiment(_exp(**figure), source="x.toml")


def test_shared_traces_fall_back_to_labelled_synthetic_specs(tmp_path):
    data = _exp()
    data["grids"]["g"]["small"]["traces"] = [
        {"shared": "t/w.csv", "name": "w1", "group": "philly", "fallback": "synth:philly-sia:40:2h"}]
    exp = parse_experiment(data)
    (fb,) = resolve_traces(exp, "g", "small", shared=tmp_path / "absent")
    assert fb.fallback and fb.spec == "synth:philly-sia:40:2h" and "synthetic fallback" in fb.name
    assert fb.group == "philly [synthetic]"
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "w.csv").write_text("name,time\n")
    (real,) = resolve_traces(exp, "g", "small", shared=tmp_path)
    assert not real.fallback and real.path == tmp_path / "t" / "w.csv" and real.name == "w1"
    data["grids"]["g"]["small"]["traces"] = [{"shared": "t/missing.csv"}]
    with pytest.raises(InputError, match="existing file"):
        resolve_traces(parse_experiment(data), "g", "small", shared=tmp_path)


def test_claim_rule_yes_tie_no_at_the_tolerance():
    c = Claim("tiresias", "fifo")
    just_over = 1 / (1 - 1.5 * TIE_TOL)  # fifo worse by 1.5 tol (relative to the larger value)
    assert check_claim("r", {"tiresias": 1.0, "fifo": just_over}, c, True, _fmt).result == "yes"
    assert check_claim("r", {"tiresias": 1.0, "fifo": 1.0 + TIE_TOL / 2}, c, True, _fmt).result == "tie"
    assert check_claim("r", {"tiresias": 1.0, "fifo": 0.9}, c, True, _fmt).result == "no"
    assert check_claim("r", {"tiresias": 1.0, "fifo": 0.9}, c, False, _fmt).result == "yes"  # higher is better
    # zero up to rounding residue on both sides is a tie, not a 30 % difference
    assert check_claim("r", {"tiresias": 6.83e-18, "fifo": 4.97e-18}, c, True, _fmt).result == "tie"
    assert check_claim("r", {"tiresias": 4.97e-18, "fifo": 0.0559}, c, True, _fmt).result == "yes"
    assert check_claim("r", {"fifo": 1.0}, c, True, _fmt).result == "n/a"
    v = check_claim("r", {"tiresias": 2.0, "fifo": 5.0}, c, True, _fmt)
    assert v.cosim == "tiresias 2 better than fifo 5 (2.50×)"
    assert row_verdict(["yes", "tie"]) == "tie" and row_verdict(["yes", "no"]) == "no"
    assert row_verdict(["yes", "n/a"]) == "yes" and row_verdict(["n/a"]) == "n/a"


def test_rank_order_marks_ties():
    assert rank_order({"fifo": 3.0, "sjf": 1.0, "tiresias": 1.01}, lower=True) == "sjf ≈ tiresias < fifo"
    # higher is better: the best first, joined by ">" (the larger value first reads the right way round)
    assert rank_order({"fifo": 3.0, "sjf": 1.0, "tiresias": 1.01}, lower=False) == "fifo > tiresias ≈ sjf"
    assert rank_order({"fifo": 3.0, "sjf": 1.0}, lower=False) == "fifo > sjf"
    assert rank_order({"fifo": math.nan}, lower=True) == "n/a"


def test_paper_numbers_become_pairwise_claims_and_table_means_over_seeds():
    exp = parse_experiment(_exp(rows="trace", values={"synth:philly:4": {"fifo": 2.0, "sjf": 1.0}}))
    fig = exp.figures[0]
    (c,) = fig.all_claims()
    assert (c.better, c.worse, c.factor, c.row) == ("sjf", "fifo", 2.0, "synth:philly:4")
    cells = pd.DataFrame({
        "grid": "g", "status": ["ok", "ok", "ok", "ok", "error"], "trace": "synth:philly:4", "group": "synth:philly:4",
        "policy": ["fifo", "fifo", "sjf", "sjf", "sjf"], "policy_label": ["fifo", "fifo", "sjf", "sjf", "sjf"],
        "seed": [0, 1, 0, 1, 2], "avg_jct_s": [3.0, 5.0, 2.0, 2.0, 0.0]})
    table = figure_table(cells, fig)
    assert table.set_index("policy")["value"].to_dict() == {"fifo": 4.0, "sjf": 2.0}  # the failed cell is left out
    assert table.set_index("policy")["n"].to_dict() == {"fifo": 2, "sjf": 2}
    assert table.set_index("policy")["paper"].to_dict() == {"fifo": 2.0, "sjf": 1.0}
    (v,) = verdicts(table, fig, _fmt)
    assert v.result == "yes" and "(2.00×)" in v.cosim


def _two_grids(**figure):
    """Two grids declared by variants (the shape of Aryl's catalog: runs with and without a load series)."""
    fig = {"name": "f", "grid": ["a", "b"], "metric": "avg_jct_s", "pairwise": False} | figure
    return {"name": "x", "paper": "P", "sizes": {"small": "s", "medium": "m", "full": "f"},
            "grids": {"a": {"variants": {"base": {"policy": "fifo"}}, "small": {"traces": ["synth:philly:4"]}},
                      "b": {"variants": {"fast": {"policy": "sjf", "params": {"x": 1}}},
                            "small": {"traces": ["synth:philly:4"]}}},
            "figures": [fig, {"name": "only-full", "grid": "a", "metric": "avg_jct_s", "sizes": ["full"]}]}


def test_figures_pool_grids_claims_select_rows_and_values_need_not_be_pairwise():
    exp = parse_experiment(_two_grids(values={"r1": {"base": 3.0, "fast": 1.0}}, claims=[
        {"better": "fast", "worse": "base"}, {"better": "fast@r2", "worse": "fast@r1"}]))
    fig = exp.figures[0]
    assert fig.all_grids() == ("a", "b") and fig.grid == "a"
    assert len(fig.all_claims()) == 2  # pairwise = false: the paper's values add no claim
    assert [f.name for f in exp.figures_at("small")] == ["f"] and len(exp.figures_at("full")) == 2
    assert exp.variants("b", "small") == {"fast": ("sjf", {"x": 1})}
    cells = pd.DataFrame({
        "grid": ["a", "b", "a", "b", "c"], "status": "ok", "group": ["r1", "r1", "r2", "r2", "r1"],
        "policy": ["fifo", "sjf", "fifo", "sjf", "sjf"], "policy_label": ["base", "fast", "base", "fast", "fast"],
        "avg_jct_s": [3.0, 2.0, 4.0, 5.0, 0.5]})
    table = figure_table(cells, fig)  # grid c is not the figure's
    assert dict(zip(zip(table["row"], table["policy"]), table["value"])) == {
        ("r1", "base"): 3.0, ("r1", "fast"): 2.0, ("r2", "base"): 4.0, ("r2", "fast"): 5.0}
    found = verdicts(table, fig, _fmt)
    assert [(v.row, v.result) for v in found] == [("r1", "yes"), ("r2", "no"), ("r2 vs r1", "no")]
    assert found[-1].cosim == "fast@r2 5 worse than fast@r1 2 (0.40×)"


def test_medium_only_where_declared_and_bad_variants_or_figure_keys_name_the_field():
    exp = parse_experiment(_two_grids())
    assert list(exp.sizes) == ["small", "medium", "full"]
    plain = parse_experiment(_exp())
    assert list(plain.sizes) == ["small", "full"]
    with pytest.raises(UnknownNameError, match="valid: full, small"):
        plain.grid("g", "medium")
    for figure, field in (({"pairwise": "no"}, "figures[0].pairwise"), ({"sizes": ["huge"]}, "figures[0].sizes"),
                          ({"grid": ["a", "zz"]}, "figures[0].grid")):
        with pytest.raises(InputError, match=re.escape(f"field '{field}'")):
            parse_experiment(_two_grids(**figure), source="x.toml")
    bad = _two_grids()
    bad["grids"]["a"]["variants"]["base"] = {"policy": "fifo", "colour": 1}
    with pytest.raises(InputError, match=re.escape("grids.a.variants (small).base.colour")):
        parse_experiment(bad).variants("a", "small")


def test_figure_policies_select_and_order_the_table():
    exp = parse_experiment(_two_grids(policies=["fast", "base"]))
    cells = pd.DataFrame({"grid": ["a", "b", "b"], "status": "ok", "group": "r", "policy": ["fifo", "sjf", "sjf"],
                          "policy_label": ["base", "fast", "other"], "avg_jct_s": [3.0, 2.0, 1.0]})
    assert figure_table(cells, exp.figures[0])["policy"].tolist() == ["fast", "base"]  # "other" is not shown
    with pytest.raises(InputError, match=re.escape("field 'figures[0].policies'")):
        parse_experiment(_two_grids(policies="fast"), source="x.toml")


def test_size_level_variant_params_reach_every_variant_of_that_policy():
    raw = _two_grids()
    raw["grids"]["b"]["variants"]["slow"] = {"policy": "sjf", "params": {"x": 2, "y": 0}}
    raw["grids"]["b"]["full"] = {"variant_params": {"sjf": {"y": 5, "z": True}}}
    exp = parse_experiment(raw)
    assert exp.variants("b", "full") == {"fast": ("sjf", {"y": 5, "z": True, "x": 1}),
                                         "slow": ("sjf", {"y": 0, "z": True, "x": 2})}  # the variant's own y wins
    assert exp.variants("b", "small") == {"fast": ("sjf", {"x": 1}), "slow": ("sjf", {"x": 2, "y": 0})}
    assert exp.variants("a", "full") == {"base": ("fifo", {})}
    raw["grids"]["b"]["full"] = {"variant_params": {"sjf": 3}}
    with pytest.raises(InputError, match=re.escape("grids.b.full.variant_params")):
        parse_experiment(raw, source="x.toml").variants("b", "full")


def test_verdict_levels_on_hand_made_cases():
    """reproduces / direction only / does not reproduce / not checked, by direction, margin and seeds."""
    from experiments.compare import (DIRECTION_ONLY, NOT_CHECKED, NOT_REPRODUCED, REPRODUCES, check_claim,
                                     margin_ratio)
    from experiments.spec import DEFAULT_MARGIN

    paper = Claim("a", "b", 1.74)  # the paper: a's JCT 1.74× lower than b's
    assert paper.checked_by == "margin" and paper.margin == DEFAULT_MARGIN == 2.0

    def v(a, b, claim=paper, seeds=None, lower=True):
        return check_claim("r", {"a": a, "b": b}, claim, lower, _fmt, seeds=seeds, size="small")

    assert margin_ratio(1.31, 1.74) == pytest.approx(0.31 / 0.74)
    assert v(1.0, 1.31).verdict == DIRECTION_ONLY  # 42 % of the paper's margin: outside 1/2-2
    assert v(1.0, 1.31).ratio == pytest.approx(0.31 / 0.74)
    assert v(1.0, 1.60).verdict == REPRODUCES  # 81 %
    assert v(1.0, 2.48).verdict == REPRODUCES  # exactly twice the margin: the band's edge is in
    assert v(1.0, 2.50).verdict == DIRECTION_ONLY  # beyond twice
    assert v(1.0, 9.3, Claim("a", "b", 1.53)).verdict == DIRECTION_ONLY  # 9.3× against 1.53×: far too much
    assert v(1.0, 1.01).verdict == NOT_REPRODUCED and v(1.0, 1.01).result == "tie"
    assert v(1.0, 0.5).verdict == NOT_REPRODUCED and v(1.0, 0.5).why == "reversed on the mean"
    assert v(3.0, 1.0, lower=False).verdict == DIRECTION_ONLY  # higher is better: a/b = 3, ratio 2.7
    assert v(1.6, 1.0, lower=False).verdict == REPRODUCES
    # a claim declared by its catalog entry: a wider band, or the direction only
    assert v(1.0, 1.31, Claim("a", "b", 1.74, margin=3.0)).verdict == REPRODUCES
    assert v(1.0, 9.3, Claim("a", "b", 1.74, check="direction")).verdict == REPRODUCES
    assert v(1.0, 9.3, Claim("a", "b")).verdict == REPRODUCES  # the paper gives no number: direction only
    # seeds: the mean holds but one seed reverses -> direction only, with the spread printed
    seeds = {"a": {0: 1.0, 1: 1.0, 2: 1.0}, "b": {0: 1.7, 1: 1.8, 2: 0.6}}
    s = v(1.0, 1.6, seeds=seeds)
    assert s.verdict == DIRECTION_ONLY and s.why == "tied or reversed on 1 of 3 seeds"
    assert s.seed_results == ("yes", "yes", "no") and s.spread() == "0.60-1.80× (3 seeds, 2 hold)"
    ok = {"a": {0: 1.0, 1: 1.0, 2: 1.0}, "b": {0: 1.7, 1: 1.8, 2: 1.5}}
    assert v(1.0, 1.6, seeds=ok).verdict == REPRODUCES
    # no cells for a side: not checked, with the catalog's reason at that size (else a generic one)
    why = Claim("a", "b", 1.74, not_at={"small": "the CI trace has no contention"})
    gone = check_claim("r", {"a": 1.0}, why, True, _fmt, size="small")
    assert (gone.verdict, gone.why, gone.result) == (NOT_CHECKED, "the CI trace has no contention", "n/a")
    assert check_claim("r", {"a": 1.0}, paper, True, _fmt, size="small").why == "no cells for b at this size"
    # cells at a size the catalog says cannot check the claim: the values are shown, no direction is judged
    shown = check_claim("r", {"a": 1.0, "b": 0.5}, why, True, _fmt, size="small")
    assert (shown.verdict, shown.why, shown.result) == (NOT_CHECKED, "the CI trace has no contention", "n/a")
    assert shown.cosim.startswith("a ") and "worse than b" in shown.cosim
    assert check_claim("r", {"a": 1.0, "b": 2.0}, why, True, _fmt, size="full").verdict == REPRODUCES


def test_claim_schema_defaults_and_bad_values():
    exp = parse_experiment(_exp(margin=1.5, not_at={"small": "no such trace"}, claims=[
        {"better": "sjf", "worse": "fifo", "factor": 2.0},
        {"better": "sjf", "worse": "fifo", "factor": 2.0, "margin": 3, "check": "direction", "not_at": {"full": "x"}}]))
    a, b = exp.figures[0].claims
    assert (a.margin, a.check, a.checked_by, dict(a.not_at)) == (1.5, "", "margin", {"small": "no such trace"})
    assert (b.margin, b.checked_by, dict(b.not_at)) == (3.0, "direction", {"small": "no such trace", "full": "x"})
    plain = parse_experiment(_exp(claims=[{"better": "sjf", "worse": "fifo"}])).figures[0].claims[0]
    assert plain.margin == 2.0 and plain.checked_by == "direction" and not plain.not_at
    for claim, field in (({"margin": 0.5}, "margin"), ({"check": "loose"}, "check"), ({"check": "margin"}, "check"),
                         ({"not_at": {"huge": "x"}}, "not_at")):
        bad = {"better": "sjf", "worse": "fifo"} | claim
        with pytest.raises(InputError, match=re.escape(f"field 'figures[0].claims[0].{field}'")):
            parse_experiment(_exp(claims=[bad]), source="x.toml")


def test_a_claim_naming_a_policy_checks_its_only_parameterised_cells():
    from experiments.compare import with_bare_names

    assert with_bare_names({"pollux(generations=4)": 2.0, "ares": 1.0}) == {
        "pollux": 2.0, "pollux(generations=4)": 2.0, "ares": 1.0}
    two = {"pollux(generations=4)": 2.0, "pollux(generations=8)": 3.0}
    assert with_bare_names(two) == two  # ambiguous: no bare name
    exp = parse_experiment(_exp(rows="trace", claims=[{"better": "sjf", "worse": "fifo", "factor": 2.0}]))
    fig = exp.figures[0]
    cells = pd.DataFrame({"grid": "g", "status": "ok", "trace": "t", "group": "t", "policy": ["fifo", "sjf"],
                          "policy_label": ["fifo", "sjf(x=1)"], "seed": 0, "avg_jct_s": [4.0, 2.0]})
    (v,) = verdicts(figure_table(cells, fig), fig, _fmt, seeds=seed_values(cells, fig))
    assert (v.result, v.factor, v.seed_factors) == ("yes", 2.0, (2.0,))


def test_claims_on_rows_a_size_does_not_run_are_listed_not_dropped():
    exp = parse_experiment(_exp(rows="trace", values={"big-trace": {"fifo": 2.0, "sjf": 1.0}},
                                claims=[{"better": "sjf", "worse": "fifo"}]))
    fig = exp.figures[0]
    cells = pd.DataFrame({"grid": "g", "status": "ok", "trace": "small-trace", "group": "small-trace", "seed": 0,
                          "policy": ["fifo", "sjf"], "policy_label": ["fifo", "sjf"], "avg_jct_s": [4.0, 2.0]})
    found = verdicts(figure_table(cells, fig), fig, _fmt, size="small")
    assert [(v.row, v.result, v.verdict) for v in found] == [
        ("small-trace", "yes", "reproduces"), ("big-trace", "n/a", "not checked")]
    assert found[1].why == "row big-trace is not run at this size"


def test_qualifiers_read_as_the_papers_words():
    """"about X": the ratio within [1/m, m]; "at least X": ratio ≥ 1/m, no upper bound; "at most X": the
    ratio ≤ m, and a tie (no loss) is within the bound; a reversal or a tie elsewhere does not reproduce."""
    from experiments.compare import DIRECTION_ONLY, NOT_REPRODUCED, REPRODUCES

    def v(a, b, q, factor=1.74, seeds=None, check=""):
        return check_claim("r", {"a": a, "b": b}, Claim("a", "b", factor, q, check=check), True, _fmt, seeds=seeds)

    # paper margin 0.74; cosim factors 1.31 (ratio 0.42), 1.60 (0.81), 4.0 (4.05)
    assert [v(1.0, 1.31, q).verdict for q in ("", "about", "at least", "at most")] == [
        DIRECTION_ONLY, DIRECTION_ONLY, DIRECTION_ONLY, REPRODUCES]
    assert [v(1.0, 1.60, q).verdict for q in ("", "about", "at least", "at most")] == [REPRODUCES] * 4
    assert [v(1.0, 4.0, q).verdict for q in ("", "about", "at least", "at most")] == [
        DIRECTION_ONLY, DIRECTION_ONLY, REPRODUCES, DIRECTION_ONLY]
    assert v(1.0, 4.0, "at most").why == "margin ratio 4.05, above 2"
    assert v(1.0, 1.31, "at least").why == "margin ratio 0.42, below 0.5"
    assert v(1.0, 4.0, "about").why == "margin ratio 4.05, outside 0.5-2"
    # "at most": a tie on the mean (and on the seeds) is inside the bound; a reversal is not
    tie = v(1.0, 1.01, "at most", 1.17, seeds={"a": {0: 1.0, 1: 1.0}, "b": {0: 1.0, 1: 1.02}})
    assert (tie.result, tie.verdict) == ("tie", REPRODUCES) and "within the paper's at most" in tie.why
    assert v(1.0, 0.9, "at most", 1.17).verdict == NOT_REPRODUCED
    rev = v(1.0, 1.01, "at most", 1.17, seeds={"a": {0: 1.0, 1: 1.0}, "b": {0: 1.0, 1: 0.8}})
    assert (rev.verdict, rev.why) == (DIRECTION_ONLY, "reversed on 1 of 2 seeds")
    # elsewhere a tie is no direction: "at least" and "about" do not reproduce on a tie
    assert v(1.0, 1.01, "at least").verdict == NOT_REPRODUCED and v(1.0, 1.01, "about").verdict == NOT_REPRODUCED
    # a claim checked by direction ignores the qualifier's band
    assert v(1.0, 9.0, "at most", check="direction").verdict == REPRODUCES


def test_an_unknown_qualifier_names_the_field():
    with pytest.raises(InputError, match=re.escape("field 'figures[0].claims[0].qualifier'")):
        parse_experiment(_exp(claims=[{"better": "sjf", "worse": "fifo", "factor": 2.0, "qualifier": "roughly"}]),
                         source="x.toml")


def _up_to(values, seeds=None, not_at=None, size="small"):
    """An "up to 2×" claim (paper margin 1.0) on the rows of `values` (row → (sjf, fifo) avg JCT)."""
    claim = {"better": "sjf", "worse": "fifo", "factor": 2.0, "qualifier": "up to"} | (
        {"not_at": not_at} if not_at else {})
    fig = parse_experiment(_exp(rows="trace", claims=[claim])).figures[0]
    rows = [(r, p, x) for r, (s, f) in values.items() for p, x in (("sjf", s), ("fifo", f))]
    table = pd.DataFrame({"row": [r for r, _, _ in rows], "policy": [p for _, p, _ in rows],
                          "value": [x for _, _, x in rows], "std": 0.0, "n": 1, "paper": math.nan})
    return verdicts(table, fig, _fmt, seeds=seeds, size=size)


def test_up_to_checks_the_direction_per_row_and_the_margin_once_on_the_largest_row():
    from experiments.compare import DIRECTION_ONLY, NOT_REPRODUCED, REPRODUCES

    # rows of 1.2×, 2.2× and 1.05×: each row needs the direction only; the margin (1.2 / 1.0) is the largest row's
    found = _up_to({"t1": (1.0, 1.2), "t2": (1.0, 2.2), "t3": (1.0, 1.05)})
    assert [(v.row, v.result, v.verdict) for v in found] == [
        ("t1", "yes", REPRODUCES), ("t2", "yes", REPRODUCES), ("t3", "yes", REPRODUCES),
        ("largest over rows (t2)", "yes", REPRODUCES)]
    assert found[0].claim.checked_by == "direction" and found[-1].claim.checked_by == "margin"
    assert found[0].why == "by direction; the margin is compared on the largest row (t2)" and found[-1].why == ""
    assert found[-1].cosim == "largest over rows: 2.20× on row t2, ratio 1.20"
    assert found[-1].ratio == pytest.approx(1.2) and found[-1].factor == pytest.approx(2.2)
    # the largest row far beyond the paper's largest: direction only on the claim line, the rows still hold
    far = _up_to({"t1": (1.0, 1.2), "t2": (1.0, 9.0)})
    assert [v.verdict for v in far] == [REPRODUCES, REPRODUCES, DIRECTION_ONLY]
    assert far[-1].why == "margin ratio 8.00, outside 0.5-2"
    # a row that ties does not reproduce on that row, and the claim line, whose margin is in the band on
    # the largest row, says the claim holds in direction only
    tie = _up_to({"t1": (1.0, 1.01), "t2": (1.0, 1.9)})
    assert [(v.result, v.verdict) for v in tie] == [("tie", NOT_REPRODUCED), ("yes", REPRODUCES),
                                                    ("yes", DIRECTION_ONLY)]
    assert tie[-1].why == "direction missed on 1 of 2 rows"
    # the largest row's seeds decide its line: one reversed seed there makes the claim direction only
    seeds = {("t1", "sjf"): {0: 1.0, 1: 1.0}, ("t1", "fifo"): {0: 1.9, 1: 0.8},
             ("t2", "sjf"): {0: 1.0, 1: 1.0}, ("t2", "fifo"): {0: 1.2, 1: 1.3}}
    mixed = _up_to({"t1": (1.0, 1.35), "t2": (1.0, 1.25)}, seeds=seeds)
    assert mixed[-1].row == "largest over rows (t1)" and mixed[-1].verdict == DIRECTION_ONLY
    # one row checked: that row is the largest, its own line judges the margin (no separate line)
    (one,) = _up_to({"t1": (1.0, 9.0)})
    assert (one.row, one.verdict, one.claim.checked_by) == ("t1", DIRECTION_ONLY, "margin")
    # rows the size cannot check are left out of the largest, and with none checked there is no claim line
    gone = _up_to({"t1": (1.0, 1.5), "t2": (1.0, 2.0)}, not_at={"small": "too few jobs"})
    assert [v.verdict for v in gone] == ["not checked", "not checked"]
    assert len(_up_to({"t1": (1.0, 1.5), "t2": (1.0, 2.0)}, not_at={"small": "x"}, size="full")) == 3


def test_an_up_to_claim_counts_once_by_its_largest_row_line():
    from experiments.compare import counted
    from experiments.reproduction_report import claims_summary

    found = _up_to({"t1": (1.0, 1.01), "t2": (1.0, 1.9), "t3": (1.0, 1.5)})
    lines = pd.DataFrame([{"figure": "f", "row": v.row, "better": v.claim.better, "worse": v.claim.worse,
                           "qualifier": v.claim.qualifier} for v in found])
    assert counted(lines).tolist() == [False, False, False, True]
    # the same claim in another report, or a plain claim beside it, counts on its own
    other = pd.concat([lines.assign(report="a"), lines.assign(report="b"),
                       pd.DataFrame([{"report": "a", "figure": "f", "row": "t1", "better": "x", "worse": "y",
                                      "qualifier": "about"}])], ignore_index=True)
    assert counted(other).tolist() == [False] * 3 + [True] + [False] * 3 + [True, True]
    assert claims_summary({"f": found}).startswith("1 of 1 claims checked: 0 reproduces, 1 direction only, ")
