"""Hydra's plumbing for the commands: composition, schema registration, error lines, signals, run folders."""
