"""The embedded durable store: SQLite in WAL mode, group commit on one writer thread.

Threading model
    A SQLite connection belongs to the thread that opened it, and disk I/O must
    never block the asyncio event loop. So one dedicated thread owns the only
    connection; every call (reads too) becomes a *request* put on a queue, and
    the calling coroutine awaits an asyncio future.

Group commit
    The writer takes the first queued request, drains everything else already
    queued (up to ``max_batch``), runs them all in ONE transaction, commits once
    (one fsync with ``synchronous=FULL``), and only then resolves each request's
    future on its event loop (``loop.call_soon_threadsafe``). With 100 matches
    acting at once the cost is one fsync per batch, not one per action. A
    request is acknowledged only after the commit that holds it, so nothing
    acknowledged can be lost.

Failures stay alone
    A batch first runs optimistically, its requests one after the other with
    no savepoints (each costs two statements and a GIL hand-off per request).
    If any request raises (SeqConflict, MatchNotFound, MatchExists, a bad
    argument), the whole transaction is rolled back and the batch runs again
    with each request inside its own SAVEPOINT: the failing one is rolled back
    to it and fails alone; the rest of the batch commits. Only a failure of the
    transaction itself (disk full, I/O error, a failed COMMIT) fails every
    request of the batch that had not already failed on its own.

Tails
    The writer keeps each match's last sequence number and action count
    (``_tails``) so an append checks its compare-and-set without a query. It
    is filled from the database on first use, updated by the writes of the
    transaction in progress, and emptied on every rollback, so it never holds
    what the database does not. This process is the database's only writer
    (the server's sessions live in its memory).

Cancellation
    Cancelling a coroutine that awaits a request does not withdraw the request:
    it may still be committed. A caller that cancels must treat the outcome as
    unknown and reload the match.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

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
from .memory import check_action, check_events

_log = logging.getLogger(__name__)

_T = TypeVar("_T")

SCHEMA_VERSION = 1

_SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS matches (
    created INTEGER PRIMARY KEY AUTOINCREMENT,  -- creation order
    id      TEXT NOT NULL UNIQUE,
    meta    BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    match_id TEXT    NOT NULL,
    seq      INTEGER NOT NULL,
    audience TEXT    NOT NULL,
    payload  BLOB    NOT NULL,
    PRIMARY KEY (match_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS actions (
    match_id  TEXT    NOT NULL,
    idx       INTEGER NOT NULL,
    seat      INTEGER NOT NULL,
    action    TEXT    NOT NULL,
    action_id TEXT    NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL,
    PRIMARY KEY (match_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    match_id     TEXT PRIMARY KEY,
    data         BLOB    NOT NULL,
    action_count INTEGER NOT NULL
);
PRAGMA user_version = 1;
COMMIT;
"""

_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
MAX_COMMIT_LINGER_MS = 100.0

OnCommit = Callable[[float, int], None]


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counters since the store was opened (for metrics)."""

    commits: int  # transactions committed (batches)
    requests: int  # requests answered, failed ones included
    failed_requests: int  # requests answered with an error
    commit_seconds: float  # total time spent in batch transactions, BEGIN..COMMIT
    largest_batch: int  # most requests committed in one transaction
    queue_depth: int  # requests waiting for the writer right now


@dataclass(slots=True)
class _Failed:
    error: BaseException


@dataclass(slots=True)
class _Request:
    work: Callable[[sqlite3.Connection], Any]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]


@dataclass(slots=True)
class _Close:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]


def _resolve(outcomes: list[tuple[asyncio.Future[Any], Any]]) -> None:
    """Runs on the requests' event loop: hand each its result or error."""
    for future, outcome in outcomes:
        if future.done():  # the caller was cancelled
            continue
        if isinstance(outcome, _Failed):
            future.set_exception(outcome.error)
        else:
            future.set_result(outcome)


def _as_store_error(exc: BaseException) -> StoreError:
    if isinstance(exc, StoreError):
        return exc
    error = StoreError(f"{type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


def _copy(error: StoreError) -> StoreError:
    """A fresh exception per waiting request: one instance raised in several
    tasks would have its traceback rewritten by each of them."""
    fresh = type(error)(*error.args)
    fresh.__cause__ = error.__cause__
    return fresh


def _query_tail(conn: sqlite3.Connection, match_id: str) -> tuple[int, int]:
    """(last seq, number of actions) of a stored match, in one query."""
    row = conn.execute(
        "SELECT (SELECT 1 FROM matches WHERE id = ?1),"
        " (SELECT seq FROM events WHERE match_id = ?1 ORDER BY seq DESC LIMIT 1),"
        " (SELECT idx FROM actions WHERE match_id = ?1 ORDER BY idx DESC LIMIT 1)",
        (match_id,),
    ).fetchone()
    if row[0] is None:
        raise MatchNotFound(match_id)
    return (0 if row[1] is None else int(row[1]), 0 if row[2] is None else int(row[2]) + 1)


def _insert_events(conn: sqlite3.Connection, match_id: str, events: list[StoredEvent]) -> None:
    conn.executemany(
        "INSERT INTO events (match_id, seq, audience, payload) VALUES (?, ?, ?, ?)",
        [(match_id, e.seq, e.audience, e.payload) for e in events],
    )


def _frozen_events(events: list[StoredEvent]) -> list[StoredEvent]:
    # bytes(x) is x itself for bytes; a bytearray is copied now, on the caller's
    # thread, so the caller cannot change it before the writer stores it.
    return [StoredEvent(e.seq, e.audience, bytes(e.payload)) for e in events]


def _get_until(get: Callable[..., _Request | _Close], deadline: float) -> _Request | _Close:
    """The next queued item; past ``deadline``, only one already there
    (raises ``queue.Empty`` otherwise)."""
    left = deadline - time.monotonic()
    if left <= 0:
        return get(block=False)
    return get(timeout=left)


class SqliteStore:
    """The ``Store`` contract on one SQLite file (WAL mode, group commit).

    ``synchronous`` is SQLite's ``PRAGMA synchronous``: ``FULL`` (default)
    fsyncs the WAL at every commit, so an acknowledged append survives a power
    loss; ``NORMAL`` survives a crash of the process but may lose the last
    commits on power loss. ``commit_linger_ms`` (default 0) has the writer wait
    that long after a batch's first request for more before it commits: at low
    load each commit (and fsync) then carries several matches' appends instead
    of one, for that much more latency per append; nothing is acknowledged
    before its commit either way. ``on_commit(seconds,
    requests)`` is called on the writer thread after every commit (keep it
    cheap and thread-safe, e.g. a Prometheus histogram observe); ``stats()``
    gives running counters.

    Construction does no disk I/O on the caller's thread: the writer thread
    opens the database. ``await SqliteStore.open(...)`` also waits until the
    database is open and raises ``StoreError`` if it cannot be.
    """

    durable = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        on_commit: OnCommit | None = None,
        max_batch: int = 1024,
        busy_timeout_ms: int = 5000,
        commit_linger_ms: float = 0.0,
    ) -> None:
        sync = synchronous.upper()
        if sync not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {_SYNCHRONOUS}, got {synchronous!r}")
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        if not 0 <= commit_linger_ms <= MAX_COMMIT_LINGER_MS:
            raise ValueError(f"commit_linger_ms must be 0 to {MAX_COMMIT_LINGER_MS}")
        self.path = os.fspath(path)
        self.synchronous = sync
        self._on_commit = on_commit
        self._max_batch = max_batch
        self._busy_timeout_ms = busy_timeout_ms
        self._linger_s = commit_linger_ms / 1000
        self._queue: queue.SimpleQueue[_Request | _Close] = queue.SimpleQueue()
        self._closed = False
        self._close_future: asyncio.Future[None] | None = None
        self._stats_lock = threading.Lock()
        self._commits = 0
        self._requests = 0
        self._failed = 0
        self._commit_seconds = 0.0
        self._largest_batch = 0
        self._tails: dict[str, tuple[int, int]] = {}  # writer thread only (see Tails)
        self._thread = threading.Thread(
            target=self._writer, name=f"sqlite-store:{os.path.basename(self.path)}", daemon=True
        )
        self._thread.start()

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        on_commit: OnCommit | None = None,
        max_batch: int = 1024,
        busy_timeout_ms: int = 5000,
        commit_linger_ms: float = 0.0,
    ) -> SqliteStore:
        """Construct and wait until the database is open (errors surface here)."""
        store = cls(
            path,
            synchronous=synchronous,
            on_commit=on_commit,
            max_batch=max_batch,
            busy_timeout_ms=busy_timeout_ms,
            commit_linger_ms=commit_linger_ms,
        )
        try:
            await store._submit(lambda conn: None)
        except BaseException:
            await store.close()
            raise
        return store

    # ----------------------------------------------------------------- the API

    async def create_match(
        self, match_id: str, meta: bytes, snapshot: bytes, events: list[StoredEvent]
    ) -> None:
        check_events(0, events)
        events = _frozen_events(events)
        meta, snapshot = bytes(meta), bytes(snapshot)

        def work(conn: sqlite3.Connection) -> None:
            try:
                conn.execute("INSERT INTO matches (id, meta) VALUES (?, ?)", (match_id, meta))
            except sqlite3.IntegrityError:
                raise MatchExists(match_id) from None
            conn.execute(
                "INSERT INTO snapshots (match_id, data, action_count) VALUES (?, ?, 0)",
                (match_id, snapshot),
            )
            _insert_events(conn, match_id, events)
            self._tails[match_id] = (events[-1].seq if events else 0, 0)

        await self._submit(work)

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
        events = _frozen_events(events)
        new_meta = None if meta is None else bytes(meta)

        def work(conn: sqlite3.Connection) -> None:
            last_seq, action_count = self._tail(conn, match_id)
            if last_seq != expected_last_seq:
                raise SeqConflict(
                    f"match {match_id}: expected last seq {expected_last_seq}, stored {last_seq}"
                )
            if action is not None:
                check_action(action, action_count)
            _insert_events(conn, match_id, events)
            if action is not None:
                conn.execute(
                    "INSERT INTO actions (match_id, idx, seat, action, action_id,"
                    " first_seq, last_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        match_id,
                        action.index,
                        action.seat,
                        action.action,
                        action.action_id,
                        action.first_seq,
                        action.last_seq,
                    ),
                )
            if new_meta is not None:
                conn.execute("UPDATE matches SET meta = ? WHERE id = ?", (new_meta, match_id))
            self._tails[match_id] = (
                events[-1].seq if events else last_seq,
                action_count + (action is not None),
            )

        await self._submit(work)

    async def save_snapshot(self, match_id: str, snapshot: bytes, action_count: int) -> None:
        """Replace the snapshot. ``action_count`` may not exceed the stored
        actions (StoreError); a snapshot older than the stored one is ignored."""
        data = bytes(snapshot)

        def work(conn: sqlite3.Connection) -> None:
            _, stored_actions = self._tail(conn, match_id)
            if not 0 <= action_count <= stored_actions:
                raise StoreError(
                    f"match {match_id}: snapshot of {action_count} actions, {stored_actions} stored"
                )
            conn.execute(
                "UPDATE snapshots SET data = ?, action_count = ?"
                " WHERE match_id = ? AND action_count <= ?",
                (data, action_count, match_id, action_count),
            )

        await self._submit(work)

    async def load_match(self, match_id: str) -> LoadedMatch:
        def work(conn: sqlite3.Connection) -> LoadedMatch:
            row = conn.execute("SELECT meta FROM matches WHERE id = ?", (match_id,)).fetchone()
            if row is None:
                raise MatchNotFound(match_id)
            meta = bytes(row[0])
            snap = conn.execute(
                "SELECT data, action_count FROM snapshots WHERE match_id = ?", (match_id,)
            ).fetchone()
            if snap is None:
                raise StoreError(f"match {match_id}: no snapshot stored")
            snapshot, snapshot_actions = bytes(snap[0]), int(snap[1])
            actions = [
                StoredAction(int(r[0]), int(r[1]), str(r[2]), str(r[3]), int(r[4]), int(r[5]))
                for r in conn.execute(
                    "SELECT idx, seat, action, action_id, first_seq, last_seq FROM actions"
                    " WHERE match_id = ? ORDER BY idx",
                    (match_id,),
                )
            ]
            events = [
                StoredEvent(int(r[0]), str(r[1]), bytes(r[2]))
                for r in conn.execute(
                    "SELECT seq, audience, payload FROM events WHERE match_id = ? ORDER BY seq",
                    (match_id,),
                )
            ]
            return LoadedMatch(match_id, meta, snapshot, snapshot_actions, actions, events)

        return await self._submit(work)

    async def match_metas(self) -> list[tuple[str, bytes]]:
        def work(conn: sqlite3.Connection) -> list[tuple[str, bytes]]:
            rows = conn.execute("SELECT id, meta FROM matches ORDER BY created")
            return [(str(r[0]), bytes(r[1])) for r in rows]

        return await self._submit(work)

    async def close(self) -> None:
        """Answer every queued request, commit, checkpoint the WAL into the
        database file, close the connection and stop the writer thread.
        Calling it again is a no-op; any other call after it raises StoreError."""
        if self._close_future is not None:
            if not self._close_future.done():
                await asyncio.shield(self._close_future)
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        self._close_future = loop.create_future()
        self._queue.put(_Close(loop, self._close_future))
        await asyncio.shield(self._close_future)

    async def run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work(conn)`` on the writer thread as one request, for a store
        that shares this file (the lobby's, ``lobby_sqlite.py``): it joins the
        group commit like an append, its writes are durable when this returns,
        and if it raises, its own writes alone are rolled back (see Failures
        stay alone) and the error is raised here as a ``StoreError``.

        ``work`` runs inside the batch's transaction: it must not begin,
        commit or roll back (nor call ``executescript``, which commits). It
        may run twice (the retry of a batch in which another request failed),
        so whatever it changes outside the database must bear that."""
        return await self._submit(work)

    def stats(self) -> StoreStats:
        with self._stats_lock:
            return StoreStats(
                commits=self._commits,
                requests=self._requests,
                failed_requests=self._failed,
                commit_seconds=self._commit_seconds,
                largest_batch=self._largest_batch,
                queue_depth=self._queue.qsize(),
            )

    # ------------------------------------------------------------ the plumbing

    async def _submit(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            raise StoreError("store is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        self._queue.put(_Request(work, loop, future))
        return await future

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=True)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
            if mode != "wal" and self.path != ":memory:":
                raise StoreError(f"{self.path}: journal_mode is {mode!r}, WAL is required")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: schema version {version} is newer than {SCHEMA_VERSION}"
                )
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def _writer(self) -> None:
        """The writer thread: open, then answer batches until a _Close arrives."""
        conn: sqlite3.Connection | None = None
        open_error: StoreError | None = None
        try:
            conn = self._connect()
        except Exception as exc:
            open_error = StoreError(f"cannot open SQLite store {self.path}: {exc}")
            open_error.__cause__ = exc
        while True:
            batch = self._next_batch()
            closing = batch[-1] if isinstance(batch[-1], _Close) else None
            requests = [r for r in batch if isinstance(r, _Request)]
            if requests:
                if conn is None:
                    assert open_error is not None
                    outcomes: list[Any] = [_Failed(_copy(open_error)) for _ in requests]
                else:
                    outcomes = self._run_batch(conn, requests)
                self._answer(requests, outcomes)
            if closing is not None:
                self._shut_down(conn, closing)
                return

    def _next_batch(self) -> list[_Request | _Close]:
        """What is queued (at least one item), up to ``max_batch``; with a
        linger, what else comes within it too. A close ends the batch."""
        get = self._queue.get
        batch = [get()]
        deadline = time.monotonic() + self._linger_s
        while len(batch) < self._max_batch and not isinstance(batch[-1], _Close):
            try:
                batch.append(_get_until(get, deadline))
            except queue.Empty:
                break
        return batch

    def _tail(self, conn: sqlite3.Connection, match_id: str) -> tuple[int, int]:
        """(last seq, number of actions) of a stored match, from the cache if there."""
        tail = self._tails.get(match_id)
        if tail is None:
            tail = self._tails[match_id] = _query_tail(conn, match_id)
        return tail

    def _run_batch(self, conn: sqlite3.Connection, requests: list[_Request]) -> list[Any]:
        """One transaction for the whole batch: optimistic first, then if any
        request failed, again with one savepoint per request."""
        started = time.perf_counter()
        outcomes = self._transaction(conn, requests, started, isolated=False)
        if outcomes is None:
            outcomes = self._transaction(conn, requests, started, isolated=True)
            assert outcomes is not None
        return outcomes

    def _transaction(
        self, conn: sqlite3.Connection, requests: list[_Request], started: float, *, isolated: bool
    ) -> list[Any] | None:
        """Run the requests in one transaction and commit. Not ``isolated``: on
        the first failing request roll everything back and return None."""
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            error = _as_store_error(exc)
            return [_Failed(_copy(error)) for _ in requests]
        outcomes: list[Any] = []
        broken: StoreError | None = None  # the transaction itself failed
        for request in requests:
            if broken is not None:
                outcomes.append(_Failed(_copy(broken)))
                continue
            if not isolated:
                try:
                    outcomes.append(request.work(conn))
                    continue
                except Exception:
                    self._rollback(conn)
                    return None
            try:
                conn.execute("SAVEPOINT request")
                outcome = request.work(conn)
                conn.execute("RELEASE request")
                outcomes.append(outcome)
            except Exception as exc:
                outcomes.append(_Failed(_as_store_error(exc)))
                self._tails.clear()  # the failed request may have updated them
                try:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK TO request")
                        conn.execute("RELEASE request")
                except sqlite3.Error as rollback_exc:
                    broken = _as_store_error(rollback_exc)
                if broken is None and not conn.in_transaction:
                    # SQLite rolled the whole transaction back (I/O error, full disk...).
                    broken = StoreError(f"transaction aborted: {exc}")
        if broken is None:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                broken = StoreError(f"commit failed: {exc}")
        if broken is not None:
            self._rollback(conn)
            # Whatever had succeeded in this transaction is gone with it.
            return [o if isinstance(o, _Failed) else _Failed(_copy(broken)) for o in outcomes]
        self._record_commit(started, len(requests))
        return outcomes

    def _rollback(self, conn: sqlite3.Connection) -> None:
        self._tails.clear()
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            _log.exception("sqlite store: rollback failed")

    def _record_commit(self, started: float, requests: int) -> None:
        seconds = time.perf_counter() - started
        with self._stats_lock:
            self._commits += 1
            self._commit_seconds += seconds
            self._largest_batch = max(self._largest_batch, requests)
        if self._on_commit is not None:
            try:
                self._on_commit(seconds, requests)
            except Exception:
                _log.exception("sqlite store: on_commit callback failed")

    def _answer(self, requests: list[_Request], outcomes: list[Any]) -> None:
        failed = sum(isinstance(o, _Failed) for o in outcomes)
        with self._stats_lock:
            self._requests += len(requests)
            self._failed += failed
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any]]] = {}
        for request, outcome in zip(requests, outcomes, strict=True):
            by_loop.setdefault(request.loop, []).append((request.future, outcome))
        for loop, pairs in by_loop.items():  # one wake-up per loop, not per request
            # RuntimeError: that loop is closed, so nobody is waiting any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, pairs)

    def _shut_down(self, conn: sqlite3.Connection | None, closing: _Close) -> None:
        # Requests that raced with close() (other threads/loops) are refused.
        late: list[_Request] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Request):
                late.append(item)
        if late:
            self._answer(late, [_Failed(StoreError("store is closed")) for _ in late])
        outcome: Any = None
        if conn is not None:
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                outcome = _Failed(_as_store_error(exc))
            finally:
                conn.close()
        with contextlib.suppress(RuntimeError):
            closing.loop.call_soon_threadsafe(_resolve, [(closing.future, outcome)])
