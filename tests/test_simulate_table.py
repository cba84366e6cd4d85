"""`cosim simulate`'s result table (`cli.simulate_cmd._print_table`): cells are plain text.

The title carries the trace path as the user gave it; rich's markup and emoji passes used to
rewrite it (`[bold]` vanished, `:smile:` became an emoji). The table prints it as it is.
"""

from __future__ import annotations

import sys
import types

import pyarrow as pa

from cli.simulate_cmd import _print_table


def _result(policy: str = "fifo", excluded=None, compile_s: float = 0.0):
    summary = pa.table({"policy": [policy], "finished": [1], "jobs": [2], "avg_jct_s": [3600.0],
                        "p99_jct_s": [7200.0], "makespan_s": [5400.0], "avg_queueing_s": [0.0],
                        "gpu_utilization": [0.5], "unfair_fraction": [0.25], "worst_ftf": [1.5],
                        "avg_restarts": [0.0]})
    return types.SimpleNamespace(summary_table=summary, wall_s={policy: 1.25}, excluded=excluded or {},
                                 timing={policy: {"compile_s": compile_s}})


def _config(trace: str):
    return types.SimpleNamespace(trace=trace, cluster="t4-pcie", cluster_nodes=16, contention=True,
                                 perf="measured-pollux-sim")


def test_trace_path_printed_verbatim(capsys):
    _print_table(_result(), _config("runs/[bold]x:smile:.csv"))
    out = capsys.readouterr().out
    assert "runs/[bold]x:smile:.csv on t4-pcie (16 nodes), contention, perf" in out
    assert "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}" not in out


def test_cells_and_width_when_piped(capsys):
    _print_table(_result("tiresias-pollux"), _config("w.csv"))
    lines = capsys.readouterr().out.splitlines()
    row = next(line for line in lines if "tiresias-pollux" in line)
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells == ["tiresias-pollux", "1/2", "1.00", "2.00", "1.50", "0.00", "0.50", "0.25", "1.50", "0.00", "1.25"]
    assert max(len(line) for line in lines) <= 120  # a pipe gets the 120-column layout


def test_rows_the_loader_left_out_are_under_the_table(capsys):
    _print_table(_result(excluded={"zero_gpus": 3, "never_started": 1}), _config("w.csv"))
    out = capsys.readouterr().out
    assert "4 trace row(s) left out by the loader: never_started 1, zero_gpus 3" in out
    _print_table(_result(), _config("w.csv"))
    assert "left out" not in capsys.readouterr().out


def test_kernel_compilation_is_named_apart_from_wall_s(capsys):
    _print_table(_result(compile_s=11.1), _config("w.csv"))
    out = capsys.readouterr().out
    assert "numba kernels compiled or loaded during the runs (not in wall s): fifo 11.1 s" in out
    _print_table(_result(compile_s=0.01), _config("w.csv"))  # a warm cache: nothing to say
    assert "compiled" not in capsys.readouterr().out


def test_no_emoji_table_imported(capsys):
    sys.modules.pop("rich._emoji_codes", None)
    _print_table(_result(), _config("w.csv"))
    capsys.readouterr()
    assert "rich._emoji_codes" not in sys.modules
