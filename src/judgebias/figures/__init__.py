"""The figures a run reports, computed from its recorded calls: statistics, metrics, the summary. Pure."""
