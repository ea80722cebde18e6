"""Input the server must refuse, and the ways one token could grow a match's
log without bound: each refusal is a status with ErrorInfo and BadRequest, and
changes nothing (the match's last_seq, GetMatch and ListMatches stay as they were)."""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Deadline,
    Failure,
    PlayCall,
    Server,
    Table,
    choose,
    create_match,
    expect_failure,
    failure_of,
    get_match,
    get_view,
    refusal_of,
    seat_md,
    submit,
    wait_until,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb
from test_service_ops import metric

from spades_engine import Match, preset


def all_listed(stub: Any) -> list[bytes]:
    """Every match ListMatches shows, page by page, serialized."""
    out: list[bytes] = []
    token = ""
    d = Deadline(RPC_TIMEOUT)
    while True:
        d.check("the last page")
        page = stub.ListMatches(
            pb.ListMatchesRequest(page_size=500, page_token=token), metadata=OP, timeout=RPC_TIMEOUT
        )
        out += [m.SerializeToString(deterministic=True) for m in page.matches]
        token = page.next_page_token
        if not token:
            return out


def import_call(stub: Any, snapshot: bytes, seats: list[pb.SeatConfig] | None = None) -> Any:
    return stub.ImportMatch(
        pb.ImportMatchRequest(snapshot=snapshot, seats=seats or []),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )


# -- 1. engine values outside the proto's ranges -------------------------------------------


def _edited_snapshot(rules: dict[str, int], seed: int) -> bytes:
    """A classic snapshot with some options changed in its document (the engine
    itself makes no match with such values; a client can send one)."""
    data = Match(preset("classic"), seed=seed).to_snapshot()
    doc = json.loads(zlib.decompress(data[5:]))
    doc["rules"].update(rules)
    return data[:5] + zlib.compress(json.dumps(doc, separators=(",", ":")).encode())


@pytest.mark.parametrize(
    ("rules", "seed", "reason", "value"),
    [
        # Options the engine itself bounds to the API's int32: a snapshot error.
        ({"target_score": 2**31}, 3, "INVALID_SNAPSHOT", "target_score"),
        ({"mercy_score": -(2**31) - 1}, 3, "INVALID_SNAPSHOT", "mercy_score"),
        ({"blind_nil_deficit": 2**31}, 3, "INVALID_SNAPSHOT", "blind_nil_deficit"),
        # Seeds the engine plays (any below 2**256) but CreateMatch's uint64 cannot carry.
        ({}, 2**64, "VALUE_OUT_OF_RANGE", "seed"),
        ({}, -1, "VALUE_OUT_OF_RANGE", "seed"),
    ],
)
def test_import_of_values_outside_the_api_ranges_is_refused_and_stores_nothing(
    make_server: Callable[..., Server], rules: dict[str, int], seed: int, reason: str, value: str
) -> None:
    srv = make_server()
    create_match(srv.stub, seed=3)
    before = all_listed(srv.stub)
    snapshot = _edited_snapshot(rules, seed)
    if reason == "VALUE_OUT_OF_RANGE":  # the engine loads it: the server must refuse it
        assert Match.from_snapshot(snapshot).seed == seed
    f = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, import_call, srv.stub, snapshot)
    assert (f.reason, f.fields) == (reason, ["snapshot"]), f
    if reason == "VALUE_OUT_OF_RANGE":
        assert f.metadata == {"value": value}
    assert value in f.message
    assert all_listed(srv.stub) == before
    srv.stop()
    srv.start()
    assert all_listed(srv.stub) == before, "the refused import was stored"


def test_import_of_the_largest_values_in_range_works(shared_server: Server) -> None:
    stub = shared_server.stub
    rules = preset("classic").replace(
        target_score=2**31 - 1, mercy_score=-(2**31 - 1), blind_nil_deficit=2**31 - 1
    )
    imported = import_call(stub, Match(rules, seed=2**64 - 1).to_snapshot())
    got = get_match(stub, imported.match.match_id)
    assert (got.ruleset.target_score, got.ruleset.mercy_score) == (2**31 - 1, -(2**31 - 1))
    assert imported.match.match_id in {
        m.match_id for m in map(pb.MatchSummary.FromString, all_listed(stub))
    }


# -- 2. bot levels ---------------------------------------------------------------------------


def seats_with(level: int, at: int, *, bot: bool = True) -> list[pb.SeatConfig]:
    return [
        pb.SeatConfig(name=f"s{i}", bot=bot and i == at, bot_level=level if i == at else 0)  # type: ignore[arg-type]
        for i in range(4)
    ]


@pytest.mark.parametrize("level", [99, -1, 2**31 - 1, 6])
def test_bot_levels_outside_the_enum_are_refused(shared_server: Server, level: int) -> None:
    stub = shared_server.stub
    before = all_listed(stub)
    f = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT,
        stub.CreateMatch,
        pb.CreateMatchRequest(seats=seats_with(level, 2)),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    assert (f.reason, f.fields) == ("BAD_BOT_LEVEL", ["seats[2].bot_level"])
    # A human seat's level is not used, but it must still be a level.
    f = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT,
        stub.CreateMatch,
        pb.CreateMatchRequest(seats=seats_with(level, 1, bot=False)),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    assert (f.reason, f.fields) == ("BAD_BOT_LEVEL", ["seats[1].bot_level"])
    snapshot = Match(preset("classic"), seed=1).to_snapshot()
    f = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT, import_call, stub, snapshot, seats_with(level, 3)
    )
    assert (f.reason, f.fields) == ("BAD_BOT_LEVEL", ["seats[3].bot_level"])
    assert all_listed(stub) == before


def test_a_stored_bot_level_that_no_longer_maps_still_plays_after_a_restart(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server()
    table = create_match(srv.stub, seed=11)  # four human seats: nobody moves
    seat = get_view(srv.stub, table, 0).to_act
    last = get_match(srv.stub, table.match_id).last_seq
    srv.stop()
    # The seat to act becomes a bot of a level this server does not know (as
    # if a later version had stored it), straight in the database.
    with sqlite3.connect(srv.db) as db:
        (raw,) = db.execute("SELECT meta FROM matches WHERE id = ?", (table.match_id,)).fetchone()
        meta = json.loads(raw)
        meta["seats"][seat].update(bot_level=99, control=pb.SEAT_CONTROL_BOT, token_hash="")
        db.execute(
            "UPDATE matches SET meta = ? WHERE id = ?",
            (json.dumps(meta).encode(), table.match_id),
        )
    srv.start()
    wait_until(
        lambda: get_match(srv.stub, table.match_id).last_seq > last,
        "the bot of an unknown level to act",
    )
    view = get_view(srv.stub, table, (seat + 1) % 4)
    assert view.bids[seat].has_bid, "the bot seat bid"
    assert metric(srv, 'spades_bot_failures_total{level="99"}') >= 1
    assert "unknown bot level" in srv.log_tail(200)


# -- 4. seat control ----------------------------------------------------------------------


def claim(stub: Any, table: Table, seat: int) -> pb.ClaimSeatResponse:
    return stub.ClaimSeat(  # type: ignore[no-any-return]
        pb.ClaimSeatRequest(match_id=table.match_id),
        metadata=seat_md(table.tokens[seat]),
        timeout=RPC_TIMEOUT,
    )


def leave(stub: Any, table: Table, seat: int) -> pb.LeaveSeatResponse:
    return stub.LeaveSeat(  # type: ignore[no-any-return]
        pb.LeaveSeatRequest(match_id=table.match_id),
        metadata=seat_md(table.tokens[seat]),
        timeout=RPC_TIMEOUT,
    )


def test_seat_control_on_a_finished_match_is_refused_and_appends_nothing(
    shared_server: Server,
) -> None:
    stub = shared_server.stub
    table = create_match(stub, bots=(1, 2, 3), seed=5, target_score=100)
    leave(stub, table, 0)  # the stand-in and the bots play it out
    wait_until(
        lambda: get_match(stub, table.match_id).phase == pb.PHASE_MATCH_OVER,
        "the bots to finish the match",
        60,
    )
    # The state turns over before the last events are stored (they are staged
    # while the store writes): the match is done once its log stops growing.
    before = get_match(stub, table.match_id)
    d = Deadline(RPC_TIMEOUT)
    while True:
        d.check("the match's last events to be stored")
        time.sleep(0.2)
        settled = get_match(stub, table.match_id)
        if settled == before:
            break
        before = settled
    for call in (claim, leave, claim):
        f = expect_failure(grpc.StatusCode.FAILED_PRECONDITION, call, stub, table, 0)
        assert f.reason == "MATCH_OVER", f
    assert get_match(stub, table.match_id) == before


def test_seat_control_changes_are_rate_limited_like_actions(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server("--actions-per-second", "2")  # bursts of 4
    table = create_match(srv.stub, seed=5)
    done = 0
    d = Deadline(RPC_TIMEOUT)
    while True:
        d.check("a seat-control change to be rate limited")
        before = get_match(srv.stub, table.match_id).last_seq
        try:
            (claim if done % 2 == 0 else leave)(srv.stub, table, 0)
        except grpc.RpcError as err:
            f = failure_of(err)
            assert (f.code, f.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED"), f
            assert get_match(srv.stub, table.match_id).last_seq == before
            break
        done += 1
    assert done <= 6, f"{done} seat changes went through a burst of 4"


def test_seat_control_changes_are_bounded_per_hand(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=9)  # four humans: the hand never moves
    seat = (get_view(stub, table, 0).to_act + 1) % 4  # not the seat to act: no stand-in moves
    changes = 0
    d = Deadline(30)
    while True:
        d.check("seat changes to be refused")
        before = get_match(stub, table.match_id).last_seq
        try:
            (claim if changes % 2 == 0 else leave)(stub, table, seat)
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
            assert get_match(stub, table.match_id).last_seq == before
            break
        changes += 1
    assert 2 <= changes <= 64, changes
    # Other seats have their own allowance; the refused seat may still play.
    claim(stub, table, (seat + 1) % 4)


# -- 6. page tokens -----------------------------------------------------------------------


def list_page(stub: Any, token: str, size: int = 2) -> pb.ListMatchesResponse:
    return stub.ListMatches(  # type: ignore[no-any-return]
        pb.ListMatchesRequest(page_size=size, page_token=token), metadata=OP, timeout=RPC_TIMEOUT
    )


def test_page_tokens_are_opaque_and_anything_else_is_refused(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server()
    made = [create_match(srv.stub, seed=i).match_id for i in range(5)]
    first = list_page(srv.stub, "")
    assert [m.match_id for m in first.matches] == made[::-1][:2]
    issued = first.next_page_token
    assert issued and not issued.lstrip("-+ ").isdigit()
    for bad in (
        "-3",
        "+1",
        " 2 ",
        "٣",
        "1",
        "2",
        "0",
        "abc",
        issued + "=",
        issued[:-1],
        " " + issued,
        "x" * 10_000,
    ):
        f = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, list_page, srv.stub, bad)
        assert (f.reason, f.fields) == ("BAD_PAGE_TOKEN", ["page_token"]), bad
        assert len(f.message) < 200
    f = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, list_page, srv.stub, "", -1)
    assert (f.reason, f.fields) == ("BAD_PAGE_SIZE", ["page_size"])


def test_pages_neither_skip_nor_repeat_while_matches_are_created(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server()
    made = [create_match(srv.stub, seed=i).match_id for i in range(7)]
    seen: list[str] = []
    token = ""
    d = Deadline(RPC_TIMEOUT)
    while True:
        d.check("the last page")
        page = list_page(srv.stub, token)
        seen += [m.match_id for m in page.matches]
        create_match(srv.stub, seed=100)  # newer than every page: never listed below
        token = page.next_page_token
        if not token:
            break
    assert seen == made[::-1]
    # A token stays good after a restart.
    newest_first = [pb.MatchSummary.FromString(m).match_id for m in all_listed(srv.stub)]
    page = list_page(srv.stub, "", 3)
    srv.stop()
    srv.start()
    again = list_page(srv.stub, page.next_page_token, 3)
    assert [m.match_id for m in again.matches] == newest_first[3:6]


# -- and while here ---------------------------------------------------------------------


def chat(stub: Any, table: Table, seat: int, text: str) -> pb.SendChatResponse:
    return stub.SendChat(  # type: ignore[no-any-return]
        pb.SendChatRequest(match_id=table.match_id, text=text),
        metadata=seat_md(table.tokens[seat]),
        timeout=RPC_TIMEOUT,
    )


def test_chat_text_refusals_say_what_is_wrong(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=13)
    before = get_match(stub, table.match_id)
    for text, says in ((" ", "blank"), ("\t\n", "blank"), ("", "empty"), ("x" * 201, "201")):
        f = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, chat, stub, table, 0, text)
        assert (f.reason, f.fields) == ("CHAT_TEXT_INVALID", ["text"])
        assert says in f.message, f.message
    assert get_match(stub, table.match_id) == before


def test_chat_is_bounded_per_hand(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=13)
    sent = 0
    d = Deadline(30)
    while True:
        d.check("chat to be refused")
        before = get_match(stub, table.match_id).last_seq
        try:
            chat(stub, table, 0, f"line {sent}")
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
            assert get_match(stub, table.match_id).last_seq == before
            break
        sent += 1
    assert 1 <= sent <= 60


def test_an_expected_seq_beyond_the_match_is_refused(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=17)
    seat = get_view(stub, table, 0).to_act
    view = get_view(stub, table, seat)
    before = get_match(stub, table.match_id)
    f = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT,
        submit,
        stub,
        table,
        seat,
        choose(view),
        expected_seq=before.last_seq + 1,
    )
    assert (f.reason, f.fields) == ("FUTURE_SEQUENCE", ["expected_seq"])
    # As for STALE_SEQUENCE: the latest event this seat may see.
    current = int(f.metadata["current_seq"])
    assert 0 < current <= before.last_seq
    assert get_match(stub, table.match_id) == before

    call = PlayCall(stub, table, seat)
    try:
        action_id = call.act(choose(view), expected_seq=2**63)
        refused: Failure = refusal_of(call.result(action_id))
        assert (refused.reason, refused.fields) == ("FUTURE_SEQUENCE", ["expected_seq"])
        assert get_match(stub, table.match_id) == before
        # Acting on what the refusal said, the same action is accepted.
        ok = call.result(call.act(choose(view), expected_seq=current))
        assert not ok.HasField("error"), ok
    finally:
        call.cancel()


def test_over_long_ids_are_refused_before_any_lookup(shared_server: Server) -> None:
    stub = shared_server.stub
    table = create_match(stub, seed=19)
    before = get_match(stub, table.match_id)
    token = seat_md(table.tokens[0])
    huge = "m" * (1 << 19)  # under the 1 MiB message limit
    seat_calls: list[tuple[Callable[..., Any], Any]] = [
        (stub.GetView, pb.GetViewRequest(match_id=huge)),
        (stub.ClaimSeat, pb.ClaimSeatRequest(match_id=huge)),
        (stub.LeaveSeat, pb.LeaveSeatRequest(match_id=huge)),
        (stub.SendChat, pb.SendChatRequest(match_id=huge, text="hi")),
        (
            stub.SubmitAction,
            pb.SubmitActionRequest(
                match_id=huge, action_id="a", action=pb.Action(look=pb.LookAction())
            ),
        ),
    ]
    for call, req in seat_calls:
        f = expect_failure(
            grpc.StatusCode.INVALID_ARGUMENT, call, req, metadata=token, timeout=RPC_TIMEOUT
        )
        assert (f.reason, f.fields) == ("BAD_MATCH_ID", ["match_id"]), call
        assert len(f.message) < 200
    for call, req in (
        (stub.GetMatch, pb.GetMatchRequest(match_id=huge)),
        (stub.ExportMatch, pb.ExportMatchRequest(match_id=huge)),
    ):
        f = expect_failure(
            grpc.StatusCode.INVALID_ARGUMENT, call, req, metadata=OP, timeout=RPC_TIMEOUT
        )
        assert (f.reason, f.fields) == ("BAD_MATCH_ID", ["match_id"])
    for streaming in (
        lambda: next(iter(stub.Spectate(pb.SpectateRequest(match_id=huge), timeout=RPC_TIMEOUT))),
        lambda: next(
            iter(
                stub.StreamEvents(
                    pb.StreamEventsRequest(match_id=huge), metadata=token, timeout=RPC_TIMEOUT
                )
            )
        ),
    ):
        f = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, streaming)
        assert (f.reason, f.fields) == ("BAD_MATCH_ID", ["match_id"])
    call = PlayCall(stub, table, 0, first=pb.PlayRequest(open=pb.PlayOpen(match_id="m" * 65)))
    call.join()
    assert call.error is not None
    f = failure_of(call.error)
    assert (f.code, f.reason, f.fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "BAD_MATCH_ID",
        ["open.match_id"],
    )
    # A preset name is bounded too (and not echoed back whole).
    f = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT,
        stub.CreateMatch,
        pb.CreateMatchRequest(ruleset=pb.Ruleset(preset="p" * 100_000)),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    assert (f.reason, f.fields) == ("INVALID_RULESET", ["ruleset.preset"])
    assert len(f.message) < 200
    assert get_match(stub, table.match_id) == before


def test_the_per_hand_bounds_are_flags(make_server: Any) -> None:
    srv = make_server("--seat-changes-per-hand", "2", "--chat-per-hand", "1")
    table = create_match(srv.stub, seed=10)  # four humans: the hand never moves
    seat = (get_view(srv.stub, table, 0).to_act + 1) % 4
    claim(srv.stub, table, seat)
    leave(srv.stub, table, seat)
    f = expect_failure(grpc.StatusCode.RESOURCE_EXHAUSTED, claim, srv.stub, table, seat)
    assert f.reason == "SEAT_CHANGES_EXHAUSTED", f
    chat(srv.stub, table, seat, "one line")
    f = expect_failure(grpc.StatusCode.RESOURCE_EXHAUSTED, chat, srv.stub, table, seat, "two")
    assert f.reason == "CHAT_QUOTA_EXHAUSTED", f


def test_seat_names_are_bounded(shared_server: Server) -> None:
    stub = shared_server.stub
    listed = all_listed(stub)

    def create(name: str) -> pb.CreateMatchResponse:
        seats = [pb.SeatConfig(name=name if i == 2 else "") for i in range(4)]
        return stub.CreateMatch(  # type: ignore[no-any-return]
            pb.CreateMatchRequest(seats=seats), metadata=OP, timeout=RPC_TIMEOUT
        )

    f = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, create, "n" * 65)
    assert (f.reason, f.fields) == ("NAME_TOO_LONG", ["seats[2].name"])
    assert all_listed(stub) == listed
    assert create("n" * 64).match.seats[2].name == "n" * 64
