"""Linear and mixed-integer programs over named variable blocks, solved by HiGHS (scipy).

The scheduling papers write their programs over matrices of variables — Gavel's time
shares X[job, type], FFT's binary x[job, type] — with row constraints that sum a block
along one axis (Σ_types x ≤ 1 per job, Σ_jobs d_j·x ≤ Y_type per type). `Model` keeps
those shapes: a block is declared once with its bounds and integrality, `block.sum(axis,
coef)` is one *row group* (one row per remaining index), and row groups combine with
`+`, `-` and scalars (a one-row group such as a scalar variable broadcasts over the rows
of the other). Everything is built as coordinate triplets with numpy and assembled into
one scipy.sparse matrix at solve time, so a 4,000 × 8 model builds in milliseconds.

Continuous models go to HiGHS as `scipy.optimize.linprog(method="highs")` sends them (the same
program and options, through scipy's bundled binding: linprog's wrapper costs
~8 ms at 8,000 columns), models with an integer block to `scipy.optimize.milp` (HiGHS
branch-and-cut). A program solved again with a few coefficients or bounds changed can be kept
in one HiGHS instance and re-solved from its last basis (`Model.resolvable`). Example (FFT's
per-round ILP)::

    m = Model()
    x = m.binary("x", (J, T), ub=mem_ok)            # x[j, i] = 0 where the memory does not fit
    m.add(x.sum(axis=1) <= 1)                        # at most one type per job
    m.add(x.sum(axis=0, coef=d[:, None]) <= Y)      # per-type capacity
    m.minimize(x.sum(coef=cost))
    sol = m.solve()
    chosen = sol["x"].round().astype(bool)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

#: scipy/HiGHS status code → our status (the same codes for linprog and milp)
_STATUS = {0: "optimal", 1: "limit", 2: "infeasible", 3: "unbounded", 4: "error"}


class SolveError(RuntimeError):
    """The program has no optimal solution: `status` is infeasible, unbounded, "infeasible or
    unbounded" (HiGHS' presolve cannot tell), limit (no incumbent) or error."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class Expr:
    """A group of `n_rows` linear rows Σ vals·x[cols] + const (coordinate triplets)."""

    __array_ufunc__ = None  # `array <= expr` and `array * expr` defer to Expr
    __hash__ = None  # type: ignore[assignment]  # == builds a constraint

    def __init__(self, n_rows: int, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray,
                 const: np.ndarray | float = 0.0) -> None:
        self.n_rows = int(n_rows)
        self.rows = np.asarray(rows, np.int64)
        self.cols = np.asarray(cols, np.int64)
        self.vals = np.asarray(vals, float)
        self.const = np.broadcast_to(np.asarray(const, float), (self.n_rows,)).copy()

    def _rows_as(self, n: int) -> "Expr":
        """This group with `n` rows: a one-row group is repeated."""
        if self.n_rows == n:
            return self
        if self.n_rows != 1:
            raise ValueError(f"cannot combine a group of {self.n_rows} rows with one of {n} rows")
        k = self.cols.size
        rows = np.repeat(np.arange(n, dtype=np.int64), k)
        return Expr(n, rows, np.tile(self.cols, n), np.tile(self.vals, n), np.repeat(self.const, n))

    def __add__(self, other: Any) -> "Expr":
        if isinstance(other, Expr):
            n = max(self.n_rows, other.n_rows)
            a, b = self._rows_as(n), other._rows_as(n)
            return Expr(n, np.concatenate([a.rows, b.rows]), np.concatenate([a.cols, b.cols]),
                        np.concatenate([a.vals, b.vals]), a.const + b.const)
        c = np.asarray(other, float)
        n = max(self.n_rows, c.size if c.ndim else 1)
        a = self._rows_as(n)
        return Expr(n, a.rows, a.cols, a.vals, a.const + c.ravel() if c.ndim else a.const + c)

    __radd__ = __add__

    def __neg__(self) -> "Expr":
        return Expr(self.n_rows, self.rows, self.cols, -self.vals, -self.const)

    def __sub__(self, other: Any) -> "Expr":
        return self + (-other)

    def __rsub__(self, other: Any) -> "Expr":
        return (-self) + other

    def __mul__(self, scale: Any) -> "Expr":
        s = np.asarray(scale, float)
        if s.ndim == 0:
            return Expr(self.n_rows, self.rows, self.cols, self.vals * s, self.const * s)
        s = s.ravel()
        n = max(self.n_rows, s.size)
        a = self._rows_as(n)
        s = np.broadcast_to(s, (n,))
        return Expr(n, a.rows, a.cols, a.vals * s[a.rows], a.const * s)

    __rmul__ = __mul__

    def total(self) -> "Expr":
        """The sum of all rows, as one row (e.g. an objective from a row group)."""
        return Expr(1, np.zeros_like(self.rows), self.cols, self.vals, self.const.sum())

    def _bound(self, rhs: Any, lower: bool, upper: bool) -> "Constraint":
        e = self - rhs if isinstance(rhs, Expr) else self._rows_as(max(self.n_rows, np.size(rhs)))
        r = 0.0 if isinstance(rhs, Expr) else np.broadcast_to(np.asarray(rhs, float).ravel(), (e.n_rows,))
        bound = r - e.const  # move the constant to the right-hand side
        lb = bound if lower else np.full(e.n_rows, -np.inf)
        ub = bound if upper else np.full(e.n_rows, np.inf)
        return Constraint(Expr(e.n_rows, e.rows, e.cols, e.vals), np.asarray(lb, float), np.asarray(ub, float))

    def __le__(self, rhs: Any) -> "Constraint":  # type: ignore[override]
        return self._bound(rhs, lower=False, upper=True)

    def __ge__(self, rhs: Any) -> "Constraint":  # type: ignore[override]
        return self._bound(rhs, lower=True, upper=False)

    def __eq__(self, rhs: Any) -> "Constraint":  # type: ignore[override]
        return self._bound(rhs, lower=True, upper=True)


@dataclass(frozen=True)
class Constraint:
    """lb ≤ expr ≤ ub, row by row (infinite sides are absent)."""

    expr: Expr
    lb: np.ndarray
    ub: np.ndarray


@dataclass(frozen=True)
class Block:
    """A named array of variables occupying columns start … start + size − 1 (C order)."""

    name: str
    shape: tuple[int, ...]
    start: int

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def cols(self) -> np.ndarray:
        """Column index of every variable, shaped like the block."""
        return np.arange(self.start, self.start + self.size, dtype=np.int64).reshape(self.shape)

    def _terms(self, rows: np.ndarray, n_rows: int, coef: Any) -> Expr:
        c = np.broadcast_to(np.asarray(1.0 if coef is None else coef, float), self.shape)
        keep = c != 0  # zero coefficients (masked pairs) add no entry
        return Expr(n_rows, np.broadcast_to(rows, self.shape)[keep], self.cols[keep], c[keep])

    def sum(self, axis: int | tuple[int, ...] | None = None, coef: Any = None) -> Expr:
        """Σ coef·x over `axis`: one row per index of the remaining axes (None: one row).

        `coef` broadcasts to the block's shape (`d[:, None]` weighs x[j, t] by d_j).
        """
        if axis is None:
            return self._terms(np.zeros(self.shape, np.int64), 1, coef)
        axes = tuple(a % len(self.shape) for a in ((axis,) if isinstance(axis, int) else axis))
        out_shape = tuple(n for i, n in enumerate(self.shape) if i not in axes)
        n_rows = int(np.prod(out_shape, dtype=np.int64))
        rows = np.expand_dims(np.arange(n_rows, dtype=np.int64).reshape(out_shape), axes)
        return self._terms(rows, n_rows, coef)

    def each(self, coef: Any = None) -> Expr:
        """One row per variable, coef·x (C order of the block)."""
        return self._terms(np.arange(self.size, dtype=np.int64).reshape(self.shape), self.size, coef)


@dataclass
class Solution:
    """Status, objective value and the variables' values by block name."""

    status: str
    objective: float
    values: dict[str, np.ndarray] = field(default_factory=dict)
    message: str = ""
    mip_gap: float = float("nan")  # HiGHS' relative gap to its dual bound (mixed-integer solves; 0 at optimality)

    @property
    def ok(self) -> bool:
        """An optimal solution, or the best one found within the limits."""
        return self.status == "optimal" or (self.status == "limit" and bool(self.values))

    def __getitem__(self, block: str | Block) -> np.ndarray:
        return self.values[block.name if isinstance(block, Block) else block]


class Model:
    """A linear program, mixed-integer when a block is integer; see the module docstring."""

    def __init__(self) -> None:
        self.blocks: dict[str, Block] = {}
        self._lb: list[np.ndarray] = []
        self._ub: list[np.ndarray] = []
        self._int: list[np.ndarray] = []
        self._groups: list[Constraint] = []
        self.num_vars = 0
        self.num_rows = 0
        self._objective: Expr | None = None
        self._maximize = False

    def var(self, name: str, shape: int | tuple[int, ...] = (), lb: Any = 0.0, ub: Any = np.inf,
            integer: bool = False) -> Block:
        """A block of variables; `lb`/`ub` broadcast to its shape (ub = 0 forbids a pair)."""
        if name in self.blocks:
            raise ValueError(f"variable block '{name}' declared twice")
        shape = (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)
        b = Block(name, shape, self.num_vars)
        self._lb.append(np.broadcast_to(np.asarray(lb, float), shape).ravel())
        self._ub.append(np.broadcast_to(np.asarray(ub, float), shape).ravel())
        self._int.append(np.full(b.size, 1 if integer else 0, np.uint8))
        self.blocks[name] = b
        self.num_vars += b.size
        return b

    def binary(self, name: str, shape: int | tuple[int, ...] = (), ub: Any = 1.0) -> Block:
        """A block of 0/1 variables (`ub` = 0 or False fixes a variable at 0)."""
        return self.var(name, shape, 0.0, np.asarray(ub, float), integer=True)

    def add(self, constraint: Constraint) -> slice:
        """Add a row group; returns its rows (a slice of the constraint matrix)."""
        if not isinstance(constraint, Constraint):
            raise TypeError("add() takes a comparison of row groups, e.g. x.sum(axis=1) <= 1")
        first = self.num_rows
        self._groups.append(constraint)
        self.num_rows += constraint.expr.n_rows
        return slice(first, self.num_rows)

    def minimize(self, expr: Expr) -> None:
        self._objective, self._maximize = (expr if expr.n_rows == 1 else expr.total()), False

    def maximize(self, expr: Expr) -> None:
        self._objective, self._maximize = (expr if expr.n_rows == 1 else expr.total()), True

    def matrix(self) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
        """(A, row_lb, row_ub) with row_lb ≤ A·x ≤ row_ub; duplicate entries are summed."""
        import scipy.sparse as sp  # on use: registering the policies keeps `cosim simulate` free of scipy

        if not self._groups:
            return sp.csr_matrix((0, self.num_vars)), np.zeros(0), np.zeros(0)
        offs = np.cumsum([0] + [g.expr.n_rows for g in self._groups])
        rows = np.concatenate([g.expr.rows + o for g, o in zip(self._groups, offs)])
        cols = np.concatenate([g.expr.cols for g in self._groups])
        vals = np.concatenate([g.expr.vals for g in self._groups])
        a = sp.csr_matrix((vals, (rows, cols)), shape=(self.num_rows, self.num_vars))
        return a, np.concatenate([g.lb for g in self._groups]), np.concatenate([g.ub for g in self._groups])

    def _cost(self) -> tuple[np.ndarray, float]:
        c = np.zeros(self.num_vars)
        if self._objective is None:
            return c, 0.0
        np.add.at(c, self._objective.cols, self._objective.vals)
        return (-c if self._maximize else c), float(self._objective.const[0])

    def solve(self, *, time_limit_s: float | None = None, mip_rel_gap: float | None = None,
              check: bool = True, lp_options: dict[str, Any] | None = None) -> Solution:
        """Solve with HiGHS. `check`: raise `SolveError` unless a solution is returned.

        `mip_rel_gap` stops branch-and-bound at that relative gap (HiGHS' default 1e-4);
        a run stopped by `time_limit_s` with an incumbent has status "limit" and its values.
        `lp_options`: further HiGHS options (name → value, e.g. {"presolve": "off"}) for a
        continuous model, on top of linprog's.
        """
        c, offset = self._cost()
        lb, ub = np.concatenate(self._lb or [np.zeros(0)]), np.concatenate(self._ub or [np.zeros(0)])
        integrality = np.concatenate(self._int or [np.zeros(0, np.uint8)])
        bad = np.flatnonzero(lb > ub)
        if bad.size:  # HiGHS would report this as a generic error
            sol = Solution("infeasible", float("nan"), message=f"variable {self._name_of(int(bad[0]))}: lb > ub")
        else:
            a, rlb, rub = self.matrix()
            options: dict[str, Any] = {"disp": False}
            if time_limit_s is not None:
                options["time_limit"] = float(time_limit_s)
            if integrality.any():
                if mip_rel_gap is not None:
                    options["mip_rel_gap"] = float(mip_rel_gap)
                from scipy.optimize import (  # on use: scipy.optimize loads scipy.linalg
                    Bounds,
                    LinearConstraint,
                    milp,
                )

                cons = [LinearConstraint(a, rlb, rub)] if self.num_rows else []
                res = milp(c, integrality=integrality, bounds=Bounds(lb, ub), constraints=cons, options=options)
            else:
                res = _linprog(c, a, rlb, rub, lb, ub, options, lp_options or {})
            sol = self._solution(res, c, offset)
        if check and not sol.ok:
            raise SolveError(sol.status, sol.message or "no solution")
        return sol

    def _solution(self, res: Any, c: np.ndarray, offset: float) -> Solution:
        """A `Solution` from a linprog/milp-style result (status code, message, x)."""
        status = _STATUS.get(int(res.status), "error")
        if status == "error" and "unbounded or infeasible" in str(res.message):
            status = "infeasible or unbounded"  # HiGHS' presolve cannot tell which
        if res.x is None:
            return Solution(status, float("nan"), message=str(res.message))
        x = np.asarray(res.x, float)
        obj = float(c @ x)
        values = {n: x[b.start:b.start + b.size].reshape(b.shape) for n, b in self.blocks.items()}
        gap = getattr(res, "mip_gap", None)
        return Solution(status, (-obj if self._maximize else obj) + offset, values, str(res.message),
                        float("nan") if gap is None else float(gap))

    def resolvable(self, lp_options: dict[str, Any] | None = None) -> Resolvable:
        """This continuous model held by one HiGHS instance, to change coefficients and row
        bounds and solve again from the last basis (`Resolvable`)."""
        return Resolvable(self, lp_options or {})

    def _name_of(self, col: int) -> str:
        for b in self.blocks.values():
            if b.start <= col < b.start + b.size:
                idx = [int(i) for i in np.unravel_index(col - b.start, b.shape)] if b.shape else ""
                return f"{b.name}{idx}"
        return str(col)


def _linprog(c, a: sp.csr_matrix, rlb, rub, lb, ub, options, extra=None):
    """linprog's form: equality rows, ≤ rows, and ≥ rows negated into ≤ rows, solved by
    `_highs_direct` (the same program and options as `scipy.optimize.linprog(method="highs")`,
    without linprog's per-column Python loop; tests/policies/test_solvers.py checks the two
    give the same vertex)."""
    import scipy.sparse as sp

    eq = np.isfinite(rlb) & (rlb == rub)
    up = np.isfinite(rub) & ~eq
    lo = np.isfinite(rlb) & ~eq
    a_ub = sp.vstack([a[up], -a[lo]], format="csr")
    b_ub = np.concatenate([rub[up], -rlb[lo]])
    return _highs_direct(c, a_ub, b_ub, a[eq], rlb[eq], lb, ub, options, extra or {})


def _highs_core() -> Any:
    """scipy's bundled HiGHS binding (`scipy.optimize._highspy._core`, a private module of scipy
    1.15+; pyproject.toml pins the range this was checked on). The one way LPs are solved: a
    scipy without it is an installation error, said in one line, not a slower second path."""
    try:
        from scipy.optimize._highspy import _core
    except ImportError:  # pragma: no cover - depends on the installed scipy
        _core = None
    needed = ("_Highs", "HighsLp", "MatrixFormat", "HighsStatus", "HighsModelStatus")
    calls = ("setOptionValue", "passModel", "run", "getModelStatus", "getSolution", "changeCoeff", "changeRowBounds")
    if _core is None or not (all(hasattr(_core, n) for n in needed) and all(hasattr(_core._Highs, n) for n in calls)):
        import scipy

        raise ImportError(f"scipy {scipy.__version__} has no usable HiGHS binding (scipy.optimize._highspy._core): "
                          "cosim's LP solver needs scipy >= 1.15, < 1.18 (pip install 'scipy>=1.15,<1.18')")
    return _core


@dataclass
class _LpResult:
    """What `Model.solve` reads of a linprog result: status code, message, x."""

    status: int
    message: str
    x: np.ndarray | None


#: HiGHS model status → linprog's status code (`_STATUS`): optimal, limit, infeasible, unbounded
_HIGHS_STATUS = {"kOptimal": 0, "kTimeLimit": 1, "kIterationLimit": 1, "kInfeasible": 2, "kUnbounded": 3}


def _highs_direct(c, a_ub, b_ub, a_eq, b_eq, lb, ub, options, extra) -> _LpResult:
    """`scipy.optimize.linprog(method="highs")` on the same program with the same HiGHS options
    (presolve on, dual simplex strategy, no output), through scipy's bundled HiGHS binding: the
    same HiGHS run, so the same vertex, without linprog's wrapper, which loops in Python over
    every column for the bound multipliers (~8 ms at 8,000 columns; Gavel's LPs at 1,000 jobs ×
    8 types). `extra`: further HiGHS options (`Model.solve`'s `lp_options`)."""
    import scipy.sparse as sp

    hc = _highs_core()
    a = sp.vstack([a_ub, a_eq]) if a_eq.shape[0] else a_ub
    lp = _highs_lp(hc, c, a, np.concatenate([np.full(b_ub.size, -np.inf), b_eq]), np.concatenate([b_ub, b_eq]), lb, ub)
    h = hc._Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("log_to_console", False)
    h.setOptionValue("presolve", "on")
    h.setOptionValue("simplex_strategy", 1)  # linprog's kSimplexStrategyDual
    if options.get("time_limit") is not None:
        h.setOptionValue("time_limit", float(options["time_limit"]))
    _set_options(hc, h, extra)
    h.passModel(lp)
    return _run(h)


def _run(h: Any) -> _LpResult:
    """Run a loaded HiGHS instance; its result in linprog's status codes and wording."""
    h.run()
    model_status = h.getModelStatus()
    name = str(model_status).rsplit(".", 1)[-1]
    status = _HIGHS_STATUS.get(name, 4)
    message = h.modelStatusToString(model_status)
    if name == "kUnboundedOrInfeasible":  # linprog's wording, which `Model.solve` reads
        message = "The problem is unbounded or infeasible."
    if status != 0:
        return _LpResult(status, message, None)
    return _LpResult(0, message, np.array(h.getSolution().col_value))


def _highs_lp(hc: Any, c, a, rlb, rub, lb, ub) -> Any:
    """A HighsLp of min c·x, rlb ≤ a·x ≤ rub, lb ≤ x ≤ ub (a: any scipy sparse matrix)."""
    import scipy.sparse as sp

    a = sp.csc_array(a)
    a.sort_indices()
    lp = hc.HighsLp()
    lp.num_col_, lp.num_row_ = c.size, a.shape[0]
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = c.size, a.shape[0]
    lp.a_matrix_.format_ = hc.MatrixFormat.kColwise
    # lists, not arrays: pybind11 fills HiGHS' vectors from a list ~3x faster (~2 ms at 26,000 entries)
    lp.col_cost_ = np.asarray(c, float).tolist()
    lp.col_lower_, lp.col_upper_ = np.asarray(lb, float).tolist(), np.asarray(ub, float).tolist()
    lp.row_lower_, lp.row_upper_ = np.asarray(rlb, float).tolist(), np.asarray(rub, float).tolist()
    lp.a_matrix_.start_, lp.a_matrix_.index_ = a.indptr.tolist(), a.indices.tolist()
    lp.a_matrix_.value_ = a.data.tolist()
    return lp


def _set_options(hc: Any, h: Any, extra: dict[str, Any]) -> None:
    for k, v in extra.items():
        if h.setOptionValue(k, v) != hc.HighsStatus.kOk:
            raise ValueError(f"HiGHS option {k}={v!r}: unknown name or a value of the wrong type")


class Resolvable:
    """A continuous `Model` kept in one HiGHS instance across solves (`Model.resolvable`).

    Programs solved again and again with a few coefficients or bounds changed (Gavel's
    finish-time-fairness Dinkelbach iterations: the same X rows, a new column of z
    coefficients and new right-hand sides each time) restart the dual simplex from the last
    optimal basis instead of from scratch, and skip rebuilding the matrix. Rows are the
    model's (`Model.add` returns their slice), as lo ≤ a·x ≤ hi (no sign flips).
    """

    def __init__(self, model: Model, lp_options: dict[str, Any]) -> None:
        if any(i.any() for i in model._int):
            raise ValueError("Resolvable takes continuous models only")
        self.model = model
        self._c, self._offset = model._cost()
        self._lb = np.concatenate(model._lb or [np.zeros(0)])
        self._ub = np.concatenate(model._ub or [np.zeros(0)])
        a, self._rlb, self._rub = model.matrix()
        self._options = dict(lp_options)
        hc = _highs_core()
        self._h = hc._Highs()
        self._h.setOptionValue("output_flag", False)
        self._h.setOptionValue("simplex_strategy", 1)  # dual simplex, as linprog
        _set_options(hc, self._h, self._options)
        self._h.passModel(_highs_lp(hc, self._c, a, self._rlb, self._rub, self._lb, self._ub))

    def set_coefficients(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> None:
        """a[rows[i], cols[i]] = vals[i] (a zero entry becomes a nonzero; 0 removes one)."""
        rows, vals = np.asarray(rows, np.int64), np.asarray(vals, float)
        cols = np.broadcast_to(np.asarray(cols, np.int64), rows.shape)
        change = self._h.changeCoeff
        for r, k, v in zip(rows.tolist(), cols.tolist(), vals.tolist()):
            change(r, k, v)

    def set_row_bounds(self, rows: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        """lower[i] ≤ row rows[i] ≤ upper[i] (±inf: no bound)."""
        rows = np.asarray(rows, np.int64)
        lower = np.broadcast_to(np.asarray(lower, float), rows.shape)
        upper = np.broadcast_to(np.asarray(upper, float), rows.shape)
        self._rlb[rows], self._rub[rows] = lower, upper
        change = self._h.changeRowBounds
        for r, lo, hi in zip(rows.tolist(), lower.tolist(), upper.tolist()):
            change(r, lo, hi)

    def solve(self, check: bool = True) -> Solution:
        """Solve from the last basis; as `Model.solve`."""
        res = _run(self._h)
        sol = self.model._solution(res, self._c, self._offset)
        if check and not sol.ok:
            raise SolveError(sol.status, sol.message or "no solution")
        return sol
