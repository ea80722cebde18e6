"""One rated match played out by four players through the lobby, for the
rated play tests (the fixture ``rated_match``, on ``rated_harness``: a player
is on a leaderboard after one rated game).

The match is one hand (target 1, no mercy score); the players look at their
cards (never blind nil), bid 3 when they may, else take the first legal
action. Its result is recorded just after it ends: ``wait_for_profile``
polls GetProfile until it is there.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from harness import Harness, run

import spades_client as sc
from spades_client import lobby_pb as lpb
from spades_client import pb

RATED_RULES = pb.Ruleset(preset="classic", target_score=1, no_mercy_score=True)
RECORDED_S = 20.0  # how long a match's result may take to be recorded


def unique(prefix: str) -> str:
    return f"py-{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Player:
    player_id: str
    name: str
    credential: str
    seat: int


@dataclass(frozen=True)
class RatedMatch:
    match_id: str
    table: lpb.Table  # as it started
    players: list[Player]  # by seat
    winners: list[str]  # player ids of the winning side

    def player(self, seat: int) -> Player:
        return self.players[seat]


def choose(view: pb.SeatView) -> pb.Action | None:
    """Look (never blind nil), bid 3 if legal, else the first legal action."""
    legal = [a for a in view.legal_actions if not a.HasField("blind_nil")]
    if not legal:
        return None
    for action in legal:
        if action.HasField("look"):
            return action
    for action in legal:
        if action.HasField("bid") and action.bid.tricks == 3:
            return action
    return legal[0]


async def play_out(seats: list[sc.Seat]) -> pb.SeatView:
    """Play every seat until the match is over; the last view."""
    async with asyncio.timeout(90):
        while True:
            acted = False
            for seat in seats:
                view = await seat.view()
                if view.phase == pb.PHASE_MATCH_OVER:
                    return view
                action = choose(view)
                if action is not None:
                    try:
                        await seat.submit(action)
                    except sc.SpadesError as e:
                        if e.code != grpc.StatusCode.FAILED_PRECONDITION:
                            raise
                    acted = True
            if not acted:
                await asyncio.sleep(0.01)


async def wait_for_profile(client: sc.Client, player_id: str = "") -> lpb.PlayerProfile:
    """The profile once a match's result is recorded (polled)."""
    async with asyncio.timeout(RECORDED_S):
        while True:
            try:
                profile = await client.profile(player_id)
            except sc.SpadesError as e:
                if e.reason != "PLAYER_NOT_FOUND":
                    raise
            else:
                if profile.ratings:
                    return profile
            await asyncio.sleep(0.2)


async def play_rated_match(harness: Harness, prefix: str = "rated") -> RatedMatch:
    names = ["Ann", "Ben", "Cat", "Dan"]
    players = []
    for seat, name in enumerate(names):
        pid = unique(f"{prefix}-{name.lower()}")
        players.append(Player(pid, name, await harness.credential_async(pid, name), seat))
    clients = [sc.connect(harness.address, credential=p.credential) for p in players]
    try:
        opened = await clients[0].open_table(ruleset=RATED_RULES, rated=True)
        assert opened.table.rated and opened.table.state == lpb.TABLE_STATE_WAITING
        responses: list[lpb.OpenTableResponse | lpb.JoinTableResponse] = [opened]
        for seat in (1, 2, 3):
            responses.append(await clients[seat].join_table(opened.table.table_id, seat=seat))
        table = responses[-1].table
        assert table.state == lpb.TABLE_STATE_STARTED
        seats = [c.seat(r) for c, r in zip(clients, responses, strict=True)]
        final = await play_out(seats)
        winning_side = final.winner
        winners = [
            p.player_id for p in players if p.seat % 2 == winning_side % 2 and winning_side >= 0
        ]
        for client in clients:
            await wait_for_profile(client)
        return RatedMatch(table.table_id, table, players, winners)
    finally:
        for client in clients:
            await client.close()


@pytest.fixture(scope="session")
def rated_match(rated_harness: Harness) -> Iterator[RatedMatch]:
    """Four players' rated match, played out and recorded."""
    yield run(play_rated_match(rated_harness))
