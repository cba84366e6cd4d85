"""`CommParams`: the tunable constants of the collective cost model, and how they are loaded.

Field names are the contract with `cosim calibrate fit`, which writes a ``[comm]`` section in
a TOML calibration profile; any subset of the fields below may appear there (unknown keys are
an error naming the file and key). A cluster preset may carry its own ``[comm]`` table too;
precedence: dataclass defaults < preset ``[comm]`` < calibration profile < explicit overrides.

Per-step latency of an algorithm step = fabric latency of the path the step's edge takes
(`Topology.link_latency_s`, from the preset's datasheet numbers) + the α of the tiers it
crosses below + the protocol's per-step latency. Per-byte cost = 1 / (usable bandwidth ×
tier β efficiency × algorithm efficiency × protocol bandwidth factor).

=========================  =========================================================================
field                      meaning (units in the name)
=========================  =========================================================================
base_latency_s             fixed cost of one collective call (kernel launch, NCCL setup), per bucket
alpha_intra_s              extra per step whose edge stays inside a node
alpha_net_s                extra per step whose edge crosses the network (proxy, RDMA post)
alpha_spine_s              extra per step whose edge also crosses a leaf uplink (spine tier)
alpha_core_s               extra per step whose edge also crosses a pod uplink (core tier)
host_staging_latency_s     extra per network step when an end's NIC lacks GPUDirect (bounce buffer)
beta_efficiency_intra      fraction of intra-node bandwidth a collective achieves
beta_efficiency_net        fraction of NIC / switch bandwidth a collective achieves
ring_efficiency            algorithm bandwidth factor: ring
tree_efficiency            algorithm bandwidth factor: double binary tree (NCCL trees reach less)
hierarchical_efficiency    algorithm bandwidth factor: hierarchical (RS → inter AR → AG)
ll_bw_factor               NCCL LL protocol: payload share of wire bytes (8-byte lines, 4 of flag)
ll128_bw_factor            NCCL LL128 protocol: 120 of every 128 bytes are payload
ll_step_latency_s          per-step latency of LL (lowest)
ll128_step_latency_s       per-step latency of LL128
simple_step_latency_s      per-step latency of Simple (full bandwidth, highest latency)
bucket_bytes               DDP gradient bucket cap (PyTorch default bucket_cap_mb = 25 MiB)
algorithm                  "auto" | "ring" | "tree" | "hierarchical" | "multidim" (default for all-reduce;
                           "multidim" = the ASTRA-sim style per-dimension collective,
                           `collectives.multidim`; never chosen by "auto")
=========================  =========================================================================
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from cosim.errors import InputError
from cosim.tomlfile import read_toml

ALGORITHMS = ("ring", "tree", "hierarchical", "multidim")
PROTOCOLS = ("ll", "ll128", "simple")
#: bounds that no real fabric or framework comes near; beyond them a value is a mistake
MAX_LATENCY_S = 1.0
MAX_BUCKET_BYTES = 2.0**40


@dataclass(frozen=True)
class CommParams:
    base_latency_s: float = 6.0e-6
    alpha_intra_s: float = 0.5e-6
    alpha_net_s: float = 2.0e-6
    alpha_spine_s: float = 0.5e-6
    alpha_core_s: float = 1.0e-6
    host_staging_latency_s: float = 5.0e-6
    beta_efficiency_intra: float = 0.85
    beta_efficiency_net: float = 0.92
    ring_efficiency: float = 1.0
    tree_efficiency: float = 0.85
    hierarchical_efficiency: float = 1.0
    ll_bw_factor: float = 0.5
    ll128_bw_factor: float = 0.9375
    ll_step_latency_s: float = 0.0
    ll128_step_latency_s: float = 0.6e-6
    simple_step_latency_s: float = 2.0e-6
    bucket_bytes: float = 25 * 2**20
    algorithm: str = "auto"

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "algorithm":
                if v not in ("auto",) + ALGORITHMS:
                    raise InputError.at(field="comm.algorithm", expected="auto | " + " | ".join(ALGORITHMS),
                                        got=v)
            elif not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):  # inf latencies too
                raise InputError.at(field=f"comm.{f.name}", expected="a finite non-negative number", got=v)
        for name in ("beta_efficiency_intra", "beta_efficiency_net", "ring_efficiency", "tree_efficiency",
                     "hierarchical_efficiency", "ll_bw_factor", "ll128_bw_factor", "bucket_bytes"):
            if not getattr(self, name) > 0:
                raise InputError.at(field=f"comm.{name}", expected="a positive number", got=getattr(self, name))
        # physical ranges: a share of a link's bandwidth is at most all of it, and a per-step latency
        # of a second or more is no fabric (a misplaced exponent in a profile, not a slow network)
        for name in ("beta_efficiency_intra", "beta_efficiency_net", "ring_efficiency", "tree_efficiency",
                     "hierarchical_efficiency", "ll_bw_factor", "ll128_bw_factor"):
            if getattr(self, name) > 1:
                raise InputError.at(field=f"comm.{name}", expected="a fraction of the link's bandwidth, at most 1",
                                    got=getattr(self, name))
        for f in dataclasses.fields(self):
            if f.name.endswith("_s") and getattr(self, f.name) >= MAX_LATENCY_S:
                raise InputError.at(field=f"comm.{f.name}", expected=f"a per-step latency below {MAX_LATENCY_S:g} s",
                                    got=getattr(self, f.name))
        if self.bucket_bytes > MAX_BUCKET_BYTES:
            raise InputError.at(field="comm.bucket_bytes", expected=f"a gradient bucket of at most {MAX_BUCKET_BYTES:g} "
                                "bytes", got=self.bucket_bytes)

    # ------------------------------------------------------------------ loading
    def replace(self, **changes: Any) -> "CommParams":
        return self.with_mapping(changes, source="overrides")

    def with_mapping(self, table: Mapping[str, Any], source: str = "comm") -> "CommParams":
        """Return a copy with the fields in `table` replaced (validated, errors name `source`)."""
        names = {f.name: f for f in dataclasses.fields(self)}
        changes: dict[str, Any] = {}
        for key, value in table.items():
            if key not in names:
                raise InputError.at(source, field=f"comm.{key}", expected=f"one of {sorted(names)}")
            if key == "algorithm":
                changes[key] = str(value)
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError.at(source, field=f"comm.{key}", expected="a number", got=value)
            else:
                changes[key] = float(value)
        try:
            return dataclasses.replace(self, **changes)
        except InputError as exc:
            raise InputError(f"{source}: {exc.format_message()}") from None

    @classmethod
    def from_toml(cls, path: str | Path, section: str = "comm", base: "CommParams | None" = None) -> "CommParams":
        """Read the `[comm]` section of a calibration profile over `base` (defaults if None)."""
        p = Path(path)
        data = read_toml(p, "calibration TOML file")
        table = data.get(section, {})
        if not isinstance(table, dict):
            raise InputError.at(p, field=section, expected="a table", got=table)
        return (base or cls()).with_mapping(table, source=str(p))

    @classmethod
    def for_cluster(cls, spec: Any, calibration: str | Path | None = None, **overrides: Any) -> "CommParams":
        """Defaults < the preset's [comm] table < a calibration profile's [comm] < overrides."""
        params = cls().with_mapping(getattr(spec, "comm", {}) or {}, source=getattr(spec, "source", "preset"))
        if calibration is not None:
            params = cls.from_toml(calibration, base=params)
        return params.with_mapping(overrides, source="overrides") if overrides else params

    def protocol_table(self) -> tuple[tuple[float, float], ...]:
        """(bandwidth factor, per-step latency) for LL, LL128, Simple."""
        return ((self.ll_bw_factor, self.ll_step_latency_s),
                (self.ll128_bw_factor, self.ll128_step_latency_s),
                (1.0, self.simple_step_latency_s))
