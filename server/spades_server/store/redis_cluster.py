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
from typing import Any

import redis.asyncio.cluster as aiocluster
import redis.exceptions as rex
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

BUCKETS = 16
REDIRECTS = 8  # MOVED / ASK / TRYAGAIN followed per append before giving up
# Beyond the calls the store lets through at once (its semaphore), per node:
# the sharded pub/sub connection and the lobby's blocked feed reads.
SPARE_CONNECTIONS = 8


def make_client(url: str, max_connections: int, timeout_s: float) -> aiocluster.RedisCluster:
    """A cluster client that keeps serving the slots that are up while a
    primary is being replaced (``require_full_coverage=False``)."""
    return aiocluster.RedisCluster.from_url(
        url,
        max_connections=max_connections + SPARE_CONNECTIONS,
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
        replies = await _send(node, commands)
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


async def _send(node: aiocluster.ClusterNode, commands: list[tuple[Any, ...]]) -> list[Any]:
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
