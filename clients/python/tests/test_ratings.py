"""Rated play through spades_client, against a real server (serve.py with
``--rating-min-games 1``): four players open and join a rated table and play
it out; then their profiles (a rating in pool classic, one game, one match
with humans), the leaderboard's pages (ranks from 1, next and previous
tokens, the page around a player, every page walked both ways), the
refusals (an unknown pool, a bogus or another pool's page token, an unknown
player, ...), rated tables with bots and rated quick play, and the
synchronous wrapper."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from harness import Harness, run
from rated import RATED_RULES, RatedMatch, unique

import spades_client as sc
from spades_client import lobby_pb as lpb
from spades_client import pb
from spades_client import sync as sc_sync

NOT_FOUND = grpc.StatusCode.NOT_FOUND
INVALID = grpc.StatusCode.INVALID_ARGUMENT


async def refused(call: object, code: grpc.StatusCode, reason: str) -> sc.SpadesError:
    assert asyncio.iscoroutine(call)
    with pytest.raises(sc.SpadesError) as caught:
        await call
    assert (caught.value.code, caught.value.reason) == (code, reason), caught.value
    assert caught.value.message
    return caught.value


def test_the_rated_table_started_rated_in_pool_classic(rated_match: RatedMatch) -> None:
    table = rated_match.table
    assert table.rated and table.rating_pool == "classic"
    assert [s.player_id for s in table.seats] == [p.player_id for p in rated_match.players]
    assert [s.state for s in table.seats] == [lpb.TABLE_SEAT_STATE_PLAYER] * 4
    assert len(rated_match.winners) == 2, "one hand, one winning side"


def test_profiles_after_the_rated_match(rated_harness: Harness, rated_match: RatedMatch) -> None:
    async def go() -> None:
        ann = rated_match.player(0)
        async with sc.connect(rated_harness.address, credential=ann.credential) as client:
            mine = await client.profile()  # the caller's own
            assert (mine.player_id, mine.name) == (ann.player_id, "Ann")
            assert mine.last_played_ms > 0
            for p in rated_match.players:
                profile = await client.profile(p.player_id)  # anyone's, the same for all
                assert (profile.player_id, profile.name) == (p.player_id, p.name)
                (rating,) = profile.ratings
                assert rating.pool == "classic" and rating.games == 1
                won = p.player_id in rated_match.winners
                assert (rating.wins, rating.losses) == ((1, 0) if won else (0, 1))
                assert rating.rank >= 1, "one game is the server's minimum here"
                assert rating.conservative == pytest.approx(rating.mu - 3 * rating.sigma)
                assert rating.sigma < 25 / 3, "one game made it surer"
                humans, bots = profile.with_humans, profile.with_bots
                assert (humans.matches, humans.wins) == (1, 1 if won else 0)
                assert humans.hands >= 1 and bots.matches == 0
                assert humans.nils_bid == humans.blind_nils_bid == 0, "they bid 3, never nil"
                assert humans.mean_bid == pytest.approx(3.0)
                assert humans.contracts == humans.hands
                assert humans.contracts_made + humans.sets == humans.contracts
                if profile.player_id == ann.player_id:
                    assert profile == mine
            # The winners rank above the losers (equal ratings before the match).
            ranks = {
                p.player_id: (await client.profile(p.player_id)).ratings[0].rank
                for p in rated_match.players
            }
            losers = [pid for pid in ranks if pid not in rated_match.winners]
            assert max(ranks[w] for w in rated_match.winners) < min(ranks[x] for x in losers)

    run(go())


def test_the_leaderboard_pages_tokens_and_around_a_player(
    rated_harness: Harness, rated_match: RatedMatch
) -> None:
    async def go() -> None:
        ben = rated_match.player(1)
        async with sc.connect(rated_harness.address, credential=ben.credential) as client:
            top = await client.leaderboard()  # the default pool: classic
            assert top.pool == "classic" and top.min_games == 1
            total = top.total_players
            assert total >= 4 and not top.previous_page_token
            assert [e.rank for e in top.entries] == list(range(1, min(total, 25) + 1))
            assert bool(top.next_page_token) == (total > 25)
            # Two a page: every page walked forwards, then backwards from the last.
            pages = [p async for p in client.leaderboard_pages("classic", page_size=2)]
            assert len(pages) == (total + 1) // 2
            entries = [e for p in pages for e in p.entries]
            assert [e.rank for e in entries] == list(range(1, total + 1))
            assert [e.player_id for e in entries][:25] == [e.player_id for e in top.entries]
            assert not pages[0].previous_page_token and not pages[-1].next_page_token
            assert all(p.next_page_token for p in pages[:-1])
            assert all(p.previous_page_token for p in pages[1:])
            conservative = [e.rating.conservative for e in entries]
            assert conservative == sorted(conservative, reverse=True), "best first"
            ours = {p.player_id for p in rated_match.players}
            assert ours <= {e.player_id for e in entries}
            for e in entries:
                if e.player_id == ben.player_id:
                    assert e.name == "Ben" and e.rating.games == 1
            back = [
                p
                async for p in client.leaderboard_pages(
                    "classic", page_size=2, page_token=pages[-1].previous_page_token, backward=True
                )
            ]
            assert back == pages[-2::-1]
            # next_page_token, then that page's previous_page_token: the first page again.
            second = await client.leaderboard(page_size=2, page_token=pages[0].next_page_token)
            assert second == pages[1]
            first = await client.leaderboard(page_size=2, page_token=second.previous_page_token)
            assert first == pages[0]
            # Around a player: the page that holds them, at their rank.
            for p in rated_match.players:
                around = await client.leaderboard(page_size=2, around_player_id=p.player_id)
                (entry,) = [e for e in around.entries if e.player_id == p.player_id]
                rank = (await client.profile(p.player_id)).ratings[0].rank
                assert entry.rank == rank
                assert around == pages[(rank - 1) // 2]
            assert [e.rank async for e in client.leaderboard_entries(page_size=3)] == list(
                range(1, total + 1)
            )
            # Another pool: nobody has played a rated polish match.
            polish = await client.leaderboard("polish")
            assert polish.pool == "polish" and polish.total_players == 0 and not polish.entries
            assert not polish.next_page_token and not polish.previous_page_token

    run(go())


def test_bad_leaderboard_and_profile_requests_are_refused(
    rated_harness: Harness, rated_match: RatedMatch
) -> None:
    async def go() -> None:
        cat = rated_match.player(2)
        async with sc.connect(rated_harness.address, credential=cat.credential) as client:
            await refused(client.leaderboard("nosuchpool"), NOT_FOUND, "POOL_NOT_FOUND")
            await refused(client.leaderboard("Not A Pool!"), INVALID, "BAD_POOL")
            await refused(client.leaderboard(page_token="bogus"), INVALID, "BAD_PAGE_TOKEN")
            page = await client.leaderboard(page_size=1)
            assert page.next_page_token
            await refused(
                client.leaderboard("polish", page_size=1, page_token=page.next_page_token),
                INVALID,
                "BAD_PAGE_TOKEN",
            )
            await refused(client.leaderboard(page_size=201), INVALID, "BAD_PAGE_SIZE")
            await refused(
                client.leaderboard(page_token=page.next_page_token, around_player_id=cat.player_id),
                INVALID,
                "TOKEN_AND_PLAYER",
            )
            nobody = unique("nobody")
            await refused(
                client.leaderboard(around_player_id=nobody), NOT_FOUND, "PLAYER_NOT_RATED"
            )
            await refused(client.profile(nobody), NOT_FOUND, "PLAYER_NOT_FOUND")
            await refused(client.profile("x" * 129), INVALID, "BAD_PLAYER_ID")
            pages = client.leaderboard_pages("nosuchpool")
            await refused(anext(pages), NOT_FOUND, "POOL_NOT_FOUND")
        # A player who finished no match has no profile, not even their own.
        newcomer = await rated_harness.credential_async(unique("newcomer"), "Newcomer")
        async with sc.connect(rated_harness.address, credential=newcomer) as client:
            await refused(client.profile(), NOT_FOUND, "PLAYER_NOT_FOUND")
        # Like every lobby call, these need the player credential.
        async with sc.connect(rated_harness.address) as anonymous:
            await refused(
                anonymous.leaderboard(), grpc.StatusCode.UNAUTHENTICATED, "CREDENTIAL_REQUIRED"
            )
            await refused(
                anonymous.profile(cat.player_id),
                grpc.StatusCode.UNAUTHENTICATED,
                "CREDENTIAL_REQUIRED",
            )

    run(go())


def test_rated_tables_with_bots_and_rated_quick_play(rated_harness: Harness) -> None:
    async def go() -> None:
        pid = unique("solo")
        credential = await rated_harness.credential_async(pid, "Solo")
        async with sc.connect(rated_harness.address, credential=credential) as client:
            await refused(
                client.open_table(ruleset=RATED_RULES, bot_seats=[1], rated=True),
                INVALID,
                "RATED_WITHOUT_BOTS",
            )
            opened = await client.open_table(ruleset=RATED_RULES, rated=True)
            assert opened.table.rated and opened.table.rating_pool == "classic"
            # Started by its host, bots in the open seats: not rated after all.
            started = await client.start_table(opened.table.table_id)
            assert started.state == lpb.TABLE_STATE_STARTED and not started.rated
            plain = await client.open_table(ruleset=pb.Ruleset(preset="polish"), bot_seats=[1])
            assert not plain.table.rated
            await client.leave_table(plain.table.table_id)
            ticket = await client.quick_play(pb.Ruleset(preset="german"), rated=True)
            assert ticket.rated and ticket.state == lpb.TICKET_STATE_SEARCHING
            assert (await client.get_ticket(ticket.ticket_id)).rated
            await client.cancel_ticket(ticket.ticket_id)

    run(go())


def test_the_synchronous_wrapper(rated_harness: Harness, rated_match: RatedMatch) -> None:
    dan = rated_match.player(3)
    with sc_sync.connect(rated_harness.address, credential=dan.credential) as client:
        profile = client.profile()
        assert profile.player_id == dan.player_id and profile.ratings[0].games == 1
        assert client.profile(rated_match.player(0).player_id).name == "Ann"
        page = client.leaderboard(page_size=2)
        assert [e.rank for e in page.entries] == [1, 2]
        pages = list(client.leaderboard_pages(page_size=2))
        assert pages[0] == page and not pages[-1].next_page_token
        around = client.leaderboard(page_size=2, around_player_id=dan.player_id)
        assert dan.player_id in [e.player_id for e in around.entries]
        ranks = [e.rank for e in client.leaderboard_entries(page_size=50)]
        assert ranks == list(range(1, page.total_players + 1))
        with pytest.raises(sc.SpadesError) as caught:
            client.leaderboard("nosuchpool")
        assert caught.value.reason == "POOL_NOT_FOUND"
        ticket = client.quick_play(pb.Ruleset(preset="bulgarian"), rated=True)
        assert ticket.rated
        client.cancel_ticket(ticket.ticket_id)
        opened = client.open_table(ruleset=RATED_RULES, rated=True)
        assert opened.table.rated
        client.leave_table(opened.table.table_id)
