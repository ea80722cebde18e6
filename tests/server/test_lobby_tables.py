"""Tables and the lobby, against a real server: opening, joining (by id and by
invite code), leaving, starting early, unattended tables, the lobby's pages,
stream and long poll, and every refusal with its reason."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from lobby_harness import (
    LOBBY_FLAGS,
    Player,
    bearer,
    player,
    state_name,
    view,
)
from server_harness import RPC_TIMEOUT, Server, expect_failure, failure_of
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb

NOT_STARTED = grpc.StatusCode.FAILED_PRECONDITION


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("lobby"), *LOBBY_FLAGS)
    srv.start()
    yield srv
    assert srv.stop() == 0, srv.log_tail()


def open_table(host: Player, **kw: object) -> lpb.OpenTableResponse:
    response: lpb.OpenTableResponse = host.call("OpenTable", lpb.OpenTableRequest(**kw))  # type: ignore[arg-type]
    return response


def test_a_table_waits_until_its_seats_are_taken_then_each_token_plays(server: Server) -> None:
    alice, bob, carol = (player(server, n) for n in ("alice", "bob", "carol"))
    opened = open_table(alice, bot_seats=[3])
    table = opened.table
    assert state_name(table) == "TABLE_STATE_WAITING"
    assert [s.state for s in table.seats] == [
        lpb.TABLE_SEAT_STATE_PLAYER,
        lpb.TABLE_SEAT_STATE_OPEN,
        lpb.TABLE_SEAT_STATE_OPEN,
        lpb.TABLE_SEAT_STATE_BOT,
    ]
    assert table.seats[0].player_id == alice.id and table.host_player_id == alice.id
    # The token exists from the start, but plays only once the table has started.
    failure = expect_failure(NOT_STARTED, view, server, table.table_id, opened.seat_token)
    assert failure.reason == "TABLE_NOT_STARTED"

    joined = bob.call("JoinTable", lpb.JoinTableRequest(table_id=table.table_id, seat=2))
    assert joined.seat == 2 and state_name(joined.table) == "TABLE_STATE_WAITING"
    again = bob.call("JoinTable", lpb.JoinTableRequest(table_id=table.table_id))
    assert (again.seat, again.seat_token) == (2, joined.seat_token), "joining again is idempotent"

    last = carol.call("JoinTable", lpb.JoinTableRequest(table_id=table.table_id))
    assert last.seat == 1
    assert state_name(last.table) == "TABLE_STATE_STARTED"
    assert last.table.match_id == table.table_id
    seated = (
        (0, opened.seat_token, alice),
        (2, joined.seat_token, bob),
        (1, last.seat_token, carol),
    )
    for seat, token, who in seated:
        v = view(server, table.table_id, token)
        assert v.seat == seat and len(v.hand) == 13
        assert v.seats[seat].name == who.id.title()
    assert view(server, table.table_id, opened.seat_token).seats[3].control == pb.SEAT_CONTROL_BOT


def test_the_lobby_lists_public_waiting_tables_by_ruleset_a_page_at_a_time(server: Server) -> None:
    german = pb.Ruleset(preset="german")
    hosts = [player(server, "host") for _ in range(3)]
    ids = [open_table(h, ruleset=german).table.table_id for h in hosts]
    invite = open_table(player(server, "secret"), ruleset=german,
                        visibility=lpb.TABLE_VISIBILITY_INVITE_ONLY)  # fmt: skip
    viewer = player(server, "viewer")
    # The same rules spelled as options are the same filter.
    spelled = pb.Ruleset(preset="classic")
    spelled.CopyFrom(_as_options(german))
    for rules in (german, spelled):
        seen: list[str] = []
        token = ""
        while True:
            page = viewer.call(
                "ListTables",
                lpb.ListTablesRequest(
                    filter=lpb.LobbyFilter(ruleset=rules), page_size=2, page_token=token
                ),
            )
            assert len(page.tables) <= 2
            seen += [t.table_id for t in page.tables]
            token = page.next_page_token
            if not token:
                break
        assert [i for i in seen if i in ids] == ids, "oldest first, each once"
        assert invite.table.table_id not in seen
        assert all(t != "" for t in seen)
    classic = viewer.call(
        "ListTables", lpb.ListTablesRequest(filter=lpb.LobbyFilter(ruleset=pb.Ruleset()))
    )
    assert not set(ids) & {t.table_id for t in classic.tables}
    assert all(t.invite_code == "" for t in classic.tables)
    bad = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT,
        viewer.call,
        "ListTables",
        lpb.ListTablesRequest(page_token="not-a-token"),
    )
    assert bad.reason == "BAD_PAGE_TOKEN"


def _as_options(preset: pb.Ruleset) -> pb.Ruleset:
    from spades_server import convert

    return convert.ruleset_to_pb(convert.ruleset_from_pb(preset))


def test_the_lobby_streams_and_long_polls_its_changes(server: Server) -> None:
    rules = pb.Ruleset(preset="bulgarian")
    viewer = player(server, "watcher")
    start = viewer.call(
        "ListTables", lpb.ListTablesRequest(filter=lpb.LobbyFilter(ruleset=rules))
    ).version
    stream = viewer.lobby.WatchLobby(
        lpb.WatchLobbyRequest(filter=lpb.LobbyFilter(ruleset=rules), after_version=start),
        metadata=viewer.md,
        timeout=30,
    )
    got: list[lpb.WatchLobbyResponse] = []

    def read() -> None:
        try:
            for batch in stream:
                got.append(batch)
        except grpc.RpcError as e:  # the test cancels it when it has seen enough
            assert e.code() == grpc.StatusCode.CANCELLED, e

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    host = player(server, "host")
    opened = open_table(host, ruleset=rules)
    table_id = opened.table.table_id
    open_table(player(server, "other"))  # classic: not in this filter
    guest = player(server, "guest")
    guest.call("JoinTable", lpb.JoinTableRequest(table_id=table_id))
    host.call("StartTable", lpb.StartTableRequest(table_id=table_id))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(table_id in b.removed_table_ids for b in got):
        time.sleep(0.01)
    stream.cancel()
    upserts = [t for b in got for t in b.tables]
    assert upserts and all(t.table_id == table_id for t in upserts), "only tables of the filter"
    assert any(len([s for s in t.seats if s.player_id]) == 2 for t in upserts), "the join"
    assert any(table_id in b.removed_table_ids for b in got), "started: gone from the lobby"
    versions = [b.version for b in got]
    assert versions == sorted(versions) and versions[0] > start

    # The long poll: the same changes from the same version, at once.
    polled = viewer.call(
        "PollLobby",
        lpb.PollLobbyRequest(filter=lpb.LobbyFilter(ruleset=rules), after_version=start),
    ).changes
    assert table_id in polled.removed_table_ids and not polled.tables
    # Nothing new: it waits, then answers empty at the latest version.
    t0 = time.monotonic()
    quiet = viewer.call(
        "PollLobby",
        lpb.PollLobbyRequest(
            filter=lpb.LobbyFilter(ruleset=rules), after_version=polled.version, wait_ms=300
        ),
    ).changes
    assert time.monotonic() - t0 >= 0.25
    assert not quiet.tables and not quiet.removed_table_ids and quiet.version >= polled.version


def test_invite_only_tables_are_joined_by_code_and_guessing_is_limited(server: Server) -> None:
    host, friend, stranger = player(server, "host"), player(server, "friend"), player(server, "x")
    opened = open_table(host, visibility=lpb.TABLE_VISIBILITY_INVITE_ONLY)
    code = opened.table.invite_code
    assert len(code) == 11 and code[5] == "-"
    table_id = opened.table.table_id
    refused = expect_failure(
        grpc.StatusCode.PERMISSION_DENIED,
        stranger.call,
        "JoinTable",
        lpb.JoinTableRequest(table_id=table_id),
    )
    assert refused.reason == "INVITE_REQUIRED"
    expect_failure(
        grpc.StatusCode.PERMISSION_DENIED,
        stranger.call,
        "GetTable",
        lpb.GetTableRequest(table_id=table_id),
    )
    # Read aloud: lower case, spaces instead of the dash.
    spoken = code.lower().replace("-", " ")
    joined = friend.call("JoinTable", lpb.JoinTableRequest(invite_code=spoken, seat=2))
    assert joined.seat == 2 and joined.table.invite_code == code
    # A stranger guessing: each wrong code is NOT_FOUND, until the attempts run out.
    reasons = []
    for i in range(12):
        try:
            stranger.call("JoinTable", lpb.JoinTableRequest(invite_code=f"ABCDE-{i:05d}"[:11]))
        except grpc.RpcError as e:
            reasons.append(failure_of(e).reason)
    assert reasons[:10] == ["INVITE_NOT_FOUND"] * 10
    assert reasons[10:] == ["INVITE_ATTEMPTS"] * 2
    # ...even with the right code now.
    limited = expect_failure(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        stranger.call,
        "JoinTable",
        lpb.JoinTableRequest(invite_code=code),
    )
    assert int(limited.metadata["retry_after_ms"]) > 0


def test_leaving_before_the_deal_frees_the_seat_and_passes_the_host(server: Server) -> None:
    host, guest = player(server, "host"), player(server, "guest")
    opened = open_table(host)
    table_id = opened.table.table_id
    guest.call("JoinTable", lpb.JoinTableRequest(table_id=table_id, seat=1))
    left = host.call("LeaveTable", lpb.LeaveTableRequest(table_id=table_id)).table
    assert left.seats[0].state == lpb.TABLE_SEAT_STATE_OPEN
    assert left.host_player_id == guest.id
    # The leaver's token is worthless now, even once the table starts.
    again = host.call("JoinTable", lpb.JoinTableRequest(table_id=table_id, seat=0))
    assert again.seat_token != opened.seat_token
    guest.call("LeaveTable", lpb.LeaveTableRequest(table_id=table_id))
    closed = host.call("LeaveTable", lpb.LeaveTableRequest(table_id=table_id)).table
    assert state_name(closed) == "TABLE_STATE_CLOSED" and closed.close_reason == "empty"
    failure = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION,
        guest.call,
        "JoinTable",
        lpb.JoinTableRequest(table_id=table_id),
    )
    assert failure.reason == "TABLE_CLOSED"


def test_the_host_starts_early_with_bots_and_only_the_host(server: Server) -> None:
    host, guest = player(server, "host"), player(server, "guest")
    opened = open_table(host, bot_level=pb.BOT_LEVEL_EASY)
    table_id = opened.table.table_id
    guest.call("JoinTable", lpb.JoinTableRequest(table_id=table_id))
    refused = expect_failure(
        grpc.StatusCode.PERMISSION_DENIED,
        guest.call,
        "StartTable",
        lpb.StartTableRequest(table_id=table_id),
    )
    assert refused.reason == "NOT_HOST"
    started = host.call("StartTable", lpb.StartTableRequest(table_id=table_id)).table
    assert state_name(started) == "TABLE_STATE_STARTED"
    bots = [s for s in started.seats if s.state == lpb.TABLE_SEAT_STATE_BOT]
    assert len(bots) == 2 and all(s.bot_level == pb.BOT_LEVEL_EASY for s in bots)
    v = view(server, table_id, opened.seat_token)
    assert [s.control for s in v.seats].count(pb.SEAT_CONTROL_BOT) == 2
    for request in (lpb.JoinTableRequest(table_id=table_id),):
        late = expect_failure(
            grpc.StatusCode.FAILED_PRECONDITION, player(server).call, "JoinTable", request
        )
        assert late.reason == "TABLE_STARTED"


def test_an_unattended_table_fills_with_bots_or_closes(server: Server) -> None:
    filled = open_table(player(server, "a"), wait_seconds=1).table
    closing = open_table(player(server, "b"), wait_seconds=1, unattended=lpb.UNATTENDED_CLOSE).table
    watcher = player(server, "w")
    for table, want in ((filled, "TABLE_STATE_STARTED"), (closing, "TABLE_STATE_CLOSED")):
        got = table
        deadline = time.monotonic() + 10
        while state_name(got) != want and time.monotonic() < deadline:
            got = watcher.call(
                "GetTable",
                lpb.GetTableRequest(
                    table_id=table.table_id, after_version=got.version, wait_ms=3000
                ),
            ).table
        assert state_name(got) == want
    assert closing.deadline_ms - closing.created_ms == 1000


def test_watch_table_follows_a_table_until_it_starts(server: Server) -> None:
    host, guest = player(server, "host"), player(server, "guest")
    table_id = open_table(host, bot_seats=[1, 2]).table.table_id
    stream = host.lobby.WatchTable(
        lpb.WatchTableRequest(table_id=table_id), metadata=host.md, timeout=20
    )
    first = next(stream).table
    assert state_name(first) == "TABLE_STATE_WAITING"
    guest.call("JoinTable", lpb.JoinTableRequest(table_id=table_id))
    rest = [m.table for m in stream]  # the stream ends once the table has started
    assert state_name(rest[-1]) == "TABLE_STATE_STARTED"
    assert [t.version for t in [first, *rest]] == sorted({t.version for t in [first, *rest]})


def test_refusals_name_what_is_wrong_and_change_nothing(server: Server) -> None:
    host = player(server, "host")
    bad_rules = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT,
        open_table,
        host,
        ruleset=pb.Ruleset(preset="classic", suicide=True, partnerships=False),
    )
    assert bad_rules.reason == "INVALID_RULESET"
    assert {"ruleset.suicide", "ruleset.partnerships"} <= set(bad_rules.fields)
    for kw, reason in (
        ({"bot_seats": [4]}, "BAD_SEAT"),
        ({"bot_seats": [1, 1]}, "BAD_SEAT"),
        ({"seat": 1, "bot_seats": [1]}, "BAD_SEAT"),
        ({"bot_level": 99}, "BAD_BOT_LEVEL"),
        ({"turn_timer_ms": -1}, "BAD_TURN_TIMER"),
        ({"wait_seconds": 10**6}, "BAD_WAIT_SECONDS"),
        ({"visibility": 9}, "BAD_VISIBILITY"),
    ):
        f = expect_failure(grpc.StatusCode.INVALID_ARGUMENT, open_table, host, **kw)
        assert f.reason == reason, (kw, f)
    # Nothing of those was opened: the host is free to open one now.
    opened = open_table(host)
    twice = expect_failure(grpc.StatusCode.FAILED_PRECONDITION, open_table, host)
    assert twice.reason == "ALREADY_SEATED"
    assert twice.metadata["table_id"] == opened.table.table_id
    other = player(server)
    f = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT, other.call, "JoinTable", lpb.JoinTableRequest()
    )
    assert f.reason == "TABLE_OR_CODE"
    f = expect_failure(
        grpc.StatusCode.NOT_FOUND,
        other.call,
        "JoinTable",
        lpb.JoinTableRequest(table_id="00000000deadbeef"),
    )
    assert f.reason == "TABLE_NOT_FOUND"
    f = expect_failure(
        grpc.StatusCode.INVALID_ARGUMENT,
        other.call,
        "JoinTable",
        lpb.JoinTableRequest(table_id="../x"),
    )
    assert f.reason == "BAD_TABLE_ID"
    other.call("JoinTable", lpb.JoinTableRequest(table_id=opened.table.table_id, seat=1))
    taken = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION,
        player(server).call,
        "JoinTable",
        lpb.JoinTableRequest(table_id=opened.table.table_id, seat=1),
    )
    assert taken.reason == "SEAT_TAKEN"
    # A seated player cannot queue for quick play.
    queued = expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION, other.call, "QuickPlay", lpb.QuickPlayRequest()
    )
    assert queued.reason == "ALREADY_SEATED"


def test_credentials_are_refused_with_a_reason(server: Server) -> None:
    from lobby_harness import credential

    stub = player(server).lobby
    cases = {
        "CREDENTIAL_REQUIRED": (),
        "CREDENTIAL_EXPIRED": bearer(credential("late", exp=int(time.time()) - 3600)),
        "WRONG_AUDIENCE": bearer(credential("aud", aud="someone-else")),
        "MALFORMED_CREDENTIAL": bearer("not.a.jwt"),
    }
    for reason, md in cases.items():
        f = expect_failure(
            grpc.StatusCode.UNAUTHENTICATED,
            stub.ListTables,
            lpb.ListTablesRequest(),
            metadata=md,
            timeout=RPC_TIMEOUT,
        )
        assert f.reason == reason, (reason, f)


def test_a_waiting_table_survives_a_restart(tmp_path: Path) -> None:
    srv = Server(tmp_path / "restart", *LOBBY_FLAGS)
    srv.start()
    try:
        host = player(srv, "host")
        opened = open_table(host, bot_seats=[1, 2])
        srv.kill9()
        srv.start()
        guest = player(srv, "guest")
        joined = guest.call("JoinTable", lpb.JoinTableRequest(table_id=opened.table.table_id))
        assert state_name(joined.table) == "TABLE_STATE_STARTED"
        assert view(srv, opened.table.table_id, opened.seat_token).seat == 0
    finally:
        srv.stop()


def test_lobby_changes_are_rate_limited_per_player_and_tables_are_bounded(
    make_server: Callable[..., Server],
) -> None:
    flags = list(LOBBY_FLAGS)
    flags[flags.index("--lobby-calls-per-second") + 1] = "1"  # bursts of 4
    srv = make_server(*flags, "--max-waiting-tables", "2")
    busy = player(srv, "busy")
    reasons = []
    for _ in range(6):
        try:
            busy.call("QuickPlay", lpb.QuickPlayRequest())
            busy.call("CancelTicket", lpb.CancelTicketRequest())
        except grpc.RpcError as e:
            reasons.append(failure_of(e).reason)
            break
    assert reasons == ["RATE_LIMITED"], reasons
    # Another player is not limited by that one; the third waiting table is refused.
    for _ in range(2):
        open_table(player(srv, "host"))
    full = expect_failure(grpc.StatusCode.RESOURCE_EXHAUSTED, open_table, player(srv, "third"))
    assert full.reason == "TOO_MANY_TABLES"


def test_a_filtered_poll_answers_within_its_wait_while_other_tables_change(
    server: Server,
) -> None:
    rules = pb.Ruleset(preset="polish")
    viewer = player(server, "poller")
    start = viewer.call(
        "ListTables", lpb.ListTablesRequest(filter=lpb.LobbyFilter(ruleset=rules))
    ).version
    stop = threading.Event()

    def churn() -> None:  # classic tables open and close: changes outside the filter
        while not stop.is_set():
            p = player(server, "churn")
            opened = open_table(p)
            p.call("LeaveTable", lpb.LeaveTableRequest(table_id=opened.table.table_id))
            time.sleep(0.1)

    churner = threading.Thread(target=churn, daemon=True)
    churner.start()
    try:
        t0 = time.monotonic()
        quiet = viewer.call(
            "PollLobby",
            lpb.PollLobbyRequest(
                filter=lpb.LobbyFilter(ruleset=rules), after_version=start, wait_ms=1000
            ),
        ).changes
        took = time.monotonic() - t0
    finally:
        stop.set()
        churner.join(timeout=10)
    assert not quiet.tables and not quiet.removed_table_ids
    assert quiet.version > start, "the version moves past the changes it skipped"
    assert 0.9 <= took < 2.0, took
