"""The lobby (LobbyService) through spades_client, against a real server
(serve.py: player credentials it signs, quick play's bots after 1 s): tables
opened, joined, left and started; invitations by code; the lobby's listing,
stream and long poll; quick play alone and as a party; cancelling; rematch
after a match played out; refused credentials; the synchronous wrapper."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import AsyncIterator

import grpc
import pytest
from harness import Harness, run

import spades_client as sc
from spades_client import lobby_pb as lpb
from spades_client import pb
from spades_client import sync as sc_sync

WAIT_S = 15.0
PLAYER = lpb.TABLE_SEAT_STATE_PLAYER
BOT = lpb.TABLE_SEAT_STATE_BOT
OPEN = lpb.TABLE_SEAT_STATE_OPEN
# A match the first scored hand ends: one hand, then it is over.
QUICK_RULES = pb.Ruleset(preset="classic", target_score=1, no_mercy_score=True)


def unique(prefix: str) -> str:
    return f"py-{prefix}-{uuid.uuid4().hex[:8]}"


def rules(n: int) -> pb.Ruleset:
    """A quick play queue (and a lobby filter) of the test's own: the server
    is shared, and the conformance scenario queues for plain classic."""
    return pb.Ruleset(preset="classic", target_score=400 + n)


@contextlib.asynccontextmanager
async def player(harness: Harness, prefix: str) -> AsyncIterator[tuple[str, sc.Client]]:
    """A new player (its id) and a client with its credential."""
    pid = unique(prefix)
    credential = await harness.credential_async(pid, prefix.title())
    async with sc.connect(harness.address, credential=credential) as client:
        yield pid, client


async def expect_refusal(call: object, code: grpc.StatusCode, reason: str) -> sc.SpadesError:
    assert asyncio.iscoroutine(call)
    with pytest.raises(sc.SpadesError) as caught:
        await call
    assert (caught.value.code, caught.value.reason) == (code, reason), caught.value
    return caught.value


def test_open_join_leave_and_start_then_the_tokens_play(harness: Harness) -> None:
    async def go() -> None:
        async with (
            player(harness, "host") as (host_id, host),
            player(harness, "guest") as (guest_id, guest),
        ):
            opened = await host.open_table(ruleset=rules(1), bot_seats=[3])
            table = opened.table
            assert (opened.seat, table.state) == (0, lpb.TABLE_STATE_WAITING)
            assert [s.state for s in table.seats] == [PLAYER, OPEN, OPEN, BOT]
            assert table.host_player_id == host_id and table.kind == lpb.TABLE_KIND_OPENED
            # The token exists from the start, and plays once the table has started.
            await expect_refusal(
                host.seat(opened).view(),
                grpc.StatusCode.FAILED_PRECONDITION,
                "TABLE_NOT_STARTED",
            )
            joined = await guest.join_table(table.table_id, seat=2)
            assert joined.seat == 2 and joined.table.seats[2].player_id == guest_id
            again = await guest.join_table(table.table_id)
            assert (again.seat, again.seat_token) == (2, joined.seat_token), "idempotent"
            await expect_refusal(
                guest.start_table(table.table_id), grpc.StatusCode.PERMISSION_DENIED, "NOT_HOST"
            )
            left = await guest.leave_table(table.table_id)
            assert left.seats[2].state == OPEN and left.version > joined.table.version
            await expect_refusal(
                guest.leave_table(table.table_id), grpc.StatusCode.FAILED_PRECONDITION, "NOT_SEATED"
            )
            back = await guest.join_table(table.table_id, seat=2)
            assert back.seat_token != joined.seat_token, "the leaver's token is worthless"
            started = await host.start_table(table.table_id)
            assert started.state == lpb.TABLE_STATE_STARTED
            assert started.match_id == table.table_id
            assert [s.state for s in started.seats] == [PLAYER, BOT, PLAYER, BOT]
            # The seat tokens play exactly as CreateMatch's do.
            for client, response, seat in ((host, opened, 0), (guest, back, 2)):
                s = client.seat(response)
                assert s.match_id == table.table_id
                claimed = await s.claim()
                assert claimed.seat == seat and len(claimed.view.hand) == 13
            got = await host.get_table(table.table_id)
            assert got.state == lpb.TABLE_STATE_STARTED and got.version >= started.version

    run(go())


def test_an_invite_only_table_is_joined_by_its_code_and_a_wrong_code_is_refused(
    harness: Harness,
) -> None:
    async def go() -> None:
        async with (
            player(harness, "host") as (_, host),
            player(harness, "friend") as (friend_id, friend),
            player(harness, "stranger") as (_, stranger),
        ):
            opened = await host.open_table(
                ruleset=rules(2),
                bot_seats=[1, 3],
                visibility=lpb.TABLE_VISIBILITY_INVITE_ONLY,
            )
            code, table_id = opened.table.invite_code, opened.table.table_id
            assert len(code) == 11
            assert table_id not in {t.table_id async for t in stranger.tables(rules(2))}
            await expect_refusal(
                stranger.join_table(table_id), grpc.StatusCode.PERMISSION_DENIED, "INVITE_REQUIRED"
            )
            wrong = "ZZZZZ-ZZZZZ" if code != "ZZZZZ-ZZZZZ" else "YYYYY-YYYYY"
            refused = await expect_refusal(
                stranger.join_table(invite_code=wrong),
                grpc.StatusCode.NOT_FOUND,
                "INVITE_NOT_FOUND",
            )
            assert refused.message
            # Looked at by its code before joining, then joined by it read aloud.
            seen = await friend.get_table(invite_code=code)
            assert seen.table_id == table_id and seen.invite_code == code
            waiting = asyncio.ensure_future(
                host.wait_for_start(table_id, watch=True, timeout=WAIT_S)
            )
            joined = await friend.join_table(invite_code=code.lower().replace("-", " "), seat=2)
            assert joined.seat == 2 and joined.table.state == lpb.TABLE_STATE_STARTED
            started = await waiting
            assert started.state == lpb.TABLE_STATE_STARTED
            assert started.seats[2].player_id == friend_id
            # The long poll sees the same (at once: the version is past 0).
            polled = await host.wait_for_start(table_id, timeout=WAIT_S)
            assert polled.match_id == table_id
            views = [await c.seat(r).view() for c, r in ((host, opened), (friend, joined))]
            assert [v.seat for v in views] == [0, 2]

    run(go())


def test_the_lobby_lists_streams_and_long_polls_its_changes(harness: Harness) -> None:
    ruleset = rules(3)

    async def go() -> None:
        async with (
            player(harness, "watcher") as (_, watcher),
            player(harness, "a") as (_, a),
            player(harness, "b") as (b_id, b),
            player(harness, "c") as (_, c),
        ):
            tables, version = await watcher.lobby_snapshot(ruleset)
            assert tables == []
            followed = watcher.follow_lobby(ruleset)
            assert await anext(followed) == []
            batches = watcher.watch_lobby(ruleset, after_version=version)
            first = await a.open_table(ruleset=ruleset)
            second = await c.open_table(ruleset=ruleset, bot_seats=[1])
            ids = [first.table.table_id, second.table.table_id]
            async with asyncio.timeout(WAIT_S):
                seen: dict[str, lpb.Table] = {}
                while set(seen) != set(ids):
                    batch = await anext(batches)
                    assert not batch.reset and batch.version > version
                    seen |= {t.table_id: t for t in batch.tables}
                # A dropped connection: the stream is opened again after the
                # last batch's version, and the next change still comes, once.
                assert await harness.cut_async() >= 1
                await b.join_table(first.table.table_id, seat=2)  # retried past the cut
                batch = await anext(batches)
                assert [t.table_id for t in batch.tables] == ids[:1]
                assert batch.tables[0].seats[2].player_id == b_id
                await batches.aclose()
                while True:  # follow_lobby: the same, in order, oldest first
                    listed = await anext(followed)
                    if [t.table_id for t in listed] == ids and listed[0].seats[2].player_id:
                        break
            # A page at a time, oldest first; the same as one snapshot.
            assert [t.table_id async for t in watcher.tables(ruleset, page_size=1)] == ids
            page = await watcher.list_tables(ruleset, page_size=1)
            assert len(page.tables) == 1 and page.next_page_token and page.version > version
            # The long poll: the changes since the first version, at once.
            polled = await watcher.poll_lobby(ruleset, after_version=version, wait_ms=0)
            assert {t.table_id for t in polled.tables} == set(ids)
            # The second table closes (its only player left): gone from the lobby.
            await c.leave_table(second.table.table_id)
            async with asyncio.timeout(WAIT_S):
                while [t.table_id for t in await anext(followed)] != ids[:1]:
                    pass
            changes = await watcher.poll_lobby(ruleset, after_version=polled.version)
            assert changes.removed_table_ids == ids[1:]
            # Nothing more: the poll waits, then answers empty at the latest version.
            t0 = time.monotonic()
            quiet = await watcher.poll_lobby(ruleset, after_version=changes.version, wait_ms=300)
            assert time.monotonic() - t0 >= 0.25
            assert not quiet.tables and not quiet.removed_table_ids
            await followed.aclose()
            for player_, table in ((a, first), (b, first)):
                await player_.leave_table(table.table.table_id)

    run(go())


def test_quick_play_alone_gets_bots_and_the_same_seat_token_again(harness: Harness) -> None:
    async def go() -> None:
        async with player(harness, "alone") as (pid, alone):
            ticket = await alone.quick_play(rules(4), request_id="alone-game-1")
            assert ticket.state == lpb.TICKET_STATE_SEARCHING
            assert list(ticket.player_ids) == [pid]
            assert ticket.bots_at_ms - ticket.created_ms == 1000  # serve.py's wait
            t0 = time.monotonic()
            placement = await alone.wait_for_placement(ticket, timeout=WAIT_S)
            assert time.monotonic() - t0 >= 0.5
            table = placement.table
            assert placement.match_id == table.table_id and table.kind == lpb.TABLE_KIND_QUICK_PLAY
            assert [s.state for s in table.seats].count(BOT) == 3
            assert table.seats[placement.seat].player_id == pid
            # After a lost connection: the latest ticket, with the same seat token.
            again = await alone.get_ticket()
            assert again.ticket_id == ticket.ticket_id
            assert again.placement.seat_token == placement.seat_token
            assert await alone.wait_for_placement() == placement
            # A QuickPlay resent after its answer was lost: the same ticket.
            resent = await alone.quick_play(rules(4), request_id="alone-game-1")
            assert resent.ticket_id == ticket.ticket_id and resent.placement == placement
            seat = alone.seat(placement)
            claimed = await seat.claim()
            assert claimed.seat == placement.seat
            assert claimed.view.seats[placement.seat].name == "Alone"
            await expect_refusal(
                alone.cancel_ticket(ticket.ticket_id),
                grpc.StatusCode.FAILED_PRECONDITION,
                "TICKET_PLACED",
            )

    run(go())


def test_a_party_with_the_friend_sits_as_partners(harness: Harness) -> None:
    ruleset = rules(5)
    friend_id = unique("friend")

    async def go() -> None:
        async with player(harness, "me") as (me_id, me):
            answer = await harness.friend_async(
                {
                    "do": "quickplay",
                    "playerId": friend_id,
                    "partner": me_id,
                    "ruleset": {"preset": "classic", "targetScore": ruleset.target_score},
                }
            )
            assert answer["state"] == "TICKET_STATE_WAITING_FOR_PARTNER"
            ticket = await me.quick_play(ruleset, partner_player_id=friend_id)
            assert ticket.state == lpb.TICKET_STATE_SEARCHING
            assert list(ticket.player_ids) == [friend_id, me_id]
            placement = await me.wait_for_placement(ticket, watch=True, timeout=WAIT_S)
            seats = placement.table.seats
            mine = placement.seat
            assert seats[mine].player_id == me_id
            assert seats[(mine + 2) % 4].player_id == friend_id, "partners sit opposite"
            assert [s.state for s in seats].count(BOT) == 2
            view = await me.seat(placement).view()
            assert view.seat == mine and len(view.hand) == 13

    run(go())


def test_cancelling_a_party_ticket_ends_it_for_both(harness: Harness) -> None:
    ruleset = rules(6)

    async def go() -> None:
        async with player(harness, "ann") as (ann_id, ann), player(harness, "ben") as (ben_id, ben):
            ticket = await ann.quick_play(ruleset, partner_player_id=ben_id)
            assert ticket.state == lpb.TICKET_STATE_WAITING_FOR_PARTNER
            twice = await expect_refusal(
                ann.quick_play(ruleset), grpc.StatusCode.ALREADY_EXISTS, "ALREADY_QUEUED"
            )
            assert twice.metadata["ticket_id"] == ticket.ticket_id
            joined = await ben.quick_play(ruleset, partner_player_id=ann_id)
            assert joined.ticket_id == ticket.ticket_id
            watched = ann.watch_ticket()  # the latest: this one
            assert (await anext(watched)).ticket_id == ticket.ticket_id
            waiting = asyncio.ensure_future(ben.wait_for_placement(joined, timeout=WAIT_S))
            cancelled = await ann.cancel_ticket()
            assert cancelled.state == lpb.TICKET_STATE_CANCELLED
            assert [t.state async for t in watched] == [lpb.TICKET_STATE_CANCELLED]
            with pytest.raises(sc.TicketCancelled) as caught:
                await waiting
            assert caught.value.reason == "TICKET_CANCELLED"
            assert caught.value.metadata["cancel_reason"] == "cancelled"
            assert caught.value.ticket.ticket_id == ticket.ticket_id
            # Idempotent; never placed, even after quick play's wait.
            assert (await ann.cancel_ticket(ticket.ticket_id)).state == lpb.TICKET_STATE_CANCELLED
            await asyncio.sleep(1.2)
            after = await ben.get_ticket(ticket.ticket_id)
            assert after.state == lpb.TICKET_STATE_CANCELLED and not after.placement.match_id

    run(go())


async def play_out(seats: list[sc.Seat]) -> None:
    """Play every human seat with its first legal action until the match is over."""
    async with asyncio.timeout(60):
        while True:
            acted = False
            for seat in seats:
                view = await seat.view()
                if view.phase == pb.PHASE_MATCH_OVER:
                    return
                if view.legal_actions:
                    await seat.submit(view.legal_actions[0])
                    acted = True
            if not acted:
                await asyncio.sleep(0.01)


def test_a_rematch_after_a_match_played_out(harness: Harness) -> None:
    async def go() -> None:
        async with (
            player(harness, "host") as (host_id, host),
            player(harness, "guest") as (guest_id, guest),
        ):
            opened = await host.open_table(ruleset=QUICK_RULES, bot_seats=[1, 3])
            joined = await guest.join_table(opened.table.table_id)
            match_id = opened.table.table_id
            seats = [host.seat(opened), guest.seat(joined)]
            await expect_refusal(
                seats[0].rematch(), grpc.StatusCode.FAILED_PRECONDITION, "MATCH_NOT_OVER"
            )
            await play_out(seats)
            first = await seats[0].rematch()
            assert first.table.state == lpb.TABLE_STATE_WAITING
            assert first.table.kind == lpb.TABLE_KIND_REMATCH
            assert first.table.rematch_of == match_id and first.seat == 0
            assert [s.accepted for s in first.table.seats] == [True, False, False, False]
            # The host waits (a long poll) while the guest accepts.
            waiting = asyncio.ensure_future(seats[0].wait_for_rematch(timeout=WAIT_S))
            second = await seats[1].wait_for_rematch(timeout=WAIT_S)
            again = await waiting
            new_id = second.table.match_id
            assert second.table.state == lpb.TABLE_STATE_STARTED and new_id != match_id
            assert again.table.match_id == new_id
            assert [s.player_id for s in again.table.seats] == [host_id, "", guest_id, ""]
            # The new tokens play the same seats of the new match.
            for client, response, seat in ((host, again, 0), (guest, second, 2)):
                s = client.seat(response)
                assert s.match_id == new_id
                assert (await s.claim()).seat == seat
            # A seat token of another match is no credential for it.
            wrong = host.seat(f"{match_id}.wrong-secret")
            await expect_refusal(
                wrong.rematch(), grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"
            )

    run(go())


def test_a_declined_rematch_closes(harness: Harness) -> None:
    async def go() -> None:
        async with player(harness, "host") as (_, host), player(harness, "guest") as (_, guest):
            opened = await host.open_table(ruleset=QUICK_RULES, bot_seats=[1, 3])
            joined = await guest.join_table(opened.table.table_id)
            seats = [host.seat(opened), guest.seat(joined)]
            await play_out(seats)
            waiting = asyncio.ensure_future(seats[0].wait_for_rematch(timeout=WAIT_S))
            await asyncio.sleep(0.2)
            declined = await seats[1].rematch(decline=True)
            assert declined.table.state == lpb.TABLE_STATE_CLOSED
            with pytest.raises(sc.TableClosed) as caught:
                await waiting
            assert caught.value.reason == "TABLE_CLOSED"
            assert caught.value.metadata["close_reason"] == "declined"

    run(go())


def forged(player_id: str) -> str:
    """A well-formed HS256 JWT signed with a secret the server does not know."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    now = int(time.time())
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(
        json.dumps(
            {
                "sub": player_id,
                "iss": "spades-conformance",
                "aud": "spades",
                "iat": now,
                "exp": now + 600,
            }
        ).encode()
    )
    signature = hmac.new(b"x" * 32, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{b64(signature)}"


def test_refused_credentials_name_their_reason(harness: Harness) -> None:
    async def go() -> None:
        unauthenticated = grpc.StatusCode.UNAUTHENTICATED
        async with sc.connect(harness.address) as client:
            await expect_refusal(client.list_tables(), unauthenticated, "CREDENTIAL_REQUIRED")
            await expect_refusal(client.quick_play(), unauthenticated, "CREDENTIAL_REQUIRED")
            client.credential = "garbage"
            await expect_refusal(client.open_table(), unauthenticated, "MALFORMED_CREDENTIAL")
            client.credential = forged(unique("forger"))
            await expect_refusal(client.get_ticket(), unauthenticated, "BAD_SIGNATURE")
            # Not retried: a refusal is not a transient failure.
            stream = client.watch_lobby()
            await expect_refusal(anext(stream), unauthenticated, "BAD_SIGNATURE")
            # A fresh credential works from the next call on.
            client.credential = await harness.credential_async(unique("fresh"))
            await client.list_tables(rules(7))

    run(go())


def test_the_synchronous_wrapper(harness: Harness) -> None:
    host_id, guest_id = unique("host"), unique("guest")
    with (
        sc_sync.connect(harness.address, credential=harness.credential(host_id)) as host,
        sc_sync.connect(harness.address, credential=harness.credential(guest_id)) as guest,
    ):
        assert host.credential is not None
        opened = host.open_table(ruleset=rules(8), bot_seats=[1, 3], seat=2)
        assert opened.seat == 2
        table_id = opened.table.table_id
        assert table_id in [t.table_id for t in guest.tables(rules(8))]
        tables, version = guest.lobby_snapshot(rules(8))
        assert [t.table_id for t in tables] == [table_id] and version > 0
        watched = host.watch_table(table_id)
        assert next(watched).state == lpb.TABLE_STATE_WAITING
        followed = guest.follow_lobby(rules(8), poll=True, wait_ms=5000)
        assert [t.table_id for t in next(followed)] == [table_id]
        joined = guest.join_table(table_id)
        assert joined.seat == 0
        assert next(followed) == [], "started: gone from the lobby (a long poll saw it)"
        followed.close()
        states = [t.state for t in watched]
        assert states[-1] == lpb.TABLE_STATE_STARTED
        assert host.wait_for_start(table_id, timeout=WAIT_S).match_id == table_id
        changes = guest.poll_lobby(rules(8), after_version=version, wait_ms=0)
        assert table_id in changes.removed_table_ids
        seat = host.seat(opened)
        assert seat.claim().seat == 2
        with pytest.raises(sc.SpadesError) as caught:
            guest.quick_play(pb.Ruleset(preset="nope"))
        assert caught.value.reason == "INVALID_RULESET"
