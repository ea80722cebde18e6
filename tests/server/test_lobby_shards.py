"""Where quick play's documents live (lobby/shards.py), on every lobby store:
ids that name their place, and a ruleset's queue split into lanes."""

from __future__ import annotations

import asyncio
import itertools
from typing import cast

import pytest
from lobby_stores import Backend, play
from spades_server import main
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.lobby import rules as rules_mod
from spades_server.lobby import shards
from spades_server.lobby.context import Context, Settings
from spades_server.lobby.docs import (
    PARTNER,
    SEARCHING,
    pair_key,
    queue_of,
    queue_set,
    ticket_key,
)
from spades_server.lobby.feed import Feed
from spades_server.lobby.quickplay import QuickPlay
from spades_server.lobby.seat_keys import SeatKeys
from spades_server.lobby.tables import Tables
from spades_server.matches import Registry
from spades_server.players import Player
from spades_server.store.lobby import LobbyStore

RULES = pb.Ruleset(preset="classic")


def test_an_id_names_its_place() -> None:
    for place in (0, 7, shards.SHARDS - 1, shards.HOME):
        for _ in range(20):
            assert shards.place_of(shards.new_id(place)) == place


def quickplay(store: LobbyStore, lanes: int) -> QuickPlay:
    settings = Settings(player_calls_per_second=1000.0, quickplay_lanes=lanes)
    ctx = Context(store, Feed(store), cast(Registry, None), SeatKeys(b"k" * 32), settings)
    return QuickPlay(ctx, Tables(ctx))


def test_a_rulesets_players_wait_in_its_lanes_each_in_its_shard(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        qp = quickplay(await b.lobby(), lanes=4)
        asked = [
            (await qp.ask(Player(f"p{i}", "P"), lpb.QuickPlayRequest(ruleset=RULES)))[0]
            for i in range(24)
        ]
        lanes = {t.lane for t in asked}
        assert lanes == {0, 1, 2, 3}, "24 players over 4 lanes"
        for t in asked:
            assert t.state == SEARCHING
            store = qp.ctx.queue(t.queue)
            assert qp.ctx.at(t.id) is store, "a ticket beside its queue"
            members = [m for m, _ in await store.zrange(queue_set(t.queue), 0, float("inf"))]
            assert t.id in members
            (doc,) = await store.get([ticket_key(t.id)])
            assert doc is not None
        # A player keeps their lane: their next ticket waits with the same players.
        again = await qp.cancel(Player("p0", "P"), asked[0].id)
        assert again[0].state != SEARCHING
        (ticket, _) = await qp.ask(Player("p0", "P"), lpb.QuickPlayRequest(ruleset=RULES))
        assert ticket.lane == asked[0].lane
        if b.kind == "cluster":
            homes = {shards.of_queue(t.queue) for t in asked}
            assert len(homes) >= 2, "lanes on several shards"

    play(backend, scenario)


def test_partners_in_lanes_name_one_queue(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        one, two = quickplay(await b.lobby(), lanes=8), quickplay(await b.lobby(), lanes=8)
        for n in range(6):
            eve, fay = Player(f"eve{n}", "Eve"), Player(f"fay{n}", "Fay")
            await asyncio.gather(
                one.ask(eve, lpb.QuickPlayRequest(ruleset=RULES, partner_player_id=fay.id)),
                two.ask(fay, lpb.QuickPlayRequest(ruleset=RULES, partner_player_id=eve.id)),
            )
            final, _, _, _ = await one.read(eve, "")
            assert final.state == SEARCHING and sorted(final.players) == [eve.id, fay.id]

    play(backend, scenario)


def test_a_partner_on_a_replica_with_other_lanes_joins_the_party(backend: Backend) -> None:
    """Mid-way through a change of --quickplay-lanes: the first partner's
    replica put the party's ticket in one lane's queue, the second's
    replica computes another, on another shard; the second still joins."""

    async def scenario(b: Backend) -> None:
        one, eight = quickplay(await b.lobby(), lanes=1), quickplay(await b.lobby(), lanes=8)
        key = rules_mod.from_request(RULES).key
        for n in itertools.count():
            eve, fay = Player(f"eve{n}", "Eve"), Player(f"fay{n}", "Fay")
            lane = shards.lane(pair_key(fay.id, eve.id), 8)
            if shards.of_queue(queue_of(key, False, lane)) != shards.of_queue(
                queue_of(key, False, 0)
            ):
                break
        first, _ = await one.ask(eve, lpb.QuickPlayRequest(ruleset=RULES, partner_player_id=fay.id))
        assert first.state == PARTNER and first.lane == 0
        joined, _ = await eight.ask(
            fay, lpb.QuickPlayRequest(ruleset=RULES, partner_player_id=eve.id)
        )
        assert joined.id == first.id and joined.state == SEARCHING
        assert sorted(joined.players) == [eve.id, fay.id] and joined.lane == 0
        final, _, _, _ = await eight.read(fay, "")
        assert final.id == first.id and final.state == SEARCHING

    play(backend, scenario)


def test_the_lanes_are_a_server_flag_with_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.parse_args([]).quickplay_lanes == 1
    assert main.parse_args(["--quickplay-lanes", "4"]).quickplay_lanes == 4
    for bad in ("0", "65", "-2"):
        with pytest.raises(SystemExit) as info:
            main.parse_args(["--quickplay-lanes", bad])
        assert info.value.code == 2
        assert "--quickplay-lanes must be 1 to 64" in capsys.readouterr().err
