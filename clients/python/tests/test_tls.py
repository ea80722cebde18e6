"""TLS and mutual TLS against a real server (serve.py --tls: certificates made
for the run): players on the main port trusting the run's CA, the operator on
the operator port with a client certificate; private matches, spectator
tokens, ReissueSeatToken and SetSpectators through the client's calls."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from harness import Harness, run

import spades_client as sc
from spades_client import pb, sync

WAIT_S = 20.0
# A refused handshake fails fast; one attempt is enough to see it.
ONCE = sc.Backoff(max_attempts=1)


def operator_tls(h: Harness) -> sc.TLS:
    return sc.TLS.files(ca=h.ca, cert=h.client_cert, key=h.client_key)


async def first(events: AsyncIterator[pb.MatchEvent]) -> pb.MatchEvent:
    async with asyncio.timeout(WAIT_S):
        try:
            return await anext(events)
        finally:
            await events.aclose()  # type: ignore[attr-defined]


async def refusal(events: AsyncIterator[pb.MatchEvent]) -> sc.SpadesError:
    """How the events end (after any still on their way)."""
    with pytest.raises(sc.SpadesError) as e:
        async with asyncio.timeout(WAIT_S):
            async for _ in events:
                pass
    return e.value


def test_players_on_tls_and_the_operator_on_mutual_tls(tls_harness: Harness) -> None:
    h = tls_harness

    async def main() -> None:
        async with (
            sc.connect(
                h.operator_address, tls=operator_tls(h), operator_token=h.operator_token
            ) as operator,
            sc.connect(h.address, tls=sc.TLS.files(ca=h.ca)) as player,
        ):
            created = await operator.create_match(
                seats=[sc.human("Me"), *sc.bots(3)], seed=5, spectators=pb.SPECTATORS_TOKEN
            )
            match_id = created.match.match_id
            assert created.match.spectators == pb.SPECTATORS_TOKEN
            assert created.spectator_token.startswith(match_id + ".")
            seat = player.seat(sc.seat_token(created, 0))
            assert (await seat.claim()).seat == 0
            assert (await seat.view()).legal_actions

            # A spectator needs the token, on Spectate and on PollEvents alike.
            missing = await refusal(player.spectate(match_id))
            assert (missing.code, missing.reason) == (
                grpc.StatusCode.UNAUTHENTICATED,
                "SPECTATOR_TOKEN_REQUIRED",
            )
            token = created.spectator_token
            watched = await first(player.spectate(match_id, spectator_token=token))
            polled = await first(player.poll_spectate(match_id, spectator_token=token, wait_ms=0))
            assert watched == polled

            # The old token's open stream ends when the operator replaces it.
            old_stream = seat.stream_events()
            await first_of(old_stream)
            reissued = await operator.reissue_seat_token(match_id, 0)
            assert reissued.seat_token.seat == 0
            revoked = await refusal(old_stream)
            assert (revoked.code, revoked.reason) == (
                grpc.StatusCode.UNAUTHENTICATED,
                "TOKEN_REVOKED",
            )
            await player.seat(reissued.seat_token.token).claim()

            changed = await operator.set_spectators(match_id, pb.SPECTATORS_NONE)
            assert changed.match.spectators == pb.SPECTATORS_NONE
            assert not changed.spectator_token
            private = await refusal(player.spectate(match_id, spectator_token=token))
            assert (private.code, private.reason) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "NOT_SPECTATABLE",
            )

    run(main())


async def first_of(events: AsyncIterator[pb.MatchEvent]) -> pb.MatchEvent:
    """The first event, leaving the stream open."""
    async with asyncio.timeout(WAIT_S):
        return await anext(events)


def test_operator_calls_need_the_operator_port_and_its_certificate(tls_harness: Harness) -> None:
    h = tls_harness

    async def main() -> None:
        # The operator token alone, on the players' port: refused by the server.
        async with sc.connect(
            h.address, tls=sc.TLS.files(ca=h.ca), operator_token=h.operator_token
        ) as on_main:
            with pytest.raises(sc.SpadesError) as e:
                await on_main.list_matches()
            assert (e.value.code, e.value.reason) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "CLIENT_CERT_REQUIRED",
            )
        # The operator port without a client certificate: the handshake fails.
        async with sc.connect(
            h.operator_address,
            tls=sc.TLS.files(ca=h.ca),
            operator_token=h.operator_token,
            backoff=ONCE,
            timeout=5,
        ) as no_cert:
            with pytest.raises(sc.SpadesError) as e:
                await no_cert.list_matches()
            assert e.value.code is grpc.StatusCode.UNAVAILABLE
        # Plaintext to a TLS port, and TLS without the run's CA: no connection.
        for tls in (False, True):
            async with sc.connect(h.address, tls=tls, backoff=ONCE, timeout=5) as wrong:
                with pytest.raises(sc.SpadesError) as e:
                    await wrong.ping()
                assert e.value.code is grpc.StatusCode.UNAVAILABLE

    run(main())


def test_tls_settings_are_checked_when_made(tls_harness: Harness) -> None:
    with pytest.raises(ValueError, match="cert and key go together"):
        sc.TLS.files(ca=tls_harness.ca, cert=tls_harness.client_cert)
    with pytest.raises(FileNotFoundError):
        sc.TLS.files(ca=tls_harness.ca + ".missing")


def test_the_synchronous_client_takes_the_same_tls(tls_harness: Harness) -> None:
    h = tls_harness
    with sync.connect(
        h.operator_address, tls=operator_tls(h), operator_token=h.operator_token
    ) as operator:
        created = operator.create_match(seats=[sc.human("Me"), *sc.bots(3)], seed=6)
        match_id = created.match.match_id
        assert operator.get_match(match_id).spectators == pb.SPECTATORS_PUBLIC
        token = operator.set_spectators(match_id, pb.SPECTATORS_TOKEN).spectator_token
        assert token.startswith(match_id + ".")
        assert operator.reissue_seat_token(match_id, 0).seat_token.token
