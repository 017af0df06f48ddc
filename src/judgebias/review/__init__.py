"""The human review loop: sample a run's items, label them on an offline page, merge the labels into the data."""
