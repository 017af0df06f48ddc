"""Frozen slotted dataclasses made by filling their slots (core.frozen): the same objects their own __init__ makes."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from judgebias.core.frozen import replacer, slot_filler
from judgebias.core.item import Item, new_item
from judgebias.core.record import CallResult, ItemResult, new_item_result
from judgebias.core.style import Style


def _distinct(cls: type[Any]) -> dict[str, Any]:
    """A value for every field of `cls`, each different from its default."""
    values: dict[str, Any] = {}
    for number, field in enumerate(dataclasses.fields(cls)):
        kind = str(field.type)
        if "Style" in kind:
            values[field.name] = Style(headers=number)
        elif "CallResult" in kind:
            values[field.name] = (CallResult("A", f"reply {number}", True),)
        elif "tuple" in kind:
            values[field.name] = (f"v{number}",)
        elif "dict" in kind:
            values[field.name] = {"k": number}
        elif "bool" in kind:
            values[field.name] = True
        elif "float" in kind:
            values[field.name] = number + 0.5
        elif "int" in kind:
            values[field.name] = number
        else:
            values[field.name] = f"text {number}"
    return values


@pytest.mark.parametrize(("cls", "filler"), [(Item, new_item), (ItemResult, new_item_result)])
def test_a_filled_object_is_the_one_the_class_makes(cls: type[Any], filler: Any) -> None:
    """Every field the same (those left out of == among them), equal and hashing alike, still frozen, and pickled
    and read back as the class's own."""
    values = _distinct(cls)
    made, filled = cls(**values), filler(**values)
    assert type(filled) is cls
    assert all(getattr(filled, name) == value for name, value in values.items())
    assert filled == made and hash(filled) == hash(made)
    with pytest.raises(dataclasses.FrozenInstanceError):
        filled.id = "other"
    assert pickle.loads(pickle.dumps(filled)) == made


def test_every_field_is_asked_for_and_only_fitting_classes_are_filled() -> None:
    """A field left out is an error (no default is guessed); a class with __post_init__, or without slots, is
    refused."""
    values = _distinct(Item)
    del values["tokens_b"]
    with pytest.raises(TypeError, match="tokens_b"):
        new_item(**values)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True)
    class Unslotted:
        x: int

    for cls in (Checked, Unslotted):
        with pytest.raises(TypeError, match="not a slotted dataclass"):
            slot_filler(cls)


@pytest.mark.parametrize(("cls", "changed"), [(ItemResult, "calls"), (CallResult, "raw"), (Item, "human")])
def test_a_replaced_field_is_dataclasses_replace_of_it(cls: type[Any], changed: str) -> None:
    """replacer(cls, name)(obj, value) is dataclasses.replace(obj, name=value): that field set, every other field
    (a field added to the class too) copied, the copy still frozen; a field the class lacks is refused."""
    values = _distinct(cls)
    original = cls(**values)
    other = _distinct(cls)[changed] if changed != "human" else "2"
    replaced = replacer(cls, changed)(original, other)
    expected = dataclasses.replace(original, **{changed: other})
    assert type(replaced) is cls
    assert [getattr(replaced, f.name) for f in dataclasses.fields(cls)] == [
        getattr(expected, f.name) for f in dataclasses.fields(cls)
    ]
    assert replaced is not original and getattr(original, changed) == values[changed]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(replaced, changed, other)
    with pytest.raises(TypeError, match="no field 'nope'"):
        replacer(cls, "nope")
