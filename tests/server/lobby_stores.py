"""Lobby stores of every kind for tests of what is built on them (the
``backend`` fixture, exported by conftest.py): memory, SQLite (a file of its
own), Redis (a real redis-server; each ``lobby()`` a replica on one prefix)
and a Redis Cluster (three primaries and their replicas, the same way)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from redis_harness import RedisCluster, RedisServer
from spades_server.store.lobby import DEFAULT_FEED_KEEP, LobbyStore
from spades_server.store.lobby_memory import MemoryLobby
from spades_server.store.lobby_redis import RedisLobby
from spades_server.store.lobby_sqlite import SqliteLobby
from spades_server.store.redis import RedisStore
from spades_server.store.sqlite import SqliteStore


class Backend:
    """Lobby stores of one kind that share their data: for memory, the same
    store again; for SQLite, lobbies on one ``SqliteStore``; for Redis, each on
    a ``RedisStore`` of its own with the same server and prefix (a replica)."""

    def __init__(
        self, kind: str, path: Path, redis: RedisServer | RedisCluster | None, prefix: str
    ) -> None:
        self.kind = kind
        self.path = path
        self.redis = redis
        self.prefix = prefix
        self.memory: MemoryLobby | None = None
        self.sqlite: SqliteStore | None = None
        self.lobbies: list[LobbyStore] = []
        self.redis_stores: list[RedisStore] = []

    async def lobby(self, feed_keep: int = DEFAULT_FEED_KEEP) -> LobbyStore:
        lobby: LobbyStore
        if self.kind == "memory":
            if self.memory is None:
                self.memory = MemoryLobby(feed_keep)
            return self.memory
        if self.kind == "sqlite":
            if self.sqlite is None:
                self.sqlite = await SqliteStore.open(self.path)
            lobby = SqliteLobby(self.sqlite, feed_keep)
        else:
            assert self.redis is not None
            store = RedisStore(self.redis.url, self.prefix, cluster=self.kind == "cluster")
            self.redis_stores.append(store)
            lobby = RedisLobby(store, feed_keep)
        self.lobbies.append(lobby)
        return lobby

    async def close(self) -> None:
        for lobby in self.lobbies:
            await lobby.close()
        if self.memory is not None:
            await self.memory.close()
        for store in self.redis_stores:
            await store.close()
        if self.sqlite is not None:
            await self.sqlite.close()


Scenario = Callable[[Backend], Awaitable[None]]


@contextlib.asynccontextmanager
async def cluster_lobby(
    cluster: RedisCluster, prefix: str, kind: type[RedisLobby] = RedisLobby
) -> AsyncIterator[RedisLobby]:
    """A lobby store of ``kind`` on the cluster, closed with its store after."""
    store = RedisStore(cluster.url, prefix, cluster=True)
    lobby = kind(store)
    try:
        yield lobby
    finally:
        await lobby.close()
        await store.close()


@pytest.fixture(params=["memory", "sqlite", "redis", "cluster"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    redis: RedisServer | RedisCluster | None = None
    prefix = None
    if request.param in ("redis", "cluster"):
        fixture = "redis_server" if request.param == "redis" else "redis_cluster"
        redis = request.getfixturevalue(fixture)
        prefix = request.getfixturevalue("redis_prefix")
    made = Backend(request.param, tmp_path / "lobby.db", redis, prefix or "")
    yield made
    if made.sqlite is not None and not made.sqlite._closed:
        asyncio.run(made.sqlite.close())  # a test that failed midway leaks no writer thread


def play(backend: Backend, scenario: Scenario) -> None:
    async def main() -> None:
        try:
            await scenario(backend)
        finally:
            await backend.close()

    asyncio.run(main())
