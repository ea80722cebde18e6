"""A match's stream slots on Redis (stream_slots.py), against a real
redis-server: opens that come together are counted together, the limit
holds for each of them, closes are sent together, and an open given up
while it waited counts nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import grpc
import pytest
from redis_harness import RedisServer
from spades_server.errors import ServiceError
from spades_server.store.redis import RedisStore
from spades_server.stream_slots import FLUSH_S, StreamSlots


class Counting:
    """A real store, counting the counts sent to it."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.sent: list[tuple[int, bool]] = []

    async def set_streams(self, match_id: str, count: int, most: int, opening: bool) -> int:
        self.sent.append((count, opening))
        return await self.store.set_streams(match_id, count, most, opening)


def scenario(server: RedisServer, prefix: str, body: Callable[[Counting], Awaitable[None]]) -> None:
    async def main() -> None:
        store = RedisStore(server.url, prefix)
        try:
            await body(Counting(store))
        finally:
            await store.close()

    asyncio.run(main())


def slots_of(counting: Counting, most: int) -> StreamSlots:
    return StreamSlots(counting, "m1", most)  # type: ignore[arg-type]


def test_opens_that_come_together_are_counted_together(
    redis_server: RedisServer, redis_prefix: str
) -> None:
    async def body(counting: Counting) -> None:
        slots = slots_of(counting, 64)
        await asyncio.gather(*(slots.take() for _ in range(8)))
        assert slots.count == 8
        # The first alone, the seven that came while it was on its way in one.
        assert counting.sent == [(1, True), (8, True)]
        # Another replica sees all eight: 56 more fit there, not 57.
        other = RedisStore(redis_server.url, redis_prefix)
        try:
            assert await other.set_streams("m1", 57, 64, True) == -1
            assert await other.set_streams("m1", 56, 64, True) == 64
        finally:
            await other.close()

    scenario(redis_server, redis_prefix, body)


def test_the_limit_holds_for_each_of_the_opens_of_one_count(
    redis_server: RedisServer, redis_prefix: str
) -> None:
    async def body(counting: Counting) -> None:
        slots = slots_of(counting, 3)
        results = await asyncio.gather(*(slots.take() for _ in range(5)), return_exceptions=True)
        refused = [r for r in results if isinstance(r, ServiceError)]
        assert slots.count == 3 and len(refused) == 2
        assert all(r.reason == "TOO_MANY_STREAMS" for r in refused)
        assert all(r.code == grpc.StatusCode.RESOURCE_EXHAUSTED for r in refused)

    scenario(redis_server, redis_prefix, body)


def test_closes_are_sent_together_and_free_their_slots(
    redis_server: RedisServer, redis_prefix: str
) -> None:
    async def body(counting: Counting) -> None:
        slots = slots_of(counting, 2)
        await asyncio.gather(slots.take(), slots.take())
        counting.sent.clear()
        slots.release()
        slots.release()
        await asyncio.sleep(FLUSH_S + 0.2)
        assert counting.sent == [(0, False)]
        await asyncio.gather(slots.take(), slots.take())  # both free again
        assert slots.count == 2

    scenario(redis_server, redis_prefix, body)


@pytest.mark.parametrize("given_up", ["waiting", "on_its_way"])
def test_an_open_given_up_counts_nothing(
    redis_server: RedisServer, redis_prefix: str, given_up: str
) -> None:
    """Given up while queued behind a count, or while its own count was on
    its way (the ones queued behind it then ask for themselves)."""

    async def body(counting: Counting) -> None:
        slots = slots_of(counting, 64)
        calls = [asyncio.create_task(slots.take()) for _ in range(4)]
        await asyncio.sleep(0)  # all four asked; the first's count is on its way
        quitter = calls[1] if given_up == "waiting" else calls[0]
        quitter.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        assert quitter.cancelled()
        assert all(c.result() is None for c in calls if c is not quitter)
        await asyncio.sleep(FLUSH_S + 0.2)
        assert slots.count == 3
        assert counting.sent[-1][0] == 3  # what the store holds, whatever was sent before

    scenario(redis_server, redis_prefix, body)


def test_a_store_that_does_not_answer_fails_every_open_of_the_count(
    redis_prefix: str,
) -> None:
    async def main() -> None:
        gone = RedisStore("redis://127.0.0.1:1/0", redis_prefix)  # nothing listens there
        try:
            slots = StreamSlots(gone, "m1", 64)
            results = await asyncio.gather(
                *(slots.take() for _ in range(3)), return_exceptions=True
            )
        finally:
            await gone.close()
        assert all(isinstance(r, ServiceError) for r in results), results
        assert {(r.code, r.reason) for r in results if isinstance(r, ServiceError)} == {
            (grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
        }
        assert slots.count == 0

    asyncio.run(main())
