"""The shared store: Redis, so that several server replicas serve the same matches.

Key layout (``P`` is the key prefix, ``spades`` by default; ``{id}`` is the
match id as a Redis Cluster hash tag, so every key of a match is in one slot
and each script below touches one slot only):

``P:{id}``          hash: ``seq`` (the last event's sequence number), ``meta``,
                    ``snap`` and ``snap_actions`` (the latest snapshot and how
                    many actions it includes)
``P:{id}:log``      stream: one entry per event, id ``0-<seq>``, fields ``a``
                    (audience) and ``p`` (the serialized MatchEvent)
``P:{id}:act``      list: the match's actions in order, each a JSON array
                    ``[seat, action, action_id, first_seq, last_seq]``
``P:{id}:ids``      hash: ``<seat>:<action_id>`` -> ``first:last``
``P:{id}:rate``     hash: each seat's action tokens and their time (a
                    token bucket every replica shares)
``P:{id}:streams``  hash: replica id -> "count:expiry_ms", the streams each
                    replica has open on the match
``P:{id}:n``        sharded pub/sub channel: the new last sequence number
                    after every append (``follow``)
``P:index``         list: match ids in creation order (``match_metas``)
``P:due``           sorted set: match id -> the time (ms) at which another
                    replica should take the match over if nothing happened by
                    then (a bot's move or a turn deadline, plus a grace): the
                    replica that acted last is gone (``claim_due``)

On a Redis Cluster (``cluster=True``) the index and the due set are split
into buckets by match id, ``P:{<tag>}:index`` (a sorted set scored by the
creation time in µs) and ``P:{<tag>}:due``, each bucket under a hash tag of
its own (redis_cluster.py), so that neither is one hot key on one shard.

An append is one script (``_APPEND``): it compares the match's ``seq`` with the
expected one and refuses a known action id, then adds the events, the action
and the metadata and publishes the new ``seq``, all or nothing (a script runs
alone on the server). Two replicas can never both append at the same point:
the second gets ``SeqConflict`` and reloads. The index and the due set are the
only keys outside a match's slot; they are written in the same round trip as
the match's script but not in it (docs/architecture.md: Redis).

Every Redis failure (connection refused, timed out, an error reply) is raised
as ``StoreUnavailable``, a ``StoreError``: the session marks itself broken and
reloads from Redis, which holds the truth whether or not a timed-out script
ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import secrets
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import redis.asyncio as aioredis
import redis.exceptions as rex
import structlog

from .. import tasks
from .base import (
    ActionToken,
    LoadedMatch,
    MatchExists,
    MatchNotFound,
    NoActionToken,
    SeqConflict,
    SharedStore,
    StoredAction,
    StoredEvent,
    StoreError,
)
from .memory import check_events
from .redis_batch import ClusterScriptBatches, ScriptBatches
from .redis_cluster import ShardedFollower, bucket_tags, make_client, script_then_wait

log = structlog.get_logger("spades.store.redis")

_T = TypeVar("_T")

# A match id this store can hold: the server makes 16 hex digits; anything
# else asked for is simply not here (and never reaches a key name).
_MATCH_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Batches of reads out at once: one at a time, a herd of loads waited for
# each batch's whole reply before the next went.
READ_SENDERS = 4


class StoreUnavailable(StoreError):
    """Redis did not answer (or answered an error): nothing is known to be stored."""

    public = "Redis did not answer"


_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
local n = tonumber(ARGV[3])
for i = 1, n do
  redis.call('XADD', KEYS[2], '0-' .. i, 'a', ARGV[2 + 2 * i], 'p', ARGV[3 + 2 * i])
end
redis.call('HSET', KEYS[1], 'seq', n, 'meta', ARGV[1], 'snap', ARGV[2], 'snap_actions', 0)
return 'ok'
"""

# A seat's action tokens (field '<seat>:t') and when they were counted
# ('<seat>:s'), in the match's rate hash: 1 taken, 0 when none is left.
_BUCKET = """
local function take(key, seat, rate, burst)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  burst = tonumber(burst)
  local v = redis.call('HMGET', key, seat .. ':t', seat .. ':s')
  local tokens = tonumber(v[1]) or burst
  local stamp = tonumber(v[2]) or now
  tokens = math.min(burst, tokens + math.max(0, now - stamp) * tonumber(rate) / 1000)
  local granted = 0
  if tokens >= 1 then tokens = tokens - 1; granted = 1 end
  redis.call('HSET', key, seat .. ':t', tostring(tokens), seat .. ':s', now)
  redis.call('PEXPIRE', key, 600000)
  return granted
end
"""

# KEYS: hash, log, actions, ids, rate.  ARGV: expected seq, event count, then
# audience/payload pairs, then the action's JSON ('' if none), its index, its
# ids-field, its 'first:last', the metadata ('' if unchanged), the channel,
# and the seat, rate and burst of the action token to take ('' if none), once
# the write is known to be possible: a refused write takes no token.
_APPEND = (
    _BUCKET
    + """
local seq = redis.call('HGET', KEYS[1], 'seq')
if not seq then return {'missing', 0} end
seq = tonumber(seq)
local n = tonumber(ARGV[2])
local at = 3 + 2 * n
local action, index, idkey, span, meta, channel =
  ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4], ARGV[at + 5]
if idkey ~= '' and redis.call('HEXISTS', KEYS[4], idkey) == 1 then return {'conflict', seq} end
if seq ~= tonumber(ARGV[1]) then return {'conflict', seq} end
if action ~= '' and redis.call('LLEN', KEYS[3]) ~= tonumber(index) then
  return {'bad_index', redis.call('LLEN', KEYS[3])}
end
if ARGV[at + 6] ~= '' and take(KEYS[5], ARGV[at + 6], ARGV[at + 7], ARGV[at + 8]) == 0 then
  return {'no_token', seq}
end
for i = 1, n do
  redis.call('XADD', KEYS[2], '0-' .. (seq + i), 'a', ARGV[1 + 2 * i], 'p', ARGV[2 + 2 * i])
end
if action ~= '' then
  redis.call('RPUSH', KEYS[3], action)
  redis.call('HSET', KEYS[4], idkey, span)
end
if meta ~= '' then redis.call('HSET', KEYS[1], 'meta', meta) end
redis.call('HSET', KEYS[1], 'seq', seq + n)
if n > 0 then redis.call('SPUBLISH', channel, seq + n) end
return {'ok', seq + n}
"""
)

_SNAPSHOT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
local count = tonumber(ARGV[2])
if count > redis.call('LLEN', KEYS[2]) then return 'too_many' end
if count < tonumber(redis.call('HGET', KEYS[1], 'snap_actions')) then return 'older' end
redis.call('HSET', KEYS[1], 'snap', ARGV[1], 'snap_actions', count)
return 'ok'
"""

# A match read together: KEYS: hash, log, actions.  ARGV: 1 to read the
# snapshot too, the first action's index, the log's start ("(0-<seq>").
# Returns nothing when the match is missing.
_READ = """
local fields = {'seq', 'meta'}
if ARGV[1] == '1' then fields = {'seq', 'meta', 'snap', 'snap_actions'} end
local head = redis.call('HMGET', KEYS[1], unpack(fields))
if not head[1] then return {} end
local actions = redis.call('LRANGE', KEYS[3], ARGV[2], -1)
return {head, actions, redis.call('XRANGE', KEYS[2], ARGV[3], '+')}
"""

# KEYS: the due set.  ARGV: now, the lease's end, most to claim.
_CLAIM_DUE = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, m in ipairs(due) do redis.call('ZADD', KEYS[1], ARGV[2], m) end
return due
"""

# Drop a claimed entry unless someone moved it since (an append's ZADD).
_RELEASE_DUE = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 1
end
return 0
"""


# A seat's action allowance shared by every replica: a token bucket.
# KEYS: the match's rate hash.  ARGV: the seat, tokens per second, burst.
_TAKE = (
    _BUCKET
    + """
return take(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
"""
)

# The streams open on a match, summed over replicas: each replica's field
# holds "count:expiry_ms" and is refreshed while it has streams, so a replica
# that died stops counting once its expiry passes.
# KEYS: the match's streams hash.  ARGV: replica id, its count now, the most
# allowed, 1 to refuse when over it (opening a stream), the expiry in ms.
_STREAMS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
local others = 0
for i = 1, #all, 2 do
  local count, expiry = string.match(all[i + 1], '^(%d+):(%d+)$')
  if not count or tonumber(expiry) < now then
    redis.call('HDEL', KEYS[1], all[i])
  elseif all[i] ~= ARGV[1] then
    others = others + tonumber(count)
  end
end
local mine = tonumber(ARGV[2])
if ARGV[4] == '1' and others + mine > tonumber(ARGV[3]) then return -1 end
if mine > 0 then
  redis.call('HSET', KEYS[1], ARGV[1], mine .. ':' .. (now + tonumber(ARGV[5])))
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]) * 2)
else
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return others + mine
"""

STREAMS_TTL_MS = 30_000  # a replica refreshes its stream counts well within this


class RedisStore:
    """The ``Store`` contract on Redis, plus what replicas share: ``tail``,
    ``follow`` (live appends by any replica) and ``claim_due``."""

    durable = True

    shared = True  # any replica may append: sessions must expect SeqConflict

    def __init__(
        self,
        url: str,
        prefix: str = "spades",
        timeout_s: float = 5.0,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        max_connections: int = 64,
        cluster: bool = False,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.cluster = cluster
        # WAIT after each append: acknowledged only once this many Redis
        # replicas have it too, so that a failover keeps it (docs/operations.md).
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        # A blocking pool: past max_connections a call waits for a connection
        # (up to timeout_s) rather than fail; redis-py's default pool refused
        # calls with "Too many connections" under saturation (bench/replicas.py).
        self._redis: Any
        # The cluster client has no blocking pool (past its connections a call
        # fails): calls wait here instead.
        self._calls: asyncio.Semaphore | None = None
        self._scripts: list[Any] = []
        if cluster:
            self._redis = make_client(url, max_connections, timeout_s)
            self._calls = asyncio.Semaphore(max_connections)
            self._buckets = [f"{prefix}:{{{tag}}}" for tag in bucket_tags()]
        else:
            pool = aioredis.BlockingConnectionPool.from_url(
                url,
                max_connections=max_connections,
                timeout=timeout_s,
                socket_timeout=timeout_s,
                socket_connect_timeout=timeout_s,
                health_check_interval=30,
                retry_on_timeout=False,
            )
            self._redis = aioredis.Redis(connection_pool=pool)
        self._create = self.register_script(_CREATE)
        self._append = self.register_script(_APPEND)
        self._snapshot = self.register_script(_SNAPSHOT)
        self._claim = self.register_script(_CLAIM_DUE)
        self._release = self.register_script(_RELEASE_DUE)
        self._take = self.register_script(_TAKE)
        self._streams = self.register_script(_STREAMS)
        self._read_script = self.register_script(_READ)
        # Appends batch with appends (and their WAIT); reads and stream
        # counts with each other, never behind a WAIT.
        self._appends = ScriptBatches(self._redis, wait_replicas, wait_timeout_ms)
        self._cluster_appends = ClusterScriptBatches(self._redis, wait_replicas, wait_timeout_ms)
        # On a cluster an action's due-set ZADD is on another slot than its
        # append: batched too, with the others of that slot's primary.
        self._cluster_dues = ClusterScriptBatches(self._redis, senders=READ_SENDERS)
        self._reads = (
            ClusterScriptBatches(self._redis, senders=READ_SENDERS)
            if cluster
            else ScriptBatches(self._redis, senders=READ_SENDERS)
        )
        self._scripts_loaded = not cluster
        self._loading = asyncio.Lock()
        self.replica_id = secrets.token_hex(6)  # this process, in the stream counts
        self._closed = False
        self._follower: _Follower | ShardedFollower | None = None
        self._last_created_us = 0

    def register_script(self, text: str) -> Any:
        """A script of this store's client; on a cluster it is loaded on
        every primary before the first call (``_call``)."""
        script = self._redis.register_script(text)
        self._scripts.append(script)
        self._scripts_loaded = not self.cluster
        return script

    async def _load_scripts(self) -> None:
        """SCRIPT LOAD on every primary, once: otherwise the first call of
        each script on each primary pays a NOSCRIPT round trip, and calls
        sent in one order could run in another. A primary promoted later
        answers NOSCRIPT once per script, which redis-py handles."""
        async with self._loading:
            if not self._scripts_loaded:
                for script in self._scripts:
                    await self._redis.script_load(script.script)
                self._scripts_loaded = True

    # -- keys -----------------------------------------------------------------
    def _keys(self, match_id: str) -> tuple[str, str, str, str]:
        base = f"{self.prefix}:{{{match_id}}}"
        return base, f"{base}:log", f"{base}:act", f"{base}:ids"

    def _rate_key(self, match_id: str) -> str:
        return f"{self.prefix}:{{{match_id}}}:rate"

    def channel(self, match_id: str) -> str:
        return f"{self.prefix}:{{{match_id}}}:n"

    @property
    def _index(self) -> str:
        return f"{self.prefix}:index"

    def _bucket(self, match_id: str) -> str:
        return self._buckets[zlib.crc32(match_id.encode()) % len(self._buckets)]

    def _due(self, match_id: str) -> str:
        """The due set that holds ``match_id``."""
        if self.cluster:
            return f"{self._bucket(match_id)}:due"
        return f"{self.prefix}:due"

    def _due_sets(self) -> list[str]:
        if self.cluster:
            return [f"{b}:due" for b in self._buckets]
        return [f"{self.prefix}:due"]

    async def _call(self, what: Callable[[], Awaitable[_T]]) -> _T:
        if self._closed:
            raise StoreError("store is closed")
        try:
            if self._calls is None:
                return await what()
            if not self._scripts_loaded:
                await self._load_scripts()
            async with self._calls:
                return await what()
        except (rex.ConnectionError, rex.TimeoutError, OSError) as e:
            raise StoreUnavailable(f"redis unreachable: {e}") from e
        except (rex.RedisError, rex.RedisClusterException) as e:
            raise StoreUnavailable(f"redis refused: {e}") from e

    async def _batched(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        """A script that needs no WAIT, sent with the others made meanwhile."""

        async def run() -> Any:
            reply, _ = await self._reads.run(script, keys, args)
            return reply

        return await self._call(run)

    # -- the Store contract -----------------------------------------------------
    async def create_match(
        self, match_id: str, meta: bytes, snapshot: bytes, events: list[StoredEvent]
    ) -> None:
        check_events(0, events)
        if not _MATCH_ID.fullmatch(match_id):
            raise StoreError(f"match id {match_id!r} is not one this store can hold")
        args: list[Any] = [meta, snapshot, len(events)]
        for e in events:
            args += [e.audience, e.payload]

        async def work() -> Any:
            result = await self._created(list(self._keys(match_id)[:2]), args)
            if result == b"ok" and self.cluster:
                index = f"{self._bucket(match_id)}:index"
                await self._redis.zadd(index, {match_id: self._creation_us()}, nx=True)
            elif result == b"ok":
                await self._redis.rpush(self._index, match_id)
            return result

        if await self._call(work) == b"exists":
            raise MatchExists(match_id)

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
        check_events(expected_last_seq, events)
        if not _MATCH_ID.fullmatch(match_id):
            raise MatchNotFound(match_id)
        args: list[Any] = [expected_last_seq, len(events)]
        for e in events:
            args += [e.audience, e.payload]
        if action is None:
            args += ["", 0, "", ""]
        else:
            encoded = json.dumps(
                [action.seat, action.action, action.action_id, action.first_seq, action.last_seq],
                separators=(",", ":"),
            )
            args += [
                encoded,
                action.index,
                f"{action.seat}:{action.action_id}",
                f"{action.first_seq}:{action.last_seq}",
            ]
        args += [meta if meta is not None else b"", self.channel(match_id)]
        args += ["", 0, 0] if token is None else [token.seat, token.rate, token.burst]
        keys = (*self._keys(match_id), self._rate_key(match_id))

        async def work() -> Any:
            if self.cluster:
                return await self._append_on_cluster(match_id, keys, args, due_ms)
            # The due time is written even if the script refused: a loser's
            # time differs from the winner's by the race's length only, and a
            # claim reads the match itself before acting (replica.take_over).
            due = None if due_ms is None else (self._due(match_id), match_id, due_ms)
            result, confirmed = await self._appends.run(self._append, list(keys), args, due)
            if self.wait_replicas and result[0] == b"ok":
                self.check_confirmed(confirmed)
            return result

        status, value = await self._call(work)
        if status == b"ok":
            return
        if status == b"missing":
            raise MatchNotFound(match_id)
        if status == b"conflict":
            raise SeqConflict(
                f"match {match_id}: expected last seq {expected_last_seq}, stored {value}"
            )
        if status == b"no_token":
            raise NoActionToken(f"match {match_id}: seat {token and token.seat} has no token")
        raise StoreError(f"action index must be {value} (the next one)")

    async def _created(self, keys: list[str], args: list[Any]) -> Any:
        """The create script, confirmed by ``wait_replicas`` Redis replicas
        when asked (a match acknowledged must outlive a failover too)."""
        result, confirmed = await self.run_confirmed(self._create, keys, args)
        if result == b"ok":
            self.check_confirmed(confirmed)
        return result

    async def run_confirmed(self, script: Any, keys: list[str], args: list[Any]) -> tuple[Any, int]:
        """Run ``script`` and, with ``wait_replicas``, WAIT for them on the
        same connection: the reply, and how many replicas have the write
        (``wait_replicas`` when none is asked for)."""
        if not self.wait_replicas:
            return await script(keys=keys, args=args), 0
        if self.cluster:
            return await script_then_wait(
                self._redis, script, keys, args, self.wait_replicas, self.wait_timeout_ms
            )
        pipe = self._redis.pipeline(transaction=False)
        await script(keys=keys, args=args, client=pipe)
        pipe.wait(self.wait_replicas, self.wait_timeout_ms)
        result, confirmed = await pipe.execute(raise_on_error=True)
        return result, int(confirmed)

    def _creation_us(self) -> int:
        """The index's score: microseconds, rising within this process (a
        double holds them exactly until the year 2255)."""
        self._last_created_us = max(self._last_created_us + 1, time.time_ns() // 1000)
        return self._last_created_us

    async def _append_on_cluster(
        self, match_id: str, keys: tuple[str, ...], args: list[Any], due_ms: int | None
    ) -> Any:
        """The script (batched with other matches' on its primary) and the
        due time's ZADD (another slot) at once."""
        appended = self._cluster_appends.submit(self._append, list(keys), args)
        due = None
        if due_ms is not None:
            key = self._due(match_id)
            due = self._cluster_dues.submit_command(key, "ZADD", key, due_ms, match_id)
        try:
            result, confirmed = await appended
        except BaseException:
            if due is not None:  # its outcome is no longer anyone's
                due.add_done_callback(_consumed)
            raise
        if due is not None:
            await due
        if self.wait_replicas and result[0] == b"ok":
            self.check_confirmed(confirmed)
        return result

    def check_confirmed(self, confirmed: int) -> None:
        """Raise unless ``confirmed`` replicas are enough (``wait_replicas``)."""
        if self.wait_replicas and confirmed < self.wait_replicas:
            # On the primary but not (yet) on enough replicas: not
            # acknowledged. The session reloads; a retry of the same action
            # id is answered from the log if the write survived.
            unconfirmed = StoreUnavailable(
                f"{confirmed} of {self.wait_replicas} Redis replicas confirmed the write "
                f"within {self.wait_timeout_ms} ms"
            )
            unconfirmed.public = str(unconfirmed)
            raise unconfirmed

    async def save_snapshot(self, match_id: str, snapshot: bytes, action_count: int) -> None:
        base, _, actions, _ = self._keys(match_id)
        result = await self._call(
            lambda: self._snapshot(keys=[base, actions], args=[snapshot, action_count])
        )
        if result == b"missing":
            raise MatchNotFound(match_id)
        if result == b"too_many":
            raise StoreError(f"match {match_id}: snapshot of {action_count} actions, fewer stored")

    async def load_match(self, match_id: str, after_seq: int = 0) -> LoadedMatch:
        """Everything to restore a match; ``after_seq``: only the events after
        it (a replica that has the ones before)."""
        if not _MATCH_ID.fullmatch(match_id):
            raise MatchNotFound(match_id)
        head, raw_actions, entries = await self._read(match_id, True, 0, after_seq)
        _seq, meta, snap, snap_actions = head
        return LoadedMatch(
            match_id=match_id,
            meta=meta,
            snapshot=snap,
            snapshot_actions=int(snap_actions),
            actions=[_action(i, a) for i, a in enumerate(raw_actions)],
            events=[_script_event(e) for e in entries],
        )

    async def tail(
        self, match_id: str, after_seq: int, after_actions: int
    ) -> tuple[int, bytes, list[StoredAction], list[StoredEvent]]:
        """What a replica holding the match up to ``after_seq`` (and
        ``after_actions`` actions) lacks: the last seq, the metadata, the new
        actions and the new events, read together."""
        (seq, meta), raw_actions, entries = await self._read(
            match_id, False, after_actions, after_seq
        )
        return (
            int(seq),
            meta,
            [_action(after_actions + i, a) for i, a in enumerate(raw_actions)],
            [_script_event(e) for e in entries],
        )

    async def _read(
        self, match_id: str, with_snapshot: bool, after_actions: int, after_seq: int
    ) -> tuple[list[Any], list[bytes], list[Any]]:
        """One read script (atomic, one round trip). bench/redis_reads.py
        --calls 2000, two runs each: a tail took 1,750-1,957 µs through
        redis-py's cluster client as the MULTI pipeline it replaced, 331-376
        as the script; on one Redis 409-418 and 385-403. A whole load on one
        Redis costs more as a script (492-530 -> 640-660 µs: Lua builds the
        reply), which a reload or a takeover pays, not an action."""
        base, log_key, actions, _ = self._keys(match_id)
        args = [1 if with_snapshot else 0, after_actions, f"({_entry(after_seq)}"]
        found = await self._batched(self._read_script, [base, log_key, actions], args)
        if not found:
            raise MatchNotFound(match_id)
        head, raw_actions, entries = found
        return head, raw_actions, entries

    async def match_ids(self) -> list[str]:
        """Every stored match's id, oldest first."""
        if self.cluster:
            return await self._cluster_match_ids()
        ids = await self._call(lambda: self._redis.lrange(self._index, 0, -1))
        return [i.decode() if isinstance(i, bytes) else i for i in ids]

    async def _cluster_match_ids(self) -> list[str]:
        """The buckets' indexes merged by creation time (then id). Replicas'
        clocks order matches created in the same few ms by id only."""

        reads = [
            self._call(functools.partial(self._redis.zrange, f"{b}:index", 0, -1, withscores=True))
            for b in self._buckets
        ]
        buckets = await asyncio.gather(*reads)
        rows = [(score, m.decode()) for bucket in buckets for m, score in bucket]
        rows.sort()
        return [m for _, m in rows]

    async def match_metas(self) -> list[tuple[str, bytes]]:
        ids = await self.match_ids()
        out: list[tuple[str, bytes]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]

            async def work(chunk: list[str] = chunk) -> Any:
                pipe = self._redis.pipeline(transaction=False)
                for m in chunk:
                    pipe.hget(self._keys(m)[0], "meta")
                return await pipe.execute()

            metas = await self._call(work)
            out += [(m, meta) for m, meta in zip(chunk, metas, strict=True) if meta is not None]
        return out

    # -- what replicas share ---------------------------------------------------
    async def claim_due(
        self, now_ms: int, lease_ms: int, limit: int = 100
    ) -> list[tuple[str, int]]:
        """Matches whose due time has come, each leased to this caller until
        ``now_ms + lease_ms`` (another replica claims it again after that).
        Returns (match id, lease end) pairs, for ``release_due``."""
        until = now_ms + lease_ms

        args = [now_ms, until, limit]
        # Every replica claims from every bucket four times a second: batched,
        # that is a pipeline per primary, not a call per bucket.
        claims = [self._batched(self._claim, [k], args) for k in self._due_sets()]
        ids = [i for found in await asyncio.gather(*claims) for i in found]
        return [(i.decode(), until) for i in ids]

    async def release_due(self, match_id: str, lease_end: int) -> None:
        """Drop a claimed entry: the match needs nothing (unless it moved since)."""
        await self._call(
            lambda: self._release(keys=[self._due(match_id)], args=[match_id, lease_end])
        )

    async def set_due(self, match_id: str, due_ms: int) -> None:
        """Set the match's due time (after a takeover found what it waits for)."""
        await self._call(lambda: self._redis.zadd(self._due(match_id), {match_id: due_ms}))

    async def take_action_token(self, match_id: str, seat: int, rate: float, burst: int) -> bool:
        """Take one of the seat's action tokens (shared by every replica);
        False when it has none left."""
        key = self._rate_key(match_id)
        granted = await self._call(lambda: self._take(keys=[key], args=[seat, rate, burst]))
        return bool(granted)

    async def set_streams(self, match_id: str, count: int, most: int, opening: bool) -> int:
        """Record that this replica has ``count`` streams open on the match;
        returns the total over replicas, or -1 (nothing recorded) when
        ``opening`` and the total would pass ``most``."""
        key = f"{self._keys(match_id)[0]}:streams"
        args: list[str | int] = [self.replica_id, count, most, 1 if opening else 0, STREAMS_TTL_MS]
        result = await self._batched(self._streams, [key], args)
        return int(result)

    def follow(self, on_append: Callable[[str, int], None], on_reset: Callable[[], None]) -> None:
        """Start receiving appends: ``on_append(match_id, last_seq)`` for the
        matches ``watch`` names, and ``on_reset()`` after the subscription was
        lost (appends may have been missed: catch every match up)."""
        if self.cluster:
            self._follower = ShardedFollower(self._redis, self.url, on_append, on_reset)
        else:
            self._follower = _Follower(self, on_append, on_reset)

    async def watch(self, match_id: str) -> None:
        if isinstance(self._follower, ShardedFollower):
            await self._follower.add(self.channel(match_id), match_id)
        elif self._follower is not None:
            await self._follower.add(match_id)

    async def unwatch(self, match_id: str) -> None:
        if isinstance(self._follower, ShardedFollower):
            await self._follower.remove(self.channel(match_id))
        elif self._follower is not None:
            await self._follower.remove(match_id)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Bounded: a connection stuck on a Redis that went away must not hold
        # the process's exit (nothing is left to write: calls have ended).
        with contextlib.suppress(TimeoutError, rex.RedisError, OSError):
            async with asyncio.timeout(3):
                if self._follower is not None:
                    await self._follower.close()
        with contextlib.suppress(TimeoutError, rex.RedisError, OSError):
            async with asyncio.timeout(3):
                if self.cluster:
                    await self._redis.aclose()
                else:
                    await self._redis.aclose(close_connection_pool=True)


class _Follower:
    """One sharded pub/sub connection per replica for the matches it holds:
    a wake-up costs one message per replica holding the match, whatever the
    number of matches (no blocking read per match)."""

    def __init__(
        self,
        store: RedisStore,
        on_append: Callable[[str, int], None],
        on_reset: Callable[[], None],
    ) -> None:
        self.store = store
        self.on_append = on_append
        self.on_reset = on_reset
        self.channels: dict[bytes, str] = {}
        self.pubsub = store._redis.pubsub(ignore_subscribe_messages=True)
        # redis-py's PubSub loses subscriptions sent at once from several
        # tasks (of 20 concurrent SSUBSCRIBEs, one held): one at a time.
        self._commands = asyncio.Lock()
        self._changed = asyncio.Event()
        self.closed = False
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def add(self, match_id: str) -> None:
        channel = self.store.channel(match_id)
        self.channels[channel.encode()] = match_id
        with contextlib.suppress(rex.RedisError, OSError):
            # A failure here is repaired by _run's reconnect, which subscribes
            # to every channel again and resets.
            async with self._commands:
                await self.pubsub.ssubscribe(channel)
        self._changed.set()

    async def remove(self, match_id: str) -> None:
        channel = self.store.channel(match_id)
        if self.channels.pop(channel.encode(), None) is not None:
            with contextlib.suppress(rex.RedisError, OSError):
                async with self._commands:
                    await self.pubsub.sunsubscribe(channel)

    async def _run(self) -> None:
        broken = False
        while not self.closed:
            if not self.channels:
                self._changed.clear()
                await self._changed.wait()
                continue
            try:
                if broken:
                    await self.pubsub.aclose()  # type: ignore[no-untyped-call,unused-ignore]
                    self.pubsub = self.store._redis.pubsub(ignore_subscribe_messages=True)
                    await self.pubsub.ssubscribe(*[c.decode() for c in self.channels])
                    broken = False
                    self.on_reset()
                msg = await self.pubsub.get_message(timeout=1.0)
            except asyncio.CancelledError:
                raise
            except (rex.RedisError, OSError, RuntimeError) as e:
                if not broken:
                    log.warning("redis subscription lost", error=str(e))
                broken = True
                await asyncio.sleep(0.5)
                continue
            if msg is None or msg.get("type") != "smessage":
                continue
            match_id = self.channels.get(msg["channel"])
            if match_id is not None:
                self.on_append(match_id, int(msg["data"]))

    async def close(self) -> None:
        self.closed = True
        await tasks.stop(self._task)
        with contextlib.suppress(Exception):
            await self.pubsub.aclose()  # type: ignore[no-untyped-call,unused-ignore]


def _entry(seq: int) -> str:
    return f"0-{seq}"


def _script_event(entry: list[Any]) -> StoredEvent:
    """An XRANGE entry as a script returns it: [id, [field, value, ...]]."""
    entry_id, flat = entry
    fields = dict(zip(flat[::2], flat[1::2], strict=True))
    return StoredEvent(int(entry_id.split(b"-")[1]), fields[b"a"].decode(), fields[b"p"])


def _consumed(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # read: asyncio logs an exception nobody read


def _action(index: int, raw: bytes) -> StoredAction:
    seat, action, action_id, first, last = json.loads(raw)
    return StoredAction(index, seat, action, action_id, first, last)


if TYPE_CHECKING:

    def _is_a_shared_store(store: RedisStore) -> SharedStore:
        return store  # mypy checks here that RedisStore keeps the whole SharedStore protocol
