"""What a run uses when nothing else is named (`cosim simulate` with no flags).

Kept apart from `experiments.runner` so that help texts can state them without loading the
simulator.
"""

#: the trace: 160 synthetic Philly jobs as Pollux/Sia/Ares sample them, arriving over 4 h
DEFAULT_TRACE = "synth:philly-sia:160:4h"
#: the cluster preset: 8 DGX A100 nodes, 64 GPUs
DEFAULT_CLUSTER = "dgx-a100"
#: baselines run by default, in this order, when registered (`experiments.runner.default_policies`)
PREFERRED_POLICIES = ("fifo", "fifo-backfill", "sjf", "srtf", "tiresias", "gandiva")
#: cross-job network contention
DEFAULT_CONTENTION = True
