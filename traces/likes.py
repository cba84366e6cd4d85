"""The built-in synthetic trace parameter sets (`synth:LIKE:...`, `cosim traces synth --like`).

Kept apart from `traces.synth` so that help texts can list the names without loading pandas.
"""

from __future__ import annotations

from pathlib import Path

from cosim.registry import Registry

DATA_DIR = Path(__file__).resolve().parent / "data"

#: Built-in parameter sets, by name → file in traces/data.
LIKES: Registry[Path] = Registry("synthetic trace")
for _name, _help in (("philly", "Microsoft Philly (philly_jobs.csv): hour-of-day arrivals, GPUs, durations"),
                     ("philly-sia", "Philly as Pollux/Sia/Ares sample it (multi-GPU training jobs): arrivals, "
                                    "GPUs, model and batch"),
                     ("helios", "Helios-Saturn (Pollux/Sia/Ares workloads): arrivals, GPUs, model and batch"),
                     ("sensetime", "SenseTime (Dally job records): arrivals, GPUs, durations, models")):
    LIKES.register(_name, help=_help)(DATA_DIR / f"synth_{_name}.json")
