"""`--calibration` sets compute/communication overlap as well as collective parameters."""

from __future__ import annotations

from experiments.runner import RunConfig, run


def _exposed_share(tmp_path, calibration):
    cfg = RunConfig(trace="synth:philly-sia:40:2h", cluster="ares-testbed", cluster_nodes=16, policies=("fifo",),
                    calibration=calibration, seed=1)
    jobs = run(cfg, None).jobs["fifo"]
    return jobs["exposed_comm_s"].sum() / jobs["executed_s"].sum()


def test_profile_overlap_is_applied(tmp_path):
    late = tmp_path / "late.toml"  # communication can start only when compute ends: nothing hides it
    late.write_text("[overlap]\noverlap_start_frac = 1.0\n")
    early = tmp_path / "early.toml"  # communication may start at once: more of it hides
    early.write_text("[overlap]\noverlap_start_frac = 0.0\n")
    s_late, s_early = _exposed_share(tmp_path, str(late)), _exposed_share(tmp_path, str(early))
    assert s_late > 0.05
    assert s_early < s_late
