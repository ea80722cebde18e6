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

A rated queue's entries carry their rating (a party's, its players' mean),
and a table takes an entry only while the spread of its ratings stays within
a band that widens with waiting (``Band``): strong players meet strong
players when enough of them queue, and anyone meets anyone after a while.
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
    rating: float = 0.0  # rated queues: the players' mean mu


@dataclass(frozen=True, slots=True)
class Band:
    """The widest spread of ratings (mu) a table may seat: ``base`` at
    first, ``widen_per_s`` wider each second its oldest entry has waited."""

    base: float = 5.0
    widen_per_s: float = 0.25

    def width(self, waited_ms: int) -> float:
        return self.base + self.widen_per_s * max(0, waited_ms) / 1000


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
    low: float = float("inf")
    high: float = float("-inf")

    def within(self, entry: Entry, band: Band | None, now_ms: int) -> bool:
        if band is None or not self.entries:
            return True
        spread = max(self.high, entry.rating) - min(self.low, entry.rating)
        return spread <= band.width(now_ms - min(self.oldest_ms, entry.queued_ms))

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
        self.low = min(self.low, entry.rating)
        self.high = max(self.high, entry.rating)

    @property
    def full(self) -> bool:
        return all(s is not None for s in self.seats)


def decide(
    entries: Sequence[Entry],
    seats: int,
    partnerships: bool,
    now_ms: int,
    bot_wait_ms: int,
    band: Band | None = None,
) -> list[Plan]:
    """The tables to place now from ``entries`` (one queue, in queue order).

    Entries that are not in a returned plan stay queued. A party at a table
    that is not a partnership table of four never fits (``quickplay`` refuses
    such tickets before they are queued)."""
    forming: list[_Forming] = []
    for entry in entries:
        for table in forming:
            fits = not table.full and table.within(entry, band, now_ms)
            spot = table.fit(entry, partnerships) if fits else None
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


# How often a rated queue is looked at again while its band widens.
BAND_STEP_MS = 1000


def next_deadline(
    entries: Sequence[Entry], bot_wait_ms: int, now_ms: int = 0, band: Band | None = None
) -> int | None:
    """When the queue needs a look: the oldest entry's wait for bots runs
    out, or, in a rated queue of two or more entries, the band has widened
    (None: no entry)."""
    if not entries:
        return None
    due = min(e.queued_ms for e in entries) + bot_wait_ms
    if band is not None and len(entries) > 1:
        due = min(due, now_ms + BAND_STEP_MS)
    return due
