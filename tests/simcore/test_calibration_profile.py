"""The calibration profile's fitted iteration form runs in the engine (`calibration.stepform`):
presets with measured data use their shipped profile by default, `--calibration FILE`
replaces it, `--calibration none` gives the generic form."""

from __future__ import annotations

import math

import pytest

from cosim.errors import InputError
from experiments.runner import RunConfig, run
from calibration.stepform import SYNC_FEATURES


def _jobs(cluster, calibration, contention=True, nodes=None, trace="synth:philly-sia:40:2h"):
    cfg = RunConfig(trace=trace, cluster=cluster, cluster_nodes=nodes, policies=("fifo",),
                    calibration=calibration, contention=contention, seed=1)
    return run(cfg, None).jobs["fifo"]


def _share(jobs):
    m = jobs[jobs["num_gpus"] > 1]
    return m["exposed_comm_s"].sum() / m["executed_s"].sum()


def _profile(tmp_path, name, preset, log_scale):
    """A profile whose default form is S = e^log_scale · M (no overlap factor)."""
    w = {f: 0.0 for f in SYNC_FEATURES}
    w["intercept"], w["log_comm_model_s"] = log_scale, 1.0
    p = tmp_path / name
    p.write_text(f'[step."{preset}".default]\nkappa = 1.0\nhost_slope = 0.0\noverhead_s = 0.0\n'
                 f'[step."{preset}".default.sync]\n' + "".join(f"{k} = {v}\n" for k, v in w.items()))
    return str(p)


def test_default_preset_profile_makes_communication_visible():
    """dgx-a100 with its shipped profile: multi-GPU jobs expose some of their all-reduce;
    without a profile (the generic form, NVSwitch all-reduces hidden by the backward) none."""
    fitted, generic = _jobs("dgx-a100", None), _jobs("dgx-a100", "none")
    assert _share(fitted) > 0.01
    assert _share(generic) < 1e-3


def test_profile_step_section_sets_the_exposed_part(tmp_path):
    small = _share(_jobs("ares-testbed", _profile(tmp_path, "s.toml", "ares-testbed", 0.0), nodes=16))
    large = _share(_jobs("ares-testbed", _profile(tmp_path, "l.toml", "ares-testbed", math.log(5.0)), nodes=16))
    assert 0.0 < small < large


def test_old_overlap_table_is_refused(tmp_path):
    old = tmp_path / "old.toml"
    old.write_text("[overlap]\noverlap_start_frac = 1.0\n")
    with pytest.raises(InputError, match="overlap"):
        _jobs("ares-testbed", str(old), nodes=16)


def test_contention_stretches_the_fitted_all_reduce():
    """Two 16-GPU jobs on rtx2080ti-pcie (one 40 Gb/s NIC per 8-GPU node) placed across the
    same two nodes, with the shipped profile: alone each iteration is the fitted step; together
    their all-reduces share the NICs, so the exposed part grows (the network stays visible)."""
    import numpy as np

    import netmodel
    from experiments.run_perf import build_perf
    from experiments.runner import perf_backends

    cfg = RunConfig(cluster="rtx2080ti-pcie")
    topo = netmodel.build_topology(netmodel.load_cluster("rtx2080ti-pcie"))
    perf = build_perf(topo, perf_backends(cfg), cfg)
    assert perf.step is not None and perf.step.preset == "rtx2080ti-pcie"
    a = perf.phases("bert_base", np.r_[np.arange(0, 4), np.arange(8, 12)], 96)
    b = perf.phases("bert_base", np.r_[np.arange(4, 8), np.arange(12, 16)], 96)
    it, exposed = perf.iteration_times([a, b])
    solo = np.array([a.solo_s, b.solo_s])
    assert (it >= solo * (1 - 1e-9)).all() and (it > solo * 1.01).any()
    assert (exposed > solo - np.array([a.compute_s, b.compute_s])).any()


def test_a_profile_in_the_earlier_format_says_how_to_convert_it(tmp_path):
    """A profile with the earlier `[overlap]` / `[platform.*]` tables is refused in one line that
    names the file and table and says how to get a current one."""
    import pytest

    from calibration.stepform import read_profile
    from cosim.errors import InputError

    old = tmp_path / "old.toml"
    old.write_text("[comm]\nalpha_s = 1e-5\n[overlap]\noverlap_start_frac = 0.5\n[platform.aws]\nhost_s = 0.1\n")
    with pytest.raises(InputError, match=r"old\.toml.*overlap.*calibrate fit") as exc:
        read_profile(old)
    assert "\n" not in exc.value.format_message()
