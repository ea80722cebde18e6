"""The store contract, run against every store (memory, SQLite, Redis); then
what only SQLite promises. Redis's own promises are in test_store_redis.py.

pytest-asyncio is not used: each test is a plain function running a small
coroutine with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis import asyncio as aioredis
from redis_harness import RedisCluster, RedisServer
from spades_server import main
from spades_server.store import (
    MatchExists,
    MatchNotFound,
    SeqConflict,
    Store,
    StoredAction,
    StoredEvent,
    StoreError,
)
from spades_server.store.memory import MemoryStore
from spades_server.store.redis import RedisStore
from spades_server.store.redis_cluster import redis_target
from spades_server.store.sqlite import SqliteStore

MakeStore = Callable[..., Store]


def ev(seq: int, payload: bytes | None = None, audience: str = "everyone") -> StoredEvent:
    return StoredEvent(seq, audience, payload if payload is not None else f"e{seq}".encode())


def act(index: int, first_seq: int, last_seq: int, seat: int = 0) -> StoredAction:
    return StoredAction(index, seat, f"play {index}", f"id-{index}", first_seq, last_seq)


def run(coro: Awaitable[Any]) -> Any:
    async def main() -> Any:
        return await coro

    return asyncio.run(main())


@pytest.fixture(params=["memory", "sqlite", "redis", "cluster"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeStore]:
    """A factory: for SQLite every store it makes opens the same file; for
    Redis (a server, or a cluster) every store it makes uses the same
    server and key prefix."""
    if request.param == "memory":
        memory = MemoryStore()
        yield lambda **kw: memory
        return
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
        prefix = request.getfixturevalue("redis_prefix")
        yield lambda **kw: RedisStore(server.url, prefix)
        return
    if request.param == "cluster":
        cluster = request.getfixturevalue("redis_cluster")
        prefix = request.getfixturevalue("redis_prefix")
        yield lambda **kw: RedisStore(cluster.url, prefix, cluster=True)
        return
    made: list[SqliteStore] = []

    def make(**kw: Any) -> Store:
        store = SqliteStore(tmp_path / "store.db", **kw)
        made.append(store)
        return store

    yield make
    for store in made:  # a test that failed midway must not leak writer threads
        if not store._closed:
            asyncio.run(store.close())


# ------------------------------------------------------------------ the contract


def test_round_trip(make_store: MakeStore) -> None:
    async def main() -> None:
        store = make_store()
        await store.create_match("m1", b'{"v":0}', b"snap0", [ev(1), ev(2)])
        await store.append("m1", 2, [ev(3), ev(4), ev(5, audience="seat:2")], act(0, 3, 5))
        await store.append("m1", 5, [ev(6)], act(1, 6, 6, seat=1), meta=b'{"v":2}')
        await store.append("m1", 6, [ev(7, audience="team:1")])  # events alone
        loaded = await store.load_match("m1")
        assert loaded.match_id == "m1"
        assert loaded.meta == b'{"v":2}'
        assert (loaded.snapshot, loaded.snapshot_actions) == (b"snap0", 0)
        assert loaded.actions == [act(0, 3, 5), act(1, 6, 6, seat=1)]
        assert loaded.events == [
            ev(1),
            ev(2),
            ev(3),
            ev(4),
            ev(5, audience="seat:2"),
            ev(6),
            ev(7, audience="team:1"),
        ]
        assert [m for m, _ in await store.match_metas()] == ["m1"]

        # Callers cannot change what is stored: neither through what they
        # passed in nor through what they got back.
        payload = bytearray(b"mutable")
        await store.append("m1", 7, [StoredEvent(8, "everyone", payload)])  # type: ignore[arg-type]
        payload[:] = b"CHANGED"
        loaded.events.clear()
        loaded.actions.clear()
        again = await store.load_match("m1")
        assert again.events[-1] == ev(8, b"mutable")
        assert len(again.events) == 8
        assert len(again.actions) == 2
        await store.close()

    run(main())


def test_round_trip_survives_reopen(tmp_path: Path) -> None:
    async def main() -> None:
        store = SqliteStore(tmp_path / "s.db")
        await store.create_match("m1", b"meta", b"snap", [ev(1)])
        await store.append("m1", 1, [ev(2), ev(3)], act(0, 2, 3), meta=b"meta2")
        await store.close()
        store = await SqliteStore.open(tmp_path / "s.db")
        loaded = await store.load_match("m1")
        assert loaded.meta == b"meta2"
        assert loaded.events == [ev(1), ev(2), ev(3)]
        assert loaded.actions == [act(0, 2, 3)]
        await store.close()

    run(main())


def test_seq_conflict_stores_nothing(make_store: MakeStore) -> None:
    async def main() -> None:
        store = make_store()
        await store.create_match("m", b"meta", b"snap", [ev(1), ev(2)])
        before = await store.load_match("m")
        for stale in (0, 1, 3):
            with pytest.raises(SeqConflict):
                await store.append("m", stale, [ev(stale + 1)], act(0, stale + 1, stale + 1), b"x")
        assert await store.load_match("m") == before
        await store.append("m", 2, [ev(3)])  # the right one still works
        await store.close()

    run(main())


def test_non_consecutive_seqs_refused(make_store: MakeStore) -> None:
    async def main() -> None:
        store = make_store()
        with pytest.raises(StoreError) as info:
            await store.create_match("bad", b"m", b"s", [ev(2)])
        assert not isinstance(info.value, SeqConflict)
        assert [m for m, _ in await store.match_metas()] == []
        await store.create_match("m", b"m", b"s", [ev(1)])
        before = await store.load_match("m")
        for events in ([ev(3)], [ev(2), ev(4)], [ev(2), ev(2)], [ev(1)]):
            with pytest.raises(StoreError) as info:
                await store.append("m", 1, events, act(0, 2, 2))
            assert not isinstance(info.value, SeqConflict)
        # An action that is not the next one of the list is refused too, with its events.
        with pytest.raises(StoreError):
            await store.append("m", 1, [ev(2)], act(1, 2, 2), meta=b"new")
        assert await store.load_match("m") == before
        await store.close()

    run(main())


def test_match_exists(make_store: MakeStore) -> None:
    async def main() -> None:
        store = make_store()
        await store.create_match("m", b"first", b"snap1", [ev(1)])
        with pytest.raises(MatchExists):
            await store.create_match("m", b"second", b"snap2", [ev(1), ev(2)])
        loaded = await store.load_match("m")
        assert (loaded.meta, loaded.snapshot, loaded.events) == (b"first", b"snap1", [ev(1)])
        assert [m for m, _ in await store.match_metas()] == ["m"]
        await store.close()

    run(main())


def test_match_not_found(make_store: MakeStore) -> None:
    async def main() -> None:
        store = make_store()
        with pytest.raises(MatchNotFound):
            await store.append("nope", 0, [ev(1)])
        with pytest.raises(MatchNotFound):
            await store.load_match("nope")
        with pytest.raises(MatchNotFound):
            await store.save_snapshot("nope", b"s", 0)
        assert [m for m, _ in await store.match_metas()] == []
        await store.close()

    run(main())


def test_snapshots_and_action_tail(make_store: MakeStore) -> None:
    async def main() -> None:
        store = make_store()
        await store.create_match("m", b"meta", b"snap@0", [ev(1)])
        for i in range(5):
            await store.append("m", i + 1, [ev(i + 2)], act(i, i + 2, i + 2))
        await store.save_snapshot("m", b"snap@3", 3)
        loaded = await store.load_match("m")
        assert (loaded.snapshot, loaded.snapshot_actions) == (b"snap@3", 3)
        assert loaded.actions == [act(i, i + 2, i + 2) for i in range(5)]  # ids of all
        assert loaded.events == [ev(s) for s in range(1, 7)]  # every event, always

        await store.save_snapshot("m", b"snap@2", 2)  # older than the stored one: ignored
        assert (await store.load_match("m")).snapshot == b"snap@3"
        with pytest.raises(StoreError):  # covers actions that are not stored
            await store.save_snapshot("m", b"snap@6", 6)
        await store.save_snapshot("m", b"snap@5", 5)
        loaded = await store.load_match("m")
        assert (loaded.snapshot, loaded.snapshot_actions, len(loaded.actions)) == (b"snap@5", 5, 5)
        await store.close()

    run(main())


def test_match_metas_oldest_first_with_the_latest_meta(make_store: MakeStore) -> None:
    async def main() -> None:
        store = make_store()
        for match_id in ("c", "a", "b", "aa"):
            await store.create_match(match_id, b"m", b"s", [])
        with pytest.raises(MatchExists):
            await store.create_match("a", b"m", b"s", [])
        await store.create_match("0", b"m", b"s", [])
        await store.append("b", 0, [StoredEvent(1, "everyone", b"e")], meta=b"m2")
        expected = [("c", b"m"), ("a", b"m"), ("b", b"m2"), ("aa", b"m"), ("0", b"m")]
        assert await store.match_metas() == expected
        await store.close()
        if isinstance(store, SqliteStore):
            store = make_store()
            assert await store.match_metas() == expected
            await store.close()

    run(main())


def test_closed_store_refuses(make_store: MakeStore) -> None:
    async def main() -> None:
        store = make_store()
        await store.create_match("m", b"m", b"s", [ev(1)])
        await store.close()
        await store.close()  # again: a no-op
        with pytest.raises(StoreError):
            await store.append("m", 1, [ev(2)])
        with pytest.raises(StoreError):
            await store.load_match("m")
        with pytest.raises(StoreError):
            [m for m, _ in await store.match_metas()]

    run(main())


def test_failures_in_a_batch_stay_alone(make_store: MakeStore) -> None:
    """50 good appends to different matches race with requests that must fail.
    For SQLite the writer is held so that all of them land in ONE transaction."""
    n = 50
    held = threading.Event()
    release = threading.Event()
    armed = [False]
    batches: list[int] = []

    def on_commit(seconds: float, requests: int) -> None:
        batches.append(requests)
        if armed[0]:
            armed[0] = False
            held.set()
            release.wait(5)

    async def main() -> None:
        store = make_store(on_commit=on_commit)  # the memory store ignores it
        await asyncio.gather(
            *(store.create_match(f"m{i}", b"meta0", b"s", [ev(1)]) for i in range(n))
        )
        calls: list[Awaitable[None]] = []
        expect: list[type[Exception] | None] = []
        for i in range(n):
            calls.append(store.append(f"m{i}", 1, [ev(2), ev(3)], act(0, 2, 3), b"meta1"))
            expect.append(None)
            if i % 10 == 0:  # the same match again, on a seq it is past in either order
                calls.append(store.append(f"m{i}", 0, [ev(1, b"loser")], act(0, 1, 1), b"bad"))
                expect.append(SeqConflict)
            if i % 10 == 5:
                calls.append(store.create_match(f"m{i}", b"bad", b"bad", []))
                expect.append(MatchExists)
        calls.append(store.append("missing", 0, [ev(1)]))
        expect.append(MatchNotFound)
        calls.append(store.append("m7", 3, [ev(4)], act(5, 4, 4)))  # not the next action
        expect.append(StoreError)
        calls.append(store.save_snapshot("m8", b"bad", 9))  # covers unstored actions
        expect.append(StoreError)

        warm_up = None
        if isinstance(store, SqliteStore):
            armed[0] = True  # the writer stops after committing the warm-up...
            warm_up = asyncio.ensure_future(store.match_metas())
            assert await asyncio.to_thread(held.wait, 5)
        tasks = [asyncio.ensure_future(c) for c in calls]
        if isinstance(store, SqliteStore):
            while store.stats().queue_depth < len(tasks):  # ...until all are queued
                await asyncio.sleep(0.001)
            release.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        if warm_up is not None:
            await warm_up
            assert batches[-1] == len(tasks)  # really one transaction

        for result, expected in zip(results, expect, strict=True):
            if expected is None:
                assert result is None
            else:
                assert type(result) is expected, result
        for i in range(n):
            loaded = await store.load_match(f"m{i}")
            assert loaded.events == [ev(1), ev(2), ev(3)]
            assert loaded.actions == [act(0, 2, 3)]
            assert loaded.meta == b"meta1"
        assert len([m for m, _ in await store.match_metas()]) == n
        # After the failures the store still knows where every match ends.
        await store.append("m0", 3, [ev(4)], act(1, 4, 4))
        with pytest.raises(SeqConflict):
            await store.append("m0", 3, [ev(4)], act(1, 4, 4))
        with pytest.raises(StoreError):
            await store.append("m10", 3, [ev(4)], act(2, 4, 4))  # action 1 comes first
        await store.close()

    run(main())


# ------------------------------------------------------------------ SQLite only


def test_sqlite_is_wal_and_counts(tmp_path: Path) -> None:
    commits: list[tuple[float, int]] = []

    async def main() -> None:
        path = tmp_path / "wal.db"
        store = await SqliteStore.open(
            path, synchronous="normal", on_commit=lambda s, n: commits.append((s, n))
        )
        await store.create_match("m", b"m", b"s", [ev(1)])
        with pytest.raises(SeqConflict):
            await store.append("m", 0, [ev(1)])
        with contextlib.closing(sqlite3.connect(path)) as other:
            assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            tables = {r[0] for r in other.execute("SELECT name FROM sqlite_master")}
            assert {"matches", "events", "actions", "snapshots"} <= tables
        stats = store.stats()
        assert stats.commits == len(commits) >= 3
        assert stats.requests == 3
        assert stats.failed_requests == 1
        assert all(seconds >= 0 for seconds, _ in commits)
        await store.close()
        assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0

    run(main())


@pytest.mark.parametrize("linger_ms", [0, 60])
def test_sqlite_linger_joins_appends_that_come_within_it_into_one_commit(
    tmp_path: Path, linger_ms: int
) -> None:
    commits: list[int] = []

    async def main() -> None:
        store = await SqliteStore.open(
            tmp_path / f"linger{linger_ms}.db",
            commit_linger_ms=linger_ms,
            on_commit=lambda _s, n: commits.append(n),
        )
        ids = [f"m{i}" for i in range(6)]
        for m in ids:
            await store.create_match(m, b"{}", b"s", [])
        commits.clear()
        loop = asyncio.get_running_loop()
        acked: list[float] = []

        async def one(match_id: str) -> None:
            t0 = loop.time()
            await store.append(match_id, 0, [ev(1)], act(0, 1, 1))
            acked.append(loop.time() - t0)

        tasks = []
        for m in ids:  # one every 5 ms, as matches at low load act
            tasks.append(asyncio.create_task(one(m)))
            await asyncio.sleep(0.005)
        await asyncio.gather(*tasks)
        appends = list(commits)
        for m in ids:  # each stored, once
            assert [e.seq for e in (await store.load_match(m)).events] == [1]
        await store.close()
        if linger_ms:
            assert len(appends) <= 2 and sum(appends) == 6, appends
            assert max(acked) >= 0.02  # the first waited for the rest
        else:
            assert len(appends) >= 4, appends

    run(main())


def test_the_linger_is_a_server_flag_with_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.parse_args(["--sqlite-commit-linger-ms", "2.5"]).sqlite_commit_linger_ms == 2.5
    assert main.parse_args([]).sqlite_commit_linger_ms == 0
    for bad in ("-1", "100.5"):
        with pytest.raises(SystemExit) as info:
            main.parse_args(["--sqlite-commit-linger-ms", bad])
        assert info.value.code == 2
        assert "--sqlite-commit-linger-ms must be 0 to 100" in capsys.readouterr().err


def test_the_redis_mode_is_a_flag_or_the_urls_scheme(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.parse_args([]).redis_mode == "single"
    args = main.parse_args(["--store", "redis", "--redis-mode", "cluster"])
    assert redis_target(args.redis_url, args.redis_mode) == ("redis://127.0.0.1:6379/0", True)
    for url, mode, expected in (
        ("redis+cluster://:pw@node:7000", "single", ("redis://:pw@node:7000", True)),
        ("rediss+cluster://node:7000/0", "single", ("rediss://node:7000/0", True)),
        ("redis://node:6379/0", "single", ("redis://node:6379/0", False)),
    ):
        assert redis_target(url, mode) == expected
    with pytest.raises(SystemExit) as info:
        main.parse_args(["--redis-mode", "sharded"])
    assert info.value.code == 2
    assert "--redis-mode must be single or cluster" in capsys.readouterr().err


def test_sqlite_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SqliteStore(tmp_path / "x.db", synchronous="SOMETIMES")
    for linger in (-1, 101):
        with pytest.raises(ValueError, match="commit_linger_ms"):
            SqliteStore(tmp_path / "x.db", commit_linger_ms=linger)

    async def main() -> None:
        with pytest.raises(StoreError):
            await SqliteStore.open(tmp_path / "no" / "such" / "dir" / "x.db")

    run(main())


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from spades_server.store import StoredAction, StoredEvent
    from spades_server.store.sqlite import SqliteStore

    async def main(path: str, linger_ms: float) -> None:
        store = SqliteStore(path, commit_linger_ms=linger_ms)
        ids = [f"m{i}" for i in range(8)]
        if not [m for m, _ in await store.match_metas()]:
            await asyncio.gather(*(store.create_match(m, b"{}", b"s", []) for m in ids))

        async def play(match_id: str) -> None:
            loaded = await store.load_match(match_id)
            seq = loaded.events[-1].seq if loaded.events else 0
            index = len(loaded.actions)
            while True:
                events = [StoredEvent(seq + k, "everyone", b"x" * 200) for k in (1, 2)]
                action = StoredAction(index, 0, "play", f"a{index}", seq + 1, seq + 2)
                await store.append(match_id, seq, events, action)
                seq, index = seq + 2, index + 1
                print(match_id, seq, flush=True)

        print("ready", flush=True)
        await asyncio.gather(*(play(m) for m in ids))

    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
    """
)


@pytest.mark.parametrize("linger_ms", [0, 3])
def test_sqlite_acknowledged_appends_survive_sigkill(tmp_path: Path, linger_ms: int) -> None:
    path = tmp_path / "crash.db"
    acked: dict[str, int] = {}
    for _round in range(2):  # the second round also recovers from the first crash
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(linger_ms)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert proc.stdout is not None
        try:
            assert proc.stdout.readline().strip() == "ready"
            deadline = time.monotonic() + 5
            for _ in range(150):
                line = proc.stdout.readline()
                assert line, "the writer died"
                match_id, seq = line.split()
                acked[match_id] = max(acked.get(match_id, 0), int(seq))
                assert time.monotonic() < deadline
            proc.send_signal(signal.SIGKILL)  # right after an acknowledged append
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL

    async def check() -> None:
        store = await SqliteStore.open(path)
        assert set(acked) <= set([m for m, _ in await store.match_metas()])
        for match_id, seq in acked.items():
            loaded = await store.load_match(match_id)
            last = loaded.events[-1].seq
            assert last >= seq, f"{match_id}: acknowledged seq {seq}, stored {last}"
            assert [e.seq for e in loaded.events] == list(range(1, last + 1))
            assert [a.index for a in loaded.actions] == list(range(last // 2))
        await store.close()

    run(check())


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_a_replica_watching_many_matches_at_once_hears_every_append(
    kind: str, request: pytest.FixtureRequest, redis_prefix: str
) -> None:
    """Sessions loaded together watch their matches together: every
    subscription must hold (redis-py's PubSub kept one of 40 sent at once)."""
    server = request.getfixturevalue("redis_server" if kind == "redis" else "redis_cluster")

    async def main() -> None:
        writer = RedisStore(server.url, redis_prefix, cluster=kind == "cluster")
        follower = RedisStore(server.url, redis_prefix, cluster=kind == "cluster")
        heard: dict[str, int] = {}
        follower.follow(heard.__setitem__, lambda: None)
        ids = [f"w{i}" for i in range(40)]
        for m in ids:
            await writer.create_match(m, b"m", b"s", [ev(1)])
        await asyncio.gather(*(follower.watch(m) for m in ids))
        for seq in (2, 3):
            await asyncio.gather(*(writer.append(m, seq - 1, [ev(seq)]) for m in ids))
        deadline = time.monotonic() + 10
        while any(heard.get(m) != 3 for m in ids) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert [m for m in ids if heard.get(m) != 3] == []
        await writer.close()
        await follower.close()

    run(main())


def test_one_redis_sends_appends_that_wait_together_and_loads_its_script_again(
    redis_server: RedisServer, redis_prefix: str
) -> None:
    """Appends of many matches made at once share round trips (as SQLite's
    share a transaction), each with its own answer; after SCRIPT FLUSH (a
    restarted Redis) the script is loaded again and nothing is lost."""

    async def main() -> None:
        creator = RedisStore(redis_server.url, redis_prefix)
        client = aioredis.Redis.from_url(redis_server.url)
        ids = [f"b{i}" for i in range(60)]
        await asyncio.gather(*(creator.create_match(m, b"m", b"s", [ev(1)]) for m in ids))
        await creator.close()
        store = RedisStore(redis_server.url, redis_prefix)
        connections = (await client.info("clients"))["connected_clients"]
        before = await client.info("commandstats")
        results = await asyncio.gather(
            *(
                store.append(m, 1, [ev(2)], act(0, 2, 2), due_ms=1000 + i)
                for i, m in enumerate(ids)
            ),
            store.append("b0", 0, [ev(1)]),  # a loser in the same batch: alone refused
            return_exceptions=True,
        )
        assert results[:-1] == [None] * len(ids) and type(results[-1]) is SeqConflict
        after = await client.info("commandstats")
        assert after["cmdstat_evalsha"]["calls"] - before["cmdstat_evalsha"]["calls"] == 61
        # One by one, 61 appends at once took 61 of the pool's connections.
        assert (await client.info("clients"))["connected_clients"] - connections <= 2
        due = await client.zrange(f"{redis_prefix}:due", 0, -1, withscores=True)
        assert {m.decode(): int(s) for m, s in due} == {m: 1000 + i for i, m in enumerate(ids)}
        await client.script_flush()
        await asyncio.gather(*(store.append(m, 2, [ev(3)]) for m in ids))
        for m in ids:
            assert (await store.load_match(m)).events == [ev(1), ev(2), ev(3)]
        await client.aclose()
        await store.close()

    run(main())


class Primaries:
    """Plain clients of every primary (of a Redis, or of a cluster), for
    what the store's calls cost there: commands run and connections held."""

    def __init__(self, ports: list[int]) -> None:
        self.clients = [aioredis.Redis(host="127.0.0.1", port=p) for p in ports]

    async def calls(self, command: str) -> int:
        stats = [await c.info("commandstats") for c in self.clients]
        return sum(s.get(f"cmdstat_{command}", {}).get("calls", 0) for s in stats)

    async def connected(self) -> int:
        return sum([(await c.info("clients"))["connected_clients"] for c in self.clients])

    async def close(self) -> None:
        for c in self.clients:
            await c.aclose()


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_loads_and_stream_counts_made_at_once_share_round_trips(
    kind: str, request: pytest.FixtureRequest, redis_prefix: str
) -> None:
    """A replica that takes over a dead one's matches loads them all at once:
    the loads (and the stream counts of their seats) go in a few pipelines,
    each with its own answer; a missing match is refused alone, and after
    SCRIPT FLUSH (a restarted Redis) the scripts are loaded again."""
    server = request.getfixturevalue("redis_server" if kind == "redis" else "redis_cluster")
    ports = server.primary_ports() if kind == "cluster" else [server.port]

    async def main() -> None:
        primaries = Primaries(ports)
        creator = RedisStore(server.url, redis_prefix, cluster=kind == "cluster")
        ids = [f"r{i}" for i in range(60)]
        for m in ids:
            await creator.create_match(m, m.encode(), b"s", [ev(1, m.encode())])
        await creator.close()
        store = RedisStore(server.url, redis_prefix, cluster=kind == "cluster")
        await store.load_match(ids[0])  # the scripts loaded, a connection made
        await store.set_streams(ids[0], 0, 8, False)
        connections = await primaries.connected()
        before = await primaries.calls("evalsha")
        loaded = await asyncio.gather(
            *(store.load_match(m) for m in ids),
            store.load_match("nowhere"),
            *(store.set_streams(m, 2, 8, True) for m in ids),
            return_exceptions=True,
        )
        assert [x.meta for x in loaded[:60]] == [m.encode() for m in ids]  # type: ignore[union-attr]
        assert [x.events for x in loaded[:60]] == [[ev(1, m.encode())] for m in ids]  # type: ignore[union-attr]
        assert type(loaded[60]) is MatchNotFound
        assert loaded[61:] == [2] * 60
        assert await primaries.calls("evalsha") - before == 121
        # One call each, 121 at once took a connection each (up to the pool's 64).
        assert await primaries.connected() - connections <= 4 * len(primaries.clients)
        for c in primaries.clients:
            await c.script_flush()
        again = await asyncio.gather(*(store.load_match(m) for m in ids))
        assert [x.meta for x in again] == [m.encode() for m in ids]
        assert await store.set_streams(ids[0], 3, 8, True) == 3
        await store.close()
        await primaries.close()

    run(main())


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_a_batched_call_given_up_leaves_the_others_of_its_batch_their_answers(
    kind: str, request: pytest.FixtureRequest, redis_prefix: str
) -> None:
    """A stream closed while its load or count is out (the client went
    away) cancels its wait; the calls that went in the same batch still get
    their own answers (they got the cancelled one's InvalidStateError, an
    INTERNAL error on their streams, before)."""
    server = request.getfixturevalue("redis_server" if kind == "redis" else "redis_cluster")

    async def main() -> None:
        store = RedisStore(server.url, redis_prefix, cluster=kind == "cluster")
        ids = [f"c{i}" for i in range(30)]
        for m in ids:
            await store.create_match(m, m.encode(), b"s", [ev(1)])
        for _ in range(5):
            calls = [asyncio.ensure_future(store.load_match(m)) for m in ids]
            counts = [asyncio.ensure_future(store.set_streams(m, 1, 8, True)) for m in ids]
            await asyncio.sleep(0)  # every call queued, the first batch out
            for given_up in calls[::3] + counts[::3]:
                given_up.cancel()
            done = await asyncio.gather(*calls, *counts, return_exceptions=True)
            kept = [d for i, d in enumerate(done) if i % 3]  # calls and counts alike
            assert all(not isinstance(d, BaseException) for d in kept), [
                d for d in kept if isinstance(d, BaseException)
            ][:3]
        await store.close()

    run(main())


def test_a_cluster_sends_the_due_times_of_appends_made_at_once_together(
    redis_cluster: RedisCluster, redis_prefix: str
) -> None:
    """On a cluster an action's due time is a ZADD on another slot than its
    append; made at once, they go as a pipeline per primary, not a call
    each, and every one is there: the due loop finds each match once its
    time has come, and none before."""

    async def main() -> None:
        primaries = Primaries(redis_cluster.primary_ports())
        store = RedisStore(redis_cluster.url, redis_prefix, cluster=True)
        ids = [f"d{i}" for i in range(60)]
        for m in ids:
            await store.create_match(m, b"m", b"s", [ev(1)])
        await store.append(ids[0], 1, [ev(2)], act(0, 2, 2), due_ms=1000)
        before, connections = await primaries.calls("zadd"), await primaries.connected()
        await asyncio.gather(
            *(
                store.append(m, 1, [ev(2)], act(0, 2, 2), due_ms=1001 + i)
                for i, m in enumerate(ids[1:])
            )
        )
        assert await primaries.calls("zadd") - before == 59
        # One call each: a connection each to the due sets' primaries (20 or so).
        assert await primaries.connected() - connections <= 4 * len(primaries.clients)
        assert await store.claim_due(999, 1000) == []
        due = {m for m, _ in await store.claim_due(1030, 1000)}
        assert due == set(ids[:31])
        due |= {m for m, _ in await store.claim_due(1059, 1000)}
        assert due == set(ids)
        await store.close()
        await primaries.close()

    run(main())
