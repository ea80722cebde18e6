"""Crash safety: kill -9 the server mid-hand, restart it on the same database,
and find every acknowledged action, the same events, and streams that resume."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Callable

import grpc
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Server,
    Step,
    StreamReader,
    Table,
    choose,
    create_match,
    expect_failure,
    get_match,
    get_view,
    kind,
    play_humans,
    read_until,
    seats_to_act,
    spectate,
    step_humans,
    stream_events,
    submit,
    wait_until,
    wire,
)
from spades_server import convert
from spades_server.gen.spades.v1 import spades_pb2 as pb


def full_stream(srv: Server, table: Table, seat: int | None, last_seq: int) -> list[pb.MatchEvent]:
    call = (
        spectate(srv.stub, table.match_id) if seat is None else stream_events(srv.stub, table, seat)
    )
    events = read_until(call, last_seq)
    assert events[-1].seq == last_seq
    return events


def test_acknowledged_actions_survive_kill_9_and_streams_resume(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server()
    table = create_match(srv.stub, seed=61, target_score=500)
    before_crash = StreamReader(spectate(srv.stub, table.match_id))

    # A player acts as fast as it can; the server is killed under it.
    acked: list[Step] = []
    stopped: list[Exception] = []
    stub = srv.stub

    def player() -> None:
        try:
            for _ in range(200):
                step = step_humans(stub, table)
                assert step is not None
                acked.append(step)
        except (grpc.RpcError, ValueError) as err:  # ValueError: the channel was closed
            stopped.append(err)

    thread = threading.Thread(target=player, daemon=True)
    thread.start()
    wait_until(lambda: len(acked) >= 20, "20 acknowledged actions", timeout=30)
    srv.kill9()
    thread.join(15)
    assert not thread.is_alive()
    assert stopped, "the player was still acting when the server died"
    assert 20 <= len(acked) < 56, "killed mid-hand"
    before_crash.join(15)
    seen_before = list(before_crash.events)
    acked_seq = max(s.response.last_seq for s in acked)

    srv.start()  # same database
    stub = srv.stub
    summary = get_match(stub, table.match_id)
    assert summary.last_seq >= acked_seq
    assert summary.phase == pb.PHASE_PLAYING
    assert summary.hand_number == 0

    # Every acknowledged action is in the record, in order (plus at most the one in flight).
    exported = stub.ExportMatch(
        pb.ExportMatchRequest(match_id=table.match_id), metadata=OP, timeout=RPC_TIMEOUT
    )
    actions = json.loads(exported.record_json)["actions"]
    assert len(actions) in (len(acked), len(acked) + 1)
    assert actions[: len(acked)] == [[s.seat, str(convert.action_from_pb(s.action))] for s in acked]

    # The same events, on every seat's stream and the public one.
    public = full_stream(srv, table, None, summary.last_seq)
    by_seq = {e.seq: e for e in public}
    assert wire(by_seq[e.seq] for e in seen_before) == wire(seen_before)
    streams = {s: full_stream(srv, table, s, summary.last_seq) for s in range(4)}
    for step in acked:
        mine = {e.seq: e for e in streams[step.seat]}
        assert wire(mine[e.seq] for e in step.response.events) == wire(step.response.events)
    for seat in range(4):
        view = get_view(stub, table, seat)
        assert view.as_of_seq == summary.last_seq
        played = [e for e in public if e.HasField("card_played") and e.card_played.seat == seat]
        assert len(view.hand) == 13 - len(played)

    # A retry of the last acknowledged action is still recognised.
    last = acked[-1]
    again = submit(stub, table, last.seat, last.action, action_id=last.action_id)
    assert wire(again.events) == wire(last.response.events)
    assert get_match(stub, table.match_id).last_seq == summary.last_seq

    # A stream resumed from a sequence before the crash continues without a gap.
    resume_from = acked[len(acked) // 2].response.last_seq
    resumed = StreamReader(stream_events(stub, table, 0, after_seq=resume_from))
    for _ in range(12):
        assert step_humans(stub, table) is not None
    end = get_match(stub, table.match_id).last_seq
    whole = full_stream(srv, table, 0, end)
    resumed.wait_for(
        lambda evs: bool(evs) and evs[-1].seq == whole[-1].seq, "the resumed stream to catch up"
    )
    resumed.cancel()
    assert wire(resumed.events) == wire(e for e in whole if e.seq > resume_from)
    assert wire(e for e in whole if e.seq <= summary.last_seq) == wire(streams[0])


def test_an_imported_match_keeps_its_history_across_kill_9(
    make_server: Callable[..., Server],
) -> None:
    srv = make_server("--snapshot-every", "4")
    original = create_match(srv.stub, seed=62)
    play_humans(srv.stub, original, until=lambda v: len(v.tricks) >= 3)
    exported = srv.stub.ExportMatch(
        pb.ExportMatchRequest(match_id=original.match_id), metadata=OP, timeout=RPC_TIMEOUT
    )
    imported = srv.stub.ImportMatch(
        pb.ImportMatchRequest(snapshot=exported.snapshot), metadata=OP, timeout=RPC_TIMEOUT
    )
    copy = Table(
        imported.match.match_id, {t.seat: t.token for t in imported.seat_tokens}, imported.match
    )
    # Enough actions on the copy for several snapshots of it.
    steps = play_humans(srv.stub, copy, until=lambda v: len(v.tricks) >= 6)
    assert len(steps) >= 10
    views = [get_view(srv.stub, copy, s) for s in range(4)]
    record = srv.stub.ExportMatch(
        pb.ExportMatchRequest(match_id=copy.match_id), metadata=OP, timeout=RPC_TIMEOUT
    ).record_json

    srv.restart_after_kill()
    assert [get_view(srv.stub, copy, s) for s in range(4)] == views
    again = srv.stub.ExportMatch(
        pb.ExportMatchRequest(match_id=copy.match_id), metadata=OP, timeout=RPC_TIMEOUT
    )
    assert again.record_json == record
    assert len(json.loads(record)["actions"]) == len(
        json.loads(exported.record_json)["actions"]
    ) + len(steps)
    # And it plays on to the end of the hand.
    play_humans(srv.stub, copy, until=lambda v: v.hand_number == 1)


def test_retry_after_restart_returns_the_first_result_even_behind_a_snapshot(
    make_server: Callable[..., Server],
) -> None:
    # --snapshot-every 1: every acknowledged action but the last is inside a
    # stored snapshot when the server dies (a snapshot is committed no later
    # than the match's next action), so only the stored action ids can answer.
    srv = make_server("--snapshot-every", "1")
    table = create_match(srv.stub, seed=62)
    steps = [step_humans(srv.stub, table) for _ in range(6)]
    srv.kill9()
    srv.start()
    for step in steps:
        assert step is not None
        again = submit(srv.stub, table, step.seat, step.action, action_id=step.action_id)
        assert again == step.response
    assert get_match(srv.stub, table.match_id).last_seq == steps[-1].response.last_seq


def test_a_snapshot_is_stored_every_n_actions_even_when_the_last_action_triggers_it(
    make_server: Callable[..., Server],
) -> None:
    # The action that triggers a snapshot is acknowledged without waiting for
    # it; the snapshot must still land, also when the server stops right after.
    srv = make_server("--snapshot-every", "4")
    table = create_match(srv.stub, seed=63)
    for _ in range(8):
        assert step_humans(srv.stub, table) is not None
    assert srv.stop() == 0
    with contextlib.closing(sqlite3.connect(srv.db)) as db:
        row = db.execute(
            "SELECT action_count FROM snapshots WHERE match_id = ?", (table.match_id,)
        ).fetchone()
    assert row == (8,)


def test_a_write_the_store_refuses_changes_nothing_and_its_retry_applies_once(
    make_server: Callable[..., Server],
) -> None:
    # Another process holds the database's write lock longer than the server waits.
    srv = make_server("--sqlite-busy-timeout-ms", "200")
    table = create_match(srv.stub, seed=64)
    step_humans(srv.stub, table)
    seat = seats_to_act(get_view(srv.stub, table, 0))[0]
    view = get_view(srv.stub, table, seat)
    action = choose(view)
    before = get_match(srv.stub, table.match_id)
    watcher = StreamReader(spectate(srv.stub, table.match_id))
    watcher.wait_seq(before.last_seq)

    with contextlib.closing(sqlite3.connect(srv.db, isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")
        refused = expect_failure(
            grpc.StatusCode.UNAVAILABLE, submit, srv.stub, table, seat, action, action_id="x"
        )
        other.execute("ROLLBACK")
    assert refused.reason == "STORE_FAILED"

    # Nothing changed; the match was reloaded from the store, and the stream on
    # the old copy ended with a status to reconnect on.
    assert get_match(srv.stub, table.match_id) == before
    assert get_view(srv.stub, table, seat) == view
    watcher.join()
    assert watcher.error is not None and watcher.error.code() == grpc.StatusCode.UNAVAILABLE
    assert watcher.last_seq == before.last_seq

    accepted = submit(srv.stub, table, seat, action, action_id="x")
    assert accepted.events[0].seq == before.last_seq + 1
    assert submit(srv.stub, table, seat, action, action_id="x") == accepted
    after = get_match(srv.stub, table.match_id)
    assert after.last_seq == accepted.events[-1].seq
    # A bid: every event it caused is public, and each shows once.
    assert kind(action) == "bid"
    public = read_until(spectate(srv.stub, table.match_id), after.last_seq)
    assert wire(e for e in public if e.seq > before.last_seq) == wire(accepted.events)
