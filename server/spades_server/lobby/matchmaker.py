"""The matchmaker's decision: queued tickets and the clock in, tables out.

A pure function, so that it can be tested exhaustively and timed alone
(bench/lobby.py); ``quickplay`` claims what it decides atomically.

First come, first served per queue: tickets are taken in the order they were
queued, each into the first table being formed that has room for it, a new
one when none has. A party of two needs a pair of opposite seats (0 and 2,
or 1 and 3): partners. A lone player takes the seats in the order 0, 2, 1, 3,
so that two lone players become partners and leave the other pair free for a
party. A table is placed when it is full, or, when the oldest ticket in it has
waited ``bot_wait_ms``, with bots in its open seats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# Lone players' seat order at a partnership table of four (see above).
_SOLO_ORDER = (0, 2, 1, 3)
_PAIRS = ((0, 2), (1, 3))


@dataclass(frozen=True, slots=True)
class Entry:
    ticket_id: str
    players: tuple[str, ...]  # one, or two partners
    queued_ms: int


@dataclass(frozen=True, slots=True)
class Plan:
    """A table to place: per seat, (ticket id, player id), or None for a bot."""

    seats: tuple[tuple[str, str] | None, ...]

    @property
    def tickets(self) -> list[str]:
        return list(dict.fromkeys(s[0] for s in self.seats if s is not None))


@dataclass(slots=True)
class _Forming:
    seats: list[tuple[str, str] | None]
    oldest_ms: int
    entries: list[Entry] = field(default_factory=list)

    def fit(self, entry: Entry, partnerships: bool) -> tuple[int, ...] | None:
        """The seats ``entry`` would take here, or None when it does not fit."""
        free = [i for i, s in enumerate(self.seats) if s is None]
        if len(entry.players) == 2:
            return next((p for p in _PAIRS if p[0] in free and p[1] in free), None)
        if not free:
            return None
        if partnerships and len(self.seats) == 4:
            return (next(i for i in _SOLO_ORDER if i in free),)
        return (free[0],)

    def place(self, entry: Entry, seats: tuple[int, ...]) -> None:
        for seat, player in zip(seats, entry.players, strict=True):
            self.seats[seat] = (entry.ticket_id, player)
        self.entries.append(entry)
        self.oldest_ms = min(self.oldest_ms, entry.queued_ms)

    @property
    def full(self) -> bool:
        return all(s is not None for s in self.seats)


def decide(
    entries: Sequence[Entry],
    seats: int,
    partnerships: bool,
    now_ms: int,
    bot_wait_ms: int,
) -> list[Plan]:
    """The tables to place now from ``entries`` (one queue, in queue order).

    Entries that are not in a returned plan stay queued. A party at a table
    that is not a partnership table of four never fits (``quickplay`` refuses
    such tickets before they are queued)."""
    forming: list[_Forming] = []
    for entry in entries:
        for table in forming:
            spot = None if table.full else table.fit(entry, partnerships)
            if spot is not None:
                table.place(entry, spot)
                break
        else:
            table = _Forming([None] * seats, entry.queued_ms)
            spot = table.fit(entry, partnerships)
            if spot is not None:
                table.place(entry, spot)
                forming.append(table)
    return [
        Plan(tuple(t.seats))
        for t in forming
        if t.full or (t.entries and now_ms - t.oldest_ms >= bot_wait_ms)
    ]


def next_deadline(entries: Sequence[Entry], bot_wait_ms: int) -> int | None:
    """When the oldest entry's wait for bots runs out (None: no entry)."""
    return min(e.queued_ms for e in entries) + bot_wait_ms if entries else None
