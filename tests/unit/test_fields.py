"""Your field names and label words mapped to judgebias's, as written by hand from the records."""

from __future__ import annotations

from judgebias.core.fields import FieldMap, guessed_fields, mapping_problem


def test_a_mapping_that_swaps_two_names_reads_both() -> None:
    swap = FieldMap({"a": "b", "b": "a"})
    assert swap.mapped({"id": "1", "a": "first", "b": "second"}) == {"id": "1", "a": "second", "b": "first"}


def test_fields_labels_and_empty_cells() -> None:
    fields = FieldMap({"id": "conv_id", "human": "pref"}, {"v1": "a", "v2": "b"}, empty_is_none=True)
    record = {"conv_id": 7, "pref": "v2", "model_a": "", "human_votes": "v1, v2", "other": "kept"}
    assert fields.mapped(record) == {
        "id": 7, "human": "b", "model_a": None, "human_votes": ["a", "b"], "other": "kept",
    }  # fmt: skip
    assert record["conv_id"] == 7  # the record itself is left as it is


def test_a_mapping_is_checked_before_any_reading() -> None:
    assert mapping_problem({"answer": "x"}, {}).startswith("data.fields.answer=x: 'answer' is not a field")
    assert "each role needs its own field" in str(mapping_problem({"a": "x", "b": "x"}, {}))
    assert mapping_problem({}, {"v1": "first"}).startswith("data.labels.v1=first: a label word maps to a, b or tie")
    assert mapping_problem({"a": "response_v1"}, {"v1": "A"}) is None


def test_the_usual_names_are_guessed_for_the_missing_roles() -> None:
    names = ["conv_id", "prompt", "response_v1", "response_v2", "human_pref"]
    guesses = guessed_fields(names, ["id", "a", "b"])
    assert guesses == {"id": "conv_id", "a": "response_v1", "b": "response_v2", "human": "human_pref"}
