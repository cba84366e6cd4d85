"""Model zoo, measurement (NCCL/gloo sweeps, step times), importers of measured sets, fitting, validation."""
