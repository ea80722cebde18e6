"""A match's stream slots on a shared store (Redis): how many of the match's
streams and polls this replica holds, recorded in the store, where every
replica's counts add up to the match's (``SharedStore.set_streams``), and
refused past ``streams_per_match``.

A count is absolute and one is sent at a time, so the newest is the one
recorded. Opens that come while a count is on its way go together in the
next one, and the closes of the next ``FLUSH_S`` are sent as one: when a
replica dies, every seat of its matches reconnects to the others at once,
and each open and each close would otherwise be a round trip of its own
(docs/performance.md, the failover).
"""

from __future__ import annotations

import asyncio
import contextlib

from .errors import exhausted, store_message, unavailable
from .metrics import REJECTIONS
from .store import SharedStore, StoreError

FLUSH_S = 0.02  # how long closes wait to be sent together

Ask = asyncio.Future[bool]  # an open's answer: True granted, False past the limit


class StreamSlots:
    def __init__(self, store: SharedStore, match_id: str, most: int) -> None:
        self.store = store
        self.match_id = match_id
        self.most = most
        self.count = 0  # the slots this replica holds
        self._lock = asyncio.Lock()  # one count on its way at a time
        self._asks: list[Ask] = []  # opens waiting for the next count
        self._flush: asyncio.Task[None] | None = None

    async def take(self) -> None:
        """One slot; ``UNAVAILABLE STORE_UNAVAILABLE`` when the store does not
        answer, ``RESOURCE_EXHAUSTED TOO_MANY_STREAMS`` past the limit."""
        asked: Ask = asyncio.get_running_loop().create_future()
        self._asks.append(asked)
        try:
            async with self._lock:
                if not asked.done():  # else an earlier holder's count answered it
                    asks, self._asks = self._asks, []
                    await self._grant(asks)
            granted = asked.result()
        except asyncio.CancelledError:
            self._forget(asked)
            raise
        if not granted:
            REJECTIONS.labels("TOO_MANY_STREAMS").inc()
            raise exhausted("TOO_MANY_STREAMS", f"at most {self.most} streams per match")

    def release(self) -> None:
        """Give a slot back; the count is sent with the other closes of the
        next moment (best effort: a count left behind expires in the store)."""
        self.count -= 1
        if self._flush is None or self._flush.done():
            self._flush = asyncio.get_running_loop().create_task(self._send_soon())

    async def refresh(self) -> None:
        """Renew this replica's count before it expires in the store."""
        if self.count > 0:
            with contextlib.suppress(StoreError):
                await self._send()

    async def _send_soon(self) -> None:
        await asyncio.sleep(FLUSH_S)
        with contextlib.suppress(StoreError):
            await self._send()

    async def _send(self) -> None:
        async with self._lock:
            await self.store.set_streams(self.match_id, self.count, self.most, False)

    async def _grant(self, asks: list[Ask]) -> None:
        """Answer ``asks`` with one count if they all fit, else one by one."""
        try:
            total = await self.store.set_streams(
                self.match_id, self.count + len(asks), self.most, True
            )
        except StoreError as e:
            for ask in asks:
                failed = unavailable(
                    "STORE_UNAVAILABLE", store_message("the store did not answer", e)
                )
                ask.set_exception(failed)
            return
        except BaseException:  # cancelled on the way: the next holder asks for them
            self._asks[:0] = [a for a in asks if not a.done()]
            raise
        if total >= 0:
            self.count += len(asks)
            for ask in asks:
                ask.set_result(True)
        elif len(asks) == 1:
            asks[0].set_result(False)
        else:  # not room for all of them: as many as fit, in order
            for i, ask in enumerate(asks):
                try:
                    await self._grant([ask])
                except BaseException:
                    self._asks[:0] = [a for a in asks[i + 1 :] if not a.done()]
                    raise

    def _forget(self, asked: Ask) -> None:
        """An open given up (its call ended) while it waited: not counted."""
        if asked in self._asks:
            self._asks.remove(asked)
        elif asked.done():
            self._drop(asked)
        else:  # in a count on its way
            asked.add_done_callback(self._drop)

    def _drop(self, asked: Ask) -> None:
        if not asked.cancelled() and asked.exception() is None and asked.result():
            self.release()
