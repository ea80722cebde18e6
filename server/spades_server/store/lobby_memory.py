"""The lobby store in memory, for tests and a single process: plain dicts, the
contract of ``lobby.py``.

Nothing survives the process. A commit never waits, so it is atomic by
construction: everything is checked before the first write. ``follow``
callbacks run from the event loop's queue (``call_soon``), never inside the
commit that caused them, so a callback that commits again cannot re-enter its
caller.

The helpers every lobby store shares (checking a ``Tx``, the token buckets of
a single process, calling back) live here too, as ``memory.py``'s checks do
for the match stores.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .base import StoreError
from .lobby import DEFAULT_FEED_KEEP, PART_NAME, Doc, FeedCallback, FeedPage, LobbyStore, Tx

_log = logging.getLogger(__name__)

MAX_KEY = 200


# ------------------------------------------------------- shared by every lobby store


def check_key(key: str) -> None:
    # Charset is the callers' business (they build keys, clients never do);
    # the length is what a store can cheaply refuse.
    if len(key) > MAX_KEY:
        raise StoreError(f"lobby key of {len(key)} characters (at most {MAX_KEY}): {key[:40]}...")


def check_feed_keep(feed_keep: int) -> int:
    if feed_keep < 1:
        raise ValueError(f"feed_keep must be >= 1, got {feed_keep}")
    return feed_keep


def check_tx(tx: Tx) -> None:
    """Refuse a malformed commit before anything of it is looked at."""
    for key in itertools.chain(tx.expect, tx.put, tx.delete):
        check_key(key)
    for name, _member, score in tx.zadd:
        check_key(name)
        if math.isnan(score):
            raise StoreError(f"sorted set {name}: score is NaN")
    for name, _member in tx.zrem:
        check_key(name)
    for key, version in tx.expect.items():
        if version < 0:
            raise StoreError(f"{key}: expected version {version} (0 means absent)")
    for key in tx.ttl_ms:
        if key not in tx.put:
            raise StoreError(f"{key}: a ttl for a key the commit does not put")


def check_part(name: str) -> str:
    if not PART_NAME.fullmatch(name):
        raise StoreError(f"a lobby partition is named by {PART_NAME.pattern}, got {name[:80]!r}")
    return name


NO_FEED = "a lobby partition has no feed"


def check_unfed(tx: Tx) -> None:
    """A partition's commit: it has no feed to append to."""
    if tx.events:
        raise StoreError(f"{NO_FEED}: a commit there carries no events")


class SamePart:
    """A partition where every key is in one place (memory, SQLite, one
    Redis): the store itself under a partition's limits (no feed), so that
    code written for a cluster's partitions behaves the same here."""

    def __init__(self, store: LobbyStore, name: str) -> None:
        check_part(name)
        self._store = store

    async def get(self, keys: Sequence[str]) -> list[Doc | None]:
        return await self._store.get(keys)

    async def commit(self, tx: Tx) -> int | None:
        check_unfed(tx)
        return await self._store.commit(tx)

    async def zrange(
        self, name: str, low: float, high: float, offset: int = 0, count: int = -1
    ) -> list[tuple[str, float]]:
        return await self._store.zrange(name, low, high, offset, count)

    async def zcard(self, name: str) -> int:
        return await self._store.zcard(name)

    async def zrank(self, name: str, member: str) -> int | None:
        return await self._store.zrank(name, member)

    async def feed_after(self, after: int, limit: int) -> FeedPage:
        raise StoreError(NO_FEED)

    def follow(self, callback: FeedCallback, after: int | None = None) -> None:
        raise StoreError(NO_FEED)

    async def take_token(self, key: str, rate: float, burst: int) -> bool:
        return await self._store.take_token(key, rate, burst)

    def part(self, name: str) -> LobbyStore:
        return self._store.part(name)

    def shard(self, name: str) -> LobbyStore:
        return self._store.shard(name)

    async def close(self) -> None:
        """The store's to close."""


def ttl_of(tx: Tx, key: str) -> int | None:
    """The key's lifetime in ms, at least 1 (a ttl that already ran out still
    writes, and the key is gone at once), or None for no ttl."""
    ttl = tx.ttl_ms.get(key)
    return None if ttl is None else max(1, int(ttl))


def frozen(tx: Tx) -> Tx:
    """A copy holding only bytes: a caller's bytearray, changed after the call,
    cannot change what is stored (or, on SQLite, what the writer thread writes)."""
    return Tx(
        expect=dict(tx.expect),
        put={k: bytes(v) for k, v in tx.put.items()},
        ttl_ms=dict(tx.ttl_ms),
        delete=list(tx.delete),
        zadd=[(n, m, float(s)) for n, m, s in tx.zadd],
        zrem=list(tx.zrem),
        events=[bytes(e) for e in tx.events],
    )


def call_back(callback: FeedCallback, entries: list[tuple[int, bytes]], reset: bool) -> None:
    """One callback's failure must not stop the feed for the others."""
    try:
        callback(entries, reset)
    except Exception:
        _log.exception("lobby store: a follow callback failed")


def soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)`` from ``loop``'s queue, from whichever thread or loop."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        loop.call_soon(fn, *args)
    elif not loop.is_closed():  # a closed loop has nobody left to tell
        loop.call_soon_threadsafe(fn, *args)


class TokenBuckets:
    """Token buckets of one process (memory and SQLite: one process is every
    replica there is)."""

    PRUNE_AT = 4096  # buckets kept before the full ones are dropped

    def __init__(self) -> None:
        # key -> (tokens, when counted, when full again); all time.monotonic()
        self._buckets: dict[str, tuple[float, float, float]] = {}

    def take(self, key: str, rate: float, burst: int) -> bool:
        check_key(key)
        now = time.monotonic()
        tokens, stamp, _ = self._buckets.get(key, (float(burst), now, now))
        tokens = min(float(burst), tokens + max(0.0, now - stamp) * rate)
        granted = tokens >= 1
        if granted:
            tokens -= 1
        full_at = now + (burst - tokens) / rate if rate > 0 else math.inf
        self._buckets[key] = (tokens, now, full_at)
        if len(self._buckets) > self.PRUNE_AT:
            self._prune(now)
        return granted

    def _prune(self, now: float) -> None:
        # A bucket that has refilled is the same as no bucket.
        for key in [k for k, (_, _, full_at) in self._buckets.items() if full_at <= now]:
            del self._buckets[key]


# ---------------------------------------------------------------- the store


class MemoryLobby:
    """The ``LobbyStore`` contract on dicts; ttls count in ``time.monotonic``."""

    def __init__(self, feed_keep: int = DEFAULT_FEED_KEEP) -> None:
        self.feed_keep = check_feed_keep(feed_keep)
        # key -> (version, data, monotonic expiry or None)
        self._docs: dict[str, tuple[int, bytes, float | None]] = {}
        self._sets: dict[str, dict[str, float]] = {}
        self._feed: deque[tuple[int, bytes]] = deque(maxlen=feed_keep)
        self._last = 0
        self._followers: list[tuple[asyncio.AbstractEventLoop, FeedCallback]] = []
        self._buckets = TokenBuckets()
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("lobby store is closed")

    def _doc(self, key: str, now: float) -> tuple[int, bytes] | None:
        stored = self._docs.get(key)
        if stored is None:
            return None
        version, data, expires = stored
        if expires is not None and expires <= now:
            del self._docs[key]
            return None
        return version, data

    async def get(self, keys: Sequence[str]) -> list[Doc | None]:
        self._check_open()
        for key in keys:
            check_key(key)
        now = time.monotonic()
        docs = [self._doc(key, now) for key in keys]
        return [None if d is None else Doc(*d) for d in docs]

    async def commit(self, tx: Tx) -> int | None:
        self._check_open()
        check_tx(tx)
        now = time.monotonic()
        for key, version in tx.expect.items():
            found = self._doc(key, now)
            if (0 if found is None else found[0]) != version:
                return None
        # Everything is checked: nothing below can fail, so the commit is atomic.
        tx = frozen(tx)
        self._write_docs(tx, now)
        self._write_sets(tx)
        return self._append(tx.events)

    def _write_docs(self, tx: Tx, now: float) -> None:
        for key, data in tx.put.items():
            found = self._doc(key, now)
            ttl = ttl_of(tx, key)
            expires = None if ttl is None else now + ttl / 1000
            self._docs[key] = ((0 if found is None else found[0]) + 1, data, expires)
        for key in tx.delete:
            self._docs.pop(key, None)

    def _write_sets(self, tx: Tx) -> None:
        for name, member, score in tx.zadd:
            self._sets.setdefault(name, {})[member] = score
        for name, member in tx.zrem:
            members = self._sets.get(name)
            if members is not None:
                members.pop(member, None)
                if not members:
                    del self._sets[name]

    def _append(self, events: list[bytes]) -> int:
        if not events:
            return self._last
        entries = [(self._last + i, e) for i, e in enumerate(events, start=1)]
        self._feed.extend(entries)  # the deque's maxlen drops the oldest
        self._last = entries[-1][0]
        for loop, callback in self._followers:
            soon(loop, call_back, callback, list(entries), False)
        return self._last

    async def zrange(
        self, name: str, low: float, high: float, offset: int = 0, count: int = -1
    ) -> list[tuple[str, float]]:
        self._check_open()
        check_key(name)
        members = self._sets.get(name, {})
        found = sorted((s, m) for m, s in members.items() if low <= s <= high)
        end = None if count < 0 else offset + count
        return [(m, s) for s, m in found[offset:end]]

    async def zcard(self, name: str) -> int:
        self._check_open()
        check_key(name)
        return len(self._sets.get(name, ()))

    async def zrank(self, name: str, member: str) -> int | None:
        self._check_open()
        check_key(name)
        members = self._sets.get(name, {})
        score = members.get(member)
        if score is None:
            return None
        return sum(1 for m, s in members.items() if (s, m) < (score, member))

    async def feed_after(self, after: int, limit: int) -> FeedPage:
        self._check_open()
        first = self._feed[0][0] if self._feed else self._last + 1
        start = max(0, after + 1 - first)
        entries = list(itertools.islice(self._feed, start, start + max(0, limit)))
        return FeedPage(entries, first, self._last)

    def follow(self, callback: FeedCallback, after: int | None = None) -> None:
        # One process writes this store: every commit after the caller's read
        # of the feed's end reaches it, so ``after`` needs no catching up.
        self._check_open()
        self._followers.append((asyncio.get_running_loop(), callback))

    async def take_token(self, key: str, rate: float, burst: int) -> bool:
        self._check_open()
        return self._buckets.take(key, rate, burst)

    def part(self, name: str) -> LobbyStore:
        return SamePart(self, name)

    def shard(self, name: str) -> LobbyStore:
        check_part(name)
        return self

    async def close(self) -> None:
        self._closed = True
        self._followers.clear()


if TYPE_CHECKING:

    def _is_a_lobby_store(store: MemoryLobby) -> LobbyStore:
        return store  # mypy checks here that MemoryLobby keeps the LobbyStore protocol

    def _is_a_part(store: SamePart) -> LobbyStore:
        return store
