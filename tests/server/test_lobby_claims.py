"""A player's claims (lobby/presence.py) on every lobby store: memory, SQLite,
one Redis and a Redis Cluster, where a player's document is on another slot
than the table or ticket it names. A change that commits a player is two
commits; these tests stop a caller between them, as a replica that dies
there does, and run calls of one player at once."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import pytest
from lobby_stores import Backend, play
from spades_server.errors import ServiceError
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.lobby import presence
from spades_server.lobby.context import Context, Settings
from spades_server.lobby.docs import (
    OPEN,
    PLAYER,
    SEARCHING,
    PlayerDoc,
    TableDoc,
    TicketDoc,
    player_key,
    table_key,
    ticket_key,
)
from spades_server.lobby.feed import Feed
from spades_server.lobby.quickplay import QuickPlay
from spades_server.lobby.seat_keys import SeatKeys
from spades_server.lobby.tables import Tables
from spades_server.matches import Registry
from spades_server.players import Player
from spades_server.store.lobby import LobbyStore, Tx

GRACE_S = presence.CLAIM_GRACE_MS / 1000
RULES = pb.Ruleset(preset="classic")


class Lobby:
    """The lobby's modules on one store, with no match registry (no table
    here starts) and no matchmaker (no ticket is placed)."""

    def __init__(self, store: LobbyStore) -> None:
        settings = Settings(player_calls_per_second=1000.0)
        self.ctx = Context(store, Feed(store), cast(Registry, None), SeatKeys(b"k" * 32), settings)
        self.tables = Tables(self.ctx)
        self.quickplay = QuickPlay(self.ctx, self.tables)

    async def ask(self, who: Player, partner: str = "", request_id: str = "") -> TicketDoc:
        req = lpb.QuickPlayRequest(ruleset=RULES, partner_player_id=partner, request_id=request_id)
        ticket, _ = await self.quickplay.ask(who, req)
        return ticket

    async def open(self, who: Player) -> TableDoc:
        return (await self.tables.open(who, lpb.OpenTableRequest(ruleset=RULES))).table

    async def claim(self, who: Player, **fields: Any) -> None:
        """What a replica that dies after its first commit leaves."""
        here = await presence.read(self.ctx, who.id)
        doc = PlayerDoc(**{**_fields(here.doc), **fields})
        await presence.claim(self.ctx, here, doc)


def _fields(doc: PlayerDoc) -> dict[str, Any]:
    return {f: getattr(doc, f) for f in PlayerDoc.__slots__}


def reason(outcome: BaseException | object) -> str:
    return outcome.reason if isinstance(outcome, ServiceError) else "ok"


def test_a_ticket_claimed_by_a_caller_that_died_binds_for_the_grace_then_never(
    backend: Backend,
) -> None:
    async def scenario(b: Backend) -> None:
        lobby = Lobby(await b.lobby())
        ann = Player("ann", "Ann")
        await lobby.claim(ann, ticket="0123456789abcdef")
        t0 = time.monotonic()
        ticket = await lobby.ask(ann)  # waits for the claim, then fences it
        waited = time.monotonic() - t0
        assert GRACE_S - 0.3 <= waited <= GRACE_S + 1.5, waited
        assert ticket.state == SEARCHING and ticket.id != "0123456789abcdef"
        # The dead caller's commit, were it to come now, is refused: the
        # player holds one ticket.
        late = TicketDoc("0123456789abcdef", SEARCHING, "", "", ["ann"], ["Ann"], 0)
        key = ticket_key(late.id)
        where = lobby.ctx.at(late.id)
        assert await where.commit(Tx(expect={key: 0}, put={key: late.to_bytes()})) is None
        with pytest.raises(ServiceError) as refused:
            await lobby.quickplay.read(ann, late.id)
        assert refused.value.reason == "TICKET_NOT_FOUND"
        with pytest.raises(ServiceError) as busy:
            await lobby.ask(ann)
        assert busy.value.reason == "ALREADY_QUEUED"

    play(backend, scenario)


def test_a_seat_claimed_by_a_caller_that_died_is_fenced_and_its_commit_refused(
    backend: Backend,
) -> None:
    async def scenario(b: Backend) -> None:
        lobby = Lobby(await b.lobby())
        host, ben = Player("host", "Host"), Player("ben", "Ben")
        table = await lobby.open(host)
        (doc,) = await lobby.ctx.at(table.id).get([table_key(table.id)])
        assert doc is not None
        await lobby.claim(ben, table=table.id, table_v=doc.version)
        # Ben's own next change waits out the claim, then fences the table.
        t0 = time.monotonic()
        mine = await lobby.open(ben)
        assert GRACE_S - 0.3 <= time.monotonic() - t0 <= GRACE_S + 1.5
        seated = TableDoc.from_bytes(doc.data)
        seated.seats[1].state, seated.seats[1].player = PLAYER, "ben"
        key = table_key(table.id)
        late = Tx(expect={key: doc.version}, put={key: seated.to_bytes()})
        assert await lobby.ctx.at(table.id).commit(late) is None
        now, _ = await lobby.tables.read(table.id)
        assert now.seat_of("ben") is None and now.seats[1].state == OPEN
        assert (await lobby.tables.read(mine.id))[0].seat_of("ben") == 0

    play(backend, scenario)


def test_a_claim_whose_table_moved_on_binds_nothing_at_once(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        lobby = Lobby(await b.lobby())
        host, ben, cy = Player("host", "Host"), Player("ben", "Ben"), Player("cy", "Cy")
        table = await lobby.open(host)
        (doc,) = await lobby.ctx.at(table.id).get([table_key(table.id)])
        assert doc is not None
        await lobby.claim(ben, table=table.id, table_v=doc.version)
        await lobby.tables.join(cy, table.id, "", None)  # the table moves past the claim
        t0 = time.monotonic()
        await lobby.ask(ben)
        assert time.monotonic() - t0 < GRACE_S / 2, "a decided claim is not waited for"

    play(backend, scenario)


def test_calls_of_one_player_at_once_commit_them_once(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        lobbies = [Lobby(await b.lobby()) for _ in range(2)]  # two replicas, on Redis
        dan = Player("dan", "Dan")
        calls = [lobbies[i % 2].ask(dan) for i in range(4)]
        calls += [lobbies[i % 2].open(dan) for i in range(4)]
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        made = [o for o in outcomes if not isinstance(o, BaseException)]
        assert len(made) == 1, [reason(o) for o in outcomes]
        assert {reason(o) for o in outcomes} - {"ok"} <= {"ALREADY_QUEUED", "ALREADY_SEATED"}
        here = await presence.read(lobbies[0].ctx, dan.id)
        assert (here.ticket is None) != (here.table is None)

    play(backend, scenario)


def test_partners_asking_for_each_other_at_once_share_one_ticket(backend: Backend) -> None:
    async def scenario(b: Backend) -> None:
        one, two = Lobby(await b.lobby()), Lobby(await b.lobby())
        for n in range(5):
            eve, fay = Player(f"eve{n}", "Eve"), Player(f"fay{n}", "Fay")
            a, c = await asyncio.gather(one.ask(eve, fay.id), two.ask(fay, eve.id))
            assert a.id == c.id or SEARCHING in (a.state, c.state), (a, c)
            final, _, _, _ = await one.quickplay.read(eve, "")
            assert final.state == SEARCHING and sorted(final.players) == [eve.id, fay.id]
            assert (await one.quickplay.read(fay, ""))[0].id == final.id

    play(backend, scenario)


def test_a_player_document_lives_in_its_partition(backend: Backend) -> None:
    """On a cluster the player's document is on a slot of its own; the
    lobby's ``{lobby}`` keys never hold it."""

    async def scenario(b: Backend) -> None:
        lobby = Lobby(await b.lobby())
        gus = Player("gus", "Gus")
        await lobby.ask(gus)
        (doc,) = await lobby.ctx.players(gus.id).get([player_key(gus.id)])
        assert doc is not None and PlayerDoc.from_bytes(doc.data).ticket
        (home,) = await lobby.ctx.store.get([player_key(gus.id)])
        assert (home is None) == (b.kind == "cluster")

    play(backend, scenario)
