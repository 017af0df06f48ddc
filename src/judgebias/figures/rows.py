"""The rows a run keeps for its figures, as compact columns: a million items in tens of megabytes, not hundreds.

A row (ItemResult) is mostly what many rows share: its verdict and calls, its human label and votes, the models
compared, the answers' formatting. Those fields are the row's *kind* (core.record.ItemKind), kept once in a table
(`kinds`); each row keeps only its kind's number, its lengths, its soft preference and its id, a few dozen bytes in
arrays. Where rows share
little (a live run's calls carry each reply's token counts), a kind is kept per row, without the table to find it. A figure that
reads only a kind's fields is computed once per kind (`per_kind`) and spread over the rows by their numbers; one
that reads lengths reads them as numpy columns. `Rows` is still a Sequence[ItemResult]: a row read by index is
built from its columns, so code that walks rows one by one keeps working (slowly; the figures do not).

Pure: no I/O.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import fields
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from judgebias.core.frozen import slot_filler
from judgebias.core.record import ItemKind, ItemResult, new_item_result

NO_TOKENS = -1  # tokens_a/tokens_b not counted (the tokenizer is words): None in the row
_LOOKED_UP = 4096  # kinds past which the table of kinds is dropped if most rows have a kind of their own
_LOG_TABLE = 1 << 16  # lengths below this read their logarithm from a table of every value (512 KB)
_SHORT_END = 0xFFFFFFFF  # the ids' UTF-8 up to this many bytes: their ends in 4 bytes a row
_TAKEN_IDS = 65536  # ids copied together by Rows.take


KIND_FIELDS = tuple(spec.name for spec in fields(ItemKind))  # what rows share: an ItemResult's kind
COLUMNS = tuple(spec.name for spec in fields(ItemResult) if spec.name not in KIND_FIELDS)  # each row's own
_KIND_VALUES = operator.attrgetter(*KIND_FIELDS)
_KIND_SHARED = operator.attrgetter(*KIND_FIELDS[:-1])  # but its calls (kept by identity)
_new_kind: Any = slot_filler(ItemKind, positional=True)  # those values, then the calls (mypy cannot count them)
assert KIND_FIELDS[-1] == "calls" and COLUMNS == (
    *("id", "chars_a", "chars_b", "words_a", "words_b", "tokens_a", "tokens_b", "soft"),
), "an ItemResult field of each row's own needs its column here: a field the rows share belongs to ItemKind"


class Rows(Sequence[ItemResult]):
    """A run's rows in dataset order: each row's kind number and numbers in arrays, the kinds in a table."""

    def __init__(self, rows: Iterable[ItemResult] = ()) -> None:
        self.kinds: list[ItemKind] = []  # in order of their first row: every kind here has at least one row
        # A kind's fields (its calls by identity) -> its number; None once most rows are kinds of their own.
        self._numbers: dict[tuple[Any, ...], int] | None = {}
        self._kind = array("I")
        self._chars_a, self._chars_b = array("i"), array("i")  # 4 bytes a value: an answer is under 2 GB
        self._words_a, self._words_b = array("i"), array("i")
        self._tokens_a, self._tokens_b = _Sparse("i", NO_TOKENS), _Sparse("i", NO_TOKENS)
        self._soft = _Sparse("d", math.nan)  # NaN: no soft preference
        self._id_text = bytearray()  # every id's UTF-8, one after the other (lone surrogates kept)
        self._id_ends = array("I")  # 8 bytes a row only once the ids pass 4 GB
        self._codes: NDArray[np.int32] | None = None
        for row in rows:
            self.append(row)

    @classmethod
    def of(cls, rows: Sequence[ItemResult]) -> Rows:
        """These rows as columns (the same object when they are already)."""
        return rows if isinstance(rows, Rows) else cls(rows)

    def append(self, row: ItemResult) -> None:
        """Add a row at the end (its calls tuple is kept by identity: rows of one run share equal calls' tuples)."""
        calls = row.calls
        shared: tuple[Any, ...] = _KIND_SHARED(row)
        if self._numbers is None:  # rows of their own (a live run's token counts): no table to look them up in
            number = len(self.kinds)
            self.kinds.append(_new_kind(*shared, calls))
        else:
            # The calls by identity: safe, as the kind keeps the tuple alive, so its identity is never reused here.
            key = (*shared, id(calls))
            found = self._numbers.get(key)
            if found is not None:
                number = found
            else:
                number = self._numbers[key] = len(self.kinds)
                self.kinds.append(_new_kind(*shared, calls))
                if number >= _LOOKED_UP and 2 * number > len(self._kind):
                    self._numbers = None  # most rows are a kind of their own: the table would cost more than it saves
        self._kind.append(number)
        self._chars_a.append(row.chars_a)
        self._chars_b.append(row.chars_b)
        self._words_a.append(row.words_a)
        self._words_b.append(row.words_b)
        self._tokens_a.append(row.tokens_a)
        self._tokens_b.append(row.tokens_b)
        self._soft.append(row.soft)
        self._id_text += row.id.encode("utf-8", "surrogatepass")
        end = len(self._id_text)
        if end > _SHORT_END and self._id_ends.typecode == "I":
            self._id_ends = array("Q", self._id_ends)
        self._id_ends.append(end)
        self._codes = None

    def extend(self, other: Rows) -> None:
        """Add the rows of a later part of the run at the end (their kinds appended as they are: two kinds may then
        be equal, as when the table is dropped)."""
        shift, text_before = len(self.kinds), len(self._id_text)
        self.kinds.extend(other.kinds)
        self._kind.frombytes((np.frombuffer(other._kind, dtype=np.uint32) + np.uint32(shift)).tobytes())
        for mine, theirs in zip(self._columns().values(), other._columns().values(), strict=True):
            mine.extend(theirs)
        self._tokens_a.extend(other._tokens_a)
        self._tokens_b.extend(other._tokens_b)
        self._soft.extend(other._soft)
        ends = np.frombuffer(other._id_ends, dtype=np.uint32 if other._id_ends.typecode == "I" else np.uint64)
        ends = ends.astype(np.uint64) + np.uint64(text_before)
        if ends.size and int(ends[-1]) > _SHORT_END and self._id_ends.typecode == "I":
            self._id_ends = array("Q", self._id_ends)
        self._id_ends.frombytes(ends.astype(np.uint32 if self._id_ends.typecode == "I" else np.uint64).tobytes())
        self._id_text += other._id_text
        self._codes = None

    def take(self, rows: NDArray[np.int64]) -> Rows:
        """These rows (by index, in this order) as rows of their own, as appending them one by one would make them:
        the kinds they use, numbered by their first row; their columns and ids copied."""
        out = Rows()
        codes = self.codes()[rows]
        used, first = np.unique(codes, return_index=True)
        used = used[np.argsort(first, kind="stable")]  # kinds in the order of their first row here
        renumber = np.zeros(len(self.kinds), dtype=np.uint32)
        renumber[used] = np.arange(used.size, dtype=np.uint32)
        out.kinds = [self.kinds[int(k)] for k in used]
        out._numbers = None  # no row is appended to a part taken out of a run
        out._kind = array("I", renumber[codes].tobytes())
        for mine, theirs in zip(out._columns().values(), self._columns().values(), strict=True):
            mine.frombytes(np.frombuffer(theirs, dtype=np.int32)[rows].tobytes())
        out._tokens_a, out._tokens_b = self._tokens_a.take(rows), self._tokens_b.take(rows)
        out._soft = self._soft.take(rows)
        ends = np.frombuffer(self._id_ends, dtype=np.uint32 if self._id_ends.typecode == "I" else np.uint64)
        starts = np.concatenate([np.zeros(1, dtype=ends.dtype), ends[:-1]])
        text = memoryview(self._id_text)
        for block in range(0, rows.size, _TAKEN_IDS):  # a block of ids at a time: no list of a million slices
            chosen = rows[block : block + _TAKEN_IDS]
            pairs = zip(starts[chosen].tolist(), ends[chosen].tolist(), strict=True)
            out._id_text += b"".join(text[start:end] for start, end in pairs)
        lengths = (ends[rows] - starts[rows]).astype(np.uint64)
        new_ends = np.cumsum(lengths, dtype=np.uint64)
        wide = bool(new_ends.size) and int(new_ends[-1]) > _SHORT_END
        out._id_ends = array("Q" if wide else "I", new_ends.astype(np.uint64 if wide else np.uint32).tobytes())
        return out

    def keep(self, rows: NDArray[np.int64]) -> None:
        """Keep only these rows, in this order (Rows.take in place: the columns left go at once)."""
        vars(self).update(vars(self.take(rows)))

    def __getstate__(self) -> dict[str, Any]:
        """The rows as another process receives them: without the table of kinds by identity (identities are this
        process's), so rows appended there are kinds of their own."""
        state = {name: getattr(self, name) for name in vars(self)}
        state["_numbers"], state["_codes"] = None, None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)

    def __len__(self) -> int:
        return len(self._kind)

    @overload
    def __getitem__(self, index: int) -> ItemResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[ItemResult]: ...

    def __getitem__(self, index: int | slice) -> ItemResult | list[ItemResult]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = range(len(self))[index]  # negative indices, and IndexError past the end
        kind = self.kinds[self._kind[i]]
        tokens_a, tokens_b, soft = self._tokens_a.get(i), self._tokens_b.get(i), self._soft.get(i)
        return new_item_result(
            **dict(zip(KIND_FIELDS, _KIND_VALUES(kind), strict=True)),
            id=self.id(i),
            chars_a=self._chars_a[i],
            chars_b=self._chars_b[i],
            words_a=self._words_a[i],
            words_b=self._words_b[i],
            tokens_a=tokens_a,
            tokens_b=tokens_b,
            soft=soft,
        )

    def __iter__(self) -> Iterator[ItemResult]:
        for i in range(len(self)):
            yield self[i]

    def id(self, i: int) -> str:
        """Row i's id."""
        start = self._id_ends[i - 1] if i else 0
        return self._id_text[start : self._id_ends[i]].decode("utf-8", "surrogatepass")

    def ids(self) -> list[str]:
        """Every row's id, in order."""
        return [self.id(i) for i in range(len(self))]

    def codes(self) -> NDArray[np.int32]:
        """Each row's kind number (an index into `kinds`; 4 bytes a row: a run has fewer than 2**31 rows)."""
        if self._codes is None:
            self._codes = np.frombuffer(self._kind, dtype=np.uint32).astype(np.int32)
        return self._codes

    def kind_of_each(self) -> list[ItemKind]:
        """Each row's kind, in row order: for code that reads rows one by one but only their kinds' fields (a
        pointer a row, where reading the rows themselves builds an ItemResult each)."""
        kinds = self.kinds
        return [kinds[code] for code in self._kind]

    def counts(self) -> NDArray[np.int64]:
        """How many rows each kind has (in `kinds` order)."""
        return np.bincount(self.codes(), minlength=len(self.kinds))

    def counted(self) -> Iterator[tuple[ItemKind, int]]:
        """Each kind with its number of rows, in order of their first row."""
        return zip(self.kinds, self.counts().tolist(), strict=True)

    def per_kind(self, value: Callable[[ItemKind], Any], dtype: type[np.generic] = np.float64) -> NDArray[Any]:
        """value(kind) for each row, computed once per kind."""
        table = np.fromiter(map(value, self.kinds), dtype=dtype, count=len(self.kinds))
        return table[self.codes()]

    def column(self, name: str) -> NDArray[np.int32]:
        """A length column by its ItemResult name (chars_a, words_b, tokens_a, ...; NO_TOKENS for None)."""
        if name in ("tokens_a", "tokens_b"):
            return self._tokens_a.column(len(self)) if name == "tokens_a" else self._tokens_b.column(len(self))
        return np.frombuffer(self._columns()[name], dtype=np.int32).copy()

    def difference(self, first: str, second: str) -> NDArray[np.int32]:
        """first - second per row (4 bytes a row: two lengths from 0 to 2**31 - 1 differ by less than 2**31)."""
        out = self.column(first)
        out -= self.column(second)
        return out

    def any_column(self, *names: str) -> bool:
        """Whether any row has a non-zero value in any of these length columns."""
        return any(self.column(name).any() for name in names)

    def soft(self) -> NDArray[np.float64]:
        """Each row's soft preference (NaN: none)."""
        return self._soft.column(len(self))

    def has_soft(self) -> bool:
        """Whether any row has a soft preference (without an array of every row's)."""
        return bool(self._soft.held())

    def log_ratio(self, first: str, second: str) -> NDArray[np.float64]:
        """log(first + 1) - log(second + 1) per row, each logarithm as math.log gives it (a table of the values
        that occur), so the figures are the same numbers as when they were computed row by row."""
        a, b = self.column(first), self.column(second)
        if not a.size:
            return np.zeros(0, dtype=np.float64)
        top = int(max(a.max(), b.max()))
        if top < _LOG_TABLE:  # lengths index a table of every value up to the largest
            logs = np.fromiter((math.log(v + 1) for v in range(top + 1)), dtype=np.float64, count=top + 1)
            out: NDArray[np.float64] = logs[a]
            out -= logs[b]
            return out
        values = np.union1d(a, b)
        logs = np.fromiter((math.log(int(v) + 1) for v in values), dtype=np.float64, count=values.size)
        out = logs[np.searchsorted(values, a)]
        out -= logs[np.searchsorted(values, b)]
        return out

    def _columns(self) -> dict[str, array[int]]:
        return {
            "chars_a": self._chars_a,
            "chars_b": self._chars_b,
            "words_a": self._words_a,
            "words_b": self._words_b,
        }


class _Sparse:
    """A column whose rows usually all hold None (no token count, no soft preference): no array is kept until a
    row holds a value; from then on every row has its cell, None stored as `missing`."""

    __slots__ = ("_missing", "_rows", "_typecode", "_values")

    def __init__(self, typecode: str, missing: float) -> None:
        self._typecode, self._missing = typecode, missing
        self._values: array[Any] = array(typecode)
        self._rows = 0

    def append(self, value: float | None) -> None:
        if value is not None and not self._values:
            self._values.extend([self._missing] * self._rows)  # the rows before the first value
        if value is not None or self._values:
            self._values.append(self._missing if value is None else value)
        self._rows += 1

    def held(self) -> bool:
        """Whether any row holds a value."""
        return bool(self._values)

    def extend(self, other: _Sparse) -> None:
        """Add another column's rows at the end."""
        if other._values or self._values:
            if not self._values:
                self._values.extend([self._missing] * self._rows)
            self._values.extend(other._values if other._values else [self._missing] * other._rows)
        self._rows += other._rows

    def take(self, rows: NDArray[np.int64]) -> _Sparse:
        """The column of these rows only, in this order."""
        out = _Sparse(self._typecode, self._missing)
        out._rows = int(rows.size)
        if self._values:
            out._values.frombytes(self.column(self._rows)[rows].tobytes())
        return out

    def get(self, i: int) -> Any:
        """Row i's value (None: missing)."""
        if not self._values:
            return None
        value = self._values[i]
        return None if value == self._missing or value != value else value  # NaN is missing too

    def column(self, n: int) -> NDArray[Any]:
        """All `n` rows' values, `missing` where None."""
        dtype = np.int32 if self._typecode == "i" else np.float64
        if not self._values:
            return np.full(n, self._missing, dtype=dtype)
        return np.frombuffer(self._values, dtype=dtype).copy()
