"""The run's items, read from the data file twice, so that a run never holds the text of every item at once.

The first reading checks every line (each problem named at once, before any call), applies data.limit, and keeps
of each item only what is decided before judging starts: a hash of its id and its value of the field the bootstrap
clusters by, nothing else (an object per item, or its id, cost more than the rest of the check; a replay judge's
filter reads the ids once more). Each later reading (the batch pre-pass, the judging) streams the items again,
normalised as configured, and stops with one line if the file is no longer the one the first reading checked. A
data file that cannot be read twice (a pipe) is held in memory instead.

A large file's check is cut into parts at line starts, each later part read in a forked process (engine.parts).
When every judge answers by rule, a large file is read once instead (ItemsCheckedAsJudged, chosen by `run_items`):
each part is checked by the process that judges it, as it is judged (nothing is sent, so nothing is lost by finding
a problem late), and `conclude` stops the run as the check before judging would have, before any verdict file is
kept.
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import functools
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from judgebias.config.schema import Config
from judgebias.core.errors import UserError
from judgebias.core.item import Item
from judgebias.core.style import style_of
from judgebias.engine.parts import Forked, parts_wanted, started
from judgebias.figures.clustering import AUTO, Clustering, cluster_field, clustering_of, field_value, label_value
from judgebias.io.dataset import (
    START,
    Findings,
    Place,
    Places,
    Reading,
    cut_lines,
    normalize_item,
    read_items,
    reading_of,
    resolve_path,
)
from judgebias.io.tokenizer import WORDS, Tokenizer, load_tokenizer


@dataclasses.dataclass(frozen=True)
class _Stamp:
    """What tells that a file is still the one read: its inode, size and modification time."""

    inode: int
    size: int
    modified_ns: int

    @classmethod
    def of(cls, path: Path) -> _Stamp | None:
        """The file's stamp; None when it is gone, unreadable, or not a file that can be read twice (a pipe)."""
        try:
            found = os.stat(path)
        except OSError:
            return None
        return cls(found.st_ino, found.st_size, found.st_mtime_ns) if stat.S_ISREG(found.st_mode) else None


_MARK_EVERY = 4096  # items between two places kept for judging in parts (a million items: 245 places)


@dataclasses.dataclass(frozen=True)
class Part:
    """Items start .. stop - 1 of the run, whose first line is at `place` in the data file; or, when the items are
    checked as they are judged, the lines from `place` to the offset `end`."""

    start: int
    stop: int
    place: Place
    end: int | None = None  # the offset its lines stop at, when they are checked as they are judged (count unknown)


@dataclasses.dataclass
class _Checked:
    """What the check keeps of the items it read (of the whole file, or of a part of it): each id's hash, each
    item's value of the clustering's field (None: none), the ids of those that have one, the dataset's other fields
    (named when the field is in no item), each item's place, and what the reading found."""

    hashes: array.array[int] = dataclasses.field(default_factory=lambda: array.array("q"))
    values: list[object] = dataclasses.field(default_factory=list)
    valued: list[str] = dataclasses.field(default_factory=list)
    extra_fields: set[str] = dataclasses.field(default_factory=set)
    places: Places | None = None
    findings: Findings = dataclasses.field(default_factory=Findings)

    def extend(self, later: _Checked) -> None:
        """Add what the check of the next part of the file kept (parts in the file's order)."""
        self.hashes += later.hashes
        self.values += later.values
        self.valued += later.valued
        self.extra_fields |= later.extra_fields
        if self.places is not None and later.places is not None:
            self.places.offsets += later.places.offsets
            self.places.lines += later.places.lines
        self.findings.extend(later.findings)


CHECK_PART_MIN_BYTES = 16 << 20  # a data file's bytes below which its check is not cut into parts


def _check_lines(
    path: Path,
    reading: Reading,
    field: str | None,
    limit: int | None,
    held: list[Item] | None,
    lines: tuple[Place, int | None] = (START, None),
) -> _Checked:
    """Check the items of the file (of its lines from place to offset `lines`), keeping what the run needs of each
    of the first `limit` (the rest are still checked); the problems found, not raised."""
    checked = _Checked(places=None if held is not None else Places())
    for _ in _checking(path, reading, field, limit, held, lines, checked):
        pass
    return checked


def _checking(
    path: Path,
    reading: Reading,
    field: str | None,
    limit: int | None,
    held: list[Item] | None,
    lines: tuple[Place, int | None],
    checked: _Checked,
    labels: dict[str, object] | None = None,
) -> Iterator[Item]:
    """The items kept as `_check_lines` reads them, each yielded once what the run needs of it is in `checked` (and
    its value of the clustering's field, when it has one, in `labels` by its id)."""
    hashes, values, valued, extra_fields = checked.hashes, checked.values, checked.valued, checked.extra_fields
    start, stop = lines
    items = read_items(path, reading=reading, start=start, stop=stop, places=checked.places, findings=checked.findings)
    for item in items:
        if limit is not None and len(hashes) >= limit:
            continue  # the rest of the file is still checked
        if held is not None:
            held.append(item)
        hashes.append(hash(item.id))
        if field is not None:
            value = field_value(item, field)
            values.append(value)
            if value is not None:
                valued.append(item.id)
                if labels is not None:
                    labels[item.id] = label_value(value)
            if item.extra:
                extra_fields.update(item.extra)
        yield item


@dataclasses.dataclass(frozen=True)
class _Source:
    """The data file as the run reads it: where, in which format, and what tells that it is unchanged (None: read
    once and held, as any format but JSONL, a pipe, or a missing file, which the reading then names)."""

    path: Path
    reading: Reading
    stamp: _Stamp | None

    @classmethod
    def of(cls, config: Config) -> _Source:
        """The run's data file (a missing one is named by the first reading)."""
        data = config.data
        path = resolve_path(data.path, data.root)
        reading = reading_of(data, path)
        return cls(path, reading, _Stamp.of(path) if reading.streams else None)

    def cut(self, limit: int | None) -> tuple[list[tuple[Place, int]], int]:
        """A large file read again, without data.limit, cut into one part per core (each part's place, and the
        offset it stops at), and its number of lines; no parts for any other."""
        if self.stamp is None or limit is not None:
            return [], 0
        count = parts_wanted(self.path.stat().st_size, CHECK_PART_MIN_BYTES)
        return cut_lines(self.path, count) if count > 1 else ([], 0)


def run_items(config: Config, *, check_as_judged: bool = False) -> RunItems:
    """The run's items: checked as they are judged when that is asked for (every judge answers by rule, so nothing
    is lost by finding a problem late) and the file is large enough to cut into parts; else checked whole first."""
    source = _Source.of(config)
    if check_as_judged:
        cuts, lines = source.cut(config.data.limit)
        if cuts:
            return ItemsCheckedAsJudged(config, source, cuts, lines)
    return RunItems(config, source)


class RunItems:
    """The items a run judges, in order, every line checked before judging starts: then a hash of each id (and
    each value of the clustering's field) until judging starts, and the items read again as they are judged.

    Iterating yields full Items, normalised and cut as data.normalize says; `len()` is their number."""

    def __init__(self, config: Config, source: _Source | None = None) -> None:
        self._open(config, source or _Source.of(config))
        held: list[Item] | None = [] if self._stamp is None else None  # read once and held (a pipe)
        self._adopt(self._checked(held, self._source.cut(config.data.limit)[0]), held)

    def _open(self, config: Config, source: _Source) -> None:
        """What every reading of the items needs: the file, the clustering's field, the tokenizer."""
        self._config = config
        self._source = source
        self.path, self.reading, self._stamp = source.path, source.reading, source.stamp
        self._field = cluster_field(config.bootstrap.cluster)
        self._concluded: Clustering | None = None  # the clustering, once known
        self._marks: dict[int, Place] = {}  # the place of every _MARK_EVERY-th item, kept for judging in parts
        self._tokenizer = self._load_tokenizer()

    def _adopt(self, checked: _Checked, held: list[Item] | None) -> None:
        """Keep what the check kept of the items."""
        self._values: list[object] | None = checked.values if self._field is not None else None
        self._valued = checked.valued
        self._extra_fields = checked.extra_fields
        self._held = held
        self._released = False
        self._ids = checked.hashes
        self._count = len(checked.hashes)
        places = checked.places
        if places is not None:
            del places.offsets[self._count :], places.lines[self._count :]  # lines past data.limit
        self._places = places

    def expected(self) -> int:
        """How many items judging will meet."""
        return self._count

    def _checked(self, held: list[Item] | None, cuts: list[tuple[Place, int]]) -> _Checked:
        """The check of every line: in these parts on every core (each later part in a forked process), else here
        in one reading. Any problem stops the run here, naming every bad line."""
        limit, field = self._config.data.limit, self._field
        helpers = started(
            lambda lines: Forked(functools.partial(_check_lines, self.path, self.reading, field, None, None, lines)),
            cuts[1:],
        )
        try:
            checked = _check_lines(self.path, self.reading, field, limit, held, cuts[0] if helpers else (START, None))
            for helper in helpers:
                checked.extend(helper.result())
        finally:
            for helper in helpers:
                helper.stop()
        checked.findings.conclude(self.path, self.reading)
        return checked

    def __len__(self) -> int:
        return self._count

    def retain(self, keep: Callable[[Item], bool]) -> int:
        """Keep only the items `keep` accepts, asked of each item's id alone (a replay judge's recorded items: the
        other fields of the Item it is given are empty); how many went. The ids are read from the file again
        (a million ids cost more than the rest of the check, and only a replay judge asks)."""
        ids = [item.id for item in self._read()]
        kept = [i for i, item_id in enumerate(ids) if keep(Item(item_id, "", "", ""))]
        if len(kept) == len(ids):
            return 0
        if self._values is not None:
            self._values = [self._values[i] for i in kept]
            names = {ids[i] for i in kept}
            self._valued = [item_id for item_id in self._valued if item_id in names]
        if self._held is not None:
            self._held = [self._held[i] for i in kept]
        if self._places is not None:
            offsets, lines = self._places.offsets, self._places.lines
            self._places = Places(
                array.array("q", (offsets[i] for i in kept)), array.array("I", (lines[i] for i in kept))
            )
        self._ids = array.array("q", (self._ids[i] for i in kept))
        self._count = len(kept)
        return len(ids) - len(kept)

    def cluster_values(self) -> dict[str, object]:
        """Each item's value of the clustering's field (bootstrap.cluster), by id: what its verdict line records,
        whether or not the values repeat enough to cluster by; a field no item has stops the run here. Asked once,
        as judging starts: what the check kept for it goes then, but for the places judging in parts starts at."""
        found, values = self._clustering_of_values()
        self._concluded = found
        self._release_check()
        return values

    def clustering(self) -> Clustering | None:
        """The run's clustering of the items kept (None: by item): known once `cluster_values` was asked (items
        checked as judged: once `conclude` has read every part)."""
        return self._concluded

    def _clustering_of_values(self) -> tuple[Clustering | None, dict[str, object]]:
        if self._values is None or (not self._valued and self._config.bootstrap.cluster == AUTO):
            return None, {}  # auto, and no item has the field: by item (without naming a million places)
        # An item without a value is a cluster of its own, named by its place (as unique as its id).
        places = [str(place) for place in range(len(self._values))]
        found = clustering_of(self._config.bootstrap.cluster, places, self._values, self._extra_fields)
        values = (value for value in self._values if value is not None)
        return found, {item_id: label_value(value) for item_id, value in zip(self._valued, values, strict=True)}

    def _release_check(self) -> None:
        """Judging starts: what the check kept for the clusters is known; its memory goes, but for the place of
        every _MARK_EVERY-th item (where a part of the items can start)."""
        self._values = None
        self._valued = []
        if self._places is not None:
            self._marks = {i: self._places[i] for i in range(0, self._count, _MARK_EVERY)}
        self._places = None

    def parts(self, count: int) -> list[Part]:
        """The items cut into up to `count` parts of about equal size, in order, each starting at a marked item (one
        part when the items are held, or too few to cut)."""
        if self._held is not None or not self._marks:
            return [Part(0, self._count, START)]
        starts = sorted({min(self._marks, key=lambda m: abs(m - k * self._count // count)) for k in range(count)})
        if len(starts) < 2 or starts[0] != 0:
            return [Part(0, self._count, START)]
        stops = [*starts[1:], self._count]
        return [Part(start, stop, self._marks[start]) for start, stop in zip(starts, stops, strict=True)]

    def part(self, part: Part | None = None) -> Iterator[Item]:
        """The items of one part (None: all), normalised, read from the file where the part starts."""
        if self._released:
            raise RuntimeError("the items were released after judging")
        return map(self._normalised, self._read(part))

    def release(self) -> None:
        """Every item is judged: the ids' hashes (8 bytes an item) and any held items go before the summary,
        which reads only the rows; the items cannot be read again."""
        self._ids, self._held, self._released = array.array("q"), None, True

    def __iter__(self) -> Iterator[Item]:
        return self.part()

    def _read(self, part: Part | None = None) -> Iterator[Item]:
        """The items kept (of one part), as the file (or the pipe's reading) holds them, in order."""
        if self._held is not None:
            yield from self._held
            return
        part = part or Part(0, len(self._ids), START)
        expected, count = self._ids[part.start : part.stop], part.stop - part.start
        if not count:
            return
        self._check_unchanged()
        taken = 0
        reading = read_items(self.path, reading=self.reading, checked=True, start=part.place)
        with contextlib.closing(reading) as items:
            for item in items:
                if hash(item.id) != expected[taken]:
                    continue  # left out by data.limit or a replay judge's filter
                yield item
                taken += 1
                if taken == count:
                    break
        if taken < count:
            raise self._changed()
        self._check_unchanged()

    def _normalised(self, item: Item) -> Item:
        """The item as judged: answers normalised, cut to data.normalize.truncate_tokens, counted in tokens."""
        norm = self._config.data.normalize
        item = normalize_item(
            item, strip=norm.strip, truncate_words=norm.truncate_words, strip_markdown=norm.strip_markdown
        )
        tokenizer = self._tokenizer
        if tokenizer is None:
            return item
        cut = norm.truncate_tokens
        if cut is not None:  # the formatting recorded is the answers' before this cut (as normalize_item's)
            item = dataclasses.replace(
                item,
                a=tokenizer.truncate(item.a, cut),
                b=tokenizer.truncate(item.b, cut),
                style_a=style_of(item.a) if item.style_a is None else item.style_a,
                style_b=style_of(item.b) if item.style_b is None else item.style_b,
            )
        if norm.tokenizer == WORDS:
            return item
        return dataclasses.replace(item, tokens_a=tokenizer.count(item.a), tokens_b=tokenizer.count(item.b))

    def _load_tokenizer(self) -> Tokenizer | None:
        """data.normalize.tokenizer, loaded once (None: words, and nothing cut by tokens)."""
        norm, judge = self._config.data.normalize, self._config.judge
        if norm.truncate_tokens is None and norm.tokenizer == WORDS:
            return None
        return load_tokenizer(norm.tokenizer, judge.base_url, judge.timeout)

    def _check_unchanged(self) -> None:
        if _Stamp.of(self.path) != self._stamp:
            raise self._changed()

    def _changed(self) -> UserError:
        return UserError(
            f"{self.path}: the data file changed after it was checked (the run reads it again as it judges, so "
            "that it never holds every item): judging stopped; leave the file as it is while a run reads it, then "
            "rerun the same command (every reply received so far is cached and not paid again)"
        )


class ItemsCheckedAsJudged(RunItems):
    """A large file whose judges all answer by rule, read once: each part is checked by the process that judges it,
    as it is judged, and `conclude` stops the run as the check before judging would have, before any verdict file
    is kept. Until then its items' number is the file's lines at most, and its clustering unknown."""

    def __init__(self, config: Config, source: _Source, cuts: list[tuple[Place, int]], lines: int) -> None:
        self._open(config, source)
        self._cuts = cuts  # the parts of the file, each judged (and checked) by one process
        self._lines = lines  # the file's lines, which the items are at most
        self._read_parts: dict[Place, _Checked] = {}  # what each part read in this process found
        self._labels: dict[str, object] = {}  # clustered items' values until their lines are written
        self._adopt(_Checked(), None)

    @property
    def _unconcluded(self) -> bool:
        """Not every part's reading concluded yet (a concluded file has at least one item)."""
        return not self._count

    def expected(self) -> int:
        """How many items judging will meet: the file's lines, until every part's reading is concluded."""
        return self._lines if self._unconcluded else self._count

    def cluster_values(self) -> dict[str, object]:
        """Each clustered item's value, by id, from its reading, until its line is written."""
        return self._labels

    def parts(self, count: int) -> list[Part]:
        """The parts the file was cut into (one per core, whatever `count`)."""
        return [Part(0, 0, place, end) for place, end in self._cuts]

    def part(self, part: Part | None = None) -> Iterator[Item]:
        """The items of one part (None: all), normalised, checked as they are read until the run concludes."""
        if self._released or not self._unconcluded:
            return super().part(part)
        return map(self._normalised, self._checked_read(part or Part(0, 0, START, self._cuts[-1][1])))

    def read_here(self, part: Part) -> _Checked:
        """What this process's reading of a part found (sent back to the one that concludes)."""
        return self._read_parts[part.place]

    def conclude(self, parts: list[_Checked]) -> None:
        """Every part is read (those read here, then `parts` from other processes, in order). Any problem of any
        line stops the run here as the check before judging would have; else the items are known as that check
        knows them."""
        self._check_unchanged()  # the parts were read at offsets the file had when it was cut
        checked = _Checked()
        for part in [*self._read_parts.values(), *parts]:
            checked.extend(part)
        checked.findings.conclude(self.path, self.reading)
        self._adopt(checked, None)
        self._read_parts.clear()
        found, _ = self._clustering_of_values()
        self._concluded = found
        self._release_check()  # the values the clustering was made of are not needed again

    def _checked_read(self, part: Part) -> Iterator[Item]:
        """The items of one part of the file, checked as they are read; each clustered item's value kept until its
        line is written."""
        checked = self._read_parts[part.place] = _Checked()
        lines = (part.place, part.end)
        return _checking(self.path, self.reading, self._field, None, None, lines, checked, self._labels)
