"""The one interface every judge backend implements, with every optional capability declared and defaulted.

A backend must answer `complete`; everything else has a default that fits a free, offline judge, so callers ask
the backend directly and never probe for attributes. A paid backend (its calls cost money or time) sets
`paid = True` and provides `cache_request` (the cache key's input) and `check_key`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from judgebias.backends.pacing import Fleet
from judgebias.core.errors import Failure, FailureKind
from judgebias.core.item import Item
from judgebias.core.record import Reply, Request, key_input

FleetSource = Callable[[str, float | None, float | None], Fleet | None]  # (scope, rpm, tpm) -> shared quota


class BatchForgotten(Exception):
    """The provider no longer has a batch (or the input staged for it): a reset server, a deleted batch."""


@dataclass(frozen=True)
class BatchState:
    """A submitted batch as its provider reports it, in terms every provider can be read in."""

    id: str
    status: str  # the provider's own word for it (shown to the user, kept in summary.json)
    ended: bool  # nothing in it will change any more
    completed: int = 0  # lines answered
    failed: int = 0  # lines that ended with an error
    rejected: tuple[Mapping[str, Any], ...] | None = None  # refused before running: each line's error (line, code,
    # message, param); None when it ran
    results: tuple[str, ...] = ()  # where its lines' results are read from (the provider's file ids or URLs)


@dataclass(frozen=True)
class BatchLine:
    """One call's result read back from a batch: the provider's response body, or its reason there is none."""

    custom_id: str
    body: dict[str, Any] | None
    error: str | None
    line: int = 0  # 1-based line number in the file it was read from (0: not read from a file)


class BatchTransport(Protocol):
    """How one provider runs batches; batch/ (the ledger, splitting, polling, the pre-pass) knows nothing else.

    A submission is `stage` (the input kept apart from the batch, where the provider does: its id goes in the ledger
    before the batch exists) then `create`; `adopt` finds the batch an interrupted run created for a staged input,
    so a rerun never pays twice. `create` and `retrieve` raise BatchForgotten when the provider no longer has it.
    """

    endpoint: str  # where the batches go (a batch id means nothing at another endpoint)
    max_bytes: int  # the most one batch's encoded lines may hold

    def batch_body(self, messages: list[dict[str, str]], sample: int = 0) -> dict[str, Any]:
        """The request body one batch line carries for one call (ask `sample` of its order): a live call's body,
        with the batch's model name."""

    def reply_from_json(self, body: Mapping[str, Any], request: Request) -> Reply:
        """A reply read from the response body a batch line returned."""

    def encode(self, line_id: str, body: Mapping[str, Any]) -> bytes:
        """One call as the provider's batch input holds it: one line, with its newline (judge.mode=export writes
        these lines as they are)."""

    def stage(self, name: str, lines: list[bytes]) -> str | None:
        """Put a batch's input where the provider keeps it apart from the batch; its id, or None (sent inline)."""

    def create(self, name: str, staged: str | None, lines: list[bytes]) -> BatchState:
        """Start the batch `name` of a staged input (or of `lines`, when nothing was staged)."""

    def adopt(self, name: str, staged: str | None) -> BatchState | None:
        """The batch an interrupted run created for `name` (or its staged input), if the provider has one."""

    def retrieve(self, batch_id: str) -> BatchState:
        """The batch's state now."""

    def results(self, state: BatchState) -> Iterable[BatchLine]:
        """Every line's result of an ended batch."""

    def read_output(self, text: str, source: str) -> list[BatchLine]:
        """Every line of a results file the user hands in (judge.mode=import), in the provider's own format; a line
        that is not one is a UserError naming `source` and its line."""

    def control_failure(self, error: BaseException) -> str | None:
        """A one-line reason when `error` is the provider's own (a refused upload, a batch route that fails), never
        holding a credential; None for any other error."""


class AttemptMeter(Protocol):
    """What a paid backend tells the run of each attempt of one call (engine.budget.Meter): whether another attempt
    may go, and each attempt the server billed that the call does not use."""

    def before_attempt(self) -> bool:
        """Whether the next attempt may be sent (the spending cap admits it)."""

    def billed(self, reply: Reply | None) -> object:
        """An attempt billed but not used: `reply` (no choices, cut off and asked again), or None (a timeout)."""


class Backend(ABC):
    """Answers judge calls. Subclasses implement `complete`; the rest are capabilities with defaults."""

    paid: bool = False  # replies are cached on disk (never sent twice) and the key is checked before a call
    retries: int = 0  # retries made so far, for the progress line
    timeouts: int = 0  # of those, retried after a client-side timeout (the endpoint may have billed both)
    gateway_retries_failed: int = 0  # upstream retries a gateway reported on the error responses it sent
    gateway_errors_unknown: int = 0  # error responses from a gateway that does not say how often it retried
    first_token: bool = False  # the verdict is the reply's first word (a completion after the answer cue)
    reads_messages: bool = True  # False: the judge decides from the item and the view alone (no prompt rendered)
    selective: bool = False  # `has` may refuse items: the run reads every id again to ask it (others are not asked)

    @abstractmethod
    def complete(self, request: Request, meter: AttemptMeter | None = None) -> Reply:
        """The judge's reply to one call; a paid backend reports every billed attempt it does not use to `meter`."""

    def cache_request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """Everything that decides the reply (the cache key's input), never credentials; paid backends only."""
        raise NotImplementedError(f"{type(self).__name__} is a free backend: its replies are not cached")

    def stored(self, reply: Reply, request: Request) -> dict[str, Any]:
        """A reply as the cache keeps it: its fields, and what its key was computed from (for bundles)."""
        return reply.to_json() | {"request": key_input(self.cache_request(request.messages), request.sample)}

    def check_key(self) -> None:
        """Raise a UserError before any call when the credentials are missing (free backends need none)."""
        return None

    def has(self, item: Item) -> bool:
        """Whether this backend can judge `item` at all (a replay judge only where it was recorded)."""
        return True

    def one_order(self, item: Item) -> bool:
        """Whether only the first order exists for `item` (its second call is not made)."""
        return False

    def stop(self, reason: str) -> None:
        """Fail every later call at once, unsent (a permanent error, or the run stopping); free backends: nothing."""
        return None

    def share_pacing(self, fleet_for: FleetSource) -> None:
        """Pace this backend's requests by a quota shared with other processes, from `fleet_for(scope, rpm, tpm)`
        (None: not shared); free backends send nothing to pace."""
        return None

    def classify(self, error: BaseException) -> Failure:
        """What `error` means (backends/retry.py, the call's error and summary.json ask): a free backend's error is
        its call's alone, never retried."""
        return Failure(FailureKind.failed, f"{type(error).__name__}: {error}")

    def batch_transport(self) -> BatchTransport | None:
        """How this backend sends calls as a batch; None: it has no batch support (batch modes refuse it)."""
        return None

    def notes(self) -> list[str]:
        """What the run's summary should say about this backend's calls (none by default)."""
        return []

    def gateway_routes(self) -> dict[str, list[str]] | None:
        """The model groups the endpoint serves and each group's deployments (a gateway's model list), or None
        when it does not say: asked only after a run, when a call was answered by a name nobody declared."""
        return None

    def describe(self) -> str:
        """The judge, for messages (never a key)."""
        return type(self).__name__
