"""An in-memory store for tests: plain dicts, the same contract as every store.

Nothing survives the process, so "durable" means only "stored before the call
returns". Every stored value is an immutable copy (``bytes``, frozen dataclasses,
lists rebuilt on every read), so callers can never mutate what is stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .base import (
    ActionToken,
    LoadedMatch,
    MatchExists,
    MatchNotFound,
    SeqConflict,
    StoredAction,
    StoredEvent,
    StoreError,
)

#: How many actions a session should play between two snapshots, by default.


def check_events(expected_last_seq: int, events: Sequence[StoredEvent]) -> None:
    """Refuse events whose seqs are not ``expected_last_seq + 1, + 2, ...``."""
    if expected_last_seq < 0:
        raise StoreError(f"expected_last_seq must be >= 0, got {expected_last_seq}")
    for offset, event in enumerate(events, start=1):
        if event.seq != expected_last_seq + offset:
            raise StoreError(
                f"event seqs must be consecutive from {expected_last_seq + 1}: "
                f"event {offset} has seq {event.seq}"
            )


def check_action(action: StoredAction, next_index: int) -> None:
    """Refuse an action that is not the next one of the match's action list."""
    if action.index != next_index:
        raise StoreError(f"action index must be {next_index} (the next one), got {action.index}")


def copy_event(event: StoredEvent) -> StoredEvent:
    return StoredEvent(seq=event.seq, audience=event.audience, payload=bytes(event.payload))


@dataclass(slots=True)
class _Match:
    meta: bytes
    snapshot: bytes
    snapshot_actions: int = 0
    events: list[StoredEvent] = field(default_factory=list)
    actions: list[StoredAction] = field(default_factory=list)


class MemoryStore:
    """The ``Store`` contract on dicts (insertion order = creation order)."""

    durable = False  # a restart starts empty

    def __init__(self) -> None:
        self._matches: dict[str, _Match] = {}
        self._closed = False

    def _match(self, match_id: str) -> _Match:
        if self._closed:
            raise StoreError("store is closed")
        try:
            return self._matches[match_id]
        except KeyError:
            raise MatchNotFound(match_id) from None

    async def create_match(
        self, match_id: str, meta: bytes, snapshot: bytes, events: list[StoredEvent]
    ) -> None:
        if self._closed:
            raise StoreError("store is closed")
        check_events(0, events)
        if match_id in self._matches:
            raise MatchExists(match_id)
        self._matches[match_id] = _Match(
            meta=bytes(meta), snapshot=bytes(snapshot), events=[copy_event(e) for e in events]
        )

    async def append(
        self,
        match_id: str,
        expected_last_seq: int,
        events: list[StoredEvent],
        action: StoredAction | None = None,
        meta: bytes | None = None,
        due_ms: int | None = None,  # one process holds every match: nothing to take over
        token: ActionToken | None = None,  # its allowances are the process's own
    ) -> None:
        check_events(expected_last_seq, events)
        match = self._match(match_id)
        last_seq = match.events[-1].seq if match.events else 0
        if last_seq != expected_last_seq:
            raise SeqConflict(
                f"match {match_id}: expected last seq {expected_last_seq}, stored {last_seq}"
            )
        if action is not None:
            check_action(action, len(match.actions))
        # Everything is checked: from here on nothing can fail, so it is atomic.
        match.events.extend(copy_event(e) for e in events)
        if action is not None:
            match.actions.append(action)  # frozen, str/int fields: immutable
        if meta is not None:
            match.meta = bytes(meta)

    async def save_snapshot(self, match_id: str, snapshot: bytes, action_count: int) -> None:
        match = self._match(match_id)
        if not 0 <= action_count <= len(match.actions):
            raise StoreError(
                f"match {match_id}: snapshot of {action_count} actions, {len(match.actions)} stored"
            )
        if action_count < match.snapshot_actions:
            return  # an older snapshot than the stored one: keep the newer
        match.snapshot = bytes(snapshot)
        match.snapshot_actions = action_count

    async def load_match(self, match_id: str) -> LoadedMatch:
        match = self._match(match_id)
        return LoadedMatch(
            match_id=match_id,
            meta=match.meta,
            snapshot=match.snapshot,
            snapshot_actions=match.snapshot_actions,
            actions=list(match.actions),
            events=list(match.events),
        )

    async def match_metas(self) -> list[tuple[str, bytes]]:
        if self._closed:
            raise StoreError("store is closed")
        return [(match_id, m.meta) for match_id, m in self._matches.items()]

    async def close(self) -> None:
        self._closed = True
