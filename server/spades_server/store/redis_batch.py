"""Many matches' script calls in one round trip to one Redis (or to each
primary of a cluster): their appends, and (in batches of their own) their
reads and stream counts.

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
independent. Reads and stream counts go in batches of their own (no WAIT):
a replica that loads 200 matches at once after another replica died sends
them as a few pipelines, not 200 calls, each with its pool, pack and write
(docs/performance.md, the failover).
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
class _Call:
    # A registered script (its ``sha`` and ``script``), run on ``keys`` with
    # ``args``; None: ``args`` is a command of its own, on the slot of ``keys[0]``.
    script: Any
    keys: list[str]
    args: list[Any]
    due: tuple[str, str, int] | None  # (due set, match id, due ms)
    done: asyncio.Future[tuple[Any, int]]

    # A caller that gave up (its call cancelled: a stream closed) cancelled
    # ``done``; its answer is dropped, and the rest of its batch get theirs.
    def answer(self, reply: Any, confirmed: int) -> None:
        if not self.done.done():
            self.done.set_result((reply, confirmed))

    def fail(self, error: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(error)


class _Batches:
    """The queue: ``_enqueue`` gives the future of a call's answer (the script's
    reply, and how many Redis replicas confirmed it: 0 when none is asked
    for); at most ``senders`` tasks at a time hand the queue to ``_send`` in
    batches of at most ``most``."""

    def __init__(self, senders: int = 1, most: int = MAX_BATCH) -> None:
        self._queue: list[_Call] = []
        # Counted by the senders themselves, not by their tasks' ends: a
        # sender that found the queue empty has stopped taking from it even
        # though its task has not finished yet.
        self._sending = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._most_senders = senders
        self._most = most

    def _enqueue(
        self, script: Any, keys: list[str], args: list[Any], due: tuple[str, str, int] | None
    ) -> asyncio.Future[tuple[Any, int]]:
        """The call queued; its answer's future (no task: a caller awaits
        two of them, an append and its due time, without a gather)."""
        done: asyncio.Future[tuple[Any, int]] = asyncio.get_running_loop().create_future()
        self._queue.append(_Call(script, keys, args, due, done))
        if self._sending < self._most_senders:
            self._sending += 1
            sender = asyncio.get_running_loop().create_task(self._send_all())
            self._tasks.add(sender)  # held until done: the loop keeps only weak references
            sender.add_done_callback(self._tasks.discard)
        return done

    async def _send_all(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue[: self._most], self._queue[self._most :]
                try:
                    await self._send(batch)
                except Exception as e:  # every waiter hears of it; the sender goes on
                    for a in batch:
                        a.fail(e)
                except BaseException:
                    for a in batch:
                        a.fail(rex.RedisError("the batch was cancelled"))
                    raise
        finally:
            self._sending -= 1

    async def _send(self, batch: list[_Call]) -> None:
        raise NotImplementedError


class ScriptBatches(_Batches):
    """Scripts of ``redis`` (a client of one Redis, not a cluster), run in
    batches; each batch ends with a WAIT when ``wait_replicas``."""

    def __init__(
        self, redis: Any, wait_replicas: int = 0, wait_timeout_ms: int = 0, senders: int = 1
    ) -> None:
        super().__init__(senders)
        self._redis = redis
        self._wait = (wait_replicas, wait_timeout_ms) if wait_replicas else None

    async def run(
        self,
        script: Any,
        keys: list[str],
        args: list[Any],
        due: tuple[str, str, int] | None = None,
    ) -> tuple[Any, int]:
        """The script's reply, and how many Redis replicas confirmed it (0
        when no WAIT is asked for); ``due``: a ZADD sent after it."""
        return await self._enqueue(script, keys, args, due)

    async def _send(self, batch: list[_Call], again: bool = True) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for a in batch:
            # evalsha, not the script object: a pipeline holding scripts asks
            # SCRIPT EXISTS first, a round trip more per batch.
            pipe.evalsha(a.script.sha, len(a.keys), *a.keys, *a.args)
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
                a.fail(reply)
            else:
                a.answer(reply, int(confirmed))
        if lost:
            for script in {id(a.script): a.script for a in lost}.values():
                await self._redis.script_load(script.script)
            await self._send(lost, again=False)


class ClusterScriptBatches(_Batches):
    """The same on a Redis Cluster: a batch's calls are grouped by the
    primary of their first key's slot, and each group goes down one
    connection of that primary (its WAIT after them), the groups at once. A
    call whose slot moved meanwhile (MOVED, ASK, TRYAGAIN) or whose primary
    has not seen the script is sent again alone, by ``script_then_wait``'s
    way, which follows the cluster. A command that is not a script
    (``run_command``: an action's due-set ZADD, on another slot than its
    match) goes the same way, with the others of its primary."""

    def __init__(
        self, cluster: Any, wait_replicas: int = 0, wait_timeout_ms: int = 0, senders: int = 1
    ) -> None:
        super().__init__(senders)
        self._cluster = cluster
        self._wait_replicas = wait_replicas
        self._wait_timeout_ms = wait_timeout_ms

    async def run(self, script: Any, keys: list[str], args: list[Any]) -> tuple[Any, int]:
        return await self._enqueue(script, keys, args, None)

    def submit(
        self, script: Any, keys: list[str], args: list[Any]
    ) -> asyncio.Future[tuple[Any, int]]:
        """``run``'s future, queued now."""
        return self._enqueue(script, keys, args, None)

    def submit_command(self, key: str, *command: Any) -> asyncio.Future[tuple[Any, int]]:
        """``command`` (which names ``key`` and no key of another slot),
        queued now: its future's (reply, 0)."""
        return self._enqueue(None, [key], list(command), None)

    async def _send(self, batch: list[_Call]) -> None:
        if not self._cluster.nodes_manager.slots_cache:
            await self._cluster.initialize()
        groups: dict[str, tuple[Any, list[_Call]]] = {}
        alone: list[_Call] = []
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

    async def _send_to(self, node: Any, group: list[_Call]) -> None:
        commands: list[tuple[Any, ...]] = [
            ("EVALSHA", a.script.sha, len(a.keys), *a.keys, *a.args)
            if a.script is not None
            else tuple(a.args)
            for a in group
        ]
        if self._wait_replicas:
            commands.append(("WAIT", self._wait_replicas, self._wait_timeout_ms))
        try:
            replies = await send_on_node(node, commands)
        except Exception as e:
            for a in group:
                a.fail(e)
            return
        confirmed = replies[-1] if self._wait_replicas else 0
        redirected = (rex.MovedError, rex.AskError, rex.TryAgainError, rex.NoScriptError)
        again = []
        for a, reply in zip(group, replies, strict=False):
            if isinstance(reply, redirected):
                again.append(self._alone(a))
            elif isinstance(reply, Exception):
                a.fail(reply)
            elif isinstance(confirmed, Exception):
                a.fail(confirmed)
            else:
                a.answer(reply, int(confirmed))
        await asyncio.gather(*again)

    async def _alone(self, a: _Call) -> None:
        try:
            if a.script is None:
                answer = (await self._cluster.execute_command(*a.args), 0)
            elif self._wait_replicas:
                answer = await script_then_wait(
                    self._cluster, a.script, a.keys, a.args,
                    self._wait_replicas, self._wait_timeout_ms,
                )  # fmt: skip
            else:
                answer = (await a.script(keys=a.keys, args=a.args), 0)
        except Exception as e:
            a.fail(e)
            return
        a.answer(*answer)
