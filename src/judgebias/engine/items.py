"""The run's items, read from the data file twice, so that a run never holds the text of every item at once.

The first reading checks every line (each problem named at once, before any call), applies data.limit, and keeps
of each item only what is decided before judging starts: its id and the fields the replay filter and the
clustering read, the answers dropped. Each later reading (the batch pre-pass, the judging) streams the items
again, normalised as configured, and stops with one line if the file is no longer the one the first reading
checked. A data file that cannot be read twice (a pipe) is held in memory instead.
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from judgebias.config.schema import Config
from judgebias.core.errors import UserError
from judgebias.core.item import Item
from judgebias.io.dataset import normalize_item, read_items, resolve_path
from judgebias.io.tokenizer import WORDS, Tokenizer, load_tokenizer

# The fields beyond the known ones of every stub without any: one object, read only (a stub is never changed), where
# a million items each kept an empty dict of its own.
_NO_EXTRA: dict[str, Any] = {}


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


class RunItems:
    """The items a run judges, in order: `stubs` (answers dropped) until judging starts, then read again.

    Iterating yields full Items, normalised and cut as data.normalize says; `len()` is their number."""

    def __init__(self, config: Config) -> None:
        data = config.data
        self.path = resolve_path(data.path, data.root)
        self._config = config
        self._stamp = _Stamp.of(self.path)  # None: read once and held (a missing file: read_items names it)
        held: list[Item] | None = [] if self._stamp is None else None
        keep_question = config.bootstrap.cluster == "question"  # the only text a stub is asked for
        stubs: list[Item] = []
        for item in read_items(self.path):
            if data.limit is not None and len(stubs) >= data.limit:
                continue  # the rest of the file is still checked
            if held is not None:
                held.append(item)
            question = item.question if keep_question else ""
            stubs.append(item.with_text(question, "", "", item.style_a, item.style_b, item.extra or _NO_EXTRA))
        self.stubs: list[Item] | None = stubs
        self._held = held
        self._ids = array.array("q", (hash(stub.id) for stub in stubs))
        self._tokenizer = self._load_tokenizer()

    def __len__(self) -> int:
        return len(self._ids)

    def retain(self, keep: Callable[[Item], bool]) -> int:
        """Keep only the items whose stub `keep` accepts (a replay judge's recorded items); how many went."""
        assert self.stubs is not None, "the stubs are released once judging starts"
        before = len(self.stubs)
        self.stubs = [stub for stub in self.stubs if keep(stub)]
        if len(self.stubs) == before:
            return 0
        if self._held is not None:
            kept = {stub.id for stub in self.stubs}
            self._held = [item for item in self._held if item.id in kept]
        self._ids = array.array("q", (hash(stub.id) for stub in self.stubs))
        return before - len(self.stubs)

    def release_stubs(self) -> None:
        """Judging starts: what the stubs told is known (the filter, the clusters); their memory goes."""
        self.stubs = None

    def __iter__(self) -> Iterator[Item]:
        if self._held is not None:
            yield from map(self._normalised, self._held)
            return
        expected, count = self._ids, len(self._ids)
        if not count:
            return
        self._check_unchanged()
        taken = 0
        with contextlib.closing(read_items(self.path, checked=True)) as items:
            for item in items:
                if hash(item.id) != expected[taken]:
                    continue  # left out by data.limit or a replay judge's filter
                yield self._normalised(item)
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
        if cut is not None:
            item = dataclasses.replace(item, a=tokenizer.truncate(item.a, cut), b=tokenizer.truncate(item.b, cut))
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
