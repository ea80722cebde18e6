"""Copy a drained deployment from one Redis to a Redis Cluster.

    python -m spades_server.store.migrate --from redis://old:6379/0 \\
        --to redis+cluster://node:6379 --prefix spades

Every key of the prefix is copied (DUMP and RESTORE, with its time to
live): a match's keys and the lobby's tables and tickets have the same names
in both modes. What differs is rebuilt: the match index (a list on one
Redis, 16 sorted sets on a cluster, scored here so that creation order is
kept) and the due set (16 buckets); the ledger's documents and leaderboards
(ratings, records, played matches), which a cluster keeps in partitions of
their own (``{lobby.<part>}``, lobby/ratings.py), are renamed into them. The
lobby's rate buckets are left behind: they refill by themselves. Run it
with no replica serving (docs/operations.md: the move needs a drain); it
refuses a cluster that already holds matches of the prefix.

    python -m spades_server.store.migrate --ledger-parts \
        --to redis+cluster://node:6379 --prefix spades

moves the ledger of a cluster written by a version that kept it under
``{lobby}`` into its partitions, also with no replica serving.

    python -m spades_server.store.migrate --lobby-shards \
        --to redis+cluster://node:6379 --prefix spades

moves quick play and players' documents of a cluster written by a version
that kept them under ``{lobby}`` into their shards (lobby/shards.py), also
with no replica serving. A copy from one Redis does the same on its way.
Those versions drew ids that name no place: a ticket still waiting whose id
does not put it beside its queue is cancelled ("drained"; its player asks
again), and a table players opened that is still waiting, whose id does not
put it in ``{lobby}``, is closed ("drained"); every other table and ticket
is moved where its id says.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisClusterException, RedisError

from ..lobby.docs import (
    ACTIVE_TICKET,
    OPENED,
    PENDING_TABLE,
    REMATCH,
    TableDoc,
    TicketDoc,
    queue_set,
)
from ..lobby.shards import PER_PLACE_SETS, member_part, of_queue, part_of, shard_name
from .base import StoreError
from .redis import RedisStore
from .redis_cluster import redis_target

BATCH = 500
DRAINED_KEEP_MS = 86_400_000  # as the lobby keeps a cancelled ticket or closed table


@dataclass
class Copied:
    keys: int = 0
    matches: int = 0
    due: int = 0
    drained: int = 0  # waiting tickets and tables of the lobby closed (see above)


class TargetNotEmpty(Exception):
    pass


async def migrate(source_url: str, target_url: str, prefix: str) -> Copied:
    source = aioredis.Redis.from_url(source_url)
    target = RedisStore(redis_target(target_url)[0], prefix, cluster=True)
    try:
        if await target.match_ids():
            raise TargetNotEmpty(f"the cluster already holds matches of prefix {prefix!r}")
        copied = Copied()
        await _copy_keys(source, target, prefix, copied)
        await _rebuild_index(source, target, prefix, copied)
        await _rebuild_due(source, target, prefix, copied)
        await _split_sets(source, target._redis, prefix)
        copied.drained = await _drain_misplaced(target._redis, prefix)
        return copied
    finally:
        await source.aclose()
        await target.close()


async def _copy_keys(
    source: aioredis.Redis, target: RedisStore, prefix: str, copied: Copied
) -> None:
    rebuilt = {f"{prefix}:index".encode(), f"{prefix}:due".encode()}
    rebuilt |= {_lobby_set(prefix, name).encode() for name in PER_PLACE_SETS}
    left = f"{prefix}:{{lobby}}:rate:".encode()
    batch: list[bytes] = []
    async for key in source.scan_iter(match=f"{prefix}:*", count=BATCH):
        if key in rebuilt or key.startswith(left):
            continue
        batch.append(key)
        if len(batch) >= BATCH:
            copied.keys += await _copy_batch(source, target._redis, batch, prefix)
            batch = []
    if batch:
        copied.keys += await _copy_batch(source, target._redis, batch, prefix)


async def _copy_batch(source: Any, target: Any, keys: list[bytes], prefix: str) -> int:
    """Copy ``keys`` from ``source`` to ``target``, the ledger's under their
    partitions' names."""
    pipe = source.pipeline(transaction=False)
    played = [k for k in keys if _is_played(k, prefix)]
    for key in keys:
        pipe.dump(key)
        pipe.pttl(key)
    for key in played:
        pipe.hget(key, "d")
    replies = await pipe.execute()
    data = dict(zip(played, replies[2 * len(keys) :], strict=True))
    writes = []
    for i, key in enumerate(keys):
        dump, ttl = replies[2 * i], replies[2 * i + 1]
        if dump is None:  # expired or deleted since the scan
            continue
        name = ledger_name(key, prefix, data.get(key)) or lobby_name(key, prefix) or key
        writes.append(target.restore(name, max(0, ttl), dump, replace=True))
    await asyncio.gather(*writes)
    return len(writes)


def _is_played(key: bytes, prefix: str) -> bool:
    return key.startswith(f"{prefix}:{{lobby}}:d:played:".encode())


def ledger_name(key: bytes, prefix: str, played: bytes | None = None) -> bytes | None:
    """The cluster's name of the lobby key ``key`` when it is the ledger's
    (``played``: a played record's data, which says its pool); None when it
    is not."""
    from ..lobby.ratings import part_of  # the ledger's layout is the lobby's business

    lobby = f"{prefix}:{{lobby}}:"
    text = key.decode()
    if not text.startswith(lobby):
        return None
    kind, _, name = text[len(lobby) :].partition(":")
    if kind not in ("d", "z"):
        return None
    part = part_of(name, played)
    if part is None:
        return None
    return f"{prefix}:{{lobby.{part}}}:{kind}:{name}".encode()


def lobby_name(key: bytes, prefix: str) -> bytes | None:
    """The cluster's name of the lobby key ``key`` when it lives in a shard
    (a queue, a ticket, a quick-play table, a player's document); None when
    it stays under ``{lobby}`` or is not the lobby's."""
    lobby = f"{prefix}:{{lobby}}:"
    text = key.decode()
    if not text.startswith(lobby):
        return None
    kind, _, name = text[len(lobby) :].partition(":")
    part = part_of(name) if kind in ("d", "z") else None
    return None if part is None else f"{prefix}:{{lobby.{part}}}:{kind}:{name}".encode()


def _lobby_set(prefix: str, name: str, part: str | None = None) -> str:
    tag = "lobby" if part is None else f"lobby.{part}"
    return f"{prefix}:{{{tag}}}:z:{name}"


async def _split_sets(source: Any, target: Any, prefix: str) -> None:
    """The due, playing and queues sets of ``{lobby}`` in ``source``, each
    member written into its place's set in ``target`` (which may be the
    same store: the lobby's own set is written again with what stays)."""
    for name in PER_PLACE_SETS:
        key = _lobby_set(prefix, name)
        rows: Any = await source.zrange(key, 0, -1, withscores=True)
        parts: dict[str | None, dict[bytes, float]] = {}
        for member, score in rows:
            parts.setdefault(member_part(name, member.decode()), {})[member] = score
        if source is target:
            await target.delete(key)
        for part, members in parts.items():
            await target.zadd(_lobby_set(prefix, name, part), members)


async def _drain_misplaced(redis: Any, prefix: str) -> int:
    """Close what an id drawn before ids named their place left where its
    commits would cross slots (see the module's docstring); how many."""
    drained = 0
    pattern = f"{prefix}:{{lobby*}}:d:[kt]:*"
    keys = [k.decode() async for k in redis.scan_iter(match=pattern, count=BATCH)]
    for key in sorted(keys):
        tag = key[key.index("{") + 1 : key.index("}")]
        version, data = await redis.hmget(key, "v", "d")
        if data is None or data == b"":
            continue
        name = key.split(":d:", 1)[1]
        if name.startswith("k:"):
            ticket = TicketDoc.from_bytes(data)
            queue_part = f"lobby.{shard_name(of_queue(ticket.queue))}"
            if ticket.state not in ACTIVE_TICKET or tag == queue_part:
                continue
            ticket.state, ticket.reason = "cancelled", "drained"
            new = ticket.to_bytes()
            await redis.zrem(f"{prefix}:{{{queue_part}}}:z:{queue_set(ticket.queue)}", ticket.id)
        else:
            table = TableDoc.from_bytes(data)
            if table.kind not in (OPENED, REMATCH) or table.state not in PENDING_TABLE:
                continue
            if tag == "lobby":
                continue
            table.state, table.close_reason = "closed", "drained"
            new = table.to_bytes()
            for listing in ("lobby", f"lobby:{table.rules_key}"):
                await redis.zrem(_lobby_set(prefix, listing), table.id)
            if table.code:
                await redis.delete(f"{prefix}:{{lobby}}:d:i:{table.code}")
        await redis.zrem(f"{prefix}:{{{tag}}}:z:due", name)
        await redis.hset(key, mapping={"v": int(version) + 1, "d": new})
        await redis.pexpire(key, DRAINED_KEEP_MS)
        drained += 1
    return drained


async def move_lobby(target_url: str, prefix: str) -> tuple[int, int]:
    """Move a cluster's quick play and players' documents from ``{lobby}``
    into their shards: how many keys were moved, and how many waiting
    tickets and tables were closed."""
    target = RedisStore(redis_target(target_url)[0], prefix, cluster=True)
    redis: Any = target._redis
    try:
        moved = await _move_out_of_lobby(redis, prefix, lambda k: lobby_name(k, prefix))
        await _split_sets(redis, redis, prefix)
        return moved, await _drain_misplaced(redis, prefix)
    finally:
        await target.close()


async def move_ledger(target_url: str, prefix: str) -> int:
    """Move a cluster's ledger from ``{lobby}`` into its partitions; how many
    keys were moved."""
    target = RedisStore(redis_target(target_url)[0], prefix, cluster=True)
    try:
        return await _move_out_of_lobby(target._redis, prefix, lambda k: ledger_name(k, prefix))
    finally:
        await target.close()


async def _move_out_of_lobby(
    redis: Any, prefix: str, renamed: Callable[[bytes], bytes | None]
) -> int:
    """Copy every ``{lobby}`` key that ``renamed`` gives a new name under it
    (``_copy_batch`` names it), then delete the old; how many were moved."""
    found = {k async for k in redis.scan_iter(match=f"{prefix}:{{lobby}}:*", count=BATCH)}
    keys = sorted(k for k in found if renamed(k) is not None)
    moved = 0
    for start in range(0, len(keys), BATCH):
        batch = keys[start : start + BATCH]
        moved += await _copy_batch(redis, redis, batch, prefix)
        await asyncio.gather(*(redis.delete(k) for k in batch))
    return moved


async def _rebuild_index(
    source: aioredis.Redis, target: RedisStore, prefix: str, copied: Copied
) -> None:
    raw: Any = await source.lrange(f"{prefix}:index", 0, -1)
    ids = [m.decode() for m in raw]
    # Scores rise with the old order and stay below any match created after.
    first = time.time_ns() // 1000 - len(ids) - 1
    writes = [
        target._redis.zadd(f"{target._bucket(m)}:index", {m: first + i}) for i, m in enumerate(ids)
    ]
    await asyncio.gather(*writes)
    copied.matches = len(ids)


async def _rebuild_due(
    source: aioredis.Redis, target: RedisStore, prefix: str, copied: Copied
) -> None:
    due: Any = await source.zrange(f"{prefix}:due", 0, -1, withscores=True)
    writes = [target._redis.zadd(target._due(m.decode()), {m: score}) for m, score in due]
    await asyncio.gather(*writes)
    copied.due = len(due)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m spades_server.store.migrate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--from", dest="source", help="the single Redis's URL")
    p.add_argument("--to", dest="target", required=True, help="any node of the cluster")
    p.add_argument("--prefix", default="spades", help="the deployment's key prefix")
    p.add_argument(
        "--ledger-parts",
        action="store_true",
        help="move the ledger of the cluster --to into its partitions (no --from)",
    )
    p.add_argument(
        "--lobby-shards",
        action="store_true",
        help="move quick play and players of the cluster --to into their shards (no --from)",
    )
    args = p.parse_args(argv)
    in_place = args.ledger_parts or args.lobby_shards
    if in_place and args.source:
        p.error("--ledger-parts and --lobby-shards work on the cluster --to alone: no --from")
    if not in_place and not args.source:
        p.error("--from is needed (or --ledger-parts, --lobby-shards)")
    try:
        if args.ledger_parts:
            moved = asyncio.run(move_ledger(args.target, args.prefix))
            print(f"moved {moved} ledger keys into their partitions")
        if args.lobby_shards:
            moved, drained = asyncio.run(move_lobby(args.target, args.prefix))
            print(f"moved {moved} lobby keys into their shards; closed {drained} waiting")
        if in_place:
            return 0
        copied = asyncio.run(migrate(args.source, args.target, args.prefix))
    except TargetNotEmpty as e:
        print(f"refused: {e}", file=sys.stderr)
        return 2
    except (StoreError, RedisError, RedisClusterException) as e:  # unreachable, not a cluster
        print(f"failed: {e}", file=sys.stderr)
        return 1
    print(
        f"copied {copied.keys} keys: {copied.matches} matches, {copied.due} due times; "
        f"closed {copied.drained} waiting tables and tickets of the lobby"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
