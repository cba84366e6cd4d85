"""The `aryl` policy's options (`cosim policies show aryl`): Aryl and, as options of the same
policy, its baselines and ablations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from policies.aryl.reclaim import TIE_BREAKS
from policies.config import PolicyConfig, param

RECLAIMS = ("aryl", "random", "scf", "static")
SCALINGS = ("mckp", "gandiva", "none")
ORDERS = ("sjf", "fifo", "fifo-strict")
HETERO_JOBS = ("agnostic", "vc")
WORKER_VALUES = ("engine", "paper")
HETERO_VC = "hetero"  # the virtual cluster of heterogeneous-capable jobs (hetero_jobs = vc)


@dataclass(frozen=True)
class ArylConfig(PolicyConfig):
    """Aryl (EuroSys'22): SJF-with-skip for inelastic and base demand, MCKP for flexible
    workers, BFD placement with on-loan server groups, and Algorithm 1 for reclaims. Needs the
    duration oracle (the paper's profiler). Options reproduce its baselines and ablations:
    FIFO = `order=fifo scaling=none loaning=false`; loaning-only = `scaling=none`; scaling-only
    = `loaning=false`; Gandiva = `scaling=gandiva`; Table 6 = `special_placement=false`;
    Random/SCF/Static reclaim = `reclaim=...`."""

    reference: ClassVar[str] = ("Li et al., \"Aryl: An Elastic Cluster Scheduler for Deep Learning\", EuroSys'22 "
                                "(../shared/seeds/notes/aryl.md)")

    interval_s: float | None = param(60.0, "scheduler tick (also runs on arrivals and completions)",
                                     source="aryl.md §2.0 [I]: not given in the paper")
    event_driven: bool = param(True, "also run a round at every arrival and completion (false: rounds only at "
                                     "the tick and at capacity changes, the paper's 'runs periodically'; the "
                                     "paper-size run uses false: ~20k rounds instead of ~700k)",
                               source="aryl.md §2.0 [I]")
    loaning: bool = param(True, "use on-loan inference servers (false: FIFO baseline and scaling-only ablation)")
    scaling: str = param("mckp", "flexible workers: mckp = Aryl's phase 2; gandiva = scale every elastic job to "
                                 "w_max while no job is pending (opportunistic, Aryl §6); none = elastic jobs run "
                                 "at their requested size", choices=SCALINGS)
    order: str = param("sjf", "phase-1 order: sjf (running time, skip what does not fit: Aryl); fifo (arrival, "
                              "skip); fifo-strict (arrival, stop at the first that does not fit)", choices=ORDERS,
                       source="fifo skip vs strict: aryl.md §6 [I], the paper does not say")
    special_placement: bool = param(True, "elastic jobs to on-loan servers with base and flexible workers in "
                                          "separate server groups (false: plain BFD, training servers first; Table 6)")
    reclaim: str = param("aryl", "which on-loan servers go back: aryl = idle and flexible-only servers first, then "
                                 "Algorithm 1; random; scf = fewest jobs first (static); static = Algorithm 1 "
                                 "without cost updates", choices=RECLAIMS,
                         source="Table 5 rows 5-7, Table 12 ('Static' is undefined in the paper: [I])")
    tie_break: str = param("gpu_fraction", "Algorithm 1 ties: gpu_fraction = lower Σ GPU fraction, then server id; "
                                           "server_id; random (seeded)", choices=TIE_BREAKS,
                           source="aryl.md §2.2 ambiguity 2 [I]")
    literal_weights: bool = param(False, "MCKP item weight (w + w_min)·D_j as Algorithm 2 line 17 prints it "
                                         "(false: the incremental w·D_j of the notes, capacity = remaining GPUs)",
                                  source="aryl.md §2.4 ambiguity 1")
    t4_ratio: float = param(0.25, "compute of an inference GPU relative to a training GPU when counting the "
                                  "knapsack capacity under worker_value=paper (1/3 is the testbed remark)",
                            source="Aryl App. A")
    worker_value: str = param("engine", "the MCKP's weight and value of a flexible worker: engine = at the speeds the "
                                        "run's perf backend gives (an inference GPU weighs its one-GPU speed relative "
                                        "to the training GPU for the job's model, a job's T^max is at its base's GPU "
                                        "type, and a heterogeneous-capable job's V100 base plus T4 workers is valued at "
                                        "the backend's mixed-gang efficiency); paper = every worker the same value, an "
                                        "inference GPU weighing t4_ratio (App. A's 1/4)", choices=WORKER_VALUES,
                              source="Aryl §5.2 'on-loan inference GPUs are normalized relative to training GPUs' "
                                     "(App. A: T4 = 1/4 V100); the engine's own speed ratio is [I]")
    estimate_error_frac: float = param(0.0, "fraction of jobs whose running-time estimate is wrong (Table 9: 0-0.6)")
    estimate_error_margin: float = param(0.25, "a wrong estimate is off by a factor U[1-m, 1+m] (Table 9 caption)")
    mix_types: bool = param(False, "type-agnostic jobs may span training and inference GPUs in one gang "
                                   "(heterogeneous training, Advanced/Ideal); under --perf linear such a gang runs "
                                   "at 0.7 of its summed GPU speeds (the backend's hetero_efficiency, App. A)")
    hetero_jobs: str = param("agnostic", "with mix_types: which jobs may span GPU types: agnostic = every "
                                         "type-agnostic job; vc = only the type-agnostic jobs of the trace's virtual "
                                         "cluster 'hetero' (traces/aryl.py marks the Advanced scenario's extra 10 % "
                                         "there, so the other type-agnostic and the elastic jobs keep single-type "
                                         "gangs as in Basic)", choices=HETERO_JOBS,
                             source="Aryl §7.1 'Advanced: Basic plus 10 % of jobs able to run on heterogeneous GPUs'")
    hetero_last: bool = param(True, "with mix_types: heterogeneous-capable (type-agnostic) jobs are placed after "
                                    "the others in each round ('lastly on the remaining resources')",
                              source="Aryl §5.3/§6; aryl.md §2.5 item 5")
    hetero_base_training: bool = param(True, "with mix_types: a heterogeneous-capable elastic job's base workers go "
                                             "to training servers first, its flexible ones to inference servers "
                                             "(false: base to on-loan servers like other elastic jobs). A gang "
                                             "over both kinds runs at 0.7 of its summed speed (the mixed-gang "
                                             "rule), on the physical and the normalized clusters alike",
                                       source="Aryl §6; aryl.md §2.5 item 5")
    batch_tuning: str = param("none", "elastic jobs' global batch: none = the trace's; pollux = Pollux's agent "
                                      "picks it for the job's allocation each time it changes "
                                      "(policies.pollux.best_batch: highest goodput; Aryl+TunedJobs, Table 5 row 11)",
                              choices=("none", "pollux"), source="Aryl §7.4 'Aryl+TunedJobs'")

    def validate(self) -> None:
        self.check("t4_ratio", 0.0 < self.t4_ratio <= 1.0, "a ratio in (0, 1]")
        self.check("estimate_error_frac", 0.0 <= self.estimate_error_frac <= 1.0, "a fraction in [0, 1]")
        self.check("estimate_error_margin", 0.0 <= self.estimate_error_margin < 1.0, "a margin in [0, 1)")
