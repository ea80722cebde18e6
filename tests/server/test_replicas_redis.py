"""Several server replicas on one Redis (``--store redis``): real processes on
loopback, real redis-server, real channels.

A match's seats connect to different replicas and play; a replica is killed
mid-hand and its clients move to another; the same action goes through two
replicas at once; bots and turn timers act once whichever replicas hold the
match, and a replica takes over a match whose driver died; every replica
restarts; Redis restarts (AOF, appendfsync always); Redis goes away for a few
seconds.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable

import grpc
from redis_harness import RedisServer, RedisTarget
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Deadline,
    Server,
    StreamReader,
    Table,
    choose,
    create_match,
    expect_failure,
    get_match,
    get_view,
    new_action_id,
    seats_to_act,
    spectate,
    stream_events,
    submit,
    wait_until,
    wire,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb

Replicas = list[Server]


def replicas(
    make_server: Callable[..., Server],
    target: RedisTarget | str,
    prefix: str,
    n: int = 3,
    *extra: str,
) -> Replicas:
    if isinstance(target, str):
        target = RedisTarget(target)
    return [
        make_server(
            "--store",
            "redis",
            "--redis-url",
            target.url,
            *target.flags,
            "--redis-prefix",
            prefix,
            "--actions-per-second",
            "10000",
            "--takeover-ms",
            "500",
            *extra,
        )
        for _ in range(n)
    ]


def exported_actions(srv: Server, match_id: str) -> list[list[object]]:
    res = srv.stub.ExportMatch(
        pb.ExportMatchRequest(match_id=match_id), metadata=OP, timeout=RPC_TIMEOUT
    )
    return json.loads(res.record_json)["actions"]  # type: ignore[no-any-return]


def act_once(srv: Server, table: Table, seat: int) -> bool:
    """Seat ``seat`` acts through ``srv`` if the match waits for it there;
    False if it does not (yet). A refusal because that replica was a moment
    behind (STALE_SEQUENCE, NOT_YOUR_TURN) is not an error: try again."""
    view = get_view(srv.stub, table, seat)
    if seat not in seats_to_act(view) or not view.legal_actions:
        return False
    try:
        submit(srv.stub, table, seat, choose(view), expected_seq=view.as_of_seq)
    except grpc.RpcError as err:
        if err.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNAVAILABLE):
            return False
        raise
    return True


def play(
    where: dict[int, Server], table: Table, until: Callable[[pb.SeatView], bool], timeout: float
) -> int:
    """Each seat acts through its own replica (``where``) until ``until`` holds
    for a view; returns how many actions were made."""
    d = Deadline(timeout)
    acted = 0
    while True:
        d.check("the match to advance")
        any_seat = next(iter(where))
        if until(get_view(where[any_seat].stub, table, any_seat)):
            return acted
        moved = False
        for seat, srv in where.items():
            if act_once(srv, table, seat):
                acted += 1
                moved = True
        if not moved:
            time.sleep(0.005)


def over(view: pb.SeatView) -> bool:
    return view.phase == pb.PHASE_MATCH_OVER


def test_a_match_whose_seats_use_three_replicas_plays_to_the_end(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    a, b, c = replicas(make_server, shared_redis, redis_prefix)
    table = create_match(a.stub, seed=11, target_score=150)
    where = {0: a, 1: b, 2: c, 3: a}
    for seat, srv in where.items():
        srv.stub.ClaimSeat(
            pb.ClaimSeatRequest(match_id=table.match_id),
            metadata=(("authorization", f"Bearer {table.tokens[seat]}"),),
            timeout=RPC_TIMEOUT,
        )
    streams = {s: StreamReader(stream_events(srv.stub, table, s)) for s, srv in where.items()}
    watcher = StreamReader(
        spectate(c.stub, table.match_id), stop=lambda e: e.HasField("match_ended")
    )
    acted = play(where, table, over, timeout=120)
    assert acted > 52
    last = get_match(b.stub, table.match_id).last_seq
    watcher.join(30)
    for seat, reader in streams.items():
        reader.wait_seq(last_visible(a, table, seat, last), timeout=30)
        reader.cancel()
        # The same events as the seat's stream on any other replica, no gap, no duplicate.
        other = {a: b, b: c, c: a}[where[seat]]
        again = StreamReader(stream_events(other.stub, table, seat))
        again.wait_seq(reader.last_seq)
        again.cancel()
        assert wire(reader.events) == wire(e for e in again.events if e.seq <= reader.last_seq)
    assert watcher.events[-1].HasField("match_ended")
    assert [e.seq for e in watcher.events] == sorted({e.seq for e in watcher.events})
    for srv in (a, b, c):
        assert get_match(srv.stub, table.match_id).phase == pb.PHASE_MATCH_OVER


def last_visible(srv: Server, table: Table, seat: int, last: int) -> int:
    """The seat's latest visible seq, at most ``last``."""
    events = StreamReader(stream_events(srv.stub, table, seat), stop=lambda e: e.seq >= last)
    try:
        events.wait_for(lambda evs: bool(evs) and evs[-1].seq >= last - 5, "the seat's stream")
        time.sleep(0.2)
    finally:
        events.cancel()
    return events.last_seq


def test_kill_9_of_a_replica_mid_hand_its_clients_resume_on_another(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    a, b, c = replicas(make_server, shared_redis, redis_prefix)
    table = create_match(a.stub, seed=12, target_score=100)
    where = {0: a, 1: b, 2: c, 3: b}
    reader = StreamReader(stream_events(b.stub, table, 1))
    play(where, table, lambda v: v.phase == pb.PHASE_PLAYING and len(v.hand) <= 8, timeout=60)
    before = reader.last_seq
    b.kill9()  # seats 1 and 3 lose their replica
    reader.join(15)
    assert reader.error is not None
    moved = {0: a, 1: c, 2: c, 3: a}
    resumed = StreamReader(stream_events(c.stub, table, 1, after_seq=reader.last_seq))
    play(moved, table, over, timeout=120)
    last = get_match(a.stub, table.match_id).last_seq
    resumed.wait_for(lambda evs: bool(evs) and evs[-1].HasField("match_ended"), "the end", 30)
    resumed.cancel()
    whole = StreamReader(stream_events(a.stub, table, 1), stop=lambda e: e.HasField("match_ended"))
    whole.join(30)
    assert before > 0 and last >= whole.last_seq
    # What seat 1 saw before the kill plus what it saw after: its whole stream, once each.
    assert wire(reader.events + resumed.events) == wire(whole.events)


def race(
    servers: tuple[Server, ...], table: Table, seat: int, action: pb.Action, action_id: str
) -> list[pb.SubmitActionResponse | grpc.RpcError]:
    """The same SubmitAction sent through each of ``servers`` at the same moment."""
    answers: list[pb.SubmitActionResponse | grpc.RpcError] = []
    start = threading.Barrier(len(servers))

    def send(srv: Server) -> None:
        start.wait(5)
        try:
            answers.append(submit(srv.stub, table, seat, action, action_id=action_id))
        except grpc.RpcError as err:
            answers.append(err)

    threads = [threading.Thread(target=send, args=(srv,)) for srv in servers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(RPC_TIMEOUT)
    return answers


def test_the_same_action_through_two_replicas_at_once_is_applied_once(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    a, b, _ = replicas(make_server, shared_redis, redis_prefix)
    table = create_match(a.stub, seed=13)
    for _ in range(30):
        view = get_view(a.stub, table, 0)
        seat = seats_to_act(view)[0]
        view = get_view(a.stub, table, seat)
        action, action_id = choose(view), new_action_id()
        answers = race((a, b), table, seat, action, action_id)
        ok = [r for r in answers if isinstance(r, pb.SubmitActionResponse)]
        assert len(ok) == 2, answers  # the loser answers with the winner's result
        assert ok[0].last_seq == ok[1].last_seq
        assert wire(ok[0].events) == wire(ok[1].events)
    assert len(exported_actions(b, table.match_id)) == 30


def test_bots_and_turn_timers_act_once_and_another_replica_takes_over(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    a, b = replicas(make_server, shared_redis, redis_prefix, 2, "--bot-delay-ms", "150")
    # Seat 0 is human with a one-second turn timer; seats 1 to 3 are bots.
    table = create_match(a.stub, bots=(1, 2, 3), seed=14, turn_timer_ms=1000)
    watch_a = StreamReader(spectate(a.stub, table.match_id))
    watch_b = StreamReader(spectate(b.stub, table.match_id))  # b holds the match too
    # Nobody acts for seat 0: its timer stands a bot in, once; the bots play on.
    watch_b.wait_for(lambda evs: sum(e.HasField("card_played") for e in evs) >= 8, "cards", 30)
    a.kill9()  # the replica that drove the match is gone: b takes it over
    watch_a.join(15)
    watch_b.wait_for(lambda evs: sum(e.HasField("card_played") for e in evs) >= 30, "b's play", 60)
    watch_b.cancel()
    events = watch_b.events
    # What b's spectator saw is the public log as b has it now: no gap, no duplicate.
    again = StreamReader(spectate(b.stub, table.match_id), limit=len(events))
    again.join(15)
    assert wire(events) == wire(again.events)
    stand_ins = [e for e in events if e.HasField("seat_control_changed")]
    assert [(e.seat_control_changed.seat, e.seat_control_changed.reason) for e in stand_ins] == [
        (0, "turn_timer")
    ]
    cards = [
        (e.card_played.seat, e.card_played.card.suit, e.card_played.card.rank)
        for e in events
        if e.HasField("card_played")
    ]
    assert len(cards) == len(set(cards))  # no card played twice
    # The stored record agrees: each card once, by the seat the stream showed.
    plays = [
        seat
        for seat, action in exported_actions(b, table.match_id)
        if str(action).startswith("play")
    ]
    assert plays[: len(cards)] == [seat for seat, _, _ in cards]


def test_every_replica_restarted_loses_nothing(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    a, b = replicas(make_server, shared_redis, redis_prefix, 2)
    table = create_match(a.stub, seed=15)
    play(
        {0: a, 1: b, 2: a, 3: b},
        table,
        lambda v: len(v.hand) <= 9 and v.phase == pb.PHASE_PLAYING,
        60,
    )
    before = exported_actions(a, table.match_id)
    last = get_match(b.stub, table.match_id).last_seq
    for srv in (a, b):
        srv.stop()
    for srv in (a, b):
        srv.start()
    assert exported_actions(b, table.match_id) == before
    assert get_match(a.stub, table.match_id).last_seq == last
    assert table.match_id in [
        m.match_id
        for m in a.stub.ListMatches(
            pb.ListMatchesRequest(), metadata=OP, timeout=RPC_TIMEOUT
        ).matches
    ]
    play({0: b, 1: a, 2: b, 3: a}, table, over, timeout=120)


def test_redis_restarted_with_aof_always_loses_no_acknowledged_action(
    make_server: Callable[..., Server], make_redis: type[RedisServer]
) -> None:
    redis = make_redis(aof=True)
    (a,) = replicas(make_server, redis.url, "aof", 1)
    table = create_match(a.stub, seed=16)
    play(
        {s: a for s in range(4)},
        table,
        lambda v: len(v.hand) <= 10 and v.phase == pb.PHASE_PLAYING,
        60,
    )
    before = exported_actions(a, table.match_id)
    redis.kill9()
    redis.start()
    a.kill9()
    a.start()
    assert exported_actions(a, table.match_id) == before


def submit_once_available(
    srv: Server, table: Table, seat: int, action: pb.Action, action_id: str, what: str
) -> pb.SubmitActionResponse:
    """Send the action (the same id every time) until it is not UNAVAILABLE."""
    d = Deadline(20)
    while True:
        try:
            return submit(srv.stub, table, seat, action, action_id=action_id)
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.UNAVAILABLE, err
            d.check(what)
            time.sleep(0.2)


def test_redis_away_gives_unavailable_then_service_resumes(
    make_server: Callable[..., Server], make_redis: type[RedisServer]
) -> None:
    redis = make_redis(aof=True)
    a, b = replicas(make_server, redis.url, "away", 2)
    table = create_match(a.stub, seed=17)
    play({s: a for s in range(4)}, table, lambda v: v.phase == pb.PHASE_PLAYING, 60)
    before = exported_actions(a, table.match_id)
    watcher = StreamReader(spectate(b.stub, table.match_id))  # b only follows
    watcher.wait_for(bool, "b's spectator")
    redis.stop()
    view = get_view(a.stub, table, 0)
    seat = seats_to_act(view)[0]
    action = choose(get_view(a.stub, table, seat))
    failure = expect_failure(grpc.StatusCode.UNAVAILABLE, submit, a.stub, table, seat, action)
    assert failure.reason in ("STORE_FAILED", "STORE_UNAVAILABLE", "MATCH_RELOADING")
    time.sleep(2)
    redis.start()
    done = submit_once_available(a, table, seat, action, "after-redis", "Redis to be back")
    actions = exported_actions(a, table.match_id)
    assert actions[: len(before)] == before and len(actions) == len(before) + 1
    # The replica that only followed serves the new event too, to a client
    # resuming where its stream stopped (it may have ended while Redis was away).
    resumed = StreamReader(spectate(b.stub, table.match_id, after_seq=watcher.last_seq))
    resumed.wait_seq(done.last_seq, timeout=20)
    resumed.cancel()
    watcher.cancel()


def test_an_unknown_match_id_on_redis_is_not_found(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    (a,) = replicas(make_server, shared_redis, redis_prefix, 1)
    for bad in ("nope", "x" * 64, "a}b{c", "../etc"):
        expect_failure(
            grpc.StatusCode.NOT_FOUND,
            a.stub.GetMatch,
            pb.GetMatchRequest(match_id=bad),
            metadata=OP,
            timeout=RPC_TIMEOUT,
        )


def test_a_replica_that_never_acts_streams_every_event_live(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    a, b = replicas(make_server, shared_redis, redis_prefix, 2)
    table = create_match(a.stub, seed=18)
    on_b = {s: StreamReader(stream_events(b.stub, table, s)) for s in range(4)}
    watcher = StreamReader(spectate(b.stub, table.match_id))
    play(
        {s: a for s in range(4)},
        table,
        lambda v: len(v.hand) <= 11 and v.phase == pb.PHASE_PLAYING,
        60,
    )
    for seat, reader in on_b.items():
        direct = StreamReader(stream_events(a.stub, table, seat))
        direct.wait_for(lambda evs: bool(evs) and evs[-1].HasField("card_played"), "a's stream")
        time.sleep(0.1)
        direct.cancel()
        # Only a acted; b's streams were woken by its appends (no call to b in between).
        reader.wait_seq(direct.last_seq, timeout=10)
        reader.cancel()
        assert wire(reader.events[: len(direct.events)]) == wire(direct.events)
    watcher.wait_for(lambda evs: sum(e.HasField("card_played") for e in evs) >= 8, "8 cards on b")
    watcher.cancel()


def claim(srv: Server, table: Table, seat: int) -> None:
    srv.stub.ClaimSeat(
        pb.ClaimSeatRequest(match_id=table.match_id),
        metadata=(("authorization", f"Bearer {table.tokens[seat]}"),),
        timeout=RPC_TIMEOUT,
    )


def test_a_seats_rate_limit_holds_across_replicas(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    # 1 action a second, a burst of 2: whichever replica the calls go to.
    a, b = replicas(make_server, shared_redis, redis_prefix, 2, "--actions-per-second", "1")
    table = create_match(a.stub, seed=19)
    codes = []
    for i in range(8):
        try:
            claim((a, b)[i % 2], table, 0)
            codes.append("OK")
        except grpc.RpcError as err:
            codes.append(err.code().name)
    assert codes[:2] == ["OK", "OK"]
    assert codes.count("OK") <= 3  # the burst, and at most one token refilled meanwhile
    assert "RESOURCE_EXHAUSTED" in codes[2:]
    failure = expect_failure(grpc.StatusCode.RESOURCE_EXHAUSTED, claim, b, table, 0)
    assert failure.reason == "RATE_LIMITED"


def test_an_action_past_the_seats_shared_allowance_stores_nothing_and_a_retry_later_plays(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    # The append takes the seat's token from the bucket the replicas share:
    # two claims on a spend the burst, so b, whose own allowance is full,
    # must refuse the action after applying it, and undo it.
    a, b = replicas(make_server, shared_redis, redis_prefix, 2, "--actions-per-second", "1")
    table = create_match(a.stub, seed=21)
    seat = seats_to_act(get_view(a.stub, table, 0))[0]
    claim(a, table, seat)
    claim(a, table, seat)
    before = get_view(b.stub, table, seat, min_seq=get_view(a.stub, table, seat).as_of_seq)
    action, action_id = choose(before), new_action_id()
    refused = expect_failure(
        grpc.StatusCode.RESOURCE_EXHAUSTED, submit, b.stub, table, seat, action, action_id=action_id
    )
    assert refused.reason == "RATE_LIMITED"
    for srv in (a, b):
        view = get_view(srv.stub, table, seat)
        assert view.as_of_seq == before.as_of_seq and view.to_act == seat, (
            "the refused action shows"
        )
        assert list(view.legal_actions) == list(before.legal_actions)
    time.sleep(1.2)  # a token again
    done = submit(b.stub, table, seat, action, action_id=action_id)
    assert done.last_seq > before.as_of_seq
    assert get_view(a.stub, table, seat, min_seq=done.last_seq).to_act != seat


def test_the_stream_limit_of_a_match_holds_across_replicas(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    a, b = replicas(make_server, shared_redis, redis_prefix, 2, "--streams-per-match", "3")
    table = create_match(a.stub, seed=20)
    open_ = [StreamReader(spectate(srv.stub, table.match_id)) for srv in (a, a, b)]
    for reader in open_:
        reader.wait_for(bool, "the stream's first events")
    fourth = StreamReader(spectate(b.stub, table.match_id))
    fourth.join(10)
    assert fourth.error is not None and fourth.error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    open_[0].cancel()  # a slot frees on a: b may open one again
    d = Deadline(10)
    while True:
        again = StreamReader(spectate(b.stub, table.match_id))
        time.sleep(0.3)
        if not again.done:
            break
        d.check("a freed slot to be usable on the other replica")
    again.cancel()
    for reader in open_[1:]:
        reader.cancel()


def test_streams_opened_at_once_on_one_replica_all_count_on_the_other(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    """Counts sent at once must reach the store newest last: were an older
    count recorded after a newer one, the other replica would see free slots."""
    a, b = replicas(make_server, shared_redis, redis_prefix, 2, "--streams-per-match", "6")
    table = create_match(a.stub, seed=21)
    burst = [StreamReader(spectate(a.stub, table.match_id)) for _ in range(6)]
    for reader in burst:
        reader.wait_for(bool, "the stream's first events")
    extra = StreamReader(spectate(b.stub, table.match_id))
    extra.join(10)
    assert extra.error is not None and extra.error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    for reader in burst:
        reader.cancel()


def test_with_wait_an_action_is_acknowledged_only_once_a_redis_replica_has_it(
    make_server: Callable[..., Server], make_redis: type[RedisServer]
) -> None:
    primary = make_redis(aof=True, extra=("--repl-diskless-sync-delay", "0"))
    follower = make_redis(extra=("--replicaof", "127.0.0.1", str(primary.port)))
    wait_until(primary.replica_online, "the replica's first sync", 20)
    # A second to confirm: on a loaded machine a live replica took over 300 ms
    # to confirm a CreateMatch.
    (a,) = replicas(
        make_server, primary.url, "wait", 1,
        "--redis-wait-replicas", "1", "--redis-wait-timeout-ms", "1000",
    )  # fmt: skip
    table = create_match(a.stub, seed=21)
    play({s: a for s in range(4)}, table, lambda v: v.phase == pb.PHASE_PLAYING, 60)
    before = exported_actions(a, table.match_id)
    follower.kill9()  # the only Redis replica is gone: no write can be confirmed
    view = get_view(a.stub, table, 0)
    seat = seats_to_act(view)[0]
    action = choose(get_view(a.stub, table, seat))
    failure = expect_failure(
        grpc.StatusCode.UNAVAILABLE, submit, a.stub, table, seat, action, action_id="unconfirmed"
    )
    assert failure.reason == "STORE_FAILED" and "replicas confirmed" in failure.message
    assert "within 1000 ms" in failure.message
    follower.start()
    # The retry, once the replica is back: applied once, whatever the primary kept.
    submit_once_available(a, table, seat, action, "unconfirmed", "writes to be confirmed again")
    actions = exported_actions(a, table.match_id)
    assert actions[: len(before)] == before and len(actions) == len(before) + 1


def test_a_view_asked_at_least_as_new_as_an_action_made_on_another_replica_is(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    """A client that moved replicas names the last seq it saw (``min_seq``):
    the replica it reaches reads the match first if it is behind."""
    a, b = replicas(make_server, shared_redis, redis_prefix, 2)
    table = create_match(a.stub, seed=22)
    get_view(b.stub, table, 0)  # b holds the match, and follows it
    for _ in range(5):
        # b misses the next append: its subscription is gone for a moment.
        shared_redis.drop_subscriptions()
        seat = seats_to_act(get_view(a.stub, table, 0))[0]
        done = submit(a.stub, table, seat, choose(get_view(a.stub, table, seat)))
        view = get_view(b.stub, table, seat, min_seq=done.last_seq)  # at once, on b
        assert view.as_of_seq >= done.last_seq
        time.sleep(1.0)  # b subscribes again
    ahead = get_match(a.stub, table.match_id).last_seq + 1
    failure = expect_failure(
        grpc.StatusCode.OUT_OF_RANGE, get_view, b.stub, table, 0, min_seq=ahead
    )
    assert failure.reason == "SEQ_AHEAD" and failure.metadata["last_seq"] == str(ahead - 1)


def test_a_match_that_keeps_acting_writes_its_due_time_once_per_half_a_timer(
    make_server: Callable[..., Server], redis_server: RedisServer, redis_prefix: str
) -> None:
    """Every action moves a timed match's due time later; the due set's
    entry may lag behind it (never ahead), so an append writes it only when
    the entry is nearer to now than half the way to the new due time. Forty
    quick actions under a 60 s timer write it once or twice, not forty
    times."""
    (a,) = replicas(make_server, redis_server.url, redis_prefix, 1)
    table = create_match(a.stub, seed=21, turn_timer_ms=60_000)
    due_key = f"{redis_prefix}:due"
    monitor = subprocess.Popen(
        ["redis-cli", "-p", str(redis_server.port), "monitor"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.3)  # MONITOR is listening
        acted = play({s: a for s in range(4)}, table, lambda v: len(v.hand) <= 5, 60)
        time.sleep(0.3)
    finally:
        monitor.terminate()
    out, _ = monitor.communicate(timeout=10)
    writes = [line for line in out.splitlines() if '"zadd"' in line.lower() and due_key in line]
    assert acted >= 30, acted
    assert 1 <= len(writes) <= 3, (acted, writes)


def test_a_due_time_written_early_is_taken_over_when_it_really_falls_due(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    """The replica that drove a timed match dies after quick actions whose
    due times it did not all write: another claims the early entry, finds
    the match not due, and stands a bot in for the seat at its turn's end,
    not before (4 s timer, 0.5 s takeover)."""
    a, b = replicas(make_server, shared_redis, redis_prefix, 2)
    table = create_match(a.stub, seed=22, turn_timer_ms=4_000)
    watch = StreamReader(spectate(b.stub, table.match_id))
    play({s: a for s in range(4)}, table, lambda v: len(v.hand) <= 11, 60)
    a.kill9()
    watch.wait_for(
        lambda evs: any(e.HasField("seat_control_changed") for e in evs), "a stand-in", 30
    )
    watch.cancel()
    at = next(i for i, e in enumerate(watch.events) if e.HasField("seat_control_changed"))
    stand_in, last = watch.events[at], watch.events[at - 1]  # the last action's event
    assert stand_in.seat_control_changed.reason == "turn_timer"
    waited = stand_in.time_ms - last.time_ms
    assert 4_000 <= waited <= 9_000, waited
