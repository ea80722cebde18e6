"""Refusals over gRPC: credentials, illegal actions and bad input each get the
right status code and google.rpc details, and change nothing."""

from __future__ import annotations

from typing import Any

import grpc
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Failure,
    Server,
    Table,
    card_key,
    choose,
    create_match,
    expect_failure,
    get_match,
    get_view,
    play_card,
    play_humans,
    seat_md,
    spectate,
    submit,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb

from spades_engine.errors import RULES, Reason


def snapshot_of(stub: Any, table: Table) -> list[bytes]:
    """Everything observable about a match: its summary and every seat's view."""
    out = [get_match(stub, table.match_id).SerializeToString(deterministic=True)]
    out += [get_view(stub, table, s).SerializeToString(deterministic=True) for s in range(4)]
    return out


def view_call(stub: Any, match_id: str, metadata: Any) -> pb.GetViewResponse:
    return stub.GetView(  # type: ignore[no-any-return]
        pb.GetViewRequest(match_id=match_id), metadata=metadata, timeout=RPC_TIMEOUT
    )


def submit_call(stub: Any, match_id: str, metadata: Any, action: pb.Action) -> Any:
    return stub.SubmitAction(
        pb.SubmitActionRequest(match_id=match_id, action_id="x1", action=action),
        metadata=metadata,
        timeout=RPC_TIMEOUT,
    )


def test_credentials_are_checked(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=31)
    other = create_match(stub, seed=32)
    before = snapshot_of(stub, table)
    seat = get_view(stub, table, 0).to_act
    action = choose(get_view(stub, table, seat))
    mid = table.match_id

    wrong = expect_failure(
        grpc.StatusCode.UNAUTHENTICATED, submit_call, stub, mid, seat_md(f"{mid}.nope"), action
    )
    assert wrong.reason == "UNAUTHENTICATED"
    expect_failure(grpc.StatusCode.UNAUTHENTICATED, view_call, stub, mid, seat_md("garbage"))
    expect_failure(
        grpc.StatusCode.UNAUTHENTICATED, view_call, stub, mid, (("authorization", "op"),)
    )
    # A good token of another match, used with this match id.
    elsewhere = expect_failure(
        grpc.StatusCode.PERMISSION_DENIED, submit_call, stub, mid, seat_md(other.tokens[0]), action
    )
    assert elsewhere.reason == "WRONG_MATCH"
    expect_failure(
        grpc.StatusCode.PERMISSION_DENIED, view_call, stub, mid, seat_md(other.tokens[seat])
    )
    # A spectator (no credential) may watch, never act.
    spectator = expect_failure(grpc.StatusCode.UNAUTHENTICATED, submit_call, stub, mid, (), action)
    assert spectator.reason == "UNAUTHENTICATED"
    first = next(iter(spectate(stub, mid)))
    assert first.events[0].seq == 1
    expect_failure(
        grpc.StatusCode.UNAUTHENTICATED,
        lambda: next(iter(stub.StreamEvents(pb.StreamEventsRequest(match_id=mid), timeout=5))),
    )
    # Seat tokens do not administer; the operator does not play.
    for call, req in (
        (stub.CreateMatch, pb.CreateMatchRequest()),
        (stub.GetMatch, pb.GetMatchRequest(match_id=mid)),
        (stub.ListMatches, pb.ListMatchesRequest()),
        (stub.ExportMatch, pb.ExportMatchRequest(match_id=mid)),
    ):
        denied = expect_failure(
            grpc.StatusCode.PERMISSION_DENIED,
            call,
            req,
            metadata=seat_md(table.tokens[0]),
            timeout=RPC_TIMEOUT,
        )
        assert denied.reason == "NOT_OPERATOR"
        expect_failure(grpc.StatusCode.UNAUTHENTICATED, call, req, timeout=RPC_TIMEOUT)
    expect_failure(grpc.StatusCode.UNAUTHENTICATED, submit_call, stub, mid, OP, action)
    missing = expect_failure(
        grpc.StatusCode.NOT_FOUND,
        stub.GetMatch,
        pb.GetMatchRequest(match_id="no-such-match"),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    assert missing.reason == "MATCH_NOT_FOUND"
    expect_failure(grpc.StatusCode.NOT_FOUND, lambda: next(iter(spectate(stub, "no-such-match"))))

    assert snapshot_of(stub, table) == before


def test_illegal_actions_are_refused_with_a_reason_and_change_nothing(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=41)
    play_humans(stub, table, until=lambda v: v.phase == pb.PHASE_PLAYING)

    def refused(code: grpc.StatusCode, seat: int, action: pb.Action, **kw: Any) -> Failure:
        before = snapshot_of(stub, table)
        f = expect_failure(code, submit, stub, table, seat, action, **kw)
        assert snapshot_of(stub, table) == before, "a refused request changed the match"
        return f

    # Wrong phase, bad input: each names the offending field.
    seat = get_view(stub, table, 0).to_act
    f = refused(grpc.StatusCode.FAILED_PRECONDITION, seat, pb.Action(bid=pb.BidAction(tricks=3)))
    assert (f.reason, f.fields) == ("WRONG_PHASE", ["action"])
    f = refused(grpc.StatusCode.INVALID_ARGUMENT, seat, pb.Action())
    assert f.fields == ["action"]
    f = refused(
        grpc.StatusCode.INVALID_ARGUMENT,
        seat,
        pb.Action(play_card=pb.PlayCardAction(card=pb.Card(suit=pb.SUIT_HEARTS))),
    )
    assert f.fields == ["action.play_card.card.rank"]
    f = refused(
        grpc.StatusCode.INVALID_ARGUMENT,
        seat,
        choose(get_view(stub, table, seat)),
        action_id="z" * 65,
    )
    assert (f.reason, f.fields) == ("BAD_ACTION_ID", ["action_id"])

    # Play the hand out; at every turn try what the rules forbid.
    reasons: list[str | None] = []
    for _ in range(52):
        public = get_view(stub, table, 0)
        if public.hand_number != 0:
            break
        seat = public.to_act
        view = get_view(stub, table, seat)
        f = refused(
            grpc.StatusCode.FAILED_PRECONDITION,
            (seat + 1) % 4,
            pb.Action(play_card=pb.PlayCardAction(card=view.hand[0])),
        )
        assert (f.reason, f.fields) == ("NOT_YOUR_TURN", ["action"])
        assert f.metadata == {"rule": "players act in turn, clockwise"}

        legal = {a.SerializeToString(deterministic=True) for a in view.legal_actions}
        for card in view.hand:
            action = pb.Action(play_card=pb.PlayCardAction(card=card))
            if action.SerializeToString(deterministic=True) not in legal:
                f = refused(grpc.StatusCode.FAILED_PRECONDITION, seat, action)
                assert f.reason in ("MUST_FOLLOW_SUIT", "SPADES_NOT_BROKEN"), f
                assert f.fields == ["action"]
                assert f.metadata["rule"] == RULES[Reason(f.reason)]
                reasons.append(f.reason)
                break

        held = {card_key(c) for c in view.hand}
        not_held = next(
            play_card(suit, rank)
            for suit in range(1, 5)
            for rank in range(2, 15)
            if (suit, rank) not in held
        )
        f = refused(grpc.StatusCode.FAILED_PRECONDITION, seat, not_held)
        assert (f.reason, f.fields) == ("CARD_NOT_IN_HAND", ["action"])
        submit(stub, table, seat, choose(view))
    assert get_view(stub, table, 0).hand_number == 1, "the hand was played out"
    assert "MUST_FOLLOW_SUIT" in reasons
    assert "SPADES_NOT_BROKEN" in reasons


def test_a_suicide_bid_refusal_is_a_failed_precondition(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=33, suicide=True)
    assert table.summary.ruleset.suicide
    seat = get_view(stub, table, 0).to_act
    view = get_view(stub, table, seat)
    assert {a.bid.tricks for a in view.legal_actions} == {0, *range(4, 14)}
    before = snapshot_of(stub, table)
    f = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION,
        submit,
        stub,
        table,
        seat,
        pb.Action(bid=pb.BidAction(tricks=2)),
    )
    assert (f.reason, f.fields) == ("SUICIDE_BID", ["action"])
    assert "suicide" in f.message
    assert snapshot_of(stub, table) == before


def test_bad_match_settings_are_invalid_arguments(shared_server: Server) -> None:
    stub = shared_server.stub

    def create(**kw: Any) -> Failure:
        return expect_failure(
            grpc.StatusCode.INVALID_ARGUMENT,
            stub.CreateMatch,
            pb.CreateMatchRequest(**kw),
            metadata=OP,
            timeout=RPC_TIMEOUT,
        )

    def count_matches() -> int:
        req = pb.ListMatchesRequest(page_size=500)
        return len(stub.ListMatches(req, metadata=OP, timeout=RPC_TIMEOUT).matches)

    listed = count_matches()
    f = create(ruleset=pb.Ruleset(players=3, partnerships=True, jokers=True))
    assert f.reason == "INVALID_RULESET"
    assert f.fields == ["ruleset.players", "ruleset.partnerships"]
    assert "partnerships" in f.message
    f = create(ruleset=pb.Ruleset(preset="chess"))
    assert f.reason == "INVALID_RULESET"
    f = create(ruleset=pb.Ruleset(target_score=0))
    assert f.fields == ["ruleset.target_score"]
    f = create(seats=[pb.SeatConfig(name="solo")])
    assert (f.reason, f.fields) == ("WRONG_SEAT_COUNT", ["seats"])
    f = create(seats=[pb.SeatConfig(name="n" * 65)] + [pb.SeatConfig()] * 3)
    assert f.fields == ["seats[0].name"]
    f = create(turn_timer_ms=-1)
    assert f.fields == ["turn_timer_ms"]
    f = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT,
        stub.ImportMatch,
        pb.ImportMatchRequest(snapshot=b"not a snapshot"),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    assert (f.reason, f.fields) == ("INVALID_SNAPSHOT", ["snapshot"])
    assert count_matches() == listed, "a refused request made a match"

    # Three players is fine without partnerships.
    ok = create_match(stub, players=3, partnerships=False, jokers=True)
    assert ok.summary.ruleset.players == 3
    assert sorted(ok.tokens) == [0, 1, 2]
    assert count_matches() == listed + 1
