"""Collective costs for a placement (ring, tree, hierarchical) and cross-job link contention."""
