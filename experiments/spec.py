"""An experiment as data: a TOML file in `experiments/catalog/` → frozen dataclasses.

An experiment reproduces a paper's figures. Each figure names a *grid* (a sweep: traces ×
clusters × contention/calibration (the perf backends) × seeds × policies with parameters), a
metric of the run summary, which way is better, the axis its table rows follow, and what the
paper reports: pairwise *claims* ("tiresias beats fifo, by up to 5.5×") and, where the paper
prints numbers, `values` per row and policy (turned into claims between every pair). Grids
take per-size overrides (`[grids.<g>.small]`, `[grids.<g>.medium]`, `[grids.<g>.full]`): `small`
runs in CI, `full` is the paper's size, `medium` (declared only by experiments that have one) in
between.

A grid may name its policy points as *variants* (`[grids.g.variants] name = { policy, params }`)
instead of a `policies` product: each variant is one cell per trace/seed, and tables and claims
name it; `[grids.g.<size>.variants]` adds variants or replaces them by name at that size, and
`[grids.g.<size>] variant_params = { POLICY = { key = value } }` gives every variant of POLICY
those parameters at that size (a variant's own parameters win; e.g. Aryl's paper-size rounds at
the tick only). A figure may pool several grids (`grid = ["a", "b"]`: e.g. runs with and without an
inference load series side by side) and its claims may name a row (`better = "x@row"`: compared
across rows, checked once). `pairwise = false` shows the paper's `values` beside cosim's
without turning every pair into a claim (tables of ten variants). `sizes = [...]` limits a
figure to some sizes. `hooks` names a module with optional `cell_metrics(cells, out, exp, size,
traces)` (extra per-cell columns from the cell folders, with the experiment's `[settings]`) and
`extra_sections(exp, size, cells, out)` (extra REPORT.md tables). `policies = [...]` limits a
figure's table to those policies (labels or variant names), in that order.

Traces are sweep trace specs (a synth spec or a file), or tables naming a file under
../shared/data (`shared`) with a `fallback` synth spec that runs, labelled as such, when the
shared data is absent (`experiments.catalog_traces` resolves them). Shape::

    name = "tiresias-vs-fifo"   title = "…"   paper = "…"   url = "…"   notes = "…"   hooks = "module"
    [sizes]                      small = "what small runs"   full = "what full runs"   (medium = "…")
    [settings]                   parameters of the hooks (free-form)
    [grids.g]                    clusters = […]  policies = […]  seeds = […]  contention = […]
                                 perf = ["measured"]  progress = ["goodput"]  costs = ["pollux-sim"]
                                 (any sweep key: `experiments.sweep.config`)
    [grids.g.small]              traces = [{ shared = "traces/…csv", name = "philly-1", group = "philly",
                                             fallback = "synth:philly-sia:160:8h" }]
    [[figures]]                  name  title  grid  metric  better = "lower"|"higher"  rows  source
                                 claims = [{ better = "a", worse = "b", factor = 5.5, qualifier = "up to", note,
                                             check = "margin"|"direction", margin = 2.0,
                                             not_at = { small = "why" },
                                             except_rows = { ROW = "the paper's line" }, except_as = "reverse" }]
                                 values = { philly = { a = 1.0, b = 2.0 } }
                                 margin = 2.0  not_at = { small = "why" }   (defaults for its claims)

How far a claim must hold (`experiments.compare`), all optional and backward compatible: `check`
is `margin` (the default where the paper gives a `factor`: the verdict `reproduces` needs cosim's
margin, factor − 1, within `margin`× of the paper's either way) or `direction` (the default
without a factor: the direction on the mean and on every seed is the whole claim); `margin`
defaults to `DEFAULT_MARGIN` (2: half to twice the paper's margin), per claim or per figure;
`not_at = { SIZE = "why" }` says why a size cannot check the claim (its REPORT.md row and
claims.csv say so instead of "no cells"). `qualifier` (`QUALIFIERS`) is how the paper words its
factor, and sets the band: "about" (or none) half to twice, "at least" no upper bound, "at most"
no lower bound (a tie is within it), "up to" the paper's largest over the figure's rows (compared
once, on cosim's largest row; each row needs the direction). `except_rows` names the rows where the paper
says the claim does not hold: `except_as = "reverse"` (default) checks each there the other way round, by
direction; `skip` shows it unjudged. A row that no size of the figure's grids has is an error.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from cosim.errors import InputError, UnknownNameError
from experiments.catalog_traces import trace_name, trace_table

SIZES = ("small", "medium", "full")
#: sizes every experiment has (`medium` only where the experiment declares it)
REQUIRED_SIZES = ("small", "full")
EXPERIMENT_KEYS = ("name", "title", "paper", "url", "notes", "sizes", "grids", "figures", "hooks", "settings")
FIGURE_KEYS = ("name", "title", "grid", "metric", "better", "rows", "source", "claims", "values", "pairwise",
               "sizes", "policies", "margin", "not_at")
VARIANT_KEYS = ("policy", "params")
#: a claim's `better`/`worse` may name a row: `variant@row` (the claim compares across rows)
ROW_SEP = "@"
CLAIM_KEYS = ("better", "worse", "factor", "qualifier", "note", "check", "margin", "not_at", "except_rows", "except_as")
#: how a claim is judged: `margin` (direction and the paper's factor within `margin`), `direction`
CHECKS = ("margin", "direction")
#: what the paper's factor is (`experiments.compare` reads each as the paper's words): "" and "about"
#: (cosim's margin within [1/margin, margin] of the paper's), "at least" (ratio ≥ 1/margin), "at most"
#: (a bound on a loss: ratio ≤ margin, a tie within it), "up to" (the paper's largest over the rows:
#: each row checked for the direction, the margin once on cosim's largest row)
UP_TO = "up to"
QUALIFIERS = ("", "about", "at least", "at most", UP_TO)
#: how a claim treats the rows the paper names as its exceptions (`except_rows`): `reverse` checks each such
#: row in the other direction (the paper says the worse side wins there), by direction; `skip` leaves it out
EXCEPT_AS = ("reverse", "skip")
#: a claim's default tolerance on the margin: cosim's margin within [paper / 2, paper × 2] reproduces
DEFAULT_MARGIN = 2.0
#: coordinates a figure's rows may follow (`group`: the trace's group, else its label)
ROW_AXES = ("group", "trace", "cluster", "cluster_nodes", "contention", "calibration")
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Claim:
    """The paper says `better` beats `worse` on the figure's metric (by `factor`, when it says how much)."""

    better: str
    worse: str
    factor: float | None = None  # the paper's ratio, worse/better for lower-is-better metrics
    qualifier: str = ""  # one of QUALIFIERS: "about" (or ""), "at least", "at most", "up to"
    note: str = ""
    row: str | None = None  # None: the claim holds on every row
    check: str = ""  # "margin" or "direction"; empty: margin when the paper gives a factor, else direction
    margin: float = DEFAULT_MARGIN  # cosim's margin within [paper / margin, paper × margin] reproduces
    not_at: Mapping[str, str] = field(default_factory=dict)  # size → why the claim cannot be checked there
    except_rows: Mapping[str, str] = field(default_factory=dict)  # row → the paper's line excepting it
    except_as: str = "reverse"  # one of EXCEPT_AS: what an excepted row is checked for

    def exceptions(self) -> tuple["Claim", ...]:
        """The paper's exceptions as claims of their own: with `except_as = "reverse"`, one per excepted
        row, `worse` better than `better` on that row, by direction, the paper's line as its note (a size
        the claim's `not_at` names cannot check its exceptions either: the same pair on the same metric)."""
        if self.except_as != "reverse":
            return ()
        return tuple(Claim(self.worse, self.better, note=f"the paper's exception to {self.paper_text()}: {why}",
                           row=row, not_at=self.not_at) for row, why in self.except_rows.items())

    @property
    def checked_by(self) -> str:
        """`margin` or `direction`: what "reproduces" asks of this claim."""
        if self.factor is None:
            return "direction"
        return self.check or "margin"

    @property
    def across_rows(self) -> bool:
        """The claim names rows (`x@row`): checked once, on the rows it names."""
        return ROW_SEP in self.better or ROW_SEP in self.worse

    def paper_text(self) -> str:
        txt = f"{self.better} better than {self.worse}"
        if self.factor is not None:
            txt += f" ({(self.qualifier + ' ') if self.qualifier else ''}{self.factor:g}×)"
        else:
            txt += " (direction only)"
        return txt


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    grid: str
    metric: str
    better: str  # "lower" or "higher"
    rows: str
    source: str
    claims: tuple[Claim, ...] = ()
    values: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # row → policy → paper number
    pairwise: bool = True  # every ordered pair of `values` on a row is a claim
    grids: tuple[str, ...] = ()  # all the grids the figure pools (`grid` is the first)
    sizes: tuple[str, ...] = ()  # the sizes that show the figure (empty: all)
    policies: tuple[str, ...] = ()  # the policies (labels or variants) the table shows, in order (empty: all)
    margin: float = DEFAULT_MARGIN  # the default of the figure's claims (and of its `values` pairs)
    not_at: Mapping[str, str] = field(default_factory=dict)  # size → why the figure's claims cannot be checked

    def all_grids(self) -> tuple[str, ...]:
        return self.grids or (self.grid,)

    def all_claims(self) -> tuple[Claim, ...]:
        """The stated claims plus one per ordered pair of the paper's numbers on each row."""
        out = [x for c in self.claims for x in (c, *c.exceptions())]
        if not self.pairwise:
            return tuple(out)
        lower = self.better == "lower"
        for row, vals in self.values.items():
            items = sorted(vals.items(), key=lambda kv: kv[1] if lower else -kv[1])
            for i, (a, va) in enumerate(items):
                for b, vb in items[i + 1:]:
                    if va != vb:
                        f = (vb / va if lower else va / vb) if va and vb else None
                        out.append(Claim(a, b, f, "", "from the paper's numbers", row, margin=self.margin,
                                         not_at=self.not_at))
        return tuple(out)


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    paper: str
    url: str
    notes: str
    sizes: Mapping[str, str]
    grids: Mapping[str, Mapping[str, Any]]  # raw grid tables (sweep keys + per-size overrides)
    figures: tuple[Figure, ...]
    source: Path | None = None
    hooks: str = ""  # module with cell_metrics / extra_sections (see the module docstring)
    settings: Mapping[str, Any] = field(default_factory=dict)  # the hooks' parameters

    def figure(self, name: str) -> Figure:
        for f in self.figures:
            if f.name == name:
                return f
        raise UnknownNameError("figure", name, [f.name for f in self.figures])

    def grid(self, name: str, size: str) -> dict[str, Any]:
        """The grid's sweep table at `size` (the size's overrides applied)."""
        if size not in self.sizes:
            raise UnknownNameError("size", size, list(self.sizes))
        raw = self.grids[name]
        out = {k: v for k, v in raw.items() if k not in SIZES}
        out.update(raw.get(size, {}))
        return out

    def figures_at(self, size: str) -> tuple[Figure, ...]:
        """The figures shown at `size`."""
        return tuple(f for f in self.figures if not f.sizes or size in f.sizes)

    def variants(self, name: str, size: str) -> dict[str, tuple[str, dict[str, Any]]]:
        """The grid's named variants at `size`: name → (policy, params); empty for a `policies` grid."""
        where = f"grids.{name}.variants ({size})"
        raw = {}
        for part in (self.grids[name].get("variants", {}), self.grids[name].get(size, {}).get("variants", {})):
            if not isinstance(part, dict):
                raise InputError.at(self.source, field=where, expected="a table name = { policy, params }", got=part)
            raw.update(part)  # a size's variants add to the grid's, or replace them by name
        out = {}
        for v, d in raw.items():
            if not isinstance(d, dict):
                raise InputError.at(self.source, field=f"{where}.{v}", expected="a table { policy, params }", got=d)
            _unknown(d, VARIANT_KEYS, self.source, f"{where}.{v}.")
            params = d.get("params", {})
            if not isinstance(params, dict):
                raise InputError.at(self.source, field=f"{where}.{v}.params", expected="a table of parameters",
                                    got=params)
            out[str(v)] = (_str(d, "policy", self.source, f"{where}.{v}."), dict(params))
        extra = self.grids[name].get(size, {}).get("variant_params", {})
        if not isinstance(extra, dict) or not all(isinstance(x, dict) for x in extra.values()):
            raise InputError.at(self.source, field=f"grids.{name}.{size}.variant_params",
                                expected="a table POLICY = { key = value }", got=extra)
        return {v: (pol, {**extra.get(pol, {}), **prm}) for v, (pol, prm) in out.items()}


# ---- parsing -------------------------------------------------------------------------------

def _str(d: Mapping[str, Any], key: str, src: Path | None, where: str, default: str | None = None) -> str:
    v = d.get(key, default)
    if not isinstance(v, str) or (default is None and not v):
        raise InputError.at(src, field=f"{where}{key}", expected="a non-empty string", got=v)
    return v


def _unknown(d: Mapping[str, Any], keys: tuple[str, ...], src: Path | None, where: str) -> None:
    bad = sorted(set(d) - set(keys))
    if bad:
        raise InputError.at(src, field=f"{where}{bad[0]}", expected=f"one of {', '.join(keys)}", got=bad[0])


def _claim(c: Any, src: Path | None, where: str, fig_margin: float = DEFAULT_MARGIN,
           fig_not_at: Mapping[str, str] | None = None) -> Claim:
    if not isinstance(c, dict):
        raise InputError.at(src, field=where, expected="a table {better, worse, factor, qualifier, note}", got=c)
    _unknown(c, CLAIM_KEYS, src, f"{where}.")
    fig_not_at = fig_not_at or {}
    factor = c.get("factor")
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0):
        raise InputError.at(src, field=f"{where}.factor", expected="a positive number", got=factor)
    check = _str(c, "check", src, f"{where}.", "")
    if check and check not in CHECKS:
        raise InputError.at(src, field=f"{where}.check", expected=" or ".join(CHECKS), got=check)
    qualifier = _str(c, "qualifier", src, f"{where}.", "")
    if qualifier not in QUALIFIERS:
        raise InputError.at(src, field=f"{where}.qualifier", expected=" or ".join(repr(q) for q in QUALIFIERS),
                            got=qualifier)
    if check == "margin" and factor is None:
        raise InputError.at(src, field=f"{where}.check", expected="a factor to check the margin against",
                            got=check)
    except_rows, except_as = c.get("except_rows", {}), _str(c, "except_as", src, f"{where}.", "reverse")
    if not isinstance(except_rows, dict) or not all(isinstance(x, str) and x for x in except_rows.values()):
        raise InputError.at(src, field=f"{where}.except_rows", expected="a table ROW = \"the paper's line\"",
                            got=except_rows)
    if except_as not in EXCEPT_AS:
        raise InputError.at(src, field=f"{where}.except_as", expected=" or ".join(EXCEPT_AS), got=except_as)
    if except_rows and ROW_SEP in f"{c.get('better', '')}{c.get('worse', '')}":
        raise InputError.at(src, field=f"{where}.except_rows", expected="a claim on every row (not x@row)",
                            got=except_rows)
    return Claim(_str(c, "better", src, f"{where}."), _str(c, "worse", src, f"{where}."),
                 None if factor is None else float(factor), qualifier,
                 _str(c, "note", src, f"{where}.", ""), check=check,
                 margin=_margin(c, src, f"{where}.", fig_margin), not_at={**fig_not_at, **_not_at(c, src, where)},
                 except_rows={str(r): x for r, x in except_rows.items()}, except_as=except_as)


def _margin(d: Mapping[str, Any], src: Path | None, where: str, default: float = DEFAULT_MARGIN) -> float:
    m = d.get("margin", default)
    if isinstance(m, bool) or not isinstance(m, (int, float)) or m < 1:
        raise InputError.at(src, field=f"{where}margin", expected="a factor ≥ 1 (2: within half to twice the "
                            "paper's margin)", got=m)
    return float(m)


def _not_at(d: Mapping[str, Any], src: Path | None, where: str) -> dict[str, str]:
    v = d.get("not_at", {})
    if not isinstance(v, dict) or any(k not in SIZES or not isinstance(x, str) or not x for k, x in v.items()):
        raise InputError.at(src, field=f"{where}.not_at", expected=f"a table SIZE = \"why\" ({', '.join(SIZES)})",
                            got=v)
    return dict(v)


def _figure(f: Any, i: int, grids: Mapping[str, Any], src: Path | None) -> Figure:
    where = f"figures[{i}]."
    if not isinstance(f, dict):
        raise InputError.at(src, field=f"figures[{i}]", expected="a [[figures]] table", got=f)
    _unknown(f, FIGURE_KEYS, src, where)
    grid_v = f.get("grid")
    names = grid_v if isinstance(grid_v, list) and grid_v else [_str(f, "grid", src, where)]
    for g in names:
        if not isinstance(g, str) or g not in grids:
            raise InputError.at(src, field=f"{where}grid", expected=f"one or a list of {', '.join(grids)}", got=g)
    grid = names[0]
    pairwise = f.get("pairwise", True)
    if not isinstance(pairwise, bool):
        raise InputError.at(src, field=f"{where}pairwise", expected="true or false", got=pairwise)
    pols = f.get("policies", [])
    if not isinstance(pols, list) or not all(isinstance(p, str) and p for p in pols):
        raise InputError.at(src, field=f"{where}policies", expected="a list of policy labels or variant names", got=pols)
    fsizes = f.get("sizes", [])
    if not isinstance(fsizes, list) or any(s not in SIZES for s in fsizes):
        raise InputError.at(src, field=f"{where}sizes", expected=f"a list of {', '.join(SIZES)}", got=fsizes)
    better = _str(f, "better", src, where, "lower")
    if better not in ("lower", "higher"):
        raise InputError.at(src, field=f"{where}better", expected="lower or higher", got=better)
    rows = _str(f, "rows", src, where, "group")
    if rows not in ROW_AXES:
        raise InputError.at(src, field=f"{where}rows", expected=f"one of {', '.join(ROW_AXES)}", got=rows)
    claims = f.get("claims", [])
    if not isinstance(claims, list):
        raise InputError.at(src, field=f"{where}claims", expected="a list of tables", got=claims)
    values = f.get("values", {})
    if not isinstance(values, dict) or not all(
            isinstance(v, dict) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v.values())
            for v in values.values()):
        raise InputError.at(src, field=f"{where}values", expected="{row = {policy = number}}", got=values)
    name = _str(f, "name", src, where)
    margin, not_at = _margin(f, src, where), _not_at(f, src, where[:-1])
    parsed = tuple(_claim(c, src, f"{where}claims[{j}]", margin, not_at) for j, c in enumerate(claims))
    known = _row_names([grids[g] for g in names], rows)
    for j, c in enumerate(parsed):
        unknown = sorted(set(c.except_rows) - known) if known is not None else []
        if unknown:
            raise InputError.at(src, field=f"{where}claims[{j}].except_rows", got=unknown[0],
                                expected=f"a row of figure {name!r} at some size ({', '.join(sorted(known))})",
                                detail=f"claim {c.better} better than {c.worse}")
    return Figure(name, _str(f, "title", src, where, name), grid, _str(f, "metric", src, where), better, rows,
                  _str(f, "source", src, where, ""),
                  parsed, {str(r): {str(p): float(x) for p, x in v.items()} for r, v in values.items()}, pairwise,
                  tuple(names), tuple(fsizes), tuple(pols), margin, not_at)


def _row_names(grids: list[Mapping[str, Any]], axis: str) -> set[str] | None:
    """Every row a figure with these grids can have at any size, for the axes a catalog names statically
    (trace names, their groups, node counts given in the grid); None for the others (not checked)."""
    out: set[str] = set()
    for table in grids:
        for part in (table, *(table.get(s, {}) for s in SIZES)):
            if axis == "cluster_nodes":
                for c in part.get("clusters", []):
                    nodes = c.get("nodes") if isinstance(c, dict) else None
                    if nodes is None:
                        return None
                    out.update(str(n) for n in (nodes if isinstance(nodes, list) else [nodes]))
            elif axis in ("trace", "group"):
                for t in map(trace_table, part.get("traces", [])):
                    kind = next((k for k in ("shared", "synth", "path") if isinstance(t, dict) and k in t), "")
                    if kind:
                        out.add(str(trace_name(t, kind, str(t[kind]))[axis == "group"]))
            else:
                return None
    return out


def parse_experiment(data: Mapping[str, Any], source: Path | None = None) -> Experiment:
    """Validate a parsed experiment TOML; errors name the file and the field."""
    src = source
    _unknown(data, EXPERIMENT_KEYS, src, "")
    grids = data.get("grids")
    if not isinstance(grids, dict) or not grids:
        raise InputError.at(src, field="grids", expected="at least one [grids.<name>] table", got=grids)
    for g, table in grids.items():
        if not isinstance(table, dict):
            raise InputError.at(src, field=f"grids.{g}", expected="a table", got=table)
        for size in SIZES:
            if size in table and not isinstance(table[size], dict):
                raise InputError.at(src, field=f"grids.{g}.{size}", expected="a table of overrides", got=table[size])
    sizes = data.get("sizes", {})
    if not isinstance(sizes, dict) or set(sizes) - set(SIZES):
        raise InputError.at(src, field="sizes", expected="a table with keys small and full (and medium)", got=sizes)
    hooks = data.get("hooks", "")
    if not isinstance(hooks, str):
        raise InputError.at(src, field="hooks", expected="a module name", got=hooks)
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise InputError.at(src, field="settings", expected="a table", got=settings)
    figures = data.get("figures")
    if not isinstance(figures, list) or not figures:
        raise InputError.at(src, field="figures", expected="at least one [[figures]] table", got=figures)
    figs = tuple(_figure(f, i, grids, src) for i, f in enumerate(figures))
    names = [f.name for f in figs]
    if len(set(names)) != len(names):
        raise InputError.at(src, field="figures", expected="distinct figure names", got=names)
    name = _str(data, "name", src, "")
    return Experiment(name, _str(data, "title", src, "", name), _str(data, "paper", src, ""),
                      _str(data, "url", src, "", ""), _str(data, "notes", src, "", "").strip(),
                      {s: str(sizes.get(s, "")) for s in SIZES if s in REQUIRED_SIZES or s in sizes}, grids, figs,
                      src, hooks, dict(settings))


def load_file(path: str | Path) -> Experiment:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise InputError.at(path, detail=f"cannot read experiment file ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError.at(path, expected="valid TOML", detail=str(exc)) from None
    return parse_experiment(data, path)


# ---- the registry --------------------------------------------------------------------------

def _catalog() -> dict[str, Path]:
    root = resources.files("experiments") / "catalog"
    return {Path(str(p)).stem: Path(str(p)) for p in root.iterdir() if str(p).endswith(".toml")}


def names() -> list[str]:
    """Registered experiments (the catalog's TOML files), sorted."""
    return sorted(_catalog())


def load_experiment(name: str) -> Experiment:
    """A registered experiment by name; an unknown name lists the valid ones."""
    files = _catalog()
    if name not in files:
        raise UnknownNameError("experiment", name, sorted(files))
    exp = load_file(files[name])
    if exp.name != name:
        raise InputError.at(files[name], field="name", expected=f"the file's stem {name!r}", got=exp.name)
    return exp
