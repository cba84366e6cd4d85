"""Trace sources → one canonical job table (see `traces.schema`)."""
