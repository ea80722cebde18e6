"""When to try a call again, and how long to wait first."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

import grpc

from ._errors import SpadesError

__all__ = [
    "DEFAULT_POLL_WAIT_MS",
    "MIN_EMPTY_POLL_S",
    "POLL_DEADLINE_MARGIN_S",
    "Backoff",
    "is_transient",
]

# Long polls (PollEvents, and the lobby's GetTable, GetTicket, PollLobby,
# Rematch): how long each waits on the server by default (it waits at most its
# --poll-max-wait-ms, 25 s by default), and how much longer than its wait a
# poll's deadline is.
DEFAULT_POLL_WAIT_MS: Final = 20_000
POLL_DEADLINE_MARGIN_S: Final = 5.0
# An empty answer faster than this (a wait_ms of 0, or a server that does not
# wait) is followed by a pause up to this long: no tight loop on a quiet match.
MIN_EMPTY_POLL_S: Final = 1.0

# Reasons the server gives to say "the same request may succeed later".
_RETRY_LATER = frozenset({"TOO_MANY_STREAMS", "TOO_MANY_CALLS"})
# Codes a broken connection shows as, when no ErrorInfo came with them (the
# server always sends one: without it the status was made by the transport).
_TRANSPORT = frozenset(
    {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.CANCELLED}
)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with jitter, and a limit on attempts.

    The n-th retry in a row (from 0) waits a random time between
    ``(1 - jitter)`` and 1 times ``min(max_s, initial_s * multiplier ** n)``;
    after ``max_attempts`` failed attempts in a row the caller gives up.
    """

    initial_s: float = 0.1
    max_s: float = 5.0
    multiplier: float = 2.0
    jitter: float = 0.5
    max_attempts: int = 8

    def __post_init__(self) -> None:
        if not (self.initial_s >= 0 and self.max_s >= self.initial_s and self.multiplier >= 1):
            raise ValueError("need 0 <= initial_s <= max_s and multiplier >= 1")
        if not 0 <= self.jitter <= 1 or self.max_attempts < 1:
            raise ValueError("need 0 <= jitter <= 1 and max_attempts >= 1")

    def delay(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first)."""
        cap = min(self.max_s, self.initial_s * self.multiplier ** min(retry, 64))
        r = (rng or random).random()
        return cap * (1 - self.jitter * r)


def is_transient(err: SpadesError) -> bool:
    """Whether the same request may succeed if sent again later: the server is
    unreachable, draining or reloading (UNAVAILABLE), busy with streams, or the
    connection broke under the call."""
    if err.code is grpc.StatusCode.UNAVAILABLE:
        return True
    if err.code is grpc.StatusCode.RESOURCE_EXHAUSTED:
        return err.reason in _RETRY_LATER
    return err.code in _TRANSPORT and not err.reason
