"""Your data as it is: the same pairs as CSV, TSV, a JSON array, Parquet and Arrow written by pyarrow, and a dataset
saved by Hugging Face `datasets`, under the user's own field names and label words, give the verdicts and summary
the same pairs in judgebias's JSONL shape give; errors name the file, the line (or row) and the field."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.helpers import THEIR_NAMES as MAPPING
from tests.helpers import InProcessCli, JsonHandler, serving, write_items

# Written by hand: quotes, the delimiters, newlines inside a cell, non-ASCII text, an id that is a number, a pair
# without a human label, a label of each kind.
PAIRS: list[dict[str, Any]] = [
    {"id": "1", "question": "What is 2+2?", "a": "4", "b": 'It is "4", of course.', "human": "b"},
    {"id": "2", "question": "Name a colour,\nplease", "a": "Red,\tcrimson", "b": "Blue\n\nsky blue", "human": "a"},
    {"id": "q-3", "question": "Capital of France?", "a": "Paris", "b": "Lyon", "human": "tie"},
    {"id": "4", "question": "Übersetze: cat", "a": "Katze 🐱", "b": "Hund", "human": None},
    {"id": "5", "question": "Say hi", "a": "hi", "b": "hello there, friend", "human": "a"},
]
THEIRS = {"id": "conv_id", "question": "prompt", "a": "response_v1", "b": "response_v2", "human": "human_pref"}
WORDS = {"a": "v1", "b": "v2", "tie": "tie"}
NOT_THE_SAME = {"data", "judging_seconds", "wall_seconds", "started_at", "finished_at", "run_dir"}


def _theirs(pair: dict[str, Any]) -> dict[str, Any]:
    """A pair under the user's own names and label words (ids 1 and 2 as numbers, as a spreadsheet gives them)."""
    own: dict[str, Any] = {THEIRS[key]: value for key, value in pair.items()}
    own["human_pref"] = None if pair["human"] is None else WORDS[pair["human"]]
    if pair["id"].isdigit():
        own["conv_id"] = int(pair["id"])
    return own


def _write_delimited(path: Path, rows: list[dict[str, Any]], delimiter: str) -> Path:
    with path.open("w", encoding="utf-8-sig", newline="") as file:  # with a byte order mark, as Excel saves
        writer = csv.DictWriter(file, fieldnames=list(rows[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)
    return path


def _write(form: str, folder: Path, rows: list[dict[str, Any]]) -> Path:
    """The rows in one format, written by that format's own library (csv, json, pyarrow, datasets)."""
    if form == "csv":
        return _write_delimited(folder / "pairs.csv", rows, ",")
    if form == "tsv":
        return _write_delimited(folder / "pairs.tsv", rows, "\t")
    if form == "json":
        path = folder / "pairs.json"
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=2), encoding="utf-8")
        return path
    if form == "jsonl":
        return write_items(folder / "pairs.jsonl", rows)
    pa = pytest.importorskip("pyarrow")
    table = pa.Table.from_pylist([{**row, "conv_id": str(row["conv_id"])} for row in rows])
    if form == "parquet":
        pytest.importorskip("pyarrow.parquet").write_table(table, folder / "pairs.parquet")
        return folder / "pairs.parquet"
    if form == "arrow":
        pytest.importorskip("pyarrow.feather").write_feather(table, folder / "pairs.arrow")
        return folder / "pairs.arrow"
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list([{**row, "conv_id": str(row["conv_id"])} for row in rows]).save_to_disk(
        str(folder / "pairs_dataset")
    )
    return folder / "pairs_dataset"


def _same_run(first: Any, second: Any) -> None:
    assert first.code == 0 and second.code == 0, (first, second)
    assert (first.run_dir / "verdicts.jsonl").read_bytes() == (second.run_dir / "verdicts.jsonl").read_bytes()
    one, other = first.summary(), second.summary()
    assert {k: v for k, v in one.items() if k not in NOT_THE_SAME} == {
        k: v for k, v in other.items() if k not in NOT_THE_SAME
    }


@pytest.mark.parametrize("form", ["jsonl", "csv", "tsv", "json", "parquet", "arrow", "hf"])
def test_each_format_under_your_names_gives_the_outputs_of_our_jsonl(
    form: str, cli_here: InProcessCli, tmp_path: Path
) -> None:
    ours = write_items(tmp_path / "ours.jsonl", PAIRS)
    theirs = _write(form, tmp_path, [_theirs(pair) for pair in PAIRS])
    reference = cli_here("data=jsonl", f"data.path={ours}")
    read = cli_here("data=file", f"data.path={theirs}", *MAPPING)
    _same_run(reference, read)
    assert [line["id"] for line in read.verdicts()] == ["1", "2", "q-3", "4", "5"]


def test_the_format_can_be_named_when_the_extension_does_not_say(cli_here: InProcessCli, tmp_path: Path) -> None:
    ours = write_items(tmp_path / "ours.jsonl", PAIRS)
    written = _write("csv", tmp_path, [_theirs(pair) for pair in PAIRS])
    renamed = written.rename(tmp_path / "export.txt")
    _same_run(
        cli_here("data=jsonl", f"data.path={ours}"),
        cli_here(f"data.path={renamed}", "data=file", "data.format=csv", *MAPPING),
    )


def test_a_file_that_lacks_the_fields_everywhere_is_told_once_with_the_overrides(
    cli_here: InProcessCli, tmp_path: Path
) -> None:
    theirs = _write("csv", tmp_path, [_theirs(pair) for pair in PAIRS] * 5)
    result = cli_here("data=file", f"data.path={theirs}")
    assert result.code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "conv_id" in lines[0] and "response_v1" in lines[0]
    assert "data.fields.id=conv_id" in lines[0] and "data.fields.a=response_v1" in lines[0]
    assert "data.fields.b=response_v2" in lines[0]
    assert "Traceback" not in result.stderr


def test_an_unmapped_label_word_names_the_row_the_field_and_the_mapping(cli_here: InProcessCli, tmp_path: Path) -> None:
    theirs = _write("parquet", tmp_path, [_theirs(pair) for pair in PAIRS])
    fields_only = [override for override in MAPPING if override.startswith("data.fields.")]
    result = cli_here("data=file", f"data.path={theirs}", *fields_only)
    assert result.code == 2
    # row 1 holds "v2": the file's own field name, the row, and the override that maps the word
    assert f"{theirs}: row 1: field 'human_pref' (read as human)" in result.stderr
    assert "data.labels.v2=a (or b, or tie)" in result.stderr


def test_a_csv_record_is_named_by_the_line_it_starts_on(cli_here: InProcessCli, tmp_path: Path) -> None:
    # line 1 header; record 1 on line 2; record 2 spans lines 3-4 (a quoted newline); record 3 on line 5 lacks b
    path = tmp_path / "pairs.csv"
    path.write_text('id,question,a,b\n1,q,x,y\n2,"two\nlines",x,y\n3,q,x,\n', encoding="utf-8")
    result = cli_here("data=file", f"data.path={path}")
    assert result.code == 2
    assert f"{path}:5: field 'b': missing" in result.stderr


def test_a_csv_record_with_more_cells_than_the_header_is_refused(cli_here: InProcessCli, tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text("id,question,a,b\n1,q,x,y\n2,q,x,y,z\n", encoding="utf-8")
    result = cli_here("data=file", f"data.path={path}")
    assert result.code == 2
    assert f"{path}:3: the record has 5 cells and the header 4 fields" in result.stderr


def test_ids_that_read_as_the_same_text_are_refused(cli_here: InProcessCli, tmp_path: Path) -> None:
    path = write_items(
        tmp_path / "pairs.jsonl",
        [{"id": 7, "question": "q", "a": "x", "b": "y"}, {"id": "7", "question": "r", "a": "x", "b": "y"}],
    )
    result = cli_here("data=jsonl", f"data.path={path}")
    assert result.code == 2
    assert f"{path}:2: field 'id': duplicate id '7' (first on line 1)" in result.stderr


def test_a_mapping_to_a_role_that_does_not_exist_is_one_line(cli_here: InProcessCli, tmp_path: Path) -> None:
    ours = write_items(tmp_path / "ours.jsonl", PAIRS)
    result = cli_here("data=jsonl", f"data.path={ours}", "data.fields.answer_one=x")
    assert result.code == 2
    assert "data.fields.answer_one=x: 'answer_one' is not a field judgebias reads" in result.stderr
    result = cli_here("data=jsonl", f"data.path={ours}", "data.labels.v1=first")
    assert result.code == 2
    assert "data.labels.v1=first: a label word maps to a, b or tie" in result.stderr


def test_a_mapping_in_a_data_yaml_of_your_own(cli_here: InProcessCli, tmp_path: Path) -> None:
    theirs = _write("csv", tmp_path, [_theirs(pair) for pair in PAIRS])
    own = tmp_path / "configs" / "data"
    own.mkdir(parents=True)
    (own / "mine.yaml").write_text(
        "defaults: [file, _self_]\n"
        "name: mine\n"
        f"path: {theirs}\n"
        "fields: {id: conv_id, question: prompt, a: response_v1, b: response_v2, human: human_pref}\n"
        "labels: {v1: a, v2: b}\n",
        encoding="utf-8",
    )
    ours = write_items(tmp_path / "ours.jsonl", PAIRS)
    mine = cli_here("--config-dir", str(tmp_path / "configs"), "data=mine")
    _same_run(cli_here("data=jsonl", f"data.path={ours}"), mine)


def test_a_parquet_file_that_is_not_one_is_one_line(cli_here: InProcessCli, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "pairs.parquet"
    path.write_text("id,question\n", encoding="utf-8")
    result = cli_here("data=file", f"data.path={path}")
    assert result.code == 2
    assert result.stderr.startswith(f"judgebias: error: {path}: not readable as Parquet")
    assert len(result.stderr.strip().splitlines()) == 1


ASK = {"role": "user", "content": "Name a fruit."}
APPLE = {"role": "assistant", "content": "Apple."}
WHY = {"role": "user", "content": "Why that one?"}


class PromptRecorder(JsonHandler):
    """An OpenAI-compatible judge that answers "A" and keeps every request's user message, as it received it."""

    prompts: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.request_body())
        self.prompts.append(next(m["content"] for m in body["messages"] if m["role"] == "user"))
        choice = {"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}
        self.send_json(200, {"model": "m", "choices": [choice], "usage": {"prompt_tokens": 1}})


def test_chat_conversations_show_the_shared_turns_once_and_compare_the_final_replies(
    cli_here: InProcessCli, tmp_path: Path
) -> None:
    items = [
        {"id": "c1", "a": [ASK, APPLE, WHY, {"role": "assistant", "content": "It is crisp."}],
         "b": [ASK, APPLE, WHY, {"role": "assistant", "content": "It is sweet."}]},
        {"id": "c2", "messages": [ASK], "a": "Kiwi.", "b": "Mango."},
    ]  # fmt: skip
    path = write_items(tmp_path / "chats.jsonl", items)
    recorder = type("Recorder", (PromptRecorder,), {"prompts": []})
    with serving(recorder) as url:
        overrides = ("judge=local", f"judge.base_url={url}", "judge.api_key_env=null", "report=false")
        result = cli_here("data=jsonl", f"data.path={path}", "rubric=chat", *overrides)
    assert result.code == 0, result
    prompts = recorder.prompts
    assert len(prompts) == 4  # two calls an item, as ever
    about_c1 = [prompt for prompt in prompts if "It is crisp." in prompt]
    assert len(about_c1) == 2
    for prompt in about_c1:
        assert prompt.count("Name a fruit.") == 1 and prompt.count("Apple.") == 1  # the shared turns, once
        assert prompt.startswith("[Context]\n### User:\nName a fruit.\n\n### Assistant:\nApple.\n")
        assert "[Last user message]\nWhy that one?" in prompt and "It is sweet." in prompt
    about_c2 = [prompt for prompt in prompts if "Kiwi." in prompt]
    assert len(about_c2) == 2 and all(p.startswith("[Last user message]\nName a fruit.") for p in about_c2)
    assert [line["id"] for line in result.verdicts()] == ["c1", "c2"]


def test_people_s_labels_merge_into_a_run_on_your_csv(cli_here: InProcessCli, tmp_path: Path) -> None:
    """The review loop reads the run's CSV as the run did (its names and words) and writes the labelled copy in
    judgebias's own JSONL shape, which a run reads without any mapping."""
    from judgebias.review.__main__ import main as review

    unlabelled = [{**_theirs(pair), "human_pref": None} for pair in PAIRS]
    theirs = _write("csv", tmp_path, unlabelled)
    run = cli_here("data=file", f"data.path={theirs}", *MAPPING, "report=false")
    assert run.code == 0, run
    labels = tmp_path / "ann.jsonl"
    labels.write_text(
        '{"id": "1", "label": "b", "annotator": "ann"}\n{"id": "q-3", "label": "tie", "annotator": "ann"}\n',
        encoding="utf-8",
    )
    out = tmp_path / "labelled.jsonl"
    assert 0 == review(["merge", str(labels), "--into", str(run.run_dir), "--out", str(out)])
    copy = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [record["id"] for record in copy] == ["1", "2", "q-3", "4", "5"]  # a CSV cell is text
    assert (copy[0]["a"], copy[0]["b"], copy[0]["question"]) == ("4", 'It is "4", of course.', "What is 2+2?")
    assert (copy[0]["human"], copy[0]["human_votes"], copy[0]["human_voters"]) == ("2", ["2"], ["ann"])
    assert copy[2]["human_votes"] == ["tie"] and "human_votes" not in copy[1]
    again = cli_here("data=jsonl", f"data.path={out}", "report=false")
    assert again.code == 0, again
    assert [line["id"] for line in again.verdicts()] == ["1", "2", "q-3", "4", "5"]
    assert [line.get("human") for line in again.verdicts()] == ["2", None, "tie", None, None]


def test_a_saved_dataset_dict_needs_its_split_named(cli_here: InProcessCli, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = [{**_theirs(pair), "conv_id": str(_theirs(pair)["conv_id"])} for pair in PAIRS]
    folder = tmp_path / "splits"
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(rows[:2]), "test": datasets.Dataset.from_list(rows)}
    ).save_to_disk(str(folder))
    unnamed = cli_here("data=file", f"data.path={folder}", *MAPPING)
    assert unnamed.code == 2
    assert f"{folder}: holds the splits train, test: choose one with data.split=<name>" in unnamed.stderr
    ours = write_items(tmp_path / "ours.jsonl", PAIRS)
    _same_run(
        cli_here("data=jsonl", f"data.path={ours}"),
        cli_here("data=file", f"data.path={folder}", "data.split=test", *MAPPING),
    )
