"""Many matches' appends in one round trip to one Redis (or to each primary
of a cluster).

Each append alone costs the event loop a connection taken from the pool and
given back, a command packed, a write and a read: redis-py's share of an
action was a quarter of a saturated replica's loop (docs/performance.md,
"Where the capacity goes"). SQLite's writer thread commits many matches'
appends in one transaction; this is the same on Redis. Appends that arrive
while a batch is out wait, and go together as the next one: one pipeline of
EVALSHAs, the due-set ZADDs, and one WAIT that covers them all (WAIT counts
every write sent before it on its connection).

A match has one append out at a time (its session's lock), so batching
never reorders one match's writes; writes of different matches are
independent.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from redis import exceptions as rex

from .redis_cluster import script_then_wait, send_on_node

# Past this many appends a batch is cut: its reply is parsed in one go, and
# a long one would hold the loop.
MAX_BATCH = 64


@dataclass(slots=True)
class _Append:
    keys: list[str]
    args: list[Any]
    due: tuple[str, str, int] | None  # (due set, match id, due ms)
    done: asyncio.Future[tuple[Any, int]]


class _Batches:
    """The queue: ``_queued`` waits for its append's answer (the script's
    reply, and how many Redis replicas confirmed it: 0 when none is asked
    for); one sender at a time hands the queue to ``_send`` in batches."""

    def __init__(self) -> None:
        self._queue: list[_Append] = []
        self._sender: asyncio.Task[None] | None = None

    async def _queued(
        self, keys: list[str], args: list[Any], due: tuple[str, str, int] | None
    ) -> tuple[Any, int]:
        done: asyncio.Future[tuple[Any, int]] = asyncio.get_running_loop().create_future()
        self._queue.append(_Append(keys, args, due, done))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_all())
        return await done

    async def _send_all(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            try:
                await self._send(batch)
            except BaseException as e:  # every waiter hears of it; the sender goes on
                for a in batch:
                    if not a.done.done():
                        a.done.set_exception(e if isinstance(e, Exception) else rex.RedisError())
                if not isinstance(e, Exception):
                    raise

    async def _send(self, batch: list[_Append]) -> None:
        raise NotImplementedError


class AppendBatches(_Batches):
    """The append script of ``redis`` (a client of one Redis, not a cluster),
    run in batches."""

    def __init__(self, redis: Any, script: Any, wait_replicas: int, wait_timeout_ms: int) -> None:
        super().__init__()
        self._redis = redis
        self._script = script
        self._wait = (wait_replicas, wait_timeout_ms) if wait_replicas else None

    async def run(
        self, keys: list[str], args: list[Any], due: tuple[str, str, int] | None
    ) -> tuple[Any, int]:
        return await self._queued(keys, args, due)

    async def _send(self, batch: list[_Append], again: bool = True) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for a in batch:
            # evalsha, not the script object: a pipeline holding scripts asks
            # SCRIPT EXISTS first, a round trip more per batch.
            pipe.evalsha(self._script.sha, len(a.keys), *a.keys, *a.args)
            if a.due is not None:
                due_set, match_id, due_ms = a.due
                pipe.zadd(due_set, {match_id: due_ms})
        if self._wait is not None:
            pipe.wait(*self._wait)
        replies = await pipe.execute(raise_on_error=False)
        confirmed = replies[-1] if self._wait is not None else 0
        if isinstance(confirmed, Exception):
            raise confirmed
        at, lost = 0, []
        for a in batch:
            reply = replies[at]
            at += 1 if a.due is None else 2
            if isinstance(reply, rex.NoScriptError) and again:
                lost.append(a)  # Redis restarted or flushed its scripts: load, send again
            elif isinstance(reply, Exception):
                a.done.set_exception(reply)
            else:
                a.done.set_result((reply, int(confirmed)))
        if lost:
            await self._redis.script_load(self._script.script)
            await self._send(lost, again=False)


class ClusterAppendBatches(_Batches):
    """The same on a Redis Cluster: a batch's appends are grouped by the
    primary of their match's slot, and each group goes down one connection
    of that primary (its WAIT after them), the groups at once. An append
    whose slot moved meanwhile (MOVED, ASK, TRYAGAIN) or whose primary has
    not seen the script is sent again alone, by ``script_then_wait``'s way,
    which follows the cluster. The due-set ZADD (another slot) is the
    caller's."""

    def __init__(self, cluster: Any, script: Any, wait_replicas: int, wait_timeout_ms: int) -> None:
        super().__init__()
        self._cluster = cluster
        self._script = script
        self._wait_replicas = wait_replicas
        self._wait_timeout_ms = wait_timeout_ms

    async def run(self, keys: list[str], args: list[Any]) -> tuple[Any, int]:
        return await self._queued(keys, args, None)

    async def _send(self, batch: list[_Append]) -> None:
        if not self._cluster.nodes_manager.slots_cache:
            await self._cluster.initialize()
        groups: dict[str, tuple[Any, list[_Append]]] = {}
        alone: list[_Append] = []
        for a in batch:
            node = self._cluster.get_node_from_key(a.keys[0])
            if node is None:
                alone.append(a)
            else:
                groups.setdefault(node.name, (node, []))[1].append(a)
        await asyncio.gather(
            *(self._send_to(node, group) for node, group in groups.values()),
            *(self._alone(a) for a in alone),
        )

    async def _send_to(self, node: Any, group: list[_Append]) -> None:
        commands: list[tuple[Any, ...]] = [
            ("EVALSHA", self._script.sha, len(a.keys), *a.keys, *a.args) for a in group
        ]
        if self._wait_replicas:
            commands.append(("WAIT", self._wait_replicas, self._wait_timeout_ms))
        try:
            replies = await send_on_node(node, commands)
        except Exception as e:
            for a in group:
                a.done.set_exception(e)
            return
        confirmed = replies[-1] if self._wait_replicas else 0
        redirected = (rex.MovedError, rex.AskError, rex.TryAgainError, rex.NoScriptError)
        again = []
        for a, reply in zip(group, replies, strict=False):
            if isinstance(reply, redirected):
                again.append(self._alone(a))
            elif isinstance(reply, Exception):
                a.done.set_exception(reply)
            elif isinstance(confirmed, Exception):
                a.done.set_exception(confirmed)
            else:
                a.done.set_result((reply, int(confirmed)))
        await asyncio.gather(*again)

    async def _alone(self, a: _Append) -> None:
        try:
            if self._wait_replicas:
                answer = await script_then_wait(
                    self._cluster, self._script, a.keys, a.args,
                    self._wait_replicas, self._wait_timeout_ms,
                )  # fmt: skip
            else:
                answer = (await self._script(keys=a.keys, args=a.args), 0)
        except Exception as e:
            a.done.set_exception(e)
            return
        a.done.set_result(answer)
