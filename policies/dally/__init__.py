"""Dally (IEEE BigData'25): the policy (`policy`), its auto-tuner (`tuner`), the paper's variants
and its Tiresias baseline (`variants`)."""

from policies.dally import policy, tuner, variants  # noqa: F401  (registers the policies)
