"""The lobby store's change feed as this process follows it.

Every change to a table or a ticket, by any replica, comes through the store's
feed (``LobbyStore.follow``) with the document as committed. Here it is kept
in a ring of recent changes (the lobby's streams and long polls read from it,
not from the store) and handed to whoever waits on that table or ticket.
A gap in the feed (``reset``) wakes everyone: they read the store again.

On a Redis Cluster quick play's shards have feeds of their own (``shards``);
they are followed too, for the tickets' and their tables' changes. The ring,
its numbers and ``since`` are the lobby's own feed's: the listing reads them,
and every table it shows is there.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import structlog

from ..store import StoreError
from ..store.lobby import LobbyStore, Tx
from .docs import OPENED, TableDoc, TicketDoc, table_key, ticket_key

log = structlog.get_logger("spades.lobby.feed")

RING = 8192
# The key lobby streams and polls watch: changes of tables the lobby shows or
# showed (tickets and private tables wake none of them).
LOBBY_CHANGES = "lobby-changes"
# The feed's first event, of no table or ticket (``start``).
OPENED_EVENT = b'{"t":"opened"}'


@dataclass(frozen=True, slots=True)
class Change:
    seq: int
    version: int
    table: TableDoc | None
    ticket: TicketDoc | None


# Called with every change, and with None after a reset.
ChangeCallback = Callable[[Change | None], None]


def parse(seq: int, data: bytes) -> Change | None:
    try:
        d = json.loads(data)
        if d["t"] == "table":
            return Change(seq, d["v"], TableDoc.from_json(d["doc"]), None)
        if d["t"] == "ticket":
            return Change(seq, d["v"], None, TicketDoc.from_json(d["doc"]))
    except (ValueError, KeyError, TypeError):
        log.warning("unreadable lobby change", seq=seq)
    return None


class Waiter:
    """Woken by every change to the keys it watches (or a reset)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.changes: list[Change] = []
        self.reset = False

    def take(self) -> tuple[list[Change], bool]:
        changes, reset = self.changes, self.reset
        self.changes, self.reset = [], False
        self.event.clear()
        return changes, reset

    async def wait(self, timeout: float | None) -> bool:
        """True if woken, False when ``timeout`` ran out first."""
        if self.event.is_set():
            return True
        try:
            async with asyncio.timeout(timeout):
                await self.event.wait()
        except TimeoutError:
            return False
        return True


class Feed:
    def __init__(self, store: LobbyStore, shards: Sequence[LobbyStore] = ()) -> None:
        self.store = store
        self.shards = [s for s in shards if s is not store]
        self.recent: deque[Change] = deque(maxlen=RING)
        self.last = 0  # the latest change seen here
        self.first = 1  # ``recent`` holds every change from here on (if any)
        self._keyed: dict[str, set[Waiter]] = {}
        self._on_change: list[ChangeCallback] = []
        self._reaching: list[tuple[int, asyncio.Future[None]]] = []  # ``reach``

    async def start(self) -> None:
        """Follow the feed from its end as read now (nothing after it is missed)."""
        try:
            page = await self.store.feed_after(1 << 62, 1)
            if page.last == 0:
                # A version of 0 asks for changes "from now" (WatchLobby): a
                # lobby listed before its first change would miss that one.
                await self.store.commit(Tx(events=[OPENED_EVENT]))
                page = await self.store.feed_after(1 << 62, 1)
        except StoreError as e:  # serve anyway: a reset comes when the store is back
            log.warning("the lobby feed could not be read at start", error=str(e))
            self.store.follow(self._deliver)
            return
        self.last = page.last
        self.first = self.last + 1
        self.store.follow(self._deliver, page.last)
        for shard in self.shards:
            await self._follow_shard(shard)

    async def _follow_shard(self, shard: LobbyStore) -> None:
        try:
            page = await shard.feed_after(1 << 62, 1)
        except StoreError as e:
            log.warning("a lobby shard's feed could not be read at start", error=str(e))
            shard.follow(self._deliver_shard)
            return
        shard.follow(self._deliver_shard, page.last)

    def subscribe(self, callback: ChangeCallback) -> None:
        """``callback(change)`` for every change, ``callback(None)`` on a reset
        (the matchmaker learns queues this way)."""
        self._on_change.append(callback)

    def _deliver(self, entries: list[tuple[int, bytes]], reset: bool) -> None:
        if reset:
            self.recent.clear()
            self.first = self.last + 1
            self._reset()
        for seq, data in entries:
            if seq <= self.last and self.recent:
                continue  # seen (the start's read raced with the first delivery)
            change = parse(seq, data)
            self.last = max(self.last, seq)
            if change is None:
                continue
            if not self.recent:
                self.first = seq
            self.recent.append(change)
            self._dispatch(change)
        if self._reaching:
            self._wake_reaching(reset)

    def _wake_reaching(self, every: bool) -> None:
        waiting = []
        for seq, future in self._reaching:
            if every or seq <= self.last:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((seq, future))
        self._reaching = waiting

    async def reach(self, seq: int, timeout: float) -> bool:
        """Whether the feed reaches ``seq`` within ``timeout`` seconds (or
        resets meanwhile: then the caller reads the store)."""
        if self.last >= seq:
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._reaching.append((seq, future))
        try:
            async with asyncio.timeout(timeout):
                await future
        except TimeoutError:
            return False
        finally:
            self._reaching = [(s, f) for s, f in self._reaching if f is not future]
        return self.last >= seq

    def _deliver_shard(self, entries: list[tuple[int, bytes]], reset: bool) -> None:
        if reset:
            self._reset()
        for seq, data in entries:
            change = parse(seq, data)
            if change is not None:
                self._dispatch(change)

    def _reset(self) -> None:
        for waiter in self._every_waiter():
            waiter.reset = True
            waiter.event.set()
        for callback in self._on_change:
            callback(None)

    def _dispatch(self, change: Change) -> None:
        keys: list[str] = []
        if change.table is not None:
            keys.append(table_key(change.table.id))
            keys += [ticket_key(t) for t in change.table.tickets]
            if change.table.public and change.table.kind == OPENED:
                keys.append(LOBBY_CHANGES)
        if change.ticket is not None:
            keys.append(ticket_key(change.ticket.id))
        woken: set[Waiter] = set()
        for key in keys:
            woken.update(self._keyed.get(key, ()))
        for waiter in woken:
            waiter.changes.append(change)
            waiter.event.set()
        for callback in self._on_change:
            callback(change)

    def _every_waiter(self) -> set[Waiter]:
        every: set[Waiter] = set()
        for waiters in self._keyed.values():
            every.update(waiters)
        return every

    @contextlib.contextmanager
    def watching(self, *keys: str) -> Iterator[Waiter]:
        """A waiter for the changes of ``keys`` (a table's, a ticket's, or
        ``LOBBY_CHANGES``)."""
        waiter = Waiter()
        for key in keys:
            self._keyed.setdefault(key, set()).add(waiter)
        try:
            yield waiter
        finally:
            for key in keys:
                waiters = self._keyed.get(key)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._keyed[key]

    def since(self, seq: int) -> list[Change] | None:
        """The changes after ``seq`` held here, or None when some of them are
        not (older than the ring): read the store's feed then."""
        if seq >= self.last:
            return []
        if seq + 1 < self.first:
            return None
        return [c for c in self.recent if c.seq > seq]
