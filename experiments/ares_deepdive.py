"""Ares Figs. 8-9 analog: allocation timeline and JCT / FTF distributions on one Helios workload.

The catalog's tables hold one number per cell; the deep dive needs each run's timeline and
per-job rows, so it runs the policies once through `experiments.runner.run` (the same path
as `cosim simulate`) and writes, under `out_dir`:

- `deepdive.csv`: per policy, average JCT, makespan, the fraction of jobs that finish faster
  than under the run's FTF reference (FTF < 1: "over 90 % of jobs can be accelerated by Ares",
  §5.3) and the unfair fraction (FTF > 1); the reference is `--ftf-reference` (`simcore.gps`:
  `gps`, cosim's default, capped at each job's request; `gps-uncapped`, the paper's GPS;
  `gps-artifact`, the artifact's);
- `deepdive.png` (with matplotlib): busy GPUs over time (Fig. 8) and the JCT CDF (Fig. 9).

    python -m experiments.ares_deepdive TRACE.csv OUT_DIR [--policies ares,ares-artifact,...] [--ftf-reference gps-uncapped]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

POLICIES = ("ares", "ares-artifact", "tiresias-pollux", "gavel", "optimus")


def deep_dive(trace: str, out_dir: str | Path, policies: tuple[str, ...] = POLICIES,
              cluster: str = "ares-sim", costs: str = "ares-paper", ftf_reference: str = "gps") -> pd.DataFrame:
    """Run `policies` on `trace` and write the table and the figure (module doc); returns the table."""
    from experiments.runner import RunConfig, run

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    res = run(RunConfig(trace=trace, cluster=cluster, policies=policies, costs=costs, ftf_reference=ftf_reference), None)
    rows = []
    for p in policies:
        j = res.jobs[p]
        fin = j[j["finished"]]
        ftf = fin["ftf"].to_numpy()
        rows.append({"policy": p, "avg_jct_h": fin["jct_s"].mean() / 3600, "makespan_h": fin["end_time_s"].max() / 3600,
                     "faster_than_gps": float((ftf < 1.0).mean()), "unfair_fraction": float((ftf > 1.0 + 1e-9).mean()),
                     "restarts_per_job": float(j["num_restarts"].mean())})
    table = pd.DataFrame(rows)
    table.to_csv(out / "deepdive.csv", index=False)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return table
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.6))
    for p in policies:
        tl = res.timelines[p]
        a.step(tl["time_s"] / 3600, tl["busy_gpus"], where="post", label=p, lw=0.9)
        jct = np.sort(res.jobs[p]["jct_s"].to_numpy() / 3600)
        b.plot(jct, np.arange(1, jct.size + 1) / jct.size, label=p, lw=1.0)
    a.set(xlabel="time (h)", ylabel="busy GPUs", title="allocated GPUs (Fig. 8 analog)")
    b.set(xlabel="JCT (h)", ylabel="CDF", xscale="log", title="JCT CDF (Fig. 9 analog)")
    b.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "deepdive.png", dpi=90)
    plt.close(fig)
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out_dir")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--ftf-reference", default="gps", help="FTF reference (simcore.gps.FTF_REFERENCES)")
    a = ap.parse_args()
    print(deep_dive(a.trace, a.out_dir, tuple(a.policies.split(",")), ftf_reference=a.ftf_reference).to_string(index=False))


if __name__ == "__main__":
    main()
