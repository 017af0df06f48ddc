"""Which item field the bootstrap resamples by (`bootstrap.cluster`): pairs that share a question travel together.

Pure: reads items, returns each item's cluster label. The draw itself is stats.unit_counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from judgebias.core.errors import UserError
from judgebias.core.item import Item

AUTO = "auto"
OFF = ("none", "off", "item", "items")  # bootstrap.cluster values (and null) that resample items, not clusters
AUTO_FIELD = "question_id"  # what `auto` clusters by when some value of it repeats
_ITEM_FIELDS = ("id", "question", "model_a", "model_b", "human")


@dataclass(frozen=True)
class Clustering:
    """The field the bootstrap resamples by and each item's value of it, in the order of the run's rows."""

    field: str
    labels: tuple[object, ...]  # one per item; an item without the field is a cluster of its own

    @property
    def count(self) -> int:
        """The number of clusters."""
        return len(set(self.labels))


def cluster_field(setting: str | None) -> str | None:
    """The item field `bootstrap.cluster` reads (auto: question_id), or None when the bootstrap resamples items."""
    if setting is None or setting.lower() in OFF:
        return None
    return AUTO_FIELD if setting == AUTO else setting


def resolve_clustering(items: Sequence[Item], setting: str | None) -> Clustering | None:
    """The run's clustering: `auto` = question_id when a value of it repeats, a named field, or None (by item)."""
    field = cluster_field(setting)
    if field is None:
        return None
    known = {key for item in items for key in item.extra}
    return clustering_of(setting, [item.id for item in items], [field_value(item, field) for item in items], known)


def clustering_of(
    setting: str | None, ids: Sequence[str], values: Sequence[object], extra_fields: Iterable[str]
) -> Clustering | None:
    """The clustering `setting` gives items of these ids whose values of its field are `values` (`extra_fields`: the
    dataset's fields beyond the known ones, named when the field is found in no item)."""
    field = cluster_field(setting)
    if field is None:
        return None
    if setting == AUTO:
        present = [value for value in values if value is not None]
        return Clustering(field, cluster_labels(ids, values)) if len(set(present)) < len(present) else None
    if ids and all(value is None for value in values):
        known = sorted({*_ITEM_FIELDS, *extra_fields})
        raise UserError(
            f"bootstrap.cluster={setting!r}: no item has a field {setting!r}; use one of {', '.join(known)}, "
            f"or bootstrap.cluster=auto ({AUTO_FIELD} when it repeats) or bootstrap.cluster=none (by item)"
        )
    return Clustering(field, cluster_labels(ids, values))


def cluster_labels(ids: Sequence[str], values: Sequence[object]) -> tuple[object, ...]:
    """Labels per item; an item lacking the field (value None) gets its own cluster, named by its id apart from any
    value."""
    return tuple(
        ("value", label_value(v)) if v is not None else ("item", item_id)
        for item_id, v in zip(ids, values, strict=True)
    )


def field_value(item: Item, field: str) -> object:
    """The item's value of `field`: a core field, else a dataset field kept in `extra` (None when absent)."""
    if field in _ITEM_FIELDS:
        value: object = getattr(item, field)
        return value
    return item.extra.get(field)


def label_value(value: object) -> object:
    """A value usable as a cluster label (lists and dicts from JSON compared by their text)."""
    return value if isinstance(value, str | int | float | bool) else repr(value)
