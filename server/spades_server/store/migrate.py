"""Copy a drained deployment from one Redis to a Redis Cluster.

    python -m spades_server.store.migrate --from redis://old:6379/0 \\
        --to redis+cluster://node:6379 --prefix spades

Every key of the prefix is copied as it is (DUMP and RESTORE, with its time
to live): a match's keys and the lobby's have the same names in both modes.
The two keys that differ are rebuilt: the match index (a list on one Redis,
16 sorted sets on a cluster, scored here so that creation order is kept) and
the due set (16 buckets). The lobby's rate buckets are left behind: they
refill by themselves. Run it with no replica serving (docs/operations.md:
the move needs a drain); it refuses a cluster that already holds matches of
the prefix.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

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
            copied.keys += await _copy_batch(source, target, batch)
            batch = []
    if batch:
        copied.keys += await _copy_batch(source, target, batch)


async def _copy_batch(source: aioredis.Redis, target: RedisStore, keys: list[bytes]) -> int:
    pipe = source.pipeline(transaction=False)
    for key in keys:
        pipe.dump(key)
        pipe.pttl(key)
    replies = await pipe.execute()
    writes = []
    for i, key in enumerate(keys):
        dump, ttl = replies[2 * i], replies[2 * i + 1]
        if dump is None:  # expired or deleted since the scan
            continue
        writes.append(target._redis.restore(key, max(0, ttl), dump, replace=True))
    await asyncio.gather(*writes)
    return len(writes)


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
    p = argparse.ArgumentParser(prog="python -m spades_server.store.migrate", description=__doc__)
    p.add_argument("--from", dest="source", required=True, help="the single Redis's URL")
    p.add_argument("--to", dest="target", required=True, help="any node of the cluster")
    p.add_argument("--prefix", default="spades", help="the deployment's key prefix")
    args = p.parse_args(argv)
    try:
        copied = asyncio.run(migrate(args.source, args.target, args.prefix))
    except TargetNotEmpty as e:
        print(f"refused: {e}", file=sys.stderr)
        return 2
    print(f"copied {copied.keys} keys: {copied.matches} matches, {copied.due} due times")
    return 0


if __name__ == "__main__":
    sys.exit(main())
