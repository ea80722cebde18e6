"""What the Redis store needs to run on a Redis Cluster (``--redis-cluster``).

Every key of a match already shares the match's hash tag, so a match's
scripts run on one slot. What is global on a single Redis (the match index
and the due set) is split here into ``BUCKETS`` pairs of keys, each pair
under a hash tag of its own, chosen so that the tags' slots are spread evenly
over the slot range: a cluster created with slots split evenly (as
``redis-cli --cluster create`` does) gives each primary an even share of the
buckets, and no one key takes every append's ZADD.

WAIT counts the replicas that have the writes of the connection it is sent
on, so an append that must wait sends its script and its WAIT down one
connection to the slot's primary (``script_then_wait``): redis-py's cluster
client sends a keyless WAIT to every primary, on connections that wrote
nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aioredis
import redis.asyncio.cluster as aiocluster
import redis.exceptions as rex
import structlog
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

log = structlog.get_logger("spades.store.redis")

BUCKETS = 16
REDIRECTS = 8  # MOVED / ASK / TRYAGAIN followed per append before giving up
# Beyond the calls the store lets through at once (its semaphore), per node:
# the sharded pub/sub connection and the lobby's blocked feed reads.
SPARE_CONNECTIONS = 8


def redis_target(url: str, mode: str = "single") -> tuple[str, bool]:
    """The URL redis-py takes, and whether it names a cluster: by ``mode``
    ("cluster"), or by a ``redis+cluster://`` (``rediss+cluster://``) scheme."""
    for scheme in ("redis", "rediss"):
        if url.startswith(f"{scheme}+cluster://"):
            return f"{scheme}://" + url[len(scheme) + len("+cluster://") :], True
    return url, mode == "cluster"


def make_client(url: str, max_connections: int, timeout_s: float) -> aiocluster.RedisCluster:
    """A cluster client that keeps serving the slots that are up while a
    primary is being replaced (``require_full_coverage=False``)."""
    return aiocluster.RedisCluster.from_url(
        url,
        # An append holds two (its script and the due set's ZADD, at once).
        max_connections=2 * max_connections + SPARE_CONNECTIONS,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        require_full_coverage=False,
        health_check_interval=30,
    )


def bucket_tags(n: int = BUCKETS) -> list[str]:
    """``n`` hash tags whose slots fall in ``n`` equal spans of the slot
    range, one in each, found by trying ``b<k>.<j>`` for j = 0, 1, ..."""
    tags: list[str] = []
    span = REDIS_CLUSTER_HASH_SLOTS / n
    for k in range(n):
        low, high = int(k * span), int((k + 1) * span)
        j = 0
        while not low <= key_slot(f"b{k}.{j}".encode()) < high:
            j += 1
        tags.append(f"b{k}.{j}")
    return tags


async def script_then_wait(
    cluster: aiocluster.RedisCluster,
    script: Any,
    keys: list[str],
    args: list[Any],
    replicas: int,
    timeout_ms: int,
) -> tuple[Any, int]:
    """Run ``script`` on the primary of its keys' slot and WAIT for
    ``replicas`` on the same connection; returns the script's reply and how
    many replicas confirmed. Follows MOVED (slot moved or a replica promoted),
    ASK (slot migrating) and TRYAGAIN (keys split by a migration)."""
    if not cluster.nodes_manager.slots_cache:
        await cluster.initialize()
    node: aiocluster.ClusterNode | None = cluster.get_node_from_key(keys[0])
    asking = False
    use_sha = True
    for _ in range(REDIRECTS):
        if node is None:
            await cluster.nodes_manager.initialize()
            node = cluster.get_node_from_key(keys[0])
            continue
        body = ("EVALSHA", script.sha) if use_sha else ("EVAL", script.script)
        commands: list[tuple[Any, ...]] = [(*body, len(keys), *keys, *args)]
        commands.append(("WAIT", replicas, timeout_ms))
        if asking:
            commands.insert(0, ("ASKING",))
        replies = await send_on_node(node, commands)
        result, confirmed = replies[-2], replies[-1]
        asking = False
        if isinstance(result, rex.NoScriptError):
            use_sha = False  # this node has not seen it (a promoted replica)
        elif isinstance(result, rex.MovedError):
            await cluster.nodes_manager.move_slot(result)
            node = cluster.get_node(host=result.host, port=result.port)
        elif isinstance(result, rex.AskError):
            node = cluster.get_node(host=result.host, port=result.port)
            asking = True
        elif isinstance(result, rex.TryAgainError):
            await asyncio.sleep(0.05)
        elif isinstance(result, Exception):
            raise result
        else:
            if isinstance(confirmed, Exception):
                raise confirmed
            return result, int(confirmed)
    raise rex.ClusterError(f"the slot of {keys[0]!r} kept moving")


async def send_on_node(node: aiocluster.ClusterNode, commands: list[tuple[Any, ...]]) -> list[Any]:
    """Every command's reply (an error reply as its exception), in order, on
    one connection of ``node``'s pool."""
    connection = node.acquire_connection()
    try:
        await connection.send_packed_command(connection.pack_commands(commands))
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(await connection.read_response())
            except rex.ResponseError as e:
                replies.append(e)
        return replies
    except BaseException:
        # Unread replies (a timeout, a cancellation) would be read by the
        # connection's next user: drop it.
        await connection.disconnect()
        raise
    finally:
        node.release(connection)


class ShardedFollower:
    """Live appends on a cluster: one pub/sub connection per primary that
    owns a watched match's channel (SSUBSCRIBE is served by the slot's
    primary only).

    The primary that a channel's slot leaves (a migration, a failover) stops
    the subscription (a server-sent ``sunsubscribe``) or drops the
    connection; either way the follower learns the slots again, subscribes
    every channel on its owner and calls ``on_reset``: appends made in
    between may have been missed, so every match is caught up, as after a
    lost connection on a single Redis."""

    def __init__(
        self,
        cluster: aiocluster.RedisCluster,
        url: str,
        on_append: Callable[[str, int], None],
        on_reset: Callable[[], None],
    ) -> None:
        self.cluster = cluster
        self.url = url
        self.on_append = on_append
        self.on_reset = on_reset
        self.channels: dict[bytes, str] = {}
        self.readers: dict[str, _NodeReader] = {}
        self._broken = asyncio.Event()
        self._changed = asyncio.Event()
        self.closed = False
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def add(self, channel: str, match_id: str) -> None:
        self.channels[channel.encode()] = match_id
        self._changed.set()
        try:
            await (await self._reader_for(channel)).subscribe(channel)
        except (rex.RedisError, rex.RedisClusterException, OSError):
            self._broken.set()  # _run subscribes every channel again

    async def remove(self, channel: str) -> None:
        if self.channels.pop(channel.encode(), None) is None:
            return
        with contextlib.suppress(rex.RedisError, rex.RedisClusterException, OSError):
            await (await self._reader_for(channel)).unsubscribe(channel)

    async def _reader_for(self, channel: str) -> _NodeReader:
        if not self.cluster.nodes_manager.slots_cache:
            await self.cluster.initialize()
        node = self.cluster.get_node_from_key(channel)
        if node is None:
            raise rex.ClusterError(f"no primary serves {channel!r}")
        reader = self.readers.get(node.name)
        if reader is None:
            reader = _NodeReader(self, node.host, int(node.port))
            self.readers[node.name] = reader
        return reader

    async def _run(self) -> None:
        while not self.closed:
            await self._broken.wait()
            await asyncio.sleep(0.2)  # let a failover or a migration settle
            try:
                await self._rebuild()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # keep trying: a dead task would hear nothing
                log.warning("redis cluster subscription lost", error=f"{type(e).__name__}: {e}")
                self._broken.set()
                await asyncio.sleep(0.5)
                continue
            self.on_reset()

    async def _rebuild(self) -> None:
        self._broken.clear()
        readers, self.readers = self.readers, {}
        for reader in readers.values():
            await reader.close()
        await self.cluster.nodes_manager.initialize()
        for channel in [c.decode() for c in self.channels]:
            await (await self._reader_for(channel)).subscribe(channel)

    def heard(self, message: dict[str, Any]) -> None:
        kind, channel = message.get("type"), message.get("channel")
        if kind == "smessage":
            match_id = self.channels.get(channel)  # type: ignore[arg-type]
            if match_id is not None:
                self.on_append(match_id, int(message["data"]))
        elif kind == "sunsubscribe" and channel in self.channels:
            self._broken.set()  # not ours: the slot left that primary

    async def close(self) -> None:
        self.closed = True
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        for reader in list(self.readers.values()):
            await reader.close()
        self.readers.clear()


class _NodeReader:
    """The pub/sub connection to one primary, read by a task of its own."""

    def __init__(self, follower: ShardedFollower, host: str, port: int) -> None:
        self.follower = follower
        self.redis = aioredis.Redis.from_url(_node_url(follower.url, host, port))
        self.pubsub = self.redis.pubsub()
        self._task: asyncio.Task[None] | None = None
        self._started = False
        # redis-py's PubSub loses subscriptions sent at once from several
        # tasks (of 20 concurrent SSUBSCRIBEs, one held): one at a time.
        self._commands = asyncio.Lock()

    async def subscribe(self, channel: str) -> None:
        first = not self._started  # one reader only, however many subscribe at once
        self._started = True
        async with self._commands:
            await self.pubsub.ssubscribe(channel)
        if first:  # reading before the first subscription is an error
            self._task = asyncio.get_running_loop().create_task(self._read())

    async def unsubscribe(self, channel: str) -> None:
        async with self._commands:
            await self.pubsub.sunsubscribe(channel)

    async def _read(self) -> None:
        try:
            while True:
                message = await self.pubsub.get_message(timeout=1.0)
                if message is not None:
                    self.follower.heard(message)
        except asyncio.CancelledError:
            raise
        except Exception:  # the connection is gone: the follower starts over
            self.follower._broken.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):
            async with asyncio.timeout(3):
                await self.pubsub.aclose()  # type: ignore[no-untyped-call,unused-ignore]
                await self.redis.aclose()


def _node_url(url: str, host: str, port: int) -> str:
    """``url`` (its scheme, credentials and options) pointed at one node."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@{host}:{port}" if credentials else f"{host}:{port}"
    return urlunsplit(parts._replace(netloc=netloc))
