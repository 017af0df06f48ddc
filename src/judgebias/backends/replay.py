"""The replay judge: returns the raw replies a real judge once wrote, per item and order, from a judgments file."""

from __future__ import annotations

from pathlib import Path

from judgebias.backends.base import AttemptMeter, Backend
from judgebias.config.schema import ReplaySettings
from judgebias.core.errors import RecordedCallFailed, UserError
from judgebias.core.item import Item
from judgebias.core.record import Reply, Request
from judgebias.io.jsonl import json_lines


class ReplayJudge(Backend):
    """Replays the raw replies a real judge wrote, per item and order, from the dataset's judgments file."""

    selective = True  # judges only the items recorded
    reads_messages = False  # the reply recorded for the item and order, whatever the prompt

    def __init__(self, config: ReplaySettings, judgments: Path | None) -> None:
        if judgments is None:
            raise UserError("judge=replay needs recorded judgments, but data has none (data.judgments is null)")
        self.config = config
        self.replies: dict[str, tuple[str | None, str | None, bool]] = {}
        self.failures: dict[tuple[str, int], str] = {}  # (item id, order) -> why the recorded call failed
        names: set[str] = set()
        try:
            lines = judgments.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise UserError(f"{judgments}: no such judgments file (check data.judgments and data.root)") from None
        for number, row in json_lines(lines, judgments):
            names.add(row.get("judge"))
            if row.get("judge") != config.name or (config.run is not None and row.get("run") != config.run):
                continue
            if row["id"] in self.replies:
                raise UserError(
                    f"{judgments}:{number}: judge {config.name!r} has several recordings of item {row['id']!r}: "
                    f"choose one run with judge.run=... (e.g. {row.get('run')!r})"
                )
            one_order = row.get("call2") is None and row.get("raw2") is None and not row.get("error2")
            self.replies[row["id"]] = (row.get("raw1"), row.get("raw2"), one_order)
            for order in (1, 2):
                failure = row.get(f"error{order}")
                if failure:
                    self.failures[(row["id"], order)] = str(failure)
        if not self.replies:
            choices = ", ".join(sorted(n for n in names if isinstance(n, str)))
            raise UserError(f"judge.name={config.name!r} is not recorded in {judgments}: choose one of {choices}")

    def has(self, item: Item) -> bool:
        """Whether this judge was recorded on `item`."""
        return item.id in self.replies

    def one_order(self, item: Item) -> bool:
        """Whether only the first order was recorded for `item` (its second call does not exist)."""
        return self.replies[item.id][2]

    def complete(self, request: Request, meter: AttemptMeter | None = None) -> Reply:
        failure = self.failures.get((request.item.id, request.view.order))
        if failure is not None:
            raise RecordedCallFailed(f"the recorded call failed: {failure}")
        raw1, raw2, _ = self.replies[request.item.id]
        text = raw1 if request.view.order == 1 else raw2
        return Reply(text=text, model=f"replay:{self.config.name}")  # no tokens: nothing was generated or billed
