"""The rating ledger (lobby/ratings.py) on every lobby store: memory, SQLite
and Redis (two replicas on one prefix): each match applied once, concurrent
finishes with a common player, the leaderboard, and ratings recomputed from the
stored match records alone."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from lobby_stores import Backend, cluster_lobby, play
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.lobby.context import Settings
from spades_server.lobby.ratings import (
    HUMANS,
    Finished,
    Ledger,
    Standing,
    player_part,
    pool_part,
)
from spades_server.lobby.seat_keys import SeatKeys
from spades_server.lobby.standings import Standings
from spades_server.player_stats import Record
from spades_server.rating import DEFAULT, Participant, Rating, RatingError, rate
from spades_server.store import StoreError
from spades_server.store.lobby import LobbyStore, Tx
from spades_server.store.lobby_memory import SamePart
from spades_server.store.lobby_redis import RedisLobby


def partnership(a: str, b: str, c: str, d: str, ab: int = 500, cd: int = 200) -> list[Participant]:
    return [
        Participant(a, 0, ab, turns=26),
        Participant(c, 1, cd, turns=26),
        Participant(b, 0, ab, turns=26),
        Participant(d, 1, cd, turns=26),
    ]


def test_a_match_is_applied_once_and_rated_as_the_model_rates_it(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        ledger = Ledger(await b.lobby())
        table = partnership("ann", "bob", "cy", "di")
        assert await ledger.apply("m1", "classic", table)
        assert not await ledger.apply("m1", "classic", table)  # a retry changes nothing
        want = rate({}, table)
        got = await ledger.standings("classic", ["ann", "bob", "cy", "di", "eve"])
        assert [s.rating for s in got[:4]] == [want[p] for p in ("ann", "bob", "cy", "di")]
        assert [(s.games, s.wins, s.losses) for s in got] == [
            (1, 1, 0), (1, 1, 0), (1, 0, 1), (1, 0, 1), (0, 0, 0)
        ]  # fmt: skip
        assert got[4] == Standing("eve", DEFAULT)
        # Another pool is another rating.
        assert (await ledger.standings("suicide", ["ann"]))[0].games == 0

    play(backend, scenario)


def test_replicas_finishing_the_same_match_at_once_apply_it_once(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        ledgers = [Ledger(await b.lobby()) for _ in range(3)]
        table = partnership("ann", "bob", "cy", "di")
        applied = await asyncio.gather(*(g.apply("m1", "classic", table) for g in ledgers))
        assert sorted(applied) == [False, False, True]
        got = await ledgers[0].standings("classic", ["ann"])
        assert got[0].games == 1 and got[0].rating == rate({}, table)["ann"]

    play(backend, scenario)


def test_matches_with_a_common_player_finishing_at_once_both_count(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        one, two = Ledger(await b.lobby()), Ledger(await b.lobby())
        first = partnership("ann", "bob", "cy", "di")
        second = partnership("eve", "ann", "fay", "gus", ab=100, cd=400)
        assert all(
            await asyncio.gather(
                one.apply("m1", "classic", first), two.apply("m2", "classic", second)
            )
        )
        ann = (await one.standings("classic", ["ann"]))[0]
        assert (ann.games, ann.wins, ann.losses) == (2, 1, 1)
        # Whichever committed first, the second was rated on top of it.
        a1 = rate({}, first)
        a2 = rate({}, second)
        orders = [rate(a1, second)["ann"], rate(a2, first)["ann"]]
        assert ann.rating in orders

    play(backend, scenario)


def test_the_leaderboard_orders_by_conservative_rating_after_min_games(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        ledger = Ledger(await b.lobby(), min_games=2)
        await ledger.apply("m1", "classic", partnership("ann", "bob", "cy", "di"))
        assert await ledger.players("classic") == 0  # one game each: nobody shows yet
        await ledger.apply("m2", "classic", partnership("ann", "cy", "bob", "di"))
        await ledger.apply("m3", "classic", partnership("ann", "di", "bob", "cy"))
        assert await ledger.players("classic") == 4
        board = await ledger.top("classic", 0, 10)
        assert board[0].player == "ann"  # won all three
        values = [s.rating.conservative for s in board]
        assert values == sorted(values, reverse=True)
        pages = await ledger.top("classic", 0, 2) + await ledger.top("classic", 2, 2)
        assert pages == board
        assert await ledger.top("classic", 4, 2) == []

    play(backend, scenario)


def test_ratings_are_recomputed_from_the_stored_match_records_alone(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        store = await b.lobby()
        ledger = Ledger(store)
        matches = [
            ("m1", partnership("ann", "bob", "cy", "di")),
            ("m2", partnership("cy", "ann", "bob", "eve", ab=300, cd=310)),
            (
                "m3",
                [
                    Participant(p, i, s)
                    for i, (p, s) in enumerate([("ann", 250), ("eve", 250), ("di", -10)])
                ],
            ),
            ("m4", partnership("di", "eve", "ann", "bob", ab=420, cd=100)),
        ]
        for match_id, table in matches:
            assert await ledger.apply(match_id, "classic", table)
        ratings: dict[str, Rating] = {}
        pool = store.part(pool_part("classic"))
        for doc in await pool.get([f"played:{m}" for m, _ in matches]):
            assert doc is not None
            record = json.loads(doc.data)
            table = [
                Participant(p["player"], p["side"], p["score"], p["turns"], p["bot_turns"])
                for p in record["players"]
            ]
            ratings |= rate(ratings, table)
        players = sorted(ratings)
        stored = await ledger.standings("classic", players)
        assert [s.rating for s in stored] == [ratings[p] for p in players]

    play(backend, scenario)


class LosesARecord:
    """A lobby store whose partitions lose the first commit of a player's
    record (as when a replica dies after the ratings and before every
    record): the commit raises and writes nothing."""

    def __init__(self, store: LobbyStore) -> None:
        self.store = store
        self.lost = 0

    def part(self, name: str) -> Any:
        inner, outer = self.store.part(name), self

        class Part:
            def __getattr__(self, attr: str) -> Any:
                return getattr(inner, attr)

            async def commit(self, tx: Tx) -> int | None:
                if any(k.startswith("stats:") for k in tx.put) and not outer.lost:
                    outer.lost += 1
                    raise StoreError("lost on the way")
                return await inner.commit(tx)

        return Part()


def test_a_finish_cut_short_before_every_record_is_completed_once_by_the_next(
    backend: Backend,
) -> None:
    async def scenario(b: Backend) -> None:
        store = await b.lobby()
        flaky = Ledger(LosesARecord(store))  # type: ignore[arg-type]
        ledger = Ledger(store)
        players = ("ann", "bob", "cy", "di")
        records = {p: Record(matches=1, hands=1) for p in players}
        done = Finished("m1", "classic", partnership(*players), records)
        with pytest.raises(StoreError):
            await flaky.record(done)
        # Rated, and one record short: the next try counts what is missing,
        # rates nothing again and counts nothing twice.
        assert [s.games for s in await ledger.standings("classic", list(players))] == [1] * 4
        counted = [await ledger.profile(p) for p in players]
        assert sum(1 for c in counted if c is None) == 1
        assert not await ledger.record(done)
        assert not await ledger.record(done)
        for player in players:
            profile = await ledger.profile(player)
            assert profile is not None and profile.record(HUMANS).hands == 1, player
            assert (await ledger.standings("classic", [player]))[0].games == 1
        # An unrated match: its played record has a partition of its own.
        unrated = Finished("m2", "", [], {"ann": Record(hands=2)})
        assert await ledger.record(unrated)
        assert not await ledger.record(unrated)
        ann = await ledger.profile("ann")
        assert ann is not None and ann.record(HUMANS).hands == 3

    play(backend, scenario)


def test_on_a_cluster_the_ledger_is_outside_the_lobbys_slot(
    redis_cluster: Any, redis_prefix: str
) -> None:
    async def scenario() -> None:
        async with cluster_lobby(redis_cluster, redis_prefix) as lobby:
            ledger = Ledger(lobby)
            table = partnership("ann", "bob", "cy", "di")
            records = {p.player: Record(hands=1) for p in table}
            assert await ledger.record(Finished("m1", "classic", table, records))
            raw = lobby._redis
            lobby_slot = await raw.cluster_keyslot(f"{redis_prefix}:{{lobby}}:d:x")
            keys = [k.decode() async for k in raw.scan_iter(match=f"{redis_prefix}:*", count=1000)]
            tags = {k.split("{")[1].split("}")[0] for k in keys}
            assert "lobby" not in tags, keys
            assert {"lobby.r.classic", *(f"lobby.{player_part(p)}" for p in records)} <= tags
            slots = {await raw.cluster_keyslot(k) for k in keys}
            assert lobby_slot not in slots and len(slots) >= 4

    asyncio.run(scenario())


class OneSlotLobby(RedisLobby):
    """The ledger as a version before its partitions wrote it on a cluster:
    every key under ``{lobby}``."""

    def part(self, name: str) -> LobbyStore:
        return SamePart(self, name)


def test_a_clusters_ledger_from_before_the_partitions_is_moved_into_them(
    redis_cluster: Any, redis_prefix: str
) -> None:
    table = partnership("ann", "bob", "cy", "di")
    records = {p.player: Record(matches=1, hands=1) for p in table}

    async def write_old() -> None:
        async with cluster_lobby(redis_cluster, redis_prefix, OneSlotLobby) as old:
            ledger = Ledger(old)
            assert await ledger.record(Finished("m1", "classic", table, records))
            assert await ledger.record(Finished("m2", "", [], {"ann": Record(hands=2)}))

    async def read_new(retry: bool) -> tuple[list[Standing], Any, list[bool]]:
        async with cluster_lobby(redis_cluster, redis_prefix) as lobby:
            ledger = Ledger(lobby)
            board, ann = await ledger.top("classic"), await ledger.profile("ann")
            again = []
            if retry:
                again = [
                    await ledger.record(Finished("m1", "classic", table, records)),
                    await ledger.record(Finished("m2", "", [], {"ann": Record(hands=2)})),
                ]
            return board, ann, again

    asyncio.run(write_old())
    assert asyncio.run(read_new(False))[:2] == ([], None)  # the old keys are not seen
    argv = [sys.executable, "-m", "spades_server.store.migrate", "--ledger-parts"]
    argv += ["--to", redis_cluster.url, "--prefix", redis_prefix]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "moved 11 ledger keys" in done.stdout  # 4 ratings, a board, 2 played, 4 records
    board, ann, again = asyncio.run(read_new(True))
    assert {s.player for s in board} == {"ann", "bob", "cy", "di"}
    assert ann is not None and ann.record(HUMANS).hands == 3
    assert again == [False, False]


def test_bad_input_is_refused_and_changes_nothing(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        ledger = Ledger(await b.lobby())
        table = partnership("ann", "bob", "cy", "di")
        bad = (("m1", "Classic"), ("m1", ""), ("m 1", "classic"), ("m" * 65, "c"), ("", "c"))
        for match_id, pool in bad:
            with pytest.raises(RatingError):
                await ledger.apply(match_id, pool, table)
        with pytest.raises(RatingError, match="twice"):
            await ledger.apply("m1", "classic", [*table, Participant("ann", 2, 0)])
        with pytest.raises(RatingError):
            await ledger.top("classic", -1, 5)
        assert (await ledger.standings("classic", ["ann"]))[0].games == 0
        assert await ledger.apply("m1", "classic", table)  # the id was never used

    play(backend, scenario)


def test_leaderboard_pages_stay_consistent_while_ratings_change(backend: Backend) -> None:
    """Pages read while matches are applied: each page best first with
    consecutive ranks, every token it gave accepted, and a walk that reaches
    the end without a player twice on one page."""

    async def scenario(b: Backend) -> None:
        store = await b.lobby()
        ledger = Ledger(store)
        ctx = SimpleNamespace(settings=Settings(), seat_keys=SeatKeys(b"k" * 32))
        standings = Standings(ctx, ledger)  # type: ignore[arg-type]
        rng = random.Random(26)
        people = [f"p{i}" for i in range(40)]

        def a_match() -> list[Participant]:
            a, b_, c, d = rng.sample(people, 4)
            return partnership(
                a, b_, c, d, ab=rng.randrange(-200, 500), cd=rng.randrange(-200, 500)
            )

        for n in range(20):
            await ledger.apply(f"seed{n}", "classic", a_match())
        done = asyncio.Event()

        async def change() -> None:
            for n in range(60):
                await ledger.apply(f"live{n}", "classic", a_match())
                await asyncio.sleep(0)
            done.set()

        async def walk() -> int:
            walks = 0
            while not done.is_set() or walks < 2:
                token, rank = "", 0
                while True:
                    page = await standings.leaderboard(
                        lpb.GetLeaderboardRequest(pool="classic", page_size=5, page_token=token)
                    )
                    ranks = [e.rank for e in page.entries]
                    if ranks:
                        assert ranks == list(range(ranks[0], ranks[0] + len(ranks)))
                        assert ranks[0] == rank + 1, "a page went back, or skipped places"
                        rank = ranks[-1]
                    values = [e.rating.conservative for e in page.entries]
                    assert values == sorted(values, reverse=True)
                    assert len({e.player_id for e in page.entries}) == len(page.entries)
                    token = page.next_page_token
                    await asyncio.sleep(0)  # the memory store never suspends: let changes in
                    if not token:
                        break
                walks += 1
            return walks

        _, walks = await asyncio.gather(change(), walk())
        assert walks >= 2
        assert await ledger.players("classic") <= len(people)

    play(backend, scenario)


def test_the_migration_says_in_a_sentence_when_its_target_is_not_a_cluster(
    redis_server: Any, redis_prefix: str
) -> None:
    for mode in (["--ledger-parts"], ["--from", redis_server.url]):
        argv = [sys.executable, "-m", "spades_server.store.migrate", *mode]
        argv += ["--to", redis_server.url, "--prefix", redis_prefix]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 1, (mode, done.stderr)
        assert done.stderr.startswith("failed: ") and "Cluster mode is not enabled" in done.stderr
        assert "Traceback" not in done.stderr
