"""The lobby store on Redis, shared by every replica, beside ``RedisStore``.

It uses the match store's connection pool and key prefix. Every key is under
one Redis Cluster hash tag, ``{lobby}``, so that a commit, whatever it
touches, is one script on one slot (``P`` is the prefix):

``P:{lobby}:d:<key>``     hash: ``v`` (the version) and ``d`` (the data); a
                          ttl is the key's own (PEXPIRE), so an expired
                          document is simply absent
``P:{lobby}:z:<name>``    sorted set
``P:{lobby}:feed``        stream: one entry per event, id ``0-<number>``,
                          field ``e``; trimmed with ``MAXLEN ~ feed_keep``
``P:{lobby}:feed:n``      string: the feed's last number
``P:{lobby}:rate:<key>``  hash: a token bucket (``t`` tokens at ``s`` ms); on a
                          Redis Cluster ``P:{lobby.rate:<key>}``, a slot per
                          bucket (no commit touches one)

A partition (``part(name)``) or a shard (``shard(name)``) is the lobby itself
on one Redis; on a Redis Cluster its documents and sorted sets are
``P:{lobby.<name>}:d:<key>`` and ``P:{lobby.<name>}:z:<name>``, a slot each
(the ratings of a pool, a player's record: lobby/ratings.py; quick play's
shards: lobby/shards.py). A shard has a feed there too
(``P:{lobby.<name>}:feed`` and ``:feed:n``), followed by a follower of its
own; a partition has none. A commit touches one of them, or ``{lobby}``
alone: one script on one slot (docs/architecture.md: the lobby on a
cluster).

A commit is one script (``_COMMIT``) that is handed every key it touches. It
compares every expected version before it writes anything, then appends the
events first: XADD is the one write the server could refuse (an id behind
the stream's), and a script that fails halfway keeps its earlier writes.

Following: one task per ``RedisLobby``, with a connection of its own, blocks
on XREAD from the last number it passed on (any replica's events arrive
there). After an error it reconnects and goes on from that number if the
feed still holds the event it passed on there; otherwise Redis came back
without it (no persistence, or a replica promoted before it had it) and may
give its number to another event, so it reports a reset and goes on from
the feed's end. If the entries it needs were trimmed meanwhile, it reports
a reset too.

Every Redis failure raises ``StoreUnavailable`` (a ``StoreError``), as the
match store's calls do.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import redis.asyncio as aioredis
import redis.asyncio.cluster as aiocluster
import redis.exceptions as rex
import structlog

from .. import tasks
from .base import StoreError
from .lobby import DEFAULT_FEED_KEEP, Doc, FeedCallback, FeedPage, LobbyStore, Tx
from .lobby_memory import (
    NO_FEED,
    SamePart,
    call_back,
    check_feed_keep,
    check_key,
    check_part,
    check_tx,
    check_unfed,
    ttl_of,
)
from .redis import RedisStore

log = structlog.get_logger("spades.store.lobby_redis")

_T = TypeVar("_T")

# KEYS: the feed's counter, the feed, then every document and sorted set the
# commit touches.  ARGV: how many expected versions, puts, deletes, zadds,
# zrems and events there are, and feed_keep; then the expected versions (key
# index, version), the puts (key index, data, ttl ms or 0), the deletes (key
# index), the zadds (key index, score, member), the zrems (key index, member),
# the events. Returns the feed's last number, or -1 if a version differed.
_COMMIT = """
local ne, np, nd, na, nr, nv = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
  tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local keep = ARGV[7]
local at = 8
for i = 1, ne do
  local have = tonumber(redis.call('HGET', KEYS[tonumber(ARGV[at])], 'v')) or 0
  if have ~= tonumber(ARGV[at + 1]) then return -1 end
  at = at + 2
end
local last = tonumber(redis.call('GET', KEYS[1])) or 0
local events = at + 3 * np + nd + 3 * na + 2 * nr
for i = 1, nv do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', keep, '0-' .. (last + i), 'e', ARGV[events + i - 1])
end
if nv > 0 then redis.call('SET', KEYS[1], last + nv) end
for i = 1, np do
  local key = KEYS[tonumber(ARGV[at])]
  local version = (tonumber(redis.call('HGET', key, 'v')) or 0) + 1
  redis.call('HSET', key, 'v', version, 'd', ARGV[at + 1])
  if ARGV[at + 2] ~= '0' then
    redis.call('PEXPIRE', key, ARGV[at + 2])
  else
    redis.call('PERSIST', key)
  end
  at = at + 3
end
for i = 1, nd do
  redis.call('DEL', KEYS[tonumber(ARGV[at])])
  at = at + 1
end
for i = 1, na do
  redis.call('ZADD', KEYS[tonumber(ARGV[at])], ARGV[at + 1], ARGV[at + 2])
  at = at + 3
end
for i = 1, nr do
  redis.call('ZREM', KEYS[tonumber(ARGV[at])], ARGV[at + 1])
  at = at + 2
end
return last + nv
"""

# A token bucket every replica shares, on the server's clock (as the match
# store's _TAKE). KEYS: the bucket.  ARGV: tokens per second, burst, and how
# long (ms) the bucket outlives its last use (by then it is full again).
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 't', 's')
local tokens = tonumber(v[1]) or burst
local stamp = tonumber(v[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - stamp) * rate / 1000)
local granted = 0
if tokens >= 1 then tokens = tokens - 1; granted = 1 end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 's', now)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return granted
"""

# Reads as scripts, not MULTI: a script reads its keys at one instant as
# MULTI would, in one command rather than two more per read, and redis-py's
# cluster client runs each command of a MULTI on a thread of its own, the
# event loop blocked meanwhile (docs/performance.md, "The lobby's reads").
# KEYS: documents.  Returns each one's version and data (nil: absent).
_READ = """
local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('HMGET', key, 'v', 'd') end
return out
"""
# KEYS: the feed, its counter.  ARGV: the first id after the page's start
# ("(0-<after>"), and how many entries (0: none).  Returns the oldest entry
# (a list of none or one), the feed's last number, and the page's entries.
_FEED = """
local oldest = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
local last = redis.call('GET', KEYS[2]) or '0'
local page = {}
if tonumber(ARGV[2]) > 0 then
  page = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2])
end
return {oldest, last, page}
"""

BLOCK_MS = 1000  # the follower's XREAD; also how soon it notices close()
READ_COUNT = 1000  # entries per XREAD
RETRY_S = 0.5  # between the follower's attempts while Redis is away
BUCKET_MAX_MS = 86_400_000


class RedisLobby:
    """The ``LobbyStore`` contract on a ``RedisStore``'s connection pool.
    Closing it stops its follower; the ``RedisStore`` closes the pool."""

    def __init__(self, store: RedisStore, feed_keep: int = DEFAULT_FEED_KEEP) -> None:
        self._store = store
        self._redis = store._redis
        self.feed_keep = check_feed_keep(feed_keep)
        self.base = f"{store.prefix}:{{lobby}}"
        self.feed_key = f"{self.base}:feed"
        self.counter_key = f"{self.base}:feed:n"
        self._commit = store.register_script(_COMMIT)
        self._take = store.register_script(_TAKE)
        self._read = store.register_script(_READ)
        self._feed = store.register_script(_FEED)
        self._follower: _Follower | None = None
        self._closed = False
        self._shards: dict[str, _ClusterPart] = {}

    def part(self, name: str) -> LobbyStore:
        check_part(name)
        if self._store.cluster:
            return _ClusterPart(self, name)
        return SamePart(self, name)

    def shard(self, name: str) -> LobbyStore:
        check_part(name)
        if not self._store.cluster:
            return self
        found = self._shards.get(name)
        if found is None:
            found = self._shards[name] = _ClusterPart(self, name, fed=True)
        return found

    def _is_closed(self) -> bool:
        return self._closed

    def doc_key(self, key: str) -> str:
        return f"{self.base}:d:{key}"

    def set_key(self, name: str) -> str:
        return f"{self.base}:z:{name}"

    def bucket_key(self, key: str) -> str:
        """A token bucket is never in a commit: on a cluster it has a hash tag
        of its own, so the buckets spread over every shard."""
        if self._store.cluster:
            return f"{self._store.prefix}:{{lobby.rate:{key}}}"
        return f"{self.base}:rate:{key}"

    async def _call(self, what: Callable[[], Awaitable[_T]]) -> _T:
        if self._is_closed():
            raise StoreError("lobby store is closed")
        return await self._store._call(what)  # StoreUnavailable for every Redis failure

    async def get(self, keys: Sequence[str]) -> list[Doc | None]:
        keys = list(keys)
        for key in keys:
            check_key(key)
        if not keys:
            return []

        async def work() -> Any:
            if len(keys) == 1:  # most reads: one command
                return [await self._redis.hmget(self.doc_key(keys[0]), "v", "d")]
            return await self._read(keys=[self.doc_key(k) for k in keys])

        rows = await self._call(work)
        return [None if v is None else Doc(int(v), d) for v, d in rows]

    async def commit(self, tx: Tx) -> int | None:
        check_tx(tx)
        keys, args = self._script_args(tx)
        # With --redis-wait-replicas, a commit not on enough Redis replicas
        # raises StoreUnavailable: it may or may not be kept (read again).
        result, confirmed = await self._call(
            lambda: self._store.run_confirmed(self._commit, keys, args)
        )
        last = int(result)
        if last >= 0:
            self._store.check_confirmed(confirmed)
        return None if last < 0 else last

    def _script_args(self, tx: Tx) -> tuple[list[str], list[Any]]:
        """_COMMIT's KEYS and ARGV: each key once, named by its index."""
        keys = [self.counter_key, self.feed_key]
        index: dict[str, int] = {}

        def at(redis_key: str) -> int:
            if redis_key not in index:
                keys.append(redis_key)
                index[redis_key] = len(keys)  # Lua counts from 1
            return index[redis_key]

        args: list[Any] = [
            len(tx.expect),
            len(tx.put),
            len(tx.delete),
            len(tx.zadd),
            len(tx.zrem),
            len(tx.events),
            self.feed_keep,
        ]
        for key, version in tx.expect.items():
            args += [at(self.doc_key(key)), version]
        for key, data in tx.put.items():
            args += [at(self.doc_key(key)), bytes(data), ttl_of(tx, key) or 0]
        args += [at(self.doc_key(key)) for key in tx.delete]
        for name, member, score in tx.zadd:
            args += [at(self.set_key(name)), _score(score), member]
        for name, member in tx.zrem:
            args += [at(self.set_key(name)), member]
        args += [bytes(e) for e in tx.events]
        return keys, args

    async def zrange(
        self, name: str, low: float, high: float, offset: int = 0, count: int = -1
    ) -> list[tuple[str, float]]:
        check_key(name)
        key = self.set_key(name)
        start: int | None = None
        num: int | None = None
        if offset > 0 or count >= 0:  # Redis's LIMIT wants both; a negative count is "all"
            start, num = max(0, offset), count

        async def work() -> Any:
            if low == float("-inf") and high == float("inf"):
                # By place: ZRANGEBYSCORE ... LIMIT walks past every skipped
                # member (12.5 ms at offset 95,000 here, against 0.12 ms for
                # ZRANGE by index: bench/ratings.py), which a deep leaderboard
                # page pays.
                end = -1 if num is None or num < 0 else (start or 0) + num - 1
                if num == 0:
                    return []
                return await self._redis.zrange(key, start or 0, end, withscores=True)
            return await self._redis.zrangebyscore(
                key, _score(low), _score(high), start=start, num=num, withscores=True
            )

        rows = await self._call(work)
        return [(m.decode(), float(s)) for m, s in rows]

    async def zcard(self, name: str) -> int:
        check_key(name)
        return int(await self._call(lambda: self._redis.zcard(self.set_key(name))))

    async def zrank(self, name: str, member: str) -> int | None:
        check_key(name)
        rank: Any = await self._call(lambda: self._redis.zrank(self.set_key(name), member))
        return None if rank is None else int(rank)

    async def feed_after(self, after: int, limit: int) -> FeedPage:
        keys = [self.feed_key, self.counter_key]
        args = [f"(0-{max(0, after)}", max(0, limit)]
        oldest, last, page = await self._call(lambda: self._feed(keys=keys, args=args))
        last = int(last)
        entries = [_scripted_entry(e) for e in page]
        return FeedPage(entries, _scripted_entry(oldest[0])[0] if oldest else last + 1, last)

    def follow(self, callback: FeedCallback, after: int | None = None) -> None:
        if self._closed:
            raise StoreError("lobby store is closed")
        if self._follower is None:
            self._follower = _Follower(self, after)
        self._follower.callbacks.append(callback)

    async def take_token(self, key: str, rate: float, burst: int) -> bool:
        check_key(key)
        # The bucket is full again (the same as none) once it has gone unused
        # for burst / rate seconds: then it may expire.
        full_ms = math.ceil(burst / rate * 1000) + 1000 if rate > 0 else BUCKET_MAX_MS
        args = [rate, burst, min(full_ms, BUCKET_MAX_MS)]
        bucket = self.bucket_key(key)
        granted = await self._call(lambda: self._take(keys=[bucket], args=args))
        return bool(granted)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for shard in self._shards.values():
            await shard.stop_following()
        await self.stop_following()

    async def stop_following(self) -> None:
        if self._follower is not None:
            await self._follower.close()
            self._follower = None


class _ClusterPart(RedisLobby):
    """A partition on a Redis Cluster: the lobby's calls on keys under a hash
    tag of its own, ``P:{lobby.<name>}``, sharing the lobby's scripts and
    connections. A shard (``fed``) has a feed there, followed on a connection
    of its own; a partition has none (its commits' feed keys are read, never
    written)."""

    def __init__(self, root: RedisLobby, name: str, fed: bool = False) -> None:
        # Not RedisLobby.__init__: that registers the scripts again, and a
        # partition is made per call.
        self._root = root
        self._store = root._store
        self._redis = root._redis
        self.feed_keep = root.feed_keep
        self.base = f"{root._store.prefix}:{{lobby.{name}}}"
        self.feed_key = f"{self.base}:feed"
        self.counter_key = f"{self.base}:feed:n"
        self._commit = root._commit
        self._take = root._take
        self._read = root._read
        self._feed = root._feed
        self._follower = None
        self._closed = False
        self._shards = {}
        self.fed = fed

    def _is_closed(self) -> bool:
        return self._root._is_closed()

    async def commit(self, tx: Tx) -> int | None:
        if not self.fed:
            check_unfed(tx)
        return await super().commit(tx)

    async def feed_after(self, after: int, limit: int) -> FeedPage:
        if not self.fed:
            raise StoreError(NO_FEED)
        return await super().feed_after(after, limit)

    def follow(self, callback: FeedCallback, after: int | None = None) -> None:
        if not self.fed:
            raise StoreError(NO_FEED)
        if self._is_closed():
            raise StoreError("lobby store is closed")
        super().follow(callback, after)

    def part(self, name: str) -> LobbyStore:
        return self._root.part(name)

    def shard(self, name: str) -> LobbyStore:
        return self._root.shard(name)

    async def close(self) -> None:
        """The lobby's to close."""


class _Follower:
    """XREAD BLOCK on the feed, on a connection of its own (a blocked read
    holds its connection for up to BLOCK_MS; the pool's are for calls)."""

    def __init__(self, lobby: RedisLobby, after: int | None) -> None:
        self.lobby = lobby
        self.after = after
        self.callbacks: list[FeedCallback] = []
        self.last_event = b""  # the last one passed on, to know it again
        connect_s = 5.0
        self.redis: Any
        if lobby._store.cluster:
            # Its own client: a blocked read holds a connection of the feed's
            # primary, and the client follows the slot to a new primary.
            self.redis = aiocluster.RedisCluster.from_url(
                lobby._store.url,
                max_connections=2,
                socket_connect_timeout=connect_s,
                socket_timeout=BLOCK_MS / 1000 + connect_s,
                require_full_coverage=False,
            )
        else:
            kwargs = lobby._redis.connection_pool.connection_kwargs
            connect_s = kwargs.get("socket_connect_timeout") or connect_s
            self.redis = aioredis.Redis.from_url(
                lobby._store.url,
                single_connection_client=True,
                socket_connect_timeout=connect_s,
                # Longer than a blocked read, or every quiet second would be an error.
                socket_timeout=BLOCK_MS / 1000 + connect_s,
            )
        self.closed = False
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        last: int | None = self.after  # the last number passed on
        failing = False
        while not self.closed:
            try:
                if last is None:
                    last = await self._to_end()  # "from now on"
                elif failing and not await self._still_there(last):
                    # Redis came back without the last event passed on (no
                    # persistence, or a replica promoted before it had it),
                    # and may give its number to another event: readers
                    # list again, and go on from the end.
                    last = await self._to_end()
                    self._tell([], True)
                failing = False
                entries = await self._read(last)
            except Exception as e:  # the task must outlive anything: a dead one hears nothing
                if not failing:
                    log.warning("lobby feed: cannot read", error=f"{type(e).__name__}: {e}")
                failing = True
                await asyncio.sleep(RETRY_S)
                continue
            if not entries:
                continue
            if entries[0][0] > last + 1:  # the ones between were trimmed unread
                last = None  # the end, read before the reset: readers list after it
                with contextlib.suppress(rex.RedisError, OSError):
                    last = await self._to_end()
                self._tell([], True)
                continue
            last = entries[-1][0]
            self.last_event = entries[-1][1]
            self._tell(entries, False)

    async def _still_there(self, last: int) -> bool:
        """Whether the feed still holds, at ``last``, the event passed on."""
        if last == 0:
            return True
        found: Any = await self.redis.xrange(self.lobby.feed_key, f"0-{last}", f"0-{last}")
        if not found:
            # Trimmed (then the next read reports the gap), or gone.
            return int(await self.redis.get(self.lobby.counter_key) or 0) >= last
        return bool(_entry(found[0])[1] == self.last_event)

    async def _to_end(self) -> int:
        """The feed's last number, and its event kept as the last passed on."""
        end = await self._end()
        found: Any = await self.redis.xrange(self.lobby.feed_key, f"0-{end}", f"0-{end}")
        self.last_event = _entry(found[0])[1] if found else b""
        return end

    async def _end(self) -> int:
        return int(await self.redis.get(self.lobby.counter_key) or 0)

    async def _read(self, last: int) -> list[tuple[int, bytes]]:
        found: Any = await self.redis.xread(
            {self.lobby.feed_key: f"0-{last}"}, count=READ_COUNT, block=BLOCK_MS
        )
        return [_entry(e) for _, stream in found for e in stream] if found else []

    def _tell(self, entries: list[tuple[int, bytes]], reset: bool) -> None:
        for callback in list(self.callbacks):
            call_back(callback, list(entries), reset)

    async def close(self) -> None:
        self.callbacks.clear()
        self.closed = True
        # Bounded, as RedisStore.close: a connection stuck on a Redis that went
        # away must not hold the process's exit.
        await tasks.stop(self._task)
        with contextlib.suppress(TimeoutError, rex.RedisError, OSError):
            async with asyncio.timeout(3):
                await self.redis.aclose()


def _entry(entry: tuple[bytes, dict[bytes, bytes]]) -> tuple[int, bytes]:
    entry_id, fields = entry
    return int(entry_id.split(b"-")[1]), fields[b"e"]


def _scripted_entry(entry: list[Any]) -> tuple[int, bytes]:
    """An XRANGE entry as a script returns it: the id, then the fields and
    values in one list (the feed's have one field, ``e``)."""
    entry_id, fields = entry
    values = dict(zip(fields[::2], fields[1::2], strict=True))
    return int(entry_id.split(b"-")[1]), values[b"e"]


def _score(score: float) -> str:
    # repr round-trips a float exactly; infinities in the spelling Redis documents.
    if math.isinf(score):
        return "+inf" if score > 0 else "-inf"
    return repr(float(score))


if TYPE_CHECKING:

    def _is_a_lobby_store(store: RedisLobby) -> LobbyStore:
        return store  # mypy checks here that RedisLobby keeps the LobbyStore protocol
