"""Reports name no folder of the machine that wrote them (`cosim.paths.for_display`): shared data
as `../shared/data/…`, a file shipped with cosim by its path inside the package, anything else as given."""

from __future__ import annotations

import pandas as pd

from cosim.paths import _PACKAGE_ROOT, for_display
from experiments.report.header import what_ran


def test_a_shipped_cluster_file_is_named_inside_the_package():
    f = _PACKAGE_ROOT / "experiments" / "catalog" / "aryl" / "aryl-14+16-normalized.toml"
    assert for_display(str(f)) == "experiments/catalog/aryl/aryl-14+16-normalized.toml"


def test_specs_and_outside_paths_are_kept(tmp_path):
    for spec in ("synth:philly:100", "aryl:testbed", "dgx-a100", "relative/file.csv"):
        assert for_display(spec) == spec
    outside = str(tmp_path / "cluster.toml")
    assert for_display(outside) == outside


def test_shared_data_files_read_as_beside_the_checkout(shared_data):
    f = shared_data / "traces" / "ones" / "job_history.csv"
    assert for_display(str(f)) == "../shared/data/traces/ones/job_history.csv"


def test_what_ran_names_the_cluster_file_without_the_machines_folder():
    f = _PACKAGE_ROOT / "experiments" / "catalog" / "aryl" / "aryl-14+16-normalized.toml"
    frame = pd.DataFrame({"cluster": [str(f), "dgx-a100"], "cluster_nodes": [float("nan"), 4.0]})
    lines = dict(what_ran(frame, "cosim 0"))
    assert lines["cluster"] == "experiments/catalog/aryl/aryl-14+16-normalized.toml; dgx-a100 (4 nodes)"
