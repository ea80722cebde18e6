"""What falls due: waiting tables whose wait ran out, tables whose start was
left half done (their lease ran out), party tickets whose partner never came,
started matches whose result is not recorded yet (``results``).

Every replica sweeps the same due sets; each change is a commit that expects
what it read, so one replica does it and the others find it done. The
lobby's own partition (the tables players open) is swept every tick; on a
Redis Cluster the shards of quick play (``shards``) one a tick in turn: what
falls due there is a party's wait (minutes) or a start left half done by a
replica that died, which a few seconds more do not change.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from .. import tasks
from ..errors import ServiceError
from ..store import StoreError
from ..store.lobby import LobbyStore, Tx
from .context import Context
from .docs import DUE
from .quickplay import QuickPlay
from .results import PLAYING, Results
from .tables import Tables

log = structlog.get_logger("spades.lobby.sweeper")


class Sweeper:
    def __init__(
        self,
        ctx: Context,
        tables: Tables,
        quickplay: QuickPlay,
        results: Results,
        every_s: float = 0.25,
    ) -> None:
        self.ctx = ctx
        self.tables = tables
        self.quickplay = quickplay
        self.results = results
        self.every_s = every_s
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._turn = 0  # the next shard swept

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.every_s)
            try:
                await self.sweep()
            except StoreError:
                continue  # the store is away: the next tick tries again
            except Exception:
                log.exception("sweeping the lobby failed")

    async def sweep(self) -> None:
        """One tick: the lobby's partition and the next shard in turn."""
        home, *others = self.ctx.places()
        await self._sweep(home)
        if others:
            self._turn = (self._turn + 1) % len(others)
            await self._sweep(others[self._turn])

    async def _sweep(self, store: LobbyStore) -> None:
        now = self.ctx.now_ms()
        for member, _ in await store.zrange(DUE, float("-inf"), float(now), 0, 100):
            kind, _, ident = member.partition(":")
            try:
                if kind == "t":
                    await self.tables.fall_due(ident)
                elif kind == "k":
                    await self.quickplay.fall_due(ident)
            except ServiceError as e:  # gone (NOT_FOUND): nothing left to do
                log.info("due entry skipped", member=member, reason=e.reason)
                with contextlib.suppress(StoreError):
                    await store.commit(Tx(zrem=[(DUE, member)]))
        for match_id, _ in await store.zrange(PLAYING, float("-inf"), float(now), 0, 20):
            await self.results.fall_due(match_id)

    async def close(self) -> None:
        self._closed = True
        await tasks.stop(self._task)
