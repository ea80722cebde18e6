"""The lobby store in the embedded SQLite file, beside the matches.

It shares ``SqliteStore``'s one connection and writer thread: every read and
every commit is a work function run there (``SqliteStore.run``), so a commit
is one request of the group commit, as durable when it returns as an append,
and atomic because the request is (its writes are rolled back alone if it
fails). Its tables sit beside the matches' and are created on first use; they
leave the matches' schema (and its ``user_version``) alone, so a database
from before the lobby opens as it did.

``lobby_docs``   key -> version, data, expiry (wall-clock ms, so that it
                 survives a restart; NULL: none). An expired row reads as
                 absent and is deleted by the next read of it or by the sweep.
``lobby_zsets``  (name, member) -> score, indexed by (name, score, member)
``lobby_zcards`` name -> members, kept by triggers (a ``count(*)`` of a set
                 walks it: 9.5 ms for a leaderboard of 100,000, bench/ratings.py)
``lobby_feed``   seq -> data; the newest ``feed_keep`` rows are kept

The sweep (the feed's trim and the expired documents) runs inside a commit
every ``min(64, feed_keep)`` commits, so no commit pays for more than that.

Following
    One process is the only writer of a SQLite file, so every commit passes
    through this process: each ``SqliteLobby`` of a store hands the events of
    its commits (once the commit's request has resolved) to every follower of
    that store, on the follower's loop. A follower puts them back in feed
    order by number; the first commit it hears of starts it. A hole it
    cannot fill from what it is handed (a commit whose answer went to a loop
    that closed, a writer outside this process) is read from the table, or,
    when the rows are trimmed already, reported as a reset.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from .base import StoreError
from .lobby import DEFAULT_FEED_KEEP, Doc, FeedCallback, FeedPage, LobbyStore, Tx
from .lobby_memory import (
    SamePart,
    TokenBuckets,
    call_back,
    check_feed_keep,
    check_key,
    check_part,
    check_tx,
    frozen,
    soon,
    ttl_of,
)
from .sqlite import SqliteStore

_T = TypeVar("_T")

_TABLES = (
    "CREATE TABLE IF NOT EXISTS lobby_docs ("
    " key TEXT PRIMARY KEY, version INTEGER NOT NULL, data BLOB NOT NULL, expires_ms INTEGER"
    ") WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS lobby_docs_expiry ON lobby_docs (expires_ms)"
    " WHERE expires_ms IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS lobby_zsets ("
    " name TEXT NOT NULL, member TEXT NOT NULL, score REAL NOT NULL,"
    " PRIMARY KEY (name, member)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS lobby_zsets_by_score ON lobby_zsets (name, score, member)",
    "CREATE TABLE IF NOT EXISTS lobby_feed (seq INTEGER PRIMARY KEY, data BLOB NOT NULL)",
)

# One statement per put: an expired row starts again at version 1.
_PUT = (
    "INSERT INTO lobby_docs (key, version, data, expires_ms) VALUES (?1, 1, ?2, ?3)"
    " ON CONFLICT (key) DO UPDATE SET"
    " version = CASE WHEN expires_ms <= ?4 THEN 1 ELSE version + 1 END,"
    " data = excluded.data, expires_ms = excluded.expires_ms"
)

SWEEP_EVERY = 64
FILL_PAGE = 1000  # rows a follower reads at a time to fill a hole


_COUNTS = (
    "CREATE TABLE lobby_zcards (name TEXT PRIMARY KEY, members INTEGER NOT NULL) WITHOUT ROWID",
    # Sets made before the counts: counted once, as the table is made.
    "INSERT INTO lobby_zcards SELECT name, count(*) FROM lobby_zsets GROUP BY name",
    "CREATE TRIGGER lobby_zsets_added AFTER INSERT ON lobby_zsets BEGIN"
    " INSERT INTO lobby_zcards (name, members) VALUES (new.name, 1)"
    " ON CONFLICT (name) DO UPDATE SET members = members + 1; END",
    "CREATE TRIGGER lobby_zsets_removed AFTER DELETE ON lobby_zsets BEGIN"
    " UPDATE lobby_zcards SET members = members - 1 WHERE name = old.name; END",
)


def _create_tables(conn: sqlite3.Connection) -> None:
    # Not executescript: it would commit the batch's transaction halfway.
    for statement in _TABLES:
        conn.execute(statement)
    made = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'lobby_zcards'"
    ).fetchone()
    if made is None:
        for statement in _COUNTS:
            conn.execute(statement)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _read_doc(conn: sqlite3.Connection, key: str, now: int) -> Doc | None:
    row = conn.execute(
        "SELECT version, data, expires_ms FROM lobby_docs WHERE key = ?", (key,)
    ).fetchone()
    if row is None:
        return None
    if row[2] is not None and row[2] <= now:
        conn.execute("DELETE FROM lobby_docs WHERE key = ?", (key,))
        return None
    return Doc(int(row[0]), bytes(row[1]))


def _version(conn: sqlite3.Connection, key: str, now: int) -> int:
    row = conn.execute(
        "SELECT version FROM lobby_docs WHERE key = ?1 AND (expires_ms IS NULL OR expires_ms > ?2)",
        (key, now),
    ).fetchone()
    return 0 if row is None else int(row[0])


def _last(conn: sqlite3.Connection) -> int:
    # The newest row is never trimmed, so the largest seq is the feed's last number.
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM lobby_feed").fetchone()[0])


def _write(conn: sqlite3.Connection, tx: Tx, now: int) -> None:
    puts = []
    for key, data in tx.put.items():
        ttl = ttl_of(tx, key)
        puts.append((key, data, None if ttl is None else now + ttl, now))
    conn.executemany(_PUT, puts)
    conn.executemany("DELETE FROM lobby_docs WHERE key = ?", [(k,) for k in tx.delete])
    conn.executemany(
        "INSERT INTO lobby_zsets (name, member, score) VALUES (?, ?, ?)"
        " ON CONFLICT (name, member) DO UPDATE SET score = excluded.score",
        tx.zadd,
    )
    conn.executemany("DELETE FROM lobby_zsets WHERE name = ? AND member = ?", tx.zrem)


class SqliteLobby:
    """The ``LobbyStore`` contract on a ``SqliteStore``'s file and writer thread.
    Closing it stops its followers; the ``SqliteStore`` closes the file."""

    def __init__(self, store: SqliteStore, feed_keep: int = DEFAULT_FEED_KEEP) -> None:
        self._store = store
        self.feed_keep = check_feed_keep(feed_keep)
        self._sweep_every = min(SWEEP_EVERY, feed_keep)
        self._since_sweep = 0  # writer thread only
        self._ready = False  # the tables exist
        self._hub = _hub(store)
        self._follower: _Follower | None = None
        self._closed = False

    async def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            raise StoreError("lobby store is closed")
        if not self._ready:
            # Its own request: once answered, its transaction is committed.
            await self._store.run(_create_tables)
            self._ready = True
        return await self._store.run(work)

    async def get(self, keys: Sequence[str]) -> list[Doc | None]:
        keys = list(keys)
        for key in keys:
            check_key(key)

        def work(conn: sqlite3.Connection) -> list[Doc | None]:
            now = _now_ms()
            return [_read_doc(conn, key, now) for key in keys]

        return await self._run(work)

    async def commit(self, tx: Tx) -> int | None:
        check_tx(tx)
        tx = frozen(tx)

        def work(conn: sqlite3.Connection) -> tuple[int, int] | None:
            now = _now_ms()
            for key, version in tx.expect.items():
                if _version(conn, key, now) != version:
                    return None
            _write(conn, tx, now)
            before = _last(conn)
            conn.executemany(
                "INSERT INTO lobby_feed (seq, data) VALUES (?, ?)",
                [(before + i, e) for i, e in enumerate(tx.events, start=1)],
            )
            self._maybe_sweep(conn, now, before + len(tx.events))
            return before, before + len(tx.events)

        # A task of its own, shielded: a caller that gives up waiting must not
        # keep a written commit's events from the followers.
        task = asyncio.ensure_future(self._run(work))
        task.add_done_callback(functools.partial(self._committed, tx.events))
        numbers = await asyncio.shield(task)
        return None if numbers is None else numbers[1]

    def _maybe_sweep(self, conn: sqlite3.Connection, now: int, last: int) -> None:
        self._since_sweep += 1
        if self._since_sweep < self._sweep_every:
            return
        self._since_sweep = 0
        conn.execute("DELETE FROM lobby_feed WHERE seq <= ?", (last - self.feed_keep,))
        conn.execute("DELETE FROM lobby_docs WHERE expires_ms <= ?", (now,))

    def _committed(self, events: list[bytes], task: asyncio.Future[tuple[int, int] | None]) -> None:
        if task.cancelled() or task.exception() is not None:
            return  # nothing was written (or the caller was told it may not have been)
        numbers = task.result()
        if numbers is not None and events:
            self._hub.offer(list(enumerate(events, start=numbers[0] + 1)))

    async def zrange(
        self, name: str, low: float, high: float, offset: int = 0, count: int = -1
    ) -> list[tuple[str, float]]:
        check_key(name)

        def work(conn: sqlite3.Connection) -> list[tuple[str, float]]:
            rows = conn.execute(
                "SELECT member, score FROM lobby_zsets WHERE name = ? AND score BETWEEN ? AND ?"
                " ORDER BY score, member LIMIT ? OFFSET ?",
                (name, low, high, max(-1, count), max(0, offset)),
            )
            return [(str(m), float(s)) for m, s in rows]

        return await self._run(work)

    async def zcard(self, name: str) -> int:
        check_key(name)

        def work(conn: sqlite3.Connection) -> int:
            row = conn.execute("SELECT members FROM lobby_zcards WHERE name = ?", (name,))
            found = row.fetchone()
            return 0 if found is None else int(found[0])

        return await self._run(work)

    async def zrank(self, name: str, member: str) -> int | None:
        check_key(name)

        def work(conn: sqlite3.Connection) -> int | None:
            row = conn.execute(
                "SELECT score FROM lobby_zsets WHERE name = ? AND member = ?", (name, member)
            ).fetchone()
            if row is None:
                return None
            (before,) = conn.execute(
                "SELECT count(*) FROM lobby_zsets WHERE name = ?"
                " AND (score < ? OR (score = ? AND member < ?))",
                (name, row[0], row[0], member),
            ).fetchone()
            return int(before)

        return await self._run(work)

    async def feed_after(self, after: int, limit: int) -> FeedPage:
        def work(conn: sqlite3.Connection) -> FeedPage:
            rows = conn.execute(
                "SELECT seq, data FROM lobby_feed WHERE seq > ? ORDER BY seq LIMIT ?",
                (after, max(0, limit)),
            )
            entries = [(int(n), bytes(d)) for n, d in rows]
            # Two subqueries: SQLite reads min and max from the index only one at a time.
            first, last = conn.execute(
                "SELECT (SELECT min(seq) FROM lobby_feed), (SELECT max(seq) FROM lobby_feed)"
            ).fetchone()
            last = 0 if last is None else int(last)
            return FeedPage(entries, last + 1 if first is None else int(first), last)

        return await self._run(work)

    def follow(self, callback: FeedCallback, after: int | None = None) -> None:
        # One process writes this store: every commit after the caller's read
        # of the feed's end reaches it, so ``after`` needs no catching up.
        if self._closed:
            raise StoreError("lobby store is closed")
        if self._follower is None:
            self._follower = _Follower(self, asyncio.get_running_loop())
            self._hub.followers.add(self._follower)
        self._follower.callbacks.append(callback)

    async def take_token(self, key: str, rate: float, burst: int) -> bool:
        if self._closed:
            raise StoreError("lobby store is closed")
        return self._hub.buckets.take(key, rate, burst)

    def part(self, name: str) -> LobbyStore:
        return SamePart(self, name)

    def shard(self, name: str) -> LobbyStore:
        check_part(name)
        return self

    async def close(self) -> None:
        self._closed = True
        if self._follower is not None:
            self._hub.followers.discard(self._follower)
            self._follower.stop()
            self._follower = None


class _Hub:
    """What every ``SqliteLobby`` on one ``SqliteStore`` shares: the followers
    and the token buckets (this process is every replica there is)."""

    def __init__(self) -> None:
        self.followers: set[_Follower] = set()
        self.buckets = TokenBuckets()

    def offer(self, entries: list[tuple[int, bytes]]) -> None:
        for follower in list(self.followers):
            soon(follower.loop, follower.offer, entries)


_hubs: weakref.WeakKeyDictionary[SqliteStore, _Hub] = weakref.WeakKeyDictionary()


def _hub(store: SqliteStore) -> _Hub:
    hub = _hubs.get(store)
    if hub is None:
        hub = _hubs[store] = _Hub()
    return hub


class _Follower:
    """Puts the events handed to it back in feed order, fills holes from the
    table, and passes them on (all on ``loop``)."""

    def __init__(self, lobby: SqliteLobby, loop: asyncio.AbstractEventLoop) -> None:
        self.lobby = lobby
        self.loop = loop
        self.callbacks: list[FeedCallback] = []
        self.next: int | None = None  # the number to pass on next
        self.pending: dict[int, bytes] = {}  # handed over, ahead of ``next``
        self._filling: asyncio.Task[None] | None = None
        self._stopped = False

    def offer(self, entries: list[tuple[int, bytes]]) -> None:
        if self._stopped:
            return
        if self.next is None:
            self.next = entries[0][0]
        for number, event in entries:
            if number >= self.next:
                self.pending[number] = event
        self._drain()
        if self.pending and self._filling is None:
            self._filling = self.loop.create_task(self._fill())

    def _drain(self) -> None:
        ready: list[tuple[int, bytes]] = []
        while self.next is not None and self.next in self.pending:
            ready.append((self.next, self.pending.pop(self.next)))
            self.next += 1
        if ready:
            self._tell(ready, False)

    async def _fill(self) -> None:
        """Read the hole before ``pending`` from the table: every number below
        one handed over is committed already."""
        try:
            while self.pending and self.next is not None:
                page = await self.lobby.feed_after(self.next - 1, FILL_PAGE)
                if page.first > self.next or not page.entries:
                    self._skip_to(page.last)  # trimmed before it was read
                    continue
                for number, event in page.entries:
                    self.pending.setdefault(number, event)
                self._drain()
        except StoreError:
            self.next = None  # the next commit handed over starts it again
            self.pending.clear()
            self._tell([], True)
        finally:
            self._filling = None

    def _skip_to(self, last: int) -> None:
        # Readers list again after the reset, which covers every event up to
        # ``last``: pass on only what comes after it.
        self.next = last + 1
        self.pending = {n: e for n, e in self.pending.items() if n > last}
        self._tell([], True)
        self._drain()

    def _tell(self, entries: list[tuple[int, bytes]], reset: bool) -> None:
        for callback in list(self.callbacks):
            call_back(callback, list(entries), reset)

    def stop(self) -> None:
        self._stopped = True
        self.callbacks.clear()
        if self._filling is not None:
            self._filling.cancel()


if TYPE_CHECKING:

    def _is_a_lobby_store(store: SqliteLobby) -> LobbyStore:
        return store  # mypy checks here that SqliteLobby keeps the LobbyStore protocol
