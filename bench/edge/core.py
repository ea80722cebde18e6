#!/usr/bin/env python3
"""The Python core behind the edge prototype (bench/edge/README.md).

A grpc.aio server with one method, ``spades.edge.v1.Link/Connect``
(proto/spades/edge/v1/link.proto): the edge sends what its clients sent, each message tagged
with its connection's id, and the core answers every ``LinkUp`` with one
``LinkDown`` holding, per audience, the bytes the edge writes to that
audience's connections. The core holds the matches and does all of the rules
and hidden-information work with the server's own code:

* the engine's ``Match`` checks turn and legality and makes the events;
* ``spades_server.event_log.EventLog`` numbers them, serializes each once and
  frames it as an element of a stream response, with its audience as a viewer
  bitmask (``convert.audience_mask``), exactly as the server's log does;
* each connection gets the events its seat may see (the masks tested here, in
  Python, before any byte reaches the edge); seats that may see the same
  events share one blob;
* results are ``play.accepted`` / ``play.refused`` (an ``ActionResult`` as the
  element of a ``PlayResponse``), refusals mapped by ``rpc.service_error``;
* action ids are answered once per seat (a retry gets the first result);
* with ``--store sqlite`` each LinkUp's events and actions are appended to the
  server's SQLite store (its schema, its writer thread and group commit), and
  the LinkDown goes to the edge only once that is committed.

Tables for the benchmark are made on first open: match id ``t<N>``, seat
tokens ``t<N>.<hex HMAC-SHA256(--key, "t<N>:<seat>")[:32]>`` (the load
generator derives the same), only the SHA-256 of each secret kept, as the
server keeps it. A finished match is replaced at once by a new one on the same
table, its events sent on the same calls (the real build: new Play calls).

``--noop`` answers each action with fixed bytes (an event for every seat of the
table and a result for the actor) without parsing it or touching the engine:
what is left is the link, the core's event loop and the edge.

    .venv/bin/python bench/edge/core.py --listen 127.0.0.1:7001 [--store sqlite] [--noop]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import hashlib
import hmac
import os
import signal
import sqlite3
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import grpc
from google.protobuf.message import DecodeError
from spades_server import auth, convert, play, rpc
from spades_server.errors import ServiceError, invalid, precondition
from spades_server.event_log import EventLog, engine_payloads
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.store import StoredEvent
from spades_server.store.sqlite import SqliteStore

from spades_engine import Match, preset

HERE = Path(__file__).resolve().parent
GEN = HERE / "gen"
SERVICE = "spades.edge.v1.Link"
MAX_ACTION_ID = 64  # as the server's service.MAX_ACTION_ID
SEATS = 4
GC_GEN0_THRESHOLD = 20_000  # as spades_server.main.tune_gc
_SEQ_MASK = (1 << 32) - 1


def link_stubs() -> ModuleType:
    """``link_pb2``: the server's module, generated from
    proto/spades/edge/v1/link.proto by ``make install``."""
    from spades_server.gen.spades.edge.v1 import link_pb2

    return link_pb2


# -- the LinkDown, framed by hand -----------------------------------------------------
# A LinkDown is built as bytes, the way convert.frame_event frames events: a
# Down is built once per audience, and link_pb2.LinkDown parses the result
# (checked at start-up, ``_check_framing``).


def _varint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def down_item(conns: list[int], payload: bytes) -> bytes:
    """One ``Down`` (field 2 of LinkDown), framed: ``conns`` get ``payload``."""
    packed = b"".join([_varint(c) for c in conns])
    body = b"\x0a" + _varint(len(packed)) + packed + b"\x12" + _varint(len(payload)) + payload
    return b"\x12" + _varint(len(body)) + body


def close_item(conn: int, err: ServiceError) -> bytes:
    """A ``Down`` that ends ``conn``'s call with ``err``'s status."""
    status = err.to_status()
    packed = _varint(conn)
    message: bytes = status.message.encode()
    details: bytes = status.SerializeToString()
    code: int = status.code
    body = (
        b"\x0a"
        + _varint(len(packed))
        + packed
        + b"\x18"
        + _varint(code)
        + b"\x22"
        + _varint(len(message))
        + message
        + b"\x2a"
        + _varint(len(details))
        + details
    )
    return b"\x12" + _varint(len(body)) + body


def link_down(answers: int, items: list[bytes]) -> bytes:
    return b"\x08" + _varint(answers) + b"".join(items)


def _check_framing(link: ModuleType) -> None:
    err = invalid("X", "y", "z")
    parsed = link.LinkDown.FromString(
        link_down(3, [down_item([1, 300, 1 << 40], b"abc" * 50), close_item(7, err)])
    )
    assert parsed.answers == 3
    assert list(parsed.items[0].conns) == [1, 300, 1 << 40]
    assert parsed.items[0].payload == b"abc" * 50
    assert parsed.items[1].close_code == err.to_status().code
    assert parsed.items[1].close_details == err.to_status().SerializeToString()


# -- tables ------------------------------------------------------------------------------


def seat_secret(key: bytes, table_id: str, seat: int) -> str:
    return hmac.new(key, f"{table_id}:{seat}".encode(), hashlib.sha256).hexdigest()[:32]


def _seed(table_id: str, generation: int) -> int:
    digest = hashlib.sha256(f"{table_id}:{generation}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


class Table:
    """One table: its match, the match's event log, and who is connected."""

    __slots__ = ("answered", "conns", "generation", "id", "log", "match", "seat_of_hash")

    def __init__(self, table_id: str, key: bytes) -> None:
        self.id = table_id
        self.seat_of_hash = {
            auth.hash_secret(seat_secret(key, table_id, s)): s for s in range(SEATS)
        }
        self.conns: list[list[int]] = [[] for _ in range(SEATS)]
        self.generation = -1  # new_match deals the first
        self.match: Match
        self.log: EventLog
        self.answered: list[dict[str, int]]

    @property
    def match_id(self) -> str:
        return f"{self.id}#{self.generation}"

    def new_match(self) -> list[StoredEvent]:
        """Deal a new match (the first, or after the last one ended); returns its
        opening events, numbered and in the log."""
        self.generation += 1
        self.match = Match(preset("classic"), seed=_seed(self.id, self.generation))
        self.log = EventLog(self.match.rules, SEATS, max_streams=1 << 30)
        self.answered = [{} for _ in range(SEATS)]
        stored = self.log.stage(engine_payloads(self.match.opening_events))
        self.log.publish(stored)
        return stored


class Rows:
    """What one LinkUp appends to the store."""

    __slots__ = ("actions", "events", "matches")

    def __init__(self) -> None:
        self.matches: list[tuple[str, bytes]] = []  # (match id, snapshot)
        self.events: list[tuple[str, int, str, bytes]] = []
        self.actions: list[tuple[str, int, int, str, str, int, int]] = []

    def __bool__(self) -> bool:
        return bool(self.matches or self.events or self.actions)

    def write(self, conn: sqlite3.Connection) -> None:
        """Runs on the store's writer thread, inside its group commit."""
        for match_id, snapshot in self.matches:
            conn.execute("INSERT INTO matches (id, meta) VALUES (?, ?)", (match_id, b"{}"))
            conn.execute(
                "INSERT INTO snapshots (match_id, data, action_count) VALUES (?, ?, 0)",
                (match_id, snapshot),
            )
        conn.executemany(
            "INSERT INTO events (match_id, seq, audience, payload) VALUES (?, ?, ?, ?)",
            self.events,
        )
        conn.executemany(
            "INSERT INTO actions (match_id, idx, seat, action, action_id, first_seq, last_seq)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            self.actions,
        )


class Core:
    """The matches and the connections the edge holds to them."""

    def __init__(self, key: bytes, durable: bool) -> None:
        self.key = key
        self.durable = durable
        self.tables: dict[str, Table] = {}
        self.conns: dict[int, tuple[Table, int]] = {}
        self.actions = 0
        self.refused = 0
        self.matches = 0
        self.rows = Rows()

    # -- one LinkUp ---------------------------------------------------------------------
    def handle(self, items: Any) -> tuple[list[bytes], Rows]:
        """The Down items answering one LinkUp's ``items``, and the rows to store."""
        downs: list[bytes] = []
        self.rows = rows = Rows()
        conns = self.conns
        for item in items:
            known = conns.get(item.conn)
            if known is not None:
                if item.closed:
                    self.drop(item.conn, known)
                else:
                    self.act(item.conn, known[0], known[1], item.request, downs)
            elif not item.closed:
                self.open(item.conn, item.credential, item.request, downs)
        return downs, rows

    def drop(self, conn: int, known: tuple[Table, int]) -> None:
        del self.conns[conn]
        table, seat = known
        table.conns[seat].remove(conn)

    def open(self, conn: int, credential: str, raw: bytes, downs: list[bytes]) -> None:
        try:
            try:
                request = pb.PlayRequest.FromString(raw)
            except DecodeError:
                raise invalid("MALFORMED_REQUEST", "not a spades.v1.PlayRequest") from None
            if request.WhichOneof("kind") != "open":
                raise invalid("OPEN_EXPECTED", "the first message of a Play call is `open`", "open")
            opened = request.open
            match_id, secret = auth.split_seat_token(credential)
            if match_id != opened.match_id:
                raise ServiceError(
                    grpc.StatusCode.PERMISSION_DENIED,
                    "WRONG_MATCH",
                    "the seat token is for another match",
                )
            table = self.table(match_id)
            seat = table.seat_of_hash.get(auth.hash_secret(secret))
            if seat is None:
                raise ServiceError(
                    grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED", "unknown seat token"
                )
            log = table.log
            if opened.after_seq > log.last_seq:
                raise invalid(
                    "FUTURE_SEQUENCE",
                    f"after_seq {opened.after_seq} is after the match's last event",
                    "open.after_seq",
                )
        except ServiceError as err:
            downs.append(close_item(conn, err))
            return
        self.conns[conn] = (table, seat)
        table.conns[seat].append(conn)
        # Resume: what the seat may see after after_seq (the log keeps every event).
        bit = convert.viewer_bit(seat)
        masks, framed = log.masks, log.framed
        missed = [framed[i] for i in range(opened.after_seq, log.last_seq) if masks[i] & bit]
        if missed:
            downs.append(down_item([conn], b"".join(missed)))

    def table(self, match_id: str) -> Table:
        table = self.tables.get(match_id)
        if table is None:
            table = self.tables[match_id] = Table(match_id, self.key)
            opening = table.new_match()
            self.matches += 1
            if self.durable:
                self._store_new(table, opening)
        return table

    def act(self, conn: int, table: Table, seat: int, raw: bytes, downs: list[bytes]) -> None:
        try:
            request = pb.PlayRequest.FromString(raw)
        except DecodeError:
            downs.append(close_item(conn, invalid("MALFORMED_REQUEST", "not a PlayRequest")))
            return
        if request.WhichOneof("kind") != "action":
            err = invalid("ACTION_EXPECTED", "after `open`, a Play call sends actions", "action")
            downs.append(close_item(conn, err))
            return
        action = request.action
        try:
            first, last = self.apply(table, seat, action, downs)
            result = play.accepted(action.action_id, first, last)
            self.actions += 1
        except Exception as exc:
            result = play.refused(action.action_id, rpc.service_error(exc).to_status())
            self.refused += 1
        downs.append(down_item([conn], result))

    def apply(
        self, table: Table, seat: int, request: pb.PlayAction, downs: list[bytes]
    ) -> tuple[int, int]:
        """Check and apply one action (the checks of the server's ``_act`` and
        ``Session._submit_locked``); returns its first and last sequence numbers."""
        action_id = request.action_id
        if not 0 < len(action_id) <= MAX_ACTION_ID:
            raise invalid(
                "BAD_ACTION_ID", f"action_id must be 1 to {MAX_ACTION_ID} characters", "action_id"
            )
        done = table.answered[seat].get(action_id)
        if done is not None:  # a retry: the first result, nothing applied again
            return done >> 32, done & _SEQ_MASK
        log = table.log
        if request.HasField("expected_seq"):
            expected = request.expected_seq
            if expected > log.last_seq:
                raise invalid(
                    "FUTURE_SEQUENCE", f"expected_seq {expected} is ahead", "expected_seq"
                )
            if log.last_visible[seat] > expected:
                raise precondition(
                    "STALE_SEQUENCE",
                    f"seat {seat} has events after sequence {expected}",
                    current_seq=str(log.last_visible[seat]),
                )
        engine_action = convert.action_from_pb(request.action)
        events = table.match.apply(seat, engine_action)  # IllegalAction: nothing changed
        stored = log.stage(engine_payloads(events))
        log.publish(stored)
        first, last = stored[0].seq, stored[-1].seq
        table.answered[seat][action_id] = first << 32 | last
        if self.durable:
            match_id = table.match_id
            rows = self.rows
            rows.events += [(match_id, e.seq, e.audience, e.payload) for e in stored]
            index = len(table.match.actions) - 1
            rows.actions.append((match_id, index, seat, str(engine_action), action_id, first, last))
        fan_out(table, first, last, downs)
        if table.match.is_over:
            opening = table.new_match()
            self.matches += 1
            if self.durable:
                self._store_new(table, opening)
            fan_out(table, 1, opening[-1].seq, downs)
        return first, last

    def _store_new(self, table: Table, opening: list[StoredEvent]) -> None:
        match_id = table.match_id
        self.rows.matches.append((match_id, table.match.to_snapshot()))
        self.rows.events += [(match_id, e.seq, e.audience, e.payload) for e in opening]


def fan_out(table: Table, first: int, last: int, downs: list[bytes]) -> None:
    """The events ``first`` to ``last`` for each connected seat, one Down per
    audience: the seats that may see the same events share one blob."""
    log = table.log
    masks = log.masks[first - 1 : last]
    framed = log.framed[first - 1 : last]
    common = -1
    for m in masks:
        common &= m
    conns_by_seat = table.conns
    if common & 0xF == 0xF:  # every event public to the four seats: one audience
        everyone = [c for cs in conns_by_seat for c in cs]
        if everyone:
            downs.append(down_item(everyone, b"".join(framed)))
        return
    groups: dict[int, list[int]] = {}
    for seat in range(SEATS):
        conns = conns_by_seat[seat]
        if not conns:
            continue
        bit = 1 << seat
        sig = 0
        for j, m in enumerate(masks):
            if m & bit:
                sig |= 1 << j
        if sig:
            groups.setdefault(sig, []).extend(conns)
    for sig, conns in groups.items():
        blob = b"".join([f for j, f in enumerate(framed) if sig >> j & 1])
        downs.append(down_item(conns, blob))


class NoopCore(Core):
    """Answers each action with fixed bytes: the engine and the log untouched."""

    def __init__(self, key: bytes) -> None:
        super().__init__(key, durable=False)
        self.result = play.accepted("noop", 0, 0)
        self.events: list[bytes] = []
        for seat in range(SEATS):
            event = pb.MatchEvent(seq=1, time_ms=0)
            event.card_played.seat = seat
            event.card_played.card.CopyFrom(pb.Card(suit=pb.SUIT_CLUBS, rank=pb.RANK_TWO))
            self.events.append(convert.frame_event(event.SerializeToString()))
        start = pb.MatchEvent(seq=0, time_ms=0)
        start.hand_started.dealer = SEATS - 1
        start.hand_started.hand_size = 13
        self.opening = convert.frame_event(start.SerializeToString())

    def act(self, conn: int, table: Table, seat: int, raw: bytes, downs: list[bytes]) -> None:
        everyone = [c for cs in table.conns for c in cs]
        downs.append(down_item(everyone, self.events[seat]))
        downs.append(down_item([conn], self.result))
        self.actions += 1

    def table(self, match_id: str) -> Table:
        table = self.tables.get(match_id)
        if table is None:
            table = self.tables[match_id] = Table(match_id, self.key)
            table.new_match()
        return table

    def open(self, conn: int, credential: str, raw: bytes, downs: list[bytes]) -> None:
        n = len(downs)
        super().open(conn, credential, raw, downs)
        if conn in self.conns:
            del downs[n:]  # not the real opening events: the fixed one
            downs.append(down_item([conn], self.opening))


# -- the server ------------------------------------------------------------------------


class Answerer:
    """Turns LinkUps into LinkDowns, in order; with a store, a LinkDown waits for
    the commit of its LinkUp's rows, while the next LinkUps are handled (their
    commits join the store's group commit)."""

    def __init__(self, core: Core, store: SqliteStore | None) -> None:
        self.core = core
        self.store = store
        self.parse = link_stubs().LinkUp.FromString
        self.link_ups = 0
        self.items = 0

    def answer(self, raws: list[bytes]) -> tuple[bytes, Rows]:
        """One LinkDown answering ``raws`` (one LinkUp or several that arrived
        together), and the rows to store before it may leave."""
        downs: list[bytes] = []
        rows = Rows()
        for raw in raws:
            items = self.parse(raw).items
            self.link_ups += 1
            self.items += len(items)
            more, more_rows = self.core.handle(items)
            downs += more
            if more_rows:
                rows.matches += more_rows.matches
                rows.events += more_rows.events
                rows.actions += more_rows.actions
        return link_down(len(raws), downs), rows

    def answer_async(self, raws: list[bytes]) -> tuple[bytes, asyncio.Future[None] | None]:
        """``answer``, and the commit of its rows the LinkDown must wait for
        (None: nothing to store, send it now)."""
        down, rows = self.answer(raws)
        if self.store is None or not rows:
            return down, None
        return down, asyncio.ensure_future(self.store.run(rows.write))


def split_frames(buffer: bytearray) -> list[bytes]:
    """The whole length-prefixed frames at the start of ``buffer``, removed from it."""
    frames: list[bytes] = []
    pos, end = 0, len(buffer)
    while end - pos >= 4:
        n = int.from_bytes(buffer[pos : pos + 4], "little")
        if end - pos - 4 < n:
            break
        frames.append(bytes(buffer[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    del buffer[:pos]
    return frames


class GrpcLink:
    """The link as a gRPC call (spades.edge.v1.Link/Connect), bytes in and out."""

    def __init__(self, answerer: Answerer) -> None:
        self.answerer = answerer

    async def connect(self, _requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        read, write, answer = context.read, context.write, self.answerer.answer_async
        if self.answerer.store is None:
            while (raw := await read()) is not grpc.aio.EOF:
                await write(answer([raw])[0])
            return
        outbox: asyncio.Queue[tuple[bytes, asyncio.Future[None] | None] | None] = asyncio.Queue()

        async def writer() -> None:
            while (entry := await outbox.get()) is not None:
                data, committed = entry
                if committed is not None:
                    await committed
                await write(data)

        task = asyncio.get_running_loop().create_task(writer())
        try:
            while (raw := await read()) is not grpc.aio.EOF:
                outbox.put_nowait(answer([raw]))
            outbox.put_nowait(None)
            await task
        finally:
            task.cancel()


class SocketLink(asyncio.Protocol):
    """The link as a plain TCP connection: each LinkUp and LinkDown framed by its
    length (4 bytes, little-endian). The LinkUps that arrive in one read are
    answered by one LinkDown."""

    def __init__(self, answerer: Answerer) -> None:
        self.answerer = answerer
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.outbox: asyncio.Queue[tuple[bytes, asyncio.Future[None] | None]] = asyncio.Queue()
        self.writer: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        if self.answerer.store is not None:
            self.writer = asyncio.get_running_loop().create_task(self._write_committed())

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        raws = split_frames(self.buffer)
        if not raws:
            return
        data, committed = self.answerer.answer_async(raws)
        if self.writer is None:
            assert self.transport is not None
            self.transport.write(len(data).to_bytes(4, "little") + data)
        else:
            self.outbox.put_nowait((data, committed))

    async def _write_committed(self) -> None:
        while True:
            data, committed = await self.outbox.get()
            if committed is not None:
                await committed
            assert self.transport is not None
            self.transport.write(len(data).to_bytes(4, "little") + data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.writer is not None:
            self.writer.cancel()


async def serve(args: argparse.Namespace) -> None:
    key = args.key.encode()
    core: Core = NoopCore(key) if args.noop else Core(key, durable=args.store == "sqlite")
    store: SqliteStore | None = None
    if args.store == "sqlite" and not args.noop:
        path = args.db or os.path.join(tempfile.mkdtemp(prefix="spades-edge-core-"), "core.db")
        store = await SqliteStore.open(path, synchronous=args.synchronous)
    _check_framing(link_stubs())
    answerer = Answerer(core, store)
    host, _, port_text = args.listen.rpartition(":")
    loop = asyncio.get_running_loop()
    server: grpc.aio.Server | None = None
    socket_server: asyncio.Server | None = None
    if args.link == "grpc":
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", 64 << 20),
                ("grpc.max_send_message_length", 64 << 20),
                ("grpc.http2.bdp_probe", 0),
            ]
        )
        link = GrpcLink(answerer)
        # No (de)serializers: bytes in, bytes out.
        handler: grpc.RpcMethodHandler[bytes, bytes] = grpc.stream_stream_rpc_method_handler(
            link.connect
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, {"Connect": handler}),)
        )
        port = server.add_insecure_port(args.listen)
        await server.start()
    elif args.listen.startswith("unix:"):
        path = args.listen.removeprefix("unix:")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        socket_server = await loop.create_unix_server(lambda: SocketLink(answerer), path)
        host, port = "unix", path
    else:
        socket_server = await loop.create_server(lambda: SocketLink(answerer), host, int(port_text))
        port = socket_server.sockets[0].getsockname()[1]
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_GEN0_THRESHOLD, 20, 20)
    print(f"listening {host}:{port}", flush=True)
    stopped = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopped.set)
    await stopped.wait()
    if server is not None:
        await server.stop(0.5)
    if socket_server is not None:
        socket_server.close()
    if store is not None:
        await store.close()
    per = answerer.items / max(answerer.link_ups, 1)
    print(
        f"core: {core.actions} actions, {core.refused} refused, {len(core.tables)} tables, "
        f"{core.matches} matches; {answerer.link_ups} LinkUps ({per:.1f} items each)",
        file=sys.stderr,
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", default="127.0.0.1:7001")
    parser.add_argument("--key", default="bench-edge", help="derives the seats' tokens")
    parser.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    parser.add_argument("--db", help="the SQLite file (default: a new temporary one)")
    parser.add_argument("--synchronous", default="FULL", help="SQLite's PRAGMA synchronous")
    parser.add_argument("--noop", action="store_true", help="fixed answers, no engine")
    parser.add_argument(
        "--link",
        choices=("grpc", "socket"),
        default="socket",
        help="how the edge's link is carried",
    )
    args = parser.parse_args()
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
