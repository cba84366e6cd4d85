"""Cluster and fabric: presets → Topology (numpy arrays of GPUs, nodes, leaves, pods, links, routes)."""
