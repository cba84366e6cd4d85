"""ONES (SC'21): online evolutionary batch-size orchestration (`policies.ones.policy`), its genetic
operators (`policies.ones.genome`), Beta progress predictor (`policies.ones.predictor`) and
parameters (`policies.ones.config`)."""

from policies.ones.policy import Ones  # noqa: F401  registers "ones"
