"""The board (lobby/board.py): a replica's listing kept from the feed.

A page of the lobby is served from the replica's memory, as of the version
it returns, with no command to the store; a replica started after tables
were opened loads them; after the feed loses changes (Redis back empty) the
board is loaded again. And, with no server: whatever order a table's
versions come in, from the feed and from a load's reads, the board shows
each table as of its newest version, and pages walk it in order.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from lobby_harness import LOBBY_FLAGS, Player, player
from redis_harness import RedisServer, RedisTarget
from server_harness import Server
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.lobby.board import Board
from spades_server.lobby.docs import LOBBY, OPENED, WAITING, SeatDoc, TableDoc, table_key
from spades_server.lobby.feed import Feed
from spades_server.store.lobby import Tx
from spades_server.store.lobby_memory import MemoryLobby

RULES = [pb.Ruleset(preset="classic", target_score=250 + 50 * i) for i in range(2)]
WAIT_S = 20.0


def replica(make_server: Callable[..., Server], redis: RedisTarget, prefix: str) -> Server:
    return make_server(
        "--store", "redis", "--redis-url", redis.url, *redis.flags,
        "--redis-prefix", prefix, *LOBBY_FLAGS,
    )  # fmt: skip


def listing(who: Player, rules: pb.Ruleset | None = None, size: int = 2) -> tuple[list[str], int]:
    """Every table of the lobby (or of ``rules``), page by page; its version
    (the first page's)."""
    lobby_filter = lpb.LobbyFilter(ruleset=rules) if rules is not None else None
    ids: list[str] = []
    token, version = "", 0
    for _ in range(50):
        page = who.call(
            "ListTables",
            lpb.ListTablesRequest(filter=lobby_filter, page_size=size, page_token=token),
        )
        version = version or page.version
        ids += [t.table_id for t in page.tables]
        token = page.next_page_token
        if not token:
            return ids, version
    raise AssertionError("the pages never ended")


def until_listed(who: Player, expected: list[str]) -> int:
    deadline = time.monotonic() + WAIT_S
    while True:
        ids, version = listing(who)
        if ids == expected:
            return version
        assert time.monotonic() < deadline, f"listed {ids}, expected {expected}"
        time.sleep(0.05)


class Monitor:
    """``redis-cli monitor`` on every node: the commands they ran meanwhile."""

    def __init__(self, ports: tuple[int, ...]) -> None:
        self.procs = [
            subprocess.Popen(
                ["redis-cli", "-p", str(port), "monitor"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            for port in ports
        ]
        time.sleep(0.3)  # each has said OK and is listening

    def stop(self) -> list[str]:
        lines: list[str] = []
        for proc in self.procs:
            proc.terminate()
            out, _ = proc.communicate(timeout=10)
            lines += out.decode(errors="replace").splitlines()
        return lines


def test_a_replica_serves_the_lobby_from_memory_as_of_the_version_it_gives(
    make_server: Callable[..., Server], shared_redis: RedisTarget, redis_prefix: str
) -> None:
    a = replica(make_server, shared_redis, redis_prefix)
    hosts = [player(a, f"host{i}") for i in range(5)]
    opened = [
        h.call("OpenTable", lpb.OpenTableRequest(ruleset=RULES[i % 2])).table
        for i, h in enumerate(hosts)
    ]
    private = lpb.OpenTableRequest(visibility=lpb.TABLE_VISIBILITY_INVITE_ONLY)
    player(a, "private").call("OpenTable", private)
    ids = [t.table_id for t in opened]  # opened in this order: the lobby's order

    # A replica started after the tables were opened loads them.
    b = replica(make_server, shared_redis, redis_prefix)
    browser = player(b, "browser")
    until_listed(browser, ids)

    nodes = shared_redis.nodes
    monitor = Monitor(nodes)
    try:
        assert listing(browser)[0] == ids
        assert listing(browser, RULES[0], size=1)[0] == ids[0::2]
        assert listing(browser, RULES[1], size=5)[0] == ids[1::2]
        first = browser.call("ListTables", lpb.ListTablesRequest(page_size=10))
    finally:
        lines = monitor.stop()
    listing_reads = [line for line in lines if ":z:lobby" in line or ":d:t:" in line]
    assert listing_reads == [], f"pages read from Redis: {listing_reads[:3]}"
    assert [t.table_id for t in first.tables] == ids
    assert all(t.state == lpb.TABLE_STATE_WAITING for t in first.tables)
    assert [t.version for t in first.tables] == [t.version for t in opened]

    # Changes through the other replica: a seat taken, a table filled (it
    # starts, and leaves the lobby). Each reaches this replica's board by
    # the version its feed names.
    joiner = player(a, "joiner")
    joined = joiner.call("JoinTable", lpb.JoinTableRequest(table_id=ids[1])).table
    for k in range(3):
        player(a, f"filler{k}").call("JoinTable", lpb.JoinTableRequest(table_id=ids[2]))
    watched = browser.call(
        "PollLobby", lpb.PollLobbyRequest(after_version=first.version, wait_ms=5000)
    ).changes
    deadline = time.monotonic() + WAIT_S
    seen: dict[str, Any] = {t.table_id: t for t in watched.tables}
    removed = set(watched.removed_table_ids)
    version = watched.version
    while ids[2] not in removed or seen.get(ids[1]) is None:
        assert time.monotonic() < deadline, f"changes seen: {list(seen)}, removed {removed}"
        more = browser.call(
            "PollLobby", lpb.PollLobbyRequest(after_version=version, wait_ms=2000)
        ).changes
        seen.update({t.table_id: t for t in more.tables})
        removed |= set(more.removed_table_ids)
        version = more.version
    page = browser.call("ListTables", lpb.ListTablesRequest(page_size=10))
    assert page.version >= version
    assert [t.table_id for t in page.tables] == [ids[0], ids[1], ids[3], ids[4]]
    shown = {t.table_id: t for t in page.tables}[ids[1]]
    assert shown.version == joined.version and shown.seats[1].player_id == joiner.id


def test_the_board_is_loaded_again_when_redis_comes_back_without_the_lobby(
    make_server: Callable[..., Server], make_redis: type[RedisServer], redis_prefix: str
) -> None:
    redis = make_redis()
    target = RedisTarget(redis.url, nodes=(redis.port,))
    a = replica(make_server, target, redis_prefix)
    hosts = [player(a, f"gone{i}") for i in range(2)]
    ids = [h.call("OpenTable", lpb.OpenTableRequest()).table.table_id for h in hosts]
    until_listed(player(a, "browser"), ids)
    redis.kill9()
    redis.start()  # no persistence: an empty Redis, the feed's numbers again from 1
    browser = player(a, "browser2")
    until_listed(browser, [])
    fresh = player(a, "fresh").call("OpenTable", lpb.OpenTableRequest()).table
    until_listed(browser, [fresh.table_id])


def test_a_table_is_in_the_next_page_through_any_replica_while_the_feeds_lag(
    make_server: Callable[..., Server], redis_server: RedisServer, redis_prefix: str
) -> None:
    """The feed brings a commit to each replica a moment later, and here
    half a second later: every follower's connection is cut just before
    each table is opened through one replica. The page asked for right
    after, through that replica and through the other, shows the table
    (each waits for its feed to reach the store's number)."""
    target = RedisTarget(redis_server.url)
    a, b = (replica(make_server, target, redis_prefix) for _ in range(2))
    readers = [player(a, "reader-a"), player(b, "reader-b")]
    for reader in readers:
        until_listed(reader, [])
    admin = redis.Redis.from_url(redis_server.url)
    try:
        opened: list[str] = []
        for i in range(4):
            # Each replica's follower blocked on its feed again (the last
            # cut's reconnection may still be under way).
            deadline = time.monotonic() + WAIT_S
            while len(followers := [c for c in admin.client_list() if c["cmd"] == "xread"]) < 2:
                assert time.monotonic() < deadline, "each replica follows the lobby's feed"
                time.sleep(0.05)
            for c in followers:
                admin.client_kill_filter(_id=c["id"])
            host = player(a, f"own{i}")
            opened.append(host.call("OpenTable", lpb.OpenTableRequest()).table.table_id)
            reader = readers[i % 2]
            page = reader.call("ListTables", lpb.ListTablesRequest(page_size=10))
            assert [t.table_id for t in page.tables] == opened, f"opening {i}"
    finally:
        admin.close()


# -- the board alone -----------------------------------------------------------------------


def table(n: int, listed: bool, seats_taken: int) -> TableDoc:
    seats = [SeatDoc("player", f"p{k}", f"P{k}") for k in range(seats_taken)]
    seats += [SeatDoc("open", "", "") for _ in range(4 - len(seats))]
    return TableDoc(
        id=f"t{n:02d}",
        kind=OPENED,
        state=WAITING if listed else "closed",
        ruleset="",
        rules_key=f"r{n % 3}",
        seats=seats,
        created_ms=1000 + n // 2,  # pairs of tables opened in one millisecond
        deadline_ms=0,
    )


# A table's history: whether each version is listed (its first is: opened).
histories = st.lists(
    st.lists(st.booleans(), min_size=0, max_size=5).map(lambda rest: [True, *rest]),
    min_size=1,
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(histories=histories, data=st.data())
def test_the_board_shows_each_table_as_of_its_newest_version_in_any_order(
    histories: list[list[bool]], data: st.DataObject
) -> None:
    """The feed delivers each table's versions in order from where it
    started; a load reads each table once, at any version from there on, at
    any moment meanwhile. Whatever the interleaving, once the feed is
    through, the board shows each table as of its newest version if that is
    listed, and a page walk lists them once each, in order (any page size,
    filtered or not)."""

    async def main() -> None:
        board = Board(MemoryLobby(), Feed(MemoryLobby()))
        events: list[tuple[str, int, int]] = []  # (feed or load, table, version)
        for n, history in enumerate(histories):
            begun = data.draw(st.integers(0, len(history) - 1), f"feed from, table {n}")
            events += [("feed", n, v) for v in range(begun + 1, len(history) + 1)]
            read = data.draw(st.integers(begun, len(history)), f"load read, table {n}")
            if read:
                events.append(("load", n, read))
        shuffled = data.draw(st.permutations(events))
        # Each table's feed versions keep their order, wherever they fall.
        feed_slots: dict[int, list[int]] = {}
        for i, (kind, n, _) in enumerate(shuffled):
            if kind == "feed":
                feed_slots.setdefault(n, []).append(i)
        for n, slots in feed_slots.items():
            versions = sorted(v for kind, m, v in shuffled if kind == "feed" and m == n)
            for slot, v in zip(slots, versions, strict=True):
                shuffled[slot] = ("feed", n, v)
        loads = [i for i, (kind, _, _) in enumerate(shuffled) if kind == "load"]
        ready_at = max(loads, default=-1) + 1
        for i, (_, n, version) in enumerate(shuffled):
            if i == ready_at:
                board.versions = {t: board.versions[t] for t in board.shown}
                board.ready = True
            board.apply(table(n, histories[n][version - 1], version % 4), version)
        expected = sorted(
            (table(n, True, 0).created_ms, f"t{n:02d}")
            for n, history in enumerate(histories)
            if history[-1]
        )
        assert board.order == expected
        for n, history in enumerate(histories):
            shown = board.shown.get(f"t{n:02d}")
            assert (shown is not None) == history[-1]
            if shown is not None:
                message = lpb.Table.FromString(shown[0])
                assert message.version == len(history)
                taken = sum(s.state == lpb.TABLE_SEAT_STATE_PLAYER for s in message.seats)
                assert taken == len(history) % 4
        size = data.draw(st.integers(1, 4), "page size")
        rules = data.draw(st.sampled_from([None, "r0", "r1", "r2"]), "filter")
        walked: list[str] = []
        after = None
        for _ in range(len(histories) + 1):
            page, after = board.page(rules, size, after)
            walked += [t.table_id for t in page]
            if after is None:
                break
        wanted = [i for _, i in expected if rules is None or f"r{int(i[1:]) % 3}" == rules]
        assert walked == wanted

    asyncio.run(main())


@pytest.mark.parametrize("tables", [0, 1, 1200])
def test_a_load_reads_every_listed_table_from_the_store(tables: int) -> None:
    """In batches of 500 by place, with 600 tables opened in one millisecond:
    every listed one is shown, once."""

    async def main() -> None:
        store = MemoryLobby()
        docs = [table(n, listed=n % 5 != 0, seats_taken=1) for n in range(tables)]
        for n, doc in enumerate(docs):
            doc.created_ms = 1000 + n // 600
            tx = Tx(put={table_key(doc.id): doc.to_bytes()})
            if doc.listed():
                tx.zadd.append((LOBBY, doc.id, float(doc.created_ms)))
            await store.commit(tx)
        board = Board(store, Feed(store))
        board.start()
        deadline = time.monotonic() + WAIT_S
        while not board.ready:
            assert time.monotonic() < deadline, "the board never loaded"
            await asyncio.sleep(0.01)
        assert board.order == sorted((d.created_ms, d.id) for d in docs if d.listed())
        assert len(board.shown) == sum(d.listed() for d in docs)
        await board.close()

    asyncio.run(main())
