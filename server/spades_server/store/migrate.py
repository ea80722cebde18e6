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
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisClusterException, RedisError

from .base import StoreError
from .redis import RedisStore
from .redis_cluster import redis_target

BATCH = 500


@dataclass
class Copied:
    keys: int = 0
    matches: int = 0
    due: int = 0


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
        return copied
    finally:
        await source.aclose()
        await target.close()


async def _copy_keys(
    source: aioredis.Redis, target: RedisStore, prefix: str, copied: Copied
) -> None:
    rebuilt = {f"{prefix}:index".encode(), f"{prefix}:due".encode()}
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
        name = ledger_name(key, prefix, data.get(key)) or key
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


async def move_ledger(target_url: str, prefix: str) -> int:
    """Move a cluster's ledger from ``{lobby}`` into its partitions; how many
    keys were moved."""
    target = RedisStore(redis_target(target_url)[0], prefix, cluster=True)
    redis: Any = target._redis
    try:
        found = {k async for k in redis.scan_iter(match=f"{prefix}:{{lobby}}:*", count=BATCH)}
        keys = sorted(k for k in found if ledger_name(k, prefix) is not None)
        moved = 0
        for start in range(0, len(keys), BATCH):
            batch = keys[start : start + BATCH]
            moved += await _copy_batch(redis, redis, batch, prefix)
            await asyncio.gather(*(redis.delete(k) for k in batch))
        return moved
    finally:
        await target.close()


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
    args = p.parse_args(argv)
    if args.ledger_parts and args.source:
        p.error("--ledger-parts works on the cluster --to alone: no --from")
    if not args.ledger_parts and not args.source:
        p.error("--from is needed (or --ledger-parts)")
    try:
        if args.ledger_parts:
            moved = asyncio.run(move_ledger(args.target, args.prefix))
            print(f"moved {moved} ledger keys into their partitions")
            return 0
        copied = asyncio.run(migrate(args.source, args.target, args.prefix))
    except TargetNotEmpty as e:
        print(f"refused: {e}", file=sys.stderr)
        return 2
    except (StoreError, RedisError, RedisClusterException) as e:  # unreachable, not a cluster
        print(f"failed: {e}", file=sys.stderr)
        return 1
    print(f"copied {copied.keys} keys: {copied.matches} matches, {copied.due} due times")
    return 0


if __name__ == "__main__":
    sys.exit(main())
