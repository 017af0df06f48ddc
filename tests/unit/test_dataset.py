"""Loading items: each problem in a data file is one error naming the file, the line and the field."""

from __future__ import annotations

import array
import json
from pathlib import Path

import pytest

from judgebias.core.errors import UserError
from judgebias.io import dataset
from judgebias.io.dataset import load_items, normalize_answer, resolve_path
from tests.helpers import REPO, write_items

GOOD = '{"id": "1", "question": "q", "a": "x", "b": "y"}'


def write(tmp_path: Path, text: str | bytes) -> Path:
    """A data file with the given content."""
    path = tmp_path / "items.jsonl"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(GOOD + "\n{not json\n", ":2: not valid JSON", id="bad-json"),
        pytest.param("[1, 2]\n", ":1: expected a JSON object, got list", id="not-object"),
        pytest.param('{"id": "1", "question": "q", "a": "x"}\n', ":1: field 'b': missing", id="missing-field"),
        pytest.param('{"id": " ", "question": "q", "a": "x", "b": "y"}\n', "field 'id': is empty", id="blank-id"),
        pytest.param(
            '{"id": true, "question": "q", "a": "x", "b": "y"}\n', "field 'id': must be a string", id="bool-id"
        ),
        pytest.param(GOOD + "\n" + GOOD + "\n", ":2: field 'id': duplicate id '1' (first on line 1)", id="dup"),
        pytest.param(GOOD[:-1] + ', "human": "3"}\n', "field 'human': must be a, b or tie", id="bad-human"),
        pytest.param(GOOD[:-1] + ', "human_votes": ["x"]}\n', "field 'human_votes'", id="bad-votes"),
        pytest.param(
            GOOD[:-1] + ', "human_votes": ["a"], "human_voters": ["ann", "bob"]}\n',
            "field 'human_voters': has 2 names for 1 human_votes",
            id="voters-mismatch",
        ),
        pytest.param("\n\n", "the dataset is empty", id="empty"),
        pytest.param(GOOD[:-1] + ', "a": "\\ud83d"}\n', "half of a UTF-16 surrogate pair", id="surrogate"),
    ],
)
def test_a_bad_line_is_named_by_file_line_and_field(tmp_path: Path, content: str, expected: str) -> None:
    """The first problem in a data file raises one UserError saying where it is and what is wrong."""
    path = write(tmp_path, content)

    with pytest.raises(UserError) as raised:
        load_items(path)
    assert str(path) in str(raised.value) and expected in str(raised.value), str(raised.value)


def test_every_problem_of_a_file_is_named_in_one_go(tmp_path: Path) -> None:
    """Three mistakes on three lines (bad JSON, a missing answer, a repeated id) are one error with three lines."""
    good = {"id": "1", "question": "q", "a": "x", "b": "y"}
    lines = [
        json.dumps(good),
        '{"id": "2", "question": "q", "a": "x" "b": "y"}',
        json.dumps({"id": "3", "question": "q", "a": "x"}),
        json.dumps(good),
        json.dumps(good | {"id": "5"}),
    ]
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")

    with pytest.raises(UserError) as raised:
        load_items(path)

    head, *problems = str(raised.value).splitlines()
    assert f"{path}: 3 problems; fix them and run again:" == head
    expected = [f"{path}:2: not valid JSON", f"{path}:3: field 'b': missing", f"{path}:4: field 'id': duplicate id '1'"]
    assert 3 == len(problems)
    assert all(problem.strip().startswith(start) for problem, start in zip(problems, expected, strict=True)), problems


def test_an_unterminated_string_reads_as_english(tmp_path: Path) -> None:
    """json's "Unterminated string starting at" is followed by the column, not by a second "at"."""
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "1", "question": "q", "a": "x", "b": "y}\n', encoding="utf-8")

    with pytest.raises(UserError, match=r":1: not valid JSON \(Unterminated string starting at column 45\)$"):
        load_items(path)


def test_the_problem_list_stops_at_twenty(tmp_path: Path) -> None:
    """A file with a mistake on every line is read only until 20 are found, and the error says it stopped."""
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(json.dumps({"id": str(n), "question": "q", "a": "x", "b": 5}) for n in range(1000)))

    with pytest.raises(UserError) as raised:
        load_items(path)

    head, *problems = str(raised.value).splitlines()
    assert "20 problems (the check stopped at 20; there may be more)" in head
    assert 20 == len(problems) and problems[-1].strip().startswith(f"{path}:20: field 'b'")


def test_bytes_that_are_not_utf8_are_named_with_the_fix(tmp_path: Path) -> None:
    """A file in another encoding is refused with its line and byte and the advice to save it as UTF-8."""
    path = write(tmp_path, GOOD.encode() + b"\n" + '{"id": "é"}'.encode("latin-1") + b"\n")

    with pytest.raises(UserError, match=r":2: not UTF-8 text \(byte 9\): save the file as UTF-8"):
        load_items(path)


def test_a_missing_file_and_a_folder_are_named(tmp_path: Path) -> None:
    """A path that does not exist, or is a folder, says which setting to check."""
    with pytest.raises(UserError, match="no such data file"):
        load_items(tmp_path / "nope.jsonl")
    with pytest.raises(UserError, match="is a folder, not a JSONL data file"):
        load_items(tmp_path)


def test_a_byte_order_mark_and_blank_lines_are_accepted(tmp_path: Path) -> None:
    """A UTF-8 BOM on the first line and blank lines do not count as errors; unknown fields are kept."""
    path = write(tmp_path, b"\xef\xbb\xbf" + GOOD[:-1].encode() + b', "turn": 2}\r\n\n')

    (item,) = load_items(path)
    assert ("1", "q", "x", "y", {"turn": 2}) == (item.id, item.question, item.a, item.b, item.extra)


def test_a_data_root_that_is_not_a_folder_names_the_setting_and_the_folder(tmp_path: Path) -> None:
    """A wrong data.root names the setting and the fix, and the folder once when it is written as it was read."""
    nowhere = str(tmp_path / "nowhere")
    with pytest.raises(UserError) as raised:
        resolve_path("items.jsonl", nowhere)
    message = str(raised.value)
    assert f"data.root={nowhere!r} is not a folder: pass the folder that holds items.jsonl" == message
    assert 1 == message.count(nowhere)


def test_the_shared_root_needs_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """root=shared without JUDGEBIAS_DATA_ROOT names the variable to set."""
    monkeypatch.delenv("JUDGEBIAS_DATA_ROOT", raising=False)

    with pytest.raises(UserError, match="JUDGEBIAS_DATA_ROOT is not set"):
        resolve_path("items.jsonl", "shared")


def test_normalising_strips_a_whole_answer_fence_and_cuts_words() -> None:
    """Normalisation removes a fence around the whole answer, then keeps the first N words."""
    assert "one two" == normalize_answer("  ```python\none two three\n```  ", strip=True, truncate_words=2)


def test_labels_may_say_a_and_b_as_well_as_1_and_2(tmp_path: Path) -> None:
    """human and human_votes accept a/b (any case) and 1/2 alike, read as the verdict's "1"/"2"."""
    path = write(
        tmp_path,
        GOOD[:-1] + ', "human": "B", "human_votes": ["a", "2", "tie", 1], "human_voters": ["p", "q", "r", "s"]}\n',
    )

    (item,) = load_items(path)

    assert ("2", ("1", "2", "tie", "1"), ("p", "q", "r", "s")) == (item.human, item.human_votes, item.human_voters)


def test_the_data_page_counts_q1s_labels_as_the_file_has_them() -> None:
    """docs/data.md's q1 row states the number of human labels and ties the shipped file holds."""
    rows = [
        json.loads(line) for line in (REPO / "src/judgebias/datasets/q1.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    labelled = sum(row.get("human") is not None for row in rows)
    ties = sum(row.get("human") == "tie" for row in rows)
    (row,) = [
        line for line in (REPO / "docs/data.md").read_text(encoding="utf-8").splitlines() if line.startswith("| `q1`")
    ]

    assert f"`human` on all {labelled} ({ties} of them ties;" in row and labelled == len(rows)


def test_a_missing_answer_names_the_fields_found_and_the_mapping(tmp_path: Path) -> None:
    """A file with response_a/response_b is told which fields it has and the overrides that read them as a and b."""
    path = write(tmp_path, '{"id": "1", "question": "q", "response_a": "x", "response_b": "y"}\n')

    with pytest.raises(UserError) as error:
        load_items(path)

    message = str(error.value)
    assert message.startswith(
        f"{path}:1: field 'a': missing (the line has 'id', 'question', 'response_a', 'response_b')"
    )
    assert message.endswith("map them: data.fields.a=response_a data.fields.b=response_b")


def test_a_file_of_ones_own_under_a_shipped_data_option_suggests_data_jsonl() -> None:
    """data.path=pairs.jsonl with the default data=q1 looks in the package: the error says to choose data=jsonl."""
    with pytest.raises(UserError) as error:
        resolve_path("pairs.jsonl", "embedded")

    assert "choose data=jsonl: data=jsonl data.path=pairs.jsonl" in str(error.value)


def test_duplicates_among_many_problems_are_the_first_twenty_in_line_order(tmp_path: Path) -> None:
    """Bad lines and duplicate ids interleaved past twenty problems: the first twenty of them by line, each named as
    a reader of the file names it (a duplicate with the line of its id's first valid item), and no later one."""
    good = {"question": "q", "a": "x", "b": "y"}
    lines, expected = [], []
    for number in range(1, 61):
        if number % 3 == 0:  # the id of the line two before: a duplicate
            lines.append(json.dumps(good | {"id": f"n{number - 2}"}))
            expected.append(f"{tmp_path / 'items.jsonl'}:{number}: field 'id': duplicate id 'n{number - 2}' "
                            f"(first on line {number - 2})")  # fmt: skip
        elif number % 3 == 2:  # no answer b
            lines.append(json.dumps({"id": f"n{number}", "question": "q", "a": "x"}))
            expected.append(f"{tmp_path / 'items.jsonl'}:{number}: field 'b': missing")
        else:
            lines.append(json.dumps(good | {"id": f"n{number}"}))
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(UserError) as raised:
        load_items(path)

    head, *problems = str(raised.value).splitlines()
    assert head.startswith(f"{path}: 20 problems (the check stopped at 20; there may be more)")
    assert 20 == len(problems)
    assert all(problem.strip().startswith(want) for problem, want in zip(problems, expected[:20], strict=True)), (
        problems
    )


def test_two_ids_whose_hashes_collide_are_not_called_duplicates(tmp_path: Path) -> None:
    """Duplicates are found by a hash of each id and then confirmed on the lines: two different ids given the same
    hash are no problem, and the same id on two lines still is one, named with the first line."""
    good = {"question": "q", "a": "x", "b": "y"}
    path = tmp_path / "items.jsonl"
    path.write_text(
        "\n".join(json.dumps(good | {"id": item_id}) for item_id in ("p", "q", "r", "p")) + "\n", encoding="utf-8"
    )
    lines = array.array("I", [1, 2, 3, 4])
    assert [] == dataset._duplicates(path, array.array("q", [7, 7, 9, 11]), lines, dataset.JSONL)
    assert [f"{path}:4: field 'id': duplicate id 'p' (first on line 1)"] == dataset._duplicates(
        path, array.array("q", [7, 7, 7, 7]), lines, dataset.JSONL
    )


def test_the_second_reading_builds_the_items_the_check_built(tmp_path: Path) -> None:
    """Every line of the embedded dataset and of lines with odd but valid fields (a prompt for a question, a or b
    labels, votes and their names, extra fields): the checked reading gives the same items, extra fields included."""
    records = [json.loads(line) for line in (REPO / "src/judgebias/datasets/q1.jsonl").read_text().splitlines()]
    records += [
        {"id": "p", "prompt": "Q?", "a": "", "b": "y", "human": "A", "topic": [1, 2]},
        {"id": "v", "question": "Q?", "a": "x", "b": "y", "human_votes": ["a", "tie"], "human_voters": ["m", "n"]},
        {"id": "m", "question": "Q?", "a": "x", "b": "y", "human": 2, "model_a": "m1", "model_b": None},
    ]
    path = write_items(tmp_path / "items.jsonl", records)
    first, second = load_items(path), list(dataset.read_items(path, checked=True))
    assert [(item, item.extra) for item in first] == [(item, item.extra) for item in second]


def test_a_line_edited_after_the_check_is_still_refused_on_the_second_reading(tmp_path: Path) -> None:
    """An answer that is no longer text when the file is read again is named as the check names it, not read."""
    path = write_items(tmp_path / "items.jsonl", [{"id": "1", "question": "q", "a": 3, "b": "y"}])
    with pytest.raises(UserError, match=rf"{path}:1: field 'a': must be a string"):
        list(dataset.read_items(path, checked=True))


def test_a_file_of_another_format_under_a_shipped_data_option_suggests_data_file() -> None:
    """data.path=pairs.csv with the default data=q1: the option that reads any format is data=file."""
    with pytest.raises(UserError) as error:
        resolve_path("pairs.csv", "embedded")

    assert "choose data=file: data=file data.path=pairs.csv" in str(error.value)
