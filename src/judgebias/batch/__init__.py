"""Batch mode: batch files, the Batch API client, and the pre-pass that fills a run's cache from a batch."""
