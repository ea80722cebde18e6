"""The board: the public tables waiting for players, kept in this process's
memory from the lobby's feed, so that a page of the lobby costs the store
nothing.

Every change of a table comes through the feed with its document, so a
replica that follows the feed can keep the listing itself: a table is shown
(``TableDoc.listed``) or not, and its ``Table`` message is built once, when
it changes, not for every page that shows it. A page read here is the lobby
exactly as of the feed's number (``Feed.last``), which is the version a
listing returns: a change after it comes through the feed, none before it
is missing.

The board is loaded from the store when the feed starts and again after
each of its resets (a gap: changes may be missing). Loading reads the
listing's sorted set and its documents while the feed goes on: each table
keeps the newest version seen from either, and a table the feed has
removed is remembered until the load ends, so that an older read cannot
show it again. Until a load ends, pages are read from the store
(``ready`` is false). A change reaches each replica's feed a moment after
its commit: a page first reads the store's feed number (one small read)
and waits, up to a second, for the feed to reach it (``Listing``), so a
page shows every change committed before it was asked for, through any
replica. Its memory is a serialized ``Table`` a waiting public
table, at most ``--max-waiting-tables`` of them (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib

import structlog

from ..gen.spades.v1 import lobby_pb2 as lpb
from ..store import StoreError
from ..store.lobby import LobbyStore
from .docs import LOBBY, TableDoc, table_key
from .feed import Change, Feed
from .tables import table_pb

log = structlog.get_logger("spades.lobby.board")

LOAD_BATCH = 500  # tables read at once while loading
RETRY_S = 1.0  # between attempts to load while the store is away
INF = float("inf")

# A table's place in the listing: its creation time, then its id.
Position = tuple[int, str]


class Board:
    def __init__(self, store: LobbyStore, feed: Feed) -> None:
        self.store = store
        self.feed = feed
        self.ready = False
        # id: the Table message serialized (a third of the message's memory), its place, rules
        self.shown: dict[str, tuple[bytes, Position, str]] = {}
        self.order: list[Position] = []
        self.by_rules: dict[str, list[Position]] = {}
        self.versions: dict[str, int] = {}  # every table seen while loading, and the shown
        self._loading: asyncio.Task[None] | None = None
        feed.subscribe(self._on_change)

    # -- following the feed ---------------------------------------------------------------
    def _on_change(self, change: Change | None) -> None:
        if change is None:
            self.reload()
        elif change.table is not None:
            self.apply(change.table, change.version)

    def apply(self, doc: TableDoc, version: int) -> None:
        """The table as of ``version``, if that is newer than what is held."""
        if version <= self.versions.get(doc.id, 0):
            return
        self._drop(doc.id)
        if doc.listed():
            self._show(doc, version)
        elif self.ready:
            self.versions.pop(doc.id, None)  # not loading: nothing older can come
        else:
            self.versions[doc.id] = version

    def _show(self, doc: TableDoc, version: int) -> None:
        place = (doc.created_ms, doc.id)
        self.shown[doc.id] = (table_pb(doc, version).SerializeToString(), place, doc.rules_key)
        self.versions[doc.id] = version
        bisect.insort(self.order, place)
        bisect.insort(self.by_rules.setdefault(doc.rules_key, []), place)

    def _drop(self, table_id: str) -> None:
        held = self.shown.pop(table_id, None)
        if held is None:
            return
        _, place, rules_key = held
        _remove(self.order, place)
        same = self.by_rules[rules_key]
        _remove(same, place)
        if not same:
            del self.by_rules[rules_key]

    # -- loading --------------------------------------------------------------------------
    def start(self) -> None:
        """Load the board (after the feed has started: what the load reads is
        at least as new as the feed's start)."""
        self.reload()

    def reload(self) -> None:
        self.ready = False
        self.shown.clear()
        self.order.clear()
        self.by_rules.clear()
        self.versions.clear()
        if self._loading is not None:
            self._loading.cancel()
        self._loading = asyncio.get_running_loop().create_task(self._load())

    async def _load(self) -> None:
        while True:
            try:
                await self._read_all()
            except StoreError as e:
                log.warning("the lobby's board could not be loaded; pages are read", error=str(e))
                await asyncio.sleep(RETRY_S)
                continue
            # Every change from here on comes in order: no older read can come.
            self.versions = {table_id: self.versions[table_id] for table_id in self.shown}
            self.ready = True
            return

    async def _read_all(self) -> None:
        """Every listed table, in batches by place (from the score of the
        last one read, skipping those read: a place is never reused)."""
        after: Position = (-1, "")
        count = LOAD_BATCH
        while True:
            batch = await self.store.zrange(LOBBY, float(max(after[0], 0)), INF, 0, count)
            members = [(int(s), m) for m, s in batch if (int(s), m) > after]
            if not members:
                if len(batch) < count:
                    return
                count *= 2  # a whole batch of tables opened in one millisecond
                continue
            docs = await self.store.get([table_key(m) for _, m in members])
            for doc in docs:
                if doc is not None:
                    self.apply(TableDoc.from_bytes(doc.data), doc.version)
            after, count = members[-1], LOAD_BATCH

    async def close(self) -> None:
        if self._loading is not None:
            self._loading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loading

    # -- pages ----------------------------------------------------------------------------
    def page(
        self, rules_key: str | None, size: int, after: Position | None
    ) -> tuple[list[lpb.Table], Position | None]:
        """Up to ``size`` tables after ``after`` (None: from the first), and
        the last one's place if more follow."""
        places = self.order if rules_key is None else self.by_rules.get(rules_key, [])
        start = 0 if after is None else bisect.bisect_right(places, after)
        shown = places[start : start + size]
        tables = [lpb.Table.FromString(self.shown[table_id][0]) for _, table_id in shown]
        more = len(places) > start + size
        return tables, (shown[-1] if more and shown else None)


def _remove(places: list[Position], place: Position) -> None:
    i = bisect.bisect_left(places, place)
    if i < len(places) and places[i] == place:
        del places[i]
