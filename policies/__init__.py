"""Scheduling and placement policies behind `simcore.api.Policy`, looked up by name in a registry."""
