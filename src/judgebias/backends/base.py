"""The one interface every judge backend implements, with every optional capability declared and defaulted.

A backend must answer `complete`; everything else has a default that fits a free, offline judge, so callers ask
the backend directly and never probe for attributes. A paid backend (its calls cost money or time) sets
`paid = True` and provides `cache_request` (the cache key's input) and `check_key`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from judgebias.backends.pacing import Fleet
from judgebias.core.item import Item
from judgebias.core.record import Reply, Request, key_input

FleetSource = Callable[[str, float | None, float | None], Fleet | None]  # (scope, rpm, tpm) -> shared quota


class BatchTransport(Protocol):
    """What batch mode needs of a provider: its client and endpoint, the body a batch line sends, a reply read back."""

    endpoint: str

    def client(self) -> Any:
        """The provider's SDK client (its Batch and Files APIs)."""

    def batch_body(self, messages: list[dict[str, str]], sample: int = 0) -> dict[str, Any]:
        """The request body one batch line carries for one call (ask `sample` of its order): a live call's body,
        with the batch's model name."""

    def reply_from_json(self, body: Mapping[str, Any], request: Request) -> Reply:
        """A reply read from the response body a batch line returned."""


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

    def should_retry(self, error: BaseException) -> bool:
        """Whether another attempt could succeed (backends/retry.py asks; a free backend never retries)."""
        return False

    def is_permanent(self, error: BaseException) -> bool:
        """Whether no call of this judge can succeed after `error` (bad key, unknown model): the judge stops."""
        return False

    def is_unreachable(self, error: BaseException) -> bool:
        """Whether `error` says nothing listens at the endpoint (retried only briefly before any reply)."""
        return False

    def explain(self, error: BaseException) -> str:
        """A one-line reason for `error`, never holding a credential."""
        return f"{type(error).__name__}: {error}"

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
