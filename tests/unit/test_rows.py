"""The rows a run keeps for its figures, as columns: every row read back as it was put in, in a few bytes a row."""

from __future__ import annotations

import dataclasses
import random
import tracemalloc
from collections import Counter

import numpy as np
import pytest

from judgebias.core.record import CallResult, ItemResult
from judgebias.core.style import Style
from judgebias.figures.rows import Rows
from tests.helpers import filled


def _rows(n: int, seed: int = 3) -> list[ItemResult]:
    """Rows of every shape a run keeps: both orders or one, errors, votes, no tokens or some, soft or none, styles,
    calls shared between rows or each row's own, an id with a character outside UTF-8's plain range."""
    rng = random.Random(seed)
    shared = (CallResult("A", None, False, offline=True), CallResult("B", None, False, offline=True))
    rows = []
    for i in range(n):
        call1 = rng.choice(["A", "B", "tie", "invalid", "error"])
        call2 = rng.choice(["A", "B", "tie", None])
        own = (CallResult(call1, None, bool(i % 2), prompt_tokens=i, model=f"m{i % 3}"),)
        rows.append(
            ItemResult(
                id=f"item-{i}" if i % 7 else f"odd-\ud800-{i}",
                verdict=rng.choice(["1", "2", "tie", "error"]),
                call1=call1,
                call2=call2,
                consistent=rng.choice([True, False, None]),
                human=rng.choice(["1", "2", "tie", None]),
                human_votes=tuple(rng.choices(["1", "2", "tie"], k=rng.randint(0, 3))),
                human_voters=(),
                model_a=rng.choice(["x", "y", None]),
                model_b=rng.choice(["y", "z"]),
                chars_a=rng.randint(0, 5000),
                chars_b=rng.randint(0, 5000),
                words_a=rng.randint(0, 900),
                words_b=rng.randint(0, 900),
                tokens_a=rng.choice([None, rng.randint(0, 2000)]),
                tokens_b=rng.choice([None, 0]),
                soft=rng.choice([None, rng.random(), 0.0, 1.0]),
                style_a=rng.choice([None, Style(), Style(bold=2, headers=1)]),
                style_b=Style(list_items=rng.randint(0, 2)),
                calls=shared if i % 3 else own,
            )
        )
    return rows


def test_every_row_reads_back_equal_to_the_row_put_in_field_by_field() -> None:
    """Each row read by index (and by iteration, and from the end) has every field of the row appended, its calls
    the same objects."""
    given = _rows(500)
    rows = Rows(given)
    assert len(given) == len(rows)
    for expected, got in zip(given, rows, strict=True):
        assert dataclasses.astuple(expected) == dataclasses.astuple(got)
        assert expected.calls is got.calls
    assert dataclasses.astuple(given[-1]) == dataclasses.astuple(rows[-1])
    assert [row.id for row in given] == rows.ids()
    with pytest.raises(IndexError):
        rows[len(given)]


def test_a_row_with_every_field_its_own_reads_back_whole() -> None:
    """A row whose every field holds a value of its own (so a field the columns forget shows)."""
    row = filled(ItemResult, chars_a=1, chars_b=2, words_a=3, words_b=4, tokens_a=5, tokens_b=6, soft=0.25, calls=())
    assert dataclasses.astuple(row) == dataclasses.astuple(Rows([row])[0])


def test_kinds_are_counted_and_spread_as_the_rows_say() -> None:
    """Each kind's count is the number of rows with its fields (counted by hand), and a value computed per kind
    lands on every row of that kind."""
    given = _rows(2000)
    rows = Rows(given)
    by_hand = Counter((r.verdict, r.call1, r.call2, r.human, r.human_votes, r.model_a, id(r.calls)) for r in given)
    counted = Counter()
    for kind, times in rows.counted():
        counted[kind.verdict, kind.call1, kind.call2, kind.human, kind.human_votes, kind.model_a, id(kind.calls)] += (
            times
        )
    assert by_hand == counted
    assert [(r.verdict, r.human_votes, r.human_voters) for r in given] == [
        (k.verdict, k.human_votes, k.human_voters) for k in rows.kind_of_each()
    ]
    assert [r.verdict == "1" and r.human == "2" for r in given] == rows.per_kind(
        lambda k: k.verdict == "1" and k.human == "2", bool
    ).tolist()


def test_lengths_and_log_ratios_are_the_rows_numbers() -> None:
    """The length columns hold the rows' numbers; the log ratio is math.log's, row by row."""
    import math

    given = _rows(300)
    rows = Rows(given)
    assert [r.chars_a for r in given] == rows.column("chars_a").tolist()
    assert [r.words_b for r in given] == rows.column("words_b").tolist()
    assert [math.log(r.words_a + 1) - math.log(r.words_b + 1) for r in given] == rows.log_ratio(
        "words_a", "words_b"
    ).tolist()


def test_token_counts_and_soft_preferences_that_start_late_read_back_in_their_rows() -> None:
    """Rows without token counts or soft preferences, then rows with them, then without again: every row reads
    back its own (None where it had none), and the columns hold NO_TOKENS and NaN there."""
    import math

    template = ItemResult(id="x", verdict="1", call1="A", call2="B", consistent=True, calls=())
    tokens = [None] * 5 + [7, 0, None, 3] + [None] * 4
    softs = [None] * 8 + [0.25, None, 0.0, 1.0, None]
    given = [
        dataclasses.replace(template, id=f"r{i}", tokens_a=t, tokens_b=None, soft=v)
        for i, (t, v) in enumerate(zip(tokens, softs, strict=True))
    ]
    rows = Rows(given)
    assert [(r.tokens_a, r.tokens_b, r.soft) for r in rows] == [
        (t, None, v) for t, v in zip(tokens, softs, strict=True)
    ]
    assert rows.column("tokens_a").tolist() == [-1 if t is None else t for t in tokens]
    assert rows.column("tokens_b").tolist() == [-1] * len(tokens)
    assert [None if math.isnan(v) else v for v in rows.soft().tolist()] == softs


def test_ids_past_four_gigabytes_of_text_keep_their_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ids' ends are kept in 4 bytes a row until the ids' text passes what 4 bytes hold (lowered here to 20
    bytes): from then on in 8, and every id reads back."""
    import judgebias.figures.rows as rows_module

    monkeypatch.setattr(rows_module, "_SHORT_END", 20)
    template = ItemResult(id="x", verdict="1", call1="A", call2="B", consistent=True, calls=())
    ids = [f"item-{i:04d}" for i in range(6)]
    rows = Rows(dataclasses.replace(template, id=item_id) for item_id in ids)
    assert rows.ids() == ids
    assert rows._id_ends.typecode == "Q"


def test_a_row_costs_a_few_dozen_bytes_when_rows_share_their_kind() -> None:
    """200,000 rows of a few kinds (an offline run's: no token counts, no soft preference) take under 40 bytes a
    row (37 measured), by tracemalloc's count: the row objects they replace took about 270."""
    shared = (CallResult("A", None, False, offline=True), CallResult("B", None, False, offline=True))
    template = ItemResult(
        id="x", verdict="1", call1="A", call2="B", consistent=True, human="1", model_a="p", model_b="q", calls=shared
    )
    rows_in = [dataclasses.replace(template, id=f"item-{i:06d}", chars_a=i % 97, words_b=i % 13) for i in range(1000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        rows = Rows()
        for i in range(200_000):
            rows.append(rows_in[i % 1000])
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 1 == len(rows.kinds)
    assert used < 200_000 * 40, f"{used / 200_000:.0f} bytes a row"


def test_rows_of_their_own_read_back_whole_and_cost_no_more_than_the_rows_they_replace() -> None:
    """20,000 rows whose calls differ (a live run's token counts): each reads back as it was put in, and they take
    fewer bytes by tracemalloc's count than the same rows kept as ItemResult objects in a list."""
    given = [
        ItemResult(
            id=f"item-{i}",
            verdict="1",
            call1="A",
            call2="B",
            consistent=True,
            human="1",
            model_a="p",
            model_b="q",
            calls=(CallResult("A", None, False, prompt_tokens=i), CallResult("B", None, False, prompt_tokens=i + 1)),
        )
        for i in range(20_000)
    ]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        rows = Rows(given)
        as_columns = tracemalloc.get_traced_memory()[0] - before
        before = tracemalloc.get_traced_memory()[0]
        as_objects = [dataclasses.replace(row) for row in given]
        as_list = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [dataclasses.astuple(row) for row in given] == [dataclasses.astuple(row) for row in rows]
    assert len(as_objects) == len(rows)
    assert as_columns < as_list, f"{as_columns / 20_000:.0f} against {as_list / 20_000:.0f} bytes a row"


@pytest.mark.parametrize("cut", [0, 1, 137, 299, 300])
def test_rows_joined_from_parts_read_back_as_the_rows_put_in(cut: int) -> None:
    """Rows of a run's later part, sent from another process (pickled) and joined at the end: every row reads back
    as the row put in, and every column equals the one of the rows kept in one piece (token counts and soft
    preferences present in one part only included)."""
    import pickle

    given = _rows(300, seed=11)
    given[:cut] = [dataclasses.replace(row, tokens_a=None, soft=None) for row in given[:cut]]
    whole = Rows(given)
    joined = Rows(given[:cut])
    joined.extend(pickle.loads(pickle.dumps(Rows(given[cut:]))))
    assert [dataclasses.astuple(row) for row in given] == [dataclasses.astuple(row) for row in joined]
    assert joined.ids() == whole.ids()
    for name in ("chars_a", "words_b", "tokens_a", "tokens_b"):
        assert joined.column(name).tolist() == whole.column(name).tolist()
    assert joined.soft().tobytes() == whole.soft().tobytes()
    assert [(kind.verdict, times) for kind, times in joined.counted() if times] == [
        (kind.verdict, times) for kind, times in joined.counted()
    ]
    assert sum(times for _, times in joined.counted()) == len(given)


def test_rows_taken_out_read_back_as_the_same_rows_appended_one_by_one() -> None:
    """Rows.take (and keep, in place) of a shuffled subset holds, in that order, the rows that appending those rows
    makes: every field read back equal, the kinds numbered by their first row, the ids whole (one outside UTF-8's
    plain range among them)."""
    given = _rows(600)
    chosen = list(range(0, 600, 3))
    random.Random(1).shuffle(chosen)
    rows = Rows(given)
    expected = Rows([given[i] for i in chosen])

    taken = rows.take(np.array(chosen, dtype=np.int64))

    assert [given[i] for i in chosen] == list(taken)
    assert [kind.verdict for kind in expected.kinds] == [kind.verdict for kind in taken.kinds]
    assert list(expected.codes()) == list(taken.codes())
    assert expected.ids() == taken.ids()
    assert list(expected.soft()) == pytest.approx(list(taken.soft()), nan_ok=True)
    rows.keep(np.array(chosen, dtype=np.int64))
    assert [given[i] for i in chosen] == list(rows)
