"""ONES' parameters (ONES notes §2.10) and its ambiguities as named options (§2.11)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from policies.config import PolicyConfig, param

_NOTES = "ONES notes (../shared/seeds/notes/ones.md)"


@dataclass(frozen=True)
class OnesConfig(PolicyConfig):
    """ONES keeps a population of K schedules (one job id per GPU) and evolves it online with refresh,
    uniform crossover, uniform mutation and reorder; candidates are scored by Eq. 8 (remaining GPU-time,
    Smallest Remaining Utilization First) with each job's training progress drawn once per generation from
    a Beta predictor fitted to completed jobs' logs. The best schedule is deployed when every job it
    moves has finished an epoch since its last change; jobs whose GPUs are free start at once, and a
    queued job whose GPUs are still held starts on free ones (`start_on_free`). Batch =
    per-GPU base batch × GPUs, the learning rate scaled linearly, capped at B_max = base × max_lr / lr.
    A job's GPU limit R starts at 1, doubles after epochs at its limit, halves while it waits to resume,
    and shrinks for long runners (convoy effect). Costs: in-place resizes are the run's `resize_s`
    (`--costs ones=inplace`: 1 s, the paper's elastic scaling); preemption/resume is checkpoint-based
    (`restart_s`)."""

    reference: ClassVar[str] = ("Bian et al., \"Online Evolutionary Batch Size Orchestration for Scheduling Deep "
                                "Learning Workloads in GPU Clusters\" (ONES), SC'21; artifact kurisusnowdeng/ones_sc21")

    population: int = param(0, "population size K; 0 = the number of GPUs (the paper's suggestion)",
                            source="paper: same size as the cluster; artifact: 16 (" + _NOTES + " §2.10)")
    children: int = param(0, "crossover children per generation; 0 = K (K/2 parent pairs)",
                          source="artifact: K/2 pairs -> K children (paper: K pairs -> 2K)")
    mutants: int = param(0, "mutated candidates per generation; 0 = K", source="paper and artifact: K")
    crossover_xi: float = param(0.5, "per-GPU swap probability of the uniform crossover",
                                source="artifact xi = 0.5")
    theta: float = param(0.3, "mutation rate: probability that each executed job of a candidate is preempted",
                         source="artifact mutate_rate = 0.3 (the paper gives no value)")
    generations: int = param(1, "generations per policy call", source="artifact: one per ~1 s loop")
    update_epochs: int = param(1, "epochs a job must finish since its last change before a full update moves it",
                               source="paper: every running job finishes >= 1 epoch; artifact update_interval = 1")
    gate: str = param(
        "all", "epoch gate of a deployment: 'all' = S*'s moves (scale, migrate, preempt) apply only when every job "
        "they touch has finished update_epochs epochs since its last change (else only starts on free GPUs); "
        "'per-job' = the moves of the jobs that are ready apply whenever their target GPUs are free or held by other "
        "ready jobs", choices=("all", "per-job"),
        source="paper: after all running jobs finish >= 1 epoch; artifact: every moved job (" + _NOTES + " §2.6)")
    start_on_free: bool = param(
        True, "a queued job that the best schedule runs on GPUs held by jobs that cannot move yet (epoch gate) starts "
              "on free GPUs instead, as many as the schedule gives it; false = it waits for the next full update",
        source="paper refresh: 'allocates N new jobs with N available GPUs' (" + _NOTES + " §2.6); artifact: only "
               "jobs whose target GPUs are all free start at once")
    warmup_epochs: int = param(2, "epochs a new job runs on one GPU before it may scale (start policy)",
                               source="artifact num_epochs_before_next_scaling = 2 (paper: 'a few warm-up steps')")
    scale_every_epochs: int = param(1, "epochs between two doublings of R (scale-up R' = 2R)",
                                    source="paper: after each epoch; artifact nominally 2")
    request_cap_factor: int = param(0, "cap R at this many times the user's requested GPUs; 0 = the cluster",
                                    source="artifact caps at 4 x num_gpus; paper: none stated")
    scale_down: str = param(
        "artifact",
        "convoy scale-down of R at epoch ends: 'paper-gated' R' = ceil(2R/ceil(sigma*T+1)) only when sigma*T > 1 "
        "(else scale-up may double); 'paper-floor' uses floor(sigma*T+1) (grow below 1/sigma, hold, then shrink); "
        "'artifact' = only the largest running job, if >= half the cluster and running longer than the median "
        "run time: max(int(2 size/(run/median+1)),1) rounded up even; 'none' disables it",
        choices=("paper-gated", "paper-floor", "artifact", "none"),
        source=_NOTES + " §2.7, §2.11-4. Default 'artifact', not the notes' 'paper-gated': with sigma = lambda = "
               "1/30 s every job that has run 30 s shrinks at each epoch, which left 80 % of the GPUs idle on the "
               "50-job trace (avg JCT 0.44 h vs Tiresias 0.06 h, measured)")
    sigma: float | None = param(None, "scale-down factor sigma (1/s); none = the observed arrival rate lambda",
                                      unit="1/s", source="paper: sigma = lambda, the average arrival rate")
    fill: str = param(
        "delta-phi",
        "how idle GPUs are filled: 'delta-phi' = smallest increase of remaining GPU-time (c/X)·Y with the sampled "
        "rho first (jobs without a prediction first, by arrival); 'artifact' = new jobs, then executed jobs by "
        "estimated one-GPU remaining time", choices=("delta-phi", "artifact"), source=_NOTES + " §2.11-2")
    reorder: bool = param(True, "apply the reorder operator (contiguous, migration-minimising, node-aware packing)",
                          source="paper Fig. 10; artifact DP")
    lr_cap: bool = param(True, "cap the global batch at B_max = base batch x max_lr / lr (linear LR scaling)",
                         source="artifact _elastic_batch_size_and_lr")
    predictor: str = param("linear", "beta regression: 'linear' (Eq. 6, beta = max(Ax+b,1)) or 'mlp' (artifact "
                           "5-64-1 tanh)", choices=("linear", "mlp"), source=_NOTES + " §2.4, §2.11-6")
    predictor_lr: float = param(1e-2, "Adam learning rate of the predictor fit", source="artifact MLP: 1e-4")
    predictor_epochs: int = param(60, "passes over the training set per fit", source="artifact: 60")
    predictor_batch: int = param(8, "minibatch of the MLP fit (the linear fit is full-batch)", source="artifact: 8")
    predictor_max_points: int = param(2000, "most training points per fit (uniform without replacement)",
                                      source="artifact: 2000")
    predictor_weight_decay: float = param(1e-4, "weight decay of the predictor fit", source="artifact: 1e-4")
    refit: str = param("every-completion", "when the predictor is refitted", choices=("every-completion", "never"),
                       source="paper: each time a job completes")
    warm_start: str = param("history", "before any completion: 'history' = fit on history_file (an ONES "
                            "job_history.csv; a missing file is an error naming it), 'prior' = beta = prior_beta",
                            choices=("history", "prior"), source=_NOTES + " §2.11-12")
    history_file: str = param("", "warm-start job history (ONES format); empty = traces/ones/job_history.csv of the "
                              "shared data folder ($COSIM_SHARED_DATA, else ../shared/data beside the checkout), the "
                              "same file from any working directory",
                              source="artifact traces/job_history.csv (21 runs of 20 earlier jobs)")
    prior_beta: float = param(5.0, "beta (epochs still to go) before the predictor is fitted", unit="epochs",
                              source="[I] no value in the paper")
    interval_s: float | None = param(5.0, "periodic tick between generations (besides arrivals, completions and "
                                     "epoch ends)", source="artifact: ~1 s loop; 5 s default here for speed")

    def validate(self) -> None:
        self.check("population", self.population >= 0, "an integer >= 0")
        self.check("children", self.children >= 0, "an integer >= 0")
        self.check("mutants", self.mutants >= 0, "an integer >= 0")
        self.check("crossover_xi", 0.0 <= self.crossover_xi <= 1.0, "a probability in [0, 1]")
        self.check("theta", 0.0 <= self.theta <= 1.0, "a probability in [0, 1]")
        self.check("generations", self.generations >= 1, "an integer >= 1")
        self.check("update_epochs", self.update_epochs >= 0, "an integer >= 0")
        self.check("warmup_epochs", self.warmup_epochs >= 0, "an integer >= 0")
        self.check("scale_every_epochs", self.scale_every_epochs >= 1, "an integer >= 1")
        self.check("request_cap_factor", self.request_cap_factor >= 0, "an integer >= 0")
        self.check("sigma", self.sigma is None or self.sigma > 0, "a positive rate or none")
        self.check("prior_beta", self.prior_beta >= 1.0, "a number >= 1")
        self.check("predictor_lr", self.predictor_lr > 0, "a positive number")
        self.check("predictor_epochs", self.predictor_epochs >= 1, "an integer >= 1")
