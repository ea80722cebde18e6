"""What only a Redis Cluster does to server replicas (``--redis-mode
cluster``): a primary killed and its replica promoted while matches play;
slots migrated (``redis-cli --cluster reshard``) while they play; quick play
across the failover of the primary that holds a shard of its queues. Everything else the
replicas promise on one Redis is checked on the cluster by
test_replicas_redis.py (``shared_redis``).

Each test has a cluster of its own (3 primaries, 3 replicas, node timeout
1 s) and two server replicas that acknowledge an action only once a Redis
replica has it too (``--redis-wait-replicas 1``).
"""

from __future__ import annotations

import asyncio
import random
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import grpc
from lobby_harness import Player as LobbyPlayer
from lobby_harness import player as lobby_player
from redis_harness import RedisCluster, RedisServer, RedisTarget
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Deadline,
    Server,
    StreamReader,
    Table,
    choose,
    create_match,
    get_view,
    new_action_id,
    seats_to_act,
    spectate,
    submit,
    wire,
)
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import lobby_pb2_grpc, spades_pb2_grpc
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.lobby import rules as rules_mod
from spades_server.lobby import shards
from spades_server.lobby.docs import (
    OPENED,
    PLAYER,
    SEARCHING,
    WAITING,
    PlayerDoc,
    SeatDoc,
    TableDoc,
    TicketDoc,
    player_key,
    queue_set,
    table_key,
    ticket_key,
)
from spades_server.lobby.ratings import Finished, Ledger
from spades_server.player_stats import Record
from spades_server.rating import Participant, rate
from spades_server.store.lobby import Tx
from spades_server.store.lobby_redis import RedisLobby
from spades_server.store.redis import RedisStore
from test_lobby_replicas import FLAGS, RULESETS, asks, check, storm
from test_replicas_redis import exported_actions, play, replicas

# Kill to the first acknowledged action on the killed shard's matches: the
# cluster's failure detection (node timeout 1 s, then a vote) and the old
# primary's restart as a replica, whose copy WAIT needs.
FAILOVER_BOUND_S = 10.0


def cluster_replicas(
    make_server: Callable[..., Server], cluster: RedisCluster, prefix: str, n: int = 2
) -> list[Server]:
    flags = ("--store", "redis", "--redis-mode", "cluster", "--redis-url", cluster.url)
    flags += ("--redis-prefix", prefix, "--redis-wait-replicas", "1")
    flags += ("--redis-wait-timeout-ms", "500", "--actions-per-second", "10000")
    return [make_server(*flags, "--takeover-ms", "500") for _ in range(n)]


class Player(threading.Thread):
    """Plays every seat of one match through ``servers`` in turn. Each action
    keeps its id until it is acknowledged (UNAVAILABLE: send it again), so
    the match's record must hold exactly the acknowledged actions, in order."""

    def __init__(self, servers: list[Server], table: Table) -> None:
        super().__init__(daemon=True)
        self.servers = servers
        self.table = table
        self.acks: list[tuple[int, float]] = []  # (seat, when)
        self.refusals = 0
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.last_seq = 0

    def run(self) -> None:
        try:
            turn = 0
            while not self.stop.is_set():
                srv = self.servers[turn % len(self.servers)]
                turn += 1
                if not self._act(srv):
                    return
        except BaseException as e:  # reported by the test
            self.error = e

    def _view(self, srv: Server, seat: int) -> pb.SeatView:
        """The seat's view as of the last acknowledged action at least: the
        other replica hears of it a moment later."""
        while True:
            try:
                view = get_view(srv.stub, self.table, seat)
                if view.as_of_seq >= self.last_seq:
                    return view
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                self.refusals += 1
            time.sleep(0.02)

    def _act(self, srv: Server) -> bool:
        view = self._view(srv, 0)
        if view.phase == pb.PHASE_MATCH_OVER:
            return False
        seat = seats_to_act(view)[0]
        action, action_id = choose(self._view(srv, seat)), new_action_id()
        while True:
            try:
                done = submit(srv.stub, self.table, seat, action, action_id=action_id)
                self.last_seq = max(self.last_seq, done.last_seq)
                self.acks.append((seat, time.monotonic()))
                return True
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                self.refusals += 1
                time.sleep(0.05)

    def finish(self) -> None:
        self.stop.set()
        self.join(60)
        assert not self.is_alive(), "a player did not stop"
        if self.error is not None:
            raise self.error


class Watcher:
    """A spectator of one match that resumes after its last event whenever
    its stream ends (its replica lost Redis for a moment)."""

    def __init__(self, srv: Server, match_id: str) -> None:
        self.srv = srv
        self.match_id = match_id
        self.readers = [StreamReader(spectate(srv.stub, match_id))]
        self.resumes = 0

    def poll(self) -> None:
        last = self.readers[-1]
        if last.done:
            self.readers.append(
                StreamReader(spectate(self.srv.stub, self.match_id, after_seq=self.last_seq()))
            )
            self.resumes += 1

    def last_seq(self) -> int:
        seqs = [r.last_seq for r in self.readers if r.events]
        return max(seqs) if seqs else 0

    def events(self) -> list[pb.MatchEvent]:
        return [e for r in self.readers for e in r.events]

    def close(self) -> None:
        for r in self.readers:
            r.cancel()


def check_match(servers: list[Server], player: Player, watcher: Watcher) -> None:
    """The record holds every acknowledged action, once, in order; the
    spectator saw every public event once, in order, as the log has it."""
    d = Deadline(10)
    while True:  # a replica hears of the other's last append a moment later
        record = exported_actions(servers[-1], player.table.match_id)
        if len(record) >= len(player.acks) or d.expired():
            break
        time.sleep(0.05)
    assert [seat for seat, _ in record] == [seat for seat, _ in player.acks]
    d = Deadline(30)
    whole = StreamReader(spectate(servers[0].stub, player.table.match_id))
    try:
        whole.wait_for(lambda evs: bool(evs) and watcher.last_seq() <= evs[-1].seq, "the log")
        while watcher.last_seq() < whole.last_seq:
            watcher.poll()
            d.check("the spectator to catch up")
            time.sleep(0.05)
    finally:
        whole.cancel()
        watcher.close()
    seen = watcher.events()
    assert wire(seen) == wire(e for e in whole.events if e.seq <= watcher.last_seq())


def slot_key(prefix: str, match_id: str) -> str:
    return f"{prefix}:{{{match_id}}}"


def start_matches(
    servers: list[Server], count: int, seed: int
) -> tuple[list[Player], list[Watcher]]:
    tables = [create_match(servers[0].stub, seed=seed + i, target_score=500) for i in range(count)]
    players = [Player(servers, t) for t in tables]
    watchers = [Watcher(servers[(i + 1) % len(servers)], t.match_id) for i, t in enumerate(tables)]
    for p in players:
        p.start()
    return players, watchers


def keep_watching(watchers: list[Watcher], seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for w in watchers:
            w.poll()
        time.sleep(0.05)


def wait_for_promotion(cluster: RedisCluster, key: str, old: RedisServer) -> RedisServer:
    d = Deadline(30)
    while True:
        try:
            owner = cluster.owner_of(key)
            if owner is not old:
                return owner
        except (AssertionError, StopIteration):
            pass
        d.check("a replica to be promoted")
        time.sleep(0.05)


def test_a_primary_killed_mid_match_loses_nothing_acknowledged_and_play_resumes(
    make_server: Callable[..., Server],
    make_cluster: Callable[..., RedisCluster],
    figures: Callable[[str], None],
) -> None:
    # With AOF: a node restarted under its old identity and empty would serve
    # its old slots, empty, until the cluster tells it that it lost them.
    cluster = make_cluster(aof=True)
    servers = cluster_replicas(make_server, cluster, "failover")
    players, watchers = start_matches(servers, 9, seed=300)
    keep_watching(watchers, 2.0)
    victim = cluster.owner_of(slot_key("failover", players[0].table.match_id))
    on_victim = [
        p for p in players if cluster.owner_of(slot_key("failover", p.table.match_id)) is victim
    ]
    before = {id(p): len(p.acks) for p in players}
    assert all(before.values()), "every match acknowledged actions before the kill"
    killed_at = time.monotonic()
    victim.kill9()
    wait_for_promotion(cluster, slot_key("failover", players[0].table.match_id), victim)
    promoted_after = time.monotonic() - killed_at
    victim.start()  # back as the promoted one's replica: WAIT can be met again
    cluster.wait_ok()
    d = Deadline(60)
    while not all(len(p.acks) >= before[id(p)] + 20 for p in players):
        for w in watchers:
            w.poll()
        assert all(p.error is None for p in players), [p.error for p in players]
        d.check(
            "every match to go on after the failover: "
            + str([(len(p.acks) - before[id(p)], p.refusals, p in on_victim) for p in players])
        )
        time.sleep(0.05)
    for p in players:
        p.finish()
    gaps = [min(when for _, when in p.acks[before[id(p)] :]) - killed_at for p in on_victim]
    figures(
        f"replica promoted {promoted_after:.2f} s after the kill; first acknowledged action "
        f"on its {len(on_victim)} matches after {min(gaps):.2f}-{max(gaps):.2f} s; "
        f"{sum(p.refusals for p in players)} UNAVAILABLE answers retried",
    )
    assert max(gaps) < FAILOVER_BOUND_S
    for p, w in zip(players, watchers, strict=True):
        check_match(servers, p, w)


def node_id(cluster: RedisCluster, node: RedisServer) -> str:
    return cluster.cli(node, "cluster", "myid").strip()


def test_slots_migrated_while_matches_play_lose_double_or_reorder_no_event(
    make_server: Callable[..., Server], make_cluster: Callable[..., RedisCluster]
) -> None:
    cluster = make_cluster()
    servers = cluster_replicas(make_server, cluster, "reshard")
    players, watchers = start_matches(servers, 9, seed=400)
    keep_watching(watchers, 1.0)
    source = cluster.owner_of(slot_key("reshard", players[0].table.match_id))
    moving = [
        p for p in players if cluster.owner_of(slot_key("reshard", p.table.match_id)) is source
    ]
    target = next(cluster.node(port) for port in cluster.primary_ports() if port != source.port)
    reshard = subprocess.Popen(
        [
            "redis-cli", "--cluster", "reshard", f"127.0.0.1:{source.port}",
            "--cluster-from", node_id(cluster, source), "--cluster-to", node_id(cluster, target),
            "--cluster-slots", "16384", "--cluster-yes", "--cluster-pipeline", "10",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    before = {id(p): len(p.acks) for p in players}
    d = Deadline(120)
    while reshard.poll() is None:
        for w in watchers:
            w.poll()
        assert all(p.error is None for p in players), [p.error for p in players]
        d.check("the reshard to end")
        time.sleep(0.05)
    assert reshard.returncode == 0, reshard.stderr.read() if reshard.stderr else ""
    cluster.wait_ok()
    for p in moving:
        assert cluster.owner_of(slot_key("reshard", p.table.match_id)) is target
    keep_watching(watchers, 1.0)
    for p in players:
        p.finish()
    assert all(len(p.acks) > before[id(p)] for p in moving), "play went on during the move"
    for p, w in zip(players, watchers, strict=True):
        check_match(servers, p, w)


def test_quick_play_places_every_ticket_once_across_a_quick_play_shards_failover(
    make_server: Callable[..., Server],
    make_cluster: Callable[..., RedisCluster],
    figures: Callable[[str], None],
) -> None:
    cluster = make_cluster(aof=True)
    flags = ("--store", "redis", "--redis-mode", "cluster", "--redis-url", cluster.url)
    flags += ("--redis-prefix", "qp", "--redis-wait-replicas", "1")
    flags += ("--redis-wait-timeout-ms", "500", "--takeover-ms", "500")
    servers = [make_server(*flags, *FLAGS) for _ in range(3)]
    plan = asks(200, random.Random(31), spread_s=8)
    # The primary of the shard that holds two of the plan's four queues
    # (their tickets, tables and feed: lobby/shards.py).
    queues = [rules_mod.from_request(r).key for r in RULESETS]
    busiest = max(
        queues, key=lambda q: [shards.of_queue(k) for k in queues].count(shards.of_queue(q))
    )
    shard_key = f"qp:{{lobby.{shards.shard_name(shards.of_queue(busiest))}}}"
    took: list[float] = []

    def fail_over(stop: threading.Event) -> None:
        if stop.wait(3.0):
            return
        victim = cluster.owner_of(shard_key)
        killed_at = time.monotonic()
        victim.kill9()
        wait_for_promotion(cluster, shard_key, victim)
        took.append(time.monotonic() - killed_at)
        victim.start()
        cluster.wait_ok()

    seen = storm(servers, plan, fail_over)
    assert took, "the shard's primary was not killed"
    # A ticket due while the lobby's slot had no primary is placed once one
    # is back: late by the outage at most.
    counts = check(plan, seen, servers, grace_ms=int(1000 * (took[0] + 1.5)))
    figures(
        f"{counts['placed']} of {counts['players']} players placed once at {counts['tables']} "
        f"tables; the quick-play shard's primary was replaced {took[0]:.2f} s after its kill"
    )
    assert counts["placed"] > 100, counts


def test_a_drained_deployment_moves_from_one_redis_to_a_cluster(
    make_server: Callable[..., Server],
    redis_server: RedisServer,
    redis_cluster: RedisCluster,
    redis_prefix: str,
) -> None:
    (old,) = replicas(make_server, redis_server.url, redis_prefix, 1)
    table = create_match(old.stub, seed=500)
    bots = create_match(old.stub, seed=501, bots=(1, 2, 3), turn_timer_ms=60_000)
    first_hand = {s: old for s in range(4)}
    play(first_hand, table, lambda v: v.phase == pb.PHASE_PLAYING and len(v.hand) <= 11, 60)
    before = exported_actions(old, table.match_id)
    asyncio.run(a_ledger(redis_server.url, redis_prefix, False, write=True))
    old.stop()  # the drain
    argv = [sys.executable, "-m", "spades_server.store.migrate", "--from", redis_server.url]
    argv += ["--to", f"redis+cluster://127.0.0.1:{redis_cluster.nodes[0].port}"]
    argv += ["--prefix", redis_prefix]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert ": 2 matches, 1 due times" in done.stdout
    target = RedisTarget(redis_cluster.url, ("--redis-mode", "cluster"))
    (new,) = replicas(make_server, target, redis_prefix, 1)
    assert exported_actions(new, table.match_id) == before
    listed = new.stub.ListMatches(pb.ListMatchesRequest(), metadata=OP, timeout=RPC_TIMEOUT)
    assert [m.match_id for m in listed.matches] == [bots.match_id, table.match_id]  # newest first
    play({s: new for s in range(4)}, table, lambda v: len(v.hand) <= 9, 60)
    # The bots' match was waiting for seat 0: the cluster's due set has it.
    seat0 = get_view(new.stub, bots, 0)
    assert seat0.phase != pb.PHASE_MATCH_OVER
    again = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert again.returncode == 2 and "already holds matches" in again.stderr
    # The ratings, leaderboard and records came over into their partitions.
    asyncio.run(a_ledger(redis_cluster.url, redis_prefix, True, write=False))


LEDGER_TABLE = [Participant(p, i % 2, 400 if i % 2 == 0 else 150) for i, p in enumerate("abcd")]


async def a_ledger(url: str, prefix: str, cluster: bool, write: bool) -> None:
    """Write (``write``) or check a ledger of one rated and one unrated match."""
    store = RedisStore(url, prefix, cluster=cluster)
    ledger = Ledger(RedisLobby(store), min_games=1)
    records = {p.player: Record(matches=1, hands=3) for p in LEDGER_TABLE}
    try:
        if write:
            assert await ledger.record(Finished("r1", "classic", LEDGER_TABLE, records))
            assert await ledger.record(Finished("u1", "", [], {"a": Record(hands=2)}))
            return
        want = rate({}, LEDGER_TABLE)
        assert [s.rating for s in await ledger.standings("classic", list("abcd"))] == [
            want[p] for p in "abcd"
        ]
        assert {s.player for s in await ledger.top("classic", 0, 10)} == set("abcd")
        profile = await ledger.profile("a")
        assert profile is not None and profile.record("humans").hands == 5
        # Applied once, here too.
        assert not await ledger.record(Finished("r1", "classic", LEDGER_TABLE, records))
        assert not await ledger.record(Finished("u1", "", [], {"a": Record(hands=2)}))
    finally:
        await store.close()


def test_quick_play_spreads_over_the_shards_and_leaves_the_lobby_slot_its_opened_tables(
    make_server: Callable[..., Server], redis_cluster: RedisCluster
) -> None:
    """Tickets, their tables and players' documents are in the shards their
    queue or player hashes to (lobby/shards.py); the ``{lobby}`` slot keeps
    the tables players open, and no ticket, quick-play table or player."""
    flags = ("--store", "redis", "--redis-mode", "cluster", "--redis-url", redis_cluster.url)
    server = make_server(*flags, "--redis-prefix", "spread", *FLAGS)
    placed: dict[str, str] = {}  # ticket id -> its queue
    for ruleset in RULESETS:
        queue = rules_mod.from_request(ruleset).key
        for got in quick_play(server, ruleset, 4):
            placed[got.ticket_id] = queue
    host = lobby_player(server, "host")
    opened = host.call("OpenTable", lpb.OpenTableRequest(ruleset=RULESETS[0])).table
    keys: dict[str, list[str]] = {}  # hash tag -> the lobby's document keys there
    for port in redis_cluster.primary_ports():
        out = redis_cluster.cli(
            redis_cluster.node(port), "--scan", "--pattern", "spread:{lobby*}:d:*"
        )
        for key in out.split():
            tag = key[key.index("{") + 1 : key.index("}")]
            keys.setdefault(tag, []).append(key.split(":d:", 1)[1])
    home = keys.pop("lobby")
    assert [k for k in home if k.startswith(("k:", "p:"))] == []
    assert [k for k in home if k.startswith("t:")] == [f"t:{opened.table_id}"]
    for ticket_id, queue in placed.items():
        assert f"k:{ticket_id}" in keys[f"lobby.s{shards.of_queue(queue)}"], ticket_id
    tables = [k for ks in keys.values() for k in ks if k.startswith("t:")]
    assert len(tables) == len(RULESETS), "one quick-play table a queue, each beside its tickets"
    players = [k for ks in keys.values() for k in ks if k.startswith("p:")]
    assert len(players) == 4 * len(RULESETS) + 1
    assert len(keys) >= 3, f"spread over shards: {sorted(keys)}"


def quick_play(server: Server, ruleset: pb.Ruleset, n: int) -> list[lpb.Ticket]:
    """``n`` new players' tickets, once each is placed (each long-polls it)."""
    who = [lobby_player(server, "q") for _ in range(n)]
    tickets = [p.call("QuickPlay", lpb.QuickPlayRequest(ruleset=ruleset)).ticket for p in who]
    out = []
    for p, asked in zip(who, tickets, strict=True):
        got, deadline = asked, Deadline(15.0)
        while got.state != lpb.TICKET_STATE_PLACED and deadline.left():
            ask = lpb.GetTicketRequest(after_version=got.version, wait_ms=5_000)
            got = p.call("GetTicket", ask).ticket
        assert got.state == lpb.TICKET_STATE_PLACED, got
        out.append(got)
    return out


def test_one_rulesets_lanes_spread_its_players_over_shards(
    make_server: Callable[..., Server], redis_cluster: RedisCluster
) -> None:
    """``--quickplay-lanes``: one ruleset's queue split by player, each lane
    in the shard its name hashes to, each matched apart (a lane short of
    four players gets bots after the wait)."""
    flags = ("--store", "redis", "--redis-mode", "cluster", "--redis-url", redis_cluster.url)
    server = make_server(*flags, "--redis-prefix", "lanes", "--quickplay-lanes", "4", *FLAGS)
    placed = quick_play(server, RULESETS[0], 16)
    found: dict[str, str] = {}  # ticket key -> its hash tag
    for port in redis_cluster.primary_ports():
        node = redis_cluster.node(port)
        for key in redis_cluster.cli(node, "--scan", "--pattern", "lanes:{lobby*}:d:k:*").split():
            found[key.split(":d:", 1)[1]] = key[key.index("{") + 1 : key.index("}")]
    tags = {found[f"k:{t.ticket_id}"] for t in placed}
    assert len(tags) >= 2 and "lobby" not in tags, tags
    for t in placed:  # each table seats its own lane's players
        table = t.placement.table
        humans = {s.player_id for s in table.seats if s.player_id}
        lanes = {found[f"k:{o.ticket_id}"] for o in placed if o.player_ids[0] in humans}
        assert lanes == {found[f"k:{t.ticket_id}"]}


def on(server: Server, p: LobbyPlayer) -> LobbyPlayer:
    """The same player, calling ``server``."""
    assert server.channel is not None
    return LobbyPlayer(
        p.id,
        p.md,
        lobby_pb2_grpc.LobbyServiceStub(server.channel),
        spades_pb2_grpc.SpadesServiceStub(server.channel),
    )


def legacy_id(place_not: int) -> str:
    """An id as versions before the shards drew them: any place but one."""
    while True:
        ident = secrets.token_hex(8)
        if shards.place_of(ident) != place_not:
            return ident


async def legacy_lobby(url: str, prefix: str, host: str, waiter: str) -> tuple[str, str]:
    """A waiting table and a waiting ticket as a version before the shards
    left them under ``{lobby}`` (one Redis's layout, a cluster's then), with
    ids that name no place: their players' documents hold them."""
    store = RedisStore(url, prefix)
    lobby = RedisLobby(store)
    rules = rules_mod.from_request(RULESETS[1])
    table = TableDoc(
        legacy_id(shards.HOME), OPENED, WAITING, rules.stored, rules.key,
        [SeatDoc(PLAYER, host, "Host", nonce="n0"), *(SeatDoc("open") for _ in range(3))],
        int(time.time() * 1000), int(time.time() * 1000) + 600_000, host=host,
    )  # fmt: skip
    queue = rules.key
    ticket = TicketDoc(
        legacy_id(shards.of_queue(queue)), SEARCHING, rules.stored, rules.key, [waiter],
        ["Waiter"], int(time.time() * 1000), queued_ms=int(time.time() * 1000),
        bots_at_ms=int(time.time() * 1000) + 600_000,
    )  # fmt: skip
    tk, bk = ticket_key(ticket.id), table_key(table.id)
    await lobby.commit(
        Tx(
            put={
                tk: ticket.to_bytes(),
                bk: table.to_bytes(),
                player_key(waiter): PlayerDoc(ticket=ticket.id).to_bytes(),
                player_key(host): PlayerDoc(table=table.id).to_bytes(),
            },
            zadd=[
                (queue_set(queue), ticket.id, float(ticket.queued_ms)),
                ("queues", queue, 0.0),
                ("lobby", table.id, float(table.created_ms)),
                (f"lobby:{rules.key}", table.id, float(table.created_ms)),
                ("due", bk, float(table.deadline_ms)),
            ],
        )
    )
    await lobby.close()
    await store.close()
    return table.id, ticket.id


def test_a_drained_lobby_moves_into_the_shards_from_one_redis_or_in_place(
    make_server: Callable[..., Server],
    redis_server: RedisServer,
    redis_cluster: RedisCluster,
    redis_prefix: str,
) -> None:
    """Both ways to the shards: ``migrate --from`` one Redis, and
    ``migrate --lobby-shards`` on a cluster laid out before them (here, one
    Redis's keys copied as they are). What this version wrote comes over as
    it was; what an earlier one left where its commits would cross slots is
    closed ("drained"), and its players are free again."""
    slow = ("--quickplay-bot-wait-seconds", "600")
    (old,) = replicas(make_server, redis_server.url, redis_prefix, 1, *FLAGS, *slow)
    host, solo = lobby_player(old, "host"), lobby_player(old, "solo")
    opened = host.call("OpenTable", lpb.OpenTableRequest(ruleset=RULESETS[0])).table
    asked = solo.call("QuickPlay", lpb.QuickPlayRequest(ruleset=RULESETS[0])).ticket
    legacy_host, waiter = lobby_player(old, "lh"), lobby_player(old, "lw")
    old_table, old_ticket = asyncio.run(
        legacy_lobby(redis_server.url, redis_prefix, legacy_host.id, waiter.id)
    )
    old.stop()  # the drain
    # A cluster laid out as before the shards: the lobby's keys as one Redis has them.
    copy = subprocess.run(
        [sys.executable, "-c", COPY_LOBBY, redis_server.url, redis_cluster.url, redis_prefix],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert copy.returncode == 0, copy.stderr
    node = f"redis+cluster://127.0.0.1:{redis_cluster.nodes[0].port}"
    module = [sys.executable, "-m", "spades_server.store.migrate"]
    in_place = subprocess.run(
        [*module, "--lobby-shards", "--to", node, "--prefix", f"{redis_prefix}old"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert in_place.returncode == 0 and "closed 2 waiting" in in_place.stdout, in_place
    moved = subprocess.run(
        [*module, "--from", redis_server.url, "--to", node, "--prefix", redis_prefix],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert moved.returncode == 0 and "closed 2 waiting" in moved.stdout, moved
    target = RedisTarget(redis_cluster.url, ("--redis-mode", "cluster"))
    for prefix in (redis_prefix, f"{redis_prefix}old"):
        (new,) = replicas(
            make_server, target, prefix, 1, *FLAGS, "--quickplay-bot-wait-seconds", "1"
        )
        # What this version wrote: the table is joined, the ticket placed (bots after the wait).
        guest = lobby_player(new, "guest")
        joined = guest.call("JoinTable", lpb.JoinTableRequest(table_id=opened.table_id))
        assert len([s for s in joined.table.seats if s.player_id]) == 2
        me = on(new, solo)
        got, deadline = asked, Deadline(15.0)
        while got.state != lpb.TICKET_STATE_PLACED and deadline.left():
            ask = lpb.GetTicketRequest(after_version=got.version, wait_ms=3_000)
            got = me.call("GetTicket", ask).ticket
        assert got.state == lpb.TICKET_STATE_PLACED and got.ticket_id == asked.ticket_id, got
        # What an earlier version left misplaced: closed, its players free.
        gone = on(new, waiter).call("GetTicket", lpb.GetTicketRequest(ticket_id=old_ticket)).ticket
        assert (gone.state, gone.cancel_reason) == (lpb.TICKET_STATE_CANCELLED, "drained")
        on(new, waiter).call("QuickPlay", lpb.QuickPlayRequest(ruleset=RULESETS[2]))
        shut = on(new, legacy_host).call("GetTable", lpb.GetTableRequest(table_id=old_table))
        assert (shut.table.state, shut.table.close_reason) == (lpb.TABLE_STATE_CLOSED, "drained")
        on(new, legacy_host).call("OpenTable", lpb.OpenTableRequest(ruleset=RULESETS[2]))
        new.stop()


# Copies the lobby's keys of one Redis (argv: its URL, the cluster's, the
# prefix) to the cluster under the prefix + "old", as they are.
COPY_LOBBY = """
import sys, redis
from redis.cluster import RedisCluster
src, dst = redis.Redis.from_url(sys.argv[1]), RedisCluster.from_url(sys.argv[2])
prefix = sys.argv[3]
for key in src.scan_iter(match=prefix + ":{lobby}*"):
    dst.restore(prefix + "old" + key[len(prefix):].decode(), 0, src.dump(key), replace=True)
"""
