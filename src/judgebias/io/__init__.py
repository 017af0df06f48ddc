"""Files in and out: datasets, JSONL, atomic writes, the run's outputs and provenance."""
