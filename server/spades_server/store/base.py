"""The store interface: where a match's events, actions and snapshots live.

Contract every implementation keeps:
- ``append`` is atomic and durable when it returns: the events, the action
  and the metadata of one call are all stored or none is.
- ``append`` is a compare-and-set on the match's last sequence number, so two
  writers can never interleave a match's log (``SeqConflict``).
- Events are returned in sequence order, exactly as appended.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, cast


class StoreError(Exception):
    """The store failed; nothing of the failed call was stored."""

    # What a client may be told (addresses, paths and driver messages stay in
    # the server's log); a subclass or an instance may say more.
    public = ""


class SeqConflict(StoreError):
    """``expected_last_seq`` did not match: another writer appended first."""


class MatchNotFound(StoreError):
    """No match with that id in the store."""


class MatchExists(StoreError):
    """A match with that id is already stored."""


class NoActionToken(StoreError):
    """The seat had no action token left (``ActionToken``): nothing was appended."""


@dataclass(frozen=True, slots=True)
class ActionToken:
    """One of a seat's action tokens, to take in the append that stores its
    action (the bucket every replica shares): one round trip per action, not
    two. ``rate`` tokens a second, at most ``burst`` saved up."""

    seat: int
    rate: float
    burst: int


@dataclass(frozen=True, slots=True)
class StoredEvent:
    seq: int  # from 1, +1 per event of the match
    audience: str  # "everyone" | "seat:N" | "team:N"
    payload: bytes  # a serialized spades.v1.MatchEvent


@dataclass(frozen=True, slots=True)
class StoredAction:
    index: int  # 0-based position in the match's engine action list
    seat: int
    action: str  # the engine's text form, e.g. "play QS"
    action_id: str  # the client's idempotency key
    first_seq: int  # sequence numbers of the events it caused
    last_seq: int


@dataclass(slots=True)
class LoadedMatch:
    match_id: str
    meta: bytes  # the session's metadata document (JSON), latest version
    snapshot: bytes  # latest engine snapshot
    snapshot_actions: int  # how many actions the snapshot includes
    # Every stored action: those at index >= snapshot_actions are replayed on the
    # snapshot; all of them keep their action ids, so retries stay idempotent.
    actions: list[StoredAction] = field(default_factory=list)
    events: list[StoredEvent] = field(default_factory=list)  # every event, in order


class Store(Protocol):
    # Whether what it holds outlives the process. Snapshots only shorten a
    # recovery from the store, so a session takes none on a store that does not.
    durable: bool

    async def create_match(
        self, match_id: str, meta: bytes, snapshot: bytes, events: list[StoredEvent]
    ) -> None:
        """Store a new match: its metadata, its initial snapshot (0 actions) and
        its opening events. Raises MatchExists."""

    async def append(
        self,
        match_id: str,
        expected_last_seq: int,
        events: list[StoredEvent],
        action: StoredAction | None = None,
        meta: bytes | None = None,
        due_ms: int | None = None,
        token: ActionToken | None = None,
    ) -> None:
        """Append events (and the action that caused them, and new metadata),
        atomically and durably. Raises SeqConflict, MatchNotFound.

        ``due_ms``: when the match next needs a server to act (a bot's move, a
        turn deadline), for a store that replicas share (``shared``); the
        others ignore it. ``token``: on such a store, the seat's action token
        to take in the same write (NoActionToken, nothing stored, when it has
        none); the others ignore it too (they are never given one)."""

    async def save_snapshot(self, match_id: str, snapshot: bytes, action_count: int) -> None:
        """Replace the match's snapshot; ``action_count`` actions are included in it."""

    async def load_match(self, match_id: str) -> LoadedMatch:
        """Everything needed to restore a match. Raises MatchNotFound."""

    async def match_metas(self) -> list[tuple[str, bytes]]:
        """Every stored match's id and latest metadata, oldest first."""

    async def close(self) -> None:
        """Flush and release everything; later calls raise StoreError."""


class SharedStore(Store, Protocol):
    """A store several replicas append to (Redis): what they need beyond ``Store``."""

    shared: bool  # True

    async def load_match(self, match_id: str, after_seq: int = 0) -> LoadedMatch:
        """As ``Store.load_match``; ``after_seq``: only the events after it."""

    async def tail(
        self, match_id: str, after_seq: int, after_actions: int
    ) -> tuple[int, bytes, list[StoredAction], list[StoredEvent]]:
        """The last seq, the metadata, and the actions and events after these."""

    async def match_ids(self) -> list[str]:
        """Every stored match's id, oldest first."""

    async def claim_due(
        self, now_ms: int, lease_ms: int, limit: int = 100
    ) -> list[tuple[str, int]]:
        """Matches due by ``now_ms``, leased to the caller: (id, lease end)."""

    async def release_due(self, match_id: str, lease_end: int) -> None:
        """Drop a claimed entry unless it moved since."""

    async def set_due(self, match_id: str, due_ms: int) -> None:
        """Set when the match falls due."""

    def follow(self, on_append: Callable[[str, int], None], on_reset: Callable[[], None]) -> None:
        """Receive other replicas' appends to the matches ``watch`` names."""

    async def watch(self, match_id: str) -> None: ...

    async def unwatch(self, match_id: str) -> None: ...

    async def take_action_token(self, match_id: str, seat: int, rate: float, burst: int) -> bool:
        """One of the seat's action tokens, shared by every replica."""

    async def set_streams(self, match_id: str, count: int, most: int, opening: bool) -> int:
        """This replica's open streams on the match; the total, or -1 if refused."""


def as_shared(store: Store) -> SharedStore | None:
    """``store`` as a shared store, or None for a single process's store."""
    return cast(SharedStore, store) if getattr(store, "shared", False) else None
