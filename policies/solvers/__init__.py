"""Optimisation kit for policies that solve a program every round.

- `Model` (lp.py): linear and mixed-integer programs with named variable blocks
  (`x[job, type]`), built as sparse matrices row group by row group and solved by HiGHS
  through scipy (`linprog(method="highs")`'s program and options when every variable is
  continuous, `milp` otherwise); `Model.resolvable` keeps a continuous model in one HiGHS
  instance to change coefficients/bounds and re-solve from the last basis. Gavel's LPs and
  FFT's per-round ILP are written in a few lines.
- `mckp` (knapsack.py): multiple-choice knapsack by dynamic programming over integer
  weights, at most one or exactly one item per group (Aryl's phase 2).
- `assign` (assignment.py): min-cost assignment on a rectangular cost matrix with
  forbidden pairs, complete or partial (AlloX's job-to-slot matching).

A program with no solution raises `SolveError` (status "infeasible", "unbounded", …)
unless the caller asks for the status instead.
"""

from policies.solvers.assignment import Assignment, assign
from policies.solvers.knapsack import Knapsack, mckp
from policies.solvers.lp import Block, Expr, Model, Solution, SolveError

__all__ = ["Assignment", "Block", "Expr", "Knapsack", "Model", "Solution", "SolveError", "assign", "mckp"]
