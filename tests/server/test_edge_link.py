"""Play calls held by an edge (``--edge-link``): a test edge speaks the link
(proto/spades/edge/v1/link.proto, length-framed over TCP) to a real server,
and what each seat gets must be what a gRPC Play call gets."""

from __future__ import annotations

import queue
import socket
import threading
from collections.abc import Callable, Iterator

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Deadline,
    Server,
    Table,
    choose,
    create_match,
    get_match,
    get_view,
    play_card,
    play_one_seat,
    read_until,
    seats_to_act,
    stream_events,
    wire,
)
from spades_server.gen.spades.edge.v1 import link_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb

HEADER = 4


def edge_address(server: Server) -> str:
    """The ``edge link at`` line the server prints after it is ready."""
    d = Deadline(10)
    while True:
        line = server._lines.get(timeout=max(0.01, d.left()))
        assert line is not None, server.log_tail()
        if line.startswith("edge link at "):
            return line.split()[-1]


class FakeEdge:
    """One link, as an edge holds it: sends LinkUps, collects each call's
    payloads (parsed as PlayResponses) and ends."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=RPC_TIMEOUT)
        self.sock.settimeout(None)
        self.responses: dict[int, list[pb.PlayResponse]] = {}
        self.closes: dict[int, status_pb2.Status] = {}
        self.answers = 0
        self.downs: queue.Queue[lpb.LinkDown | None] = queue.Queue()
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        threading.Thread(target=self._read, daemon=True).start()

    def send(self, *items: lpb.Up) -> None:
        data = lpb.LinkUp(items=items).SerializeToString()
        self.sock.sendall(len(data).to_bytes(HEADER, "little") + data)

    def send_raw(self, frame: bytes) -> None:
        self.sock.sendall(len(frame).to_bytes(HEADER, "little") + frame)

    def open(
        self,
        conn: int,
        table: Table | None,
        seat: int,
        after_seq: int = 0,
        token: str | None = None,
    ) -> None:
        match_id = table.match_id if table is not None else "nope"
        request = pb.PlayRequest(open=pb.PlayOpen(match_id=match_id, after_seq=after_seq))
        credential = token if token is not None else (table.tokens[seat] if table else "")
        self.send(lpb.Up(conn=conn, request=request.SerializeToString(), credential=credential))

    def act(self, conn: int, action: pb.Action, action_id: str) -> None:
        request = pb.PlayRequest(action=pb.PlayAction(action=action, action_id=action_id))
        self.send(lpb.Up(conn=conn, request=request.SerializeToString()))

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self.changed:
                    self.downs.put(None)
                    self.changed.notify_all()
                return
            buffer += chunk
            while len(buffer) >= HEADER:
                size = int.from_bytes(buffer[:HEADER], "little")
                if len(buffer) < HEADER + size:
                    break
                down = lpb.LinkDown.FromString(buffer[HEADER : HEADER + size])
                buffer = buffer[HEADER + size :]
                self._take(down)

    def _take(self, down: lpb.LinkDown) -> None:
        with self.changed:
            self.answers += down.answers
            seen: set[int] = set()
            for item in down.items:
                for conn in item.conns:
                    assert conn not in seen or not item.payload, "two payloads for a call"
                    seen.add(conn)
                    if item.payload:
                        self.responses.setdefault(conn, []).append(
                            pb.PlayResponse.FromString(item.payload)
                        )
                    if item.close_code:
                        self.closes[conn] = status_pb2.Status.FromString(item.close_details)
            self.downs.put(down)
            self.changed.notify_all()

    def wait(self, what: str, pred: Callable[[], bool], timeout: float = 10) -> None:
        with self.changed:
            if not self.changed.wait_for(pred, timeout):
                raise AssertionError(f"edge: no {what} in {timeout}s")

    def events(self, conn: int) -> list[pb.MatchEvent]:
        with self.lock:
            return [e for r in self.responses.get(conn, []) for e in r.events]

    def results(self, conn: int) -> list[pb.ActionResult]:
        with self.lock:
            return [x for r in self.responses.get(conn, []) for x in r.results]

    def wait_seq(self, conn: int, seq: int) -> list[pb.MatchEvent]:
        self.wait(
            f"event {seq} on call {conn}",
            lambda: any(e.seq >= seq for r in self.responses.get(conn, []) for e in r.events),
        )
        return self.events(conn)

    def wait_result(self, conn: int, action_id: str) -> pb.ActionResult:
        def found() -> bool:
            return any(
                x.action_id == action_id for r in self.responses.get(conn, []) for x in r.results
            )

        self.wait(f"result of {action_id}", found)
        return next(x for x in self.results(conn) if x.action_id == action_id)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> FakeEdge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture
def linked(make_server: Callable[..., Server]) -> Iterator[tuple[Server, str]]:
    server = make_server("--edge-link", "127.0.0.1:0", "--actions-per-second", "1000")
    yield server, edge_address(server)


def last_seq(server: Server, table: Table) -> int:
    return get_match(server.stub, table.match_id).last_seq


def test_seats_on_an_edge_see_what_grpc_play_sees(linked: tuple[Server, str]) -> None:
    server, address = linked
    table = create_match(server.stub, seed=11)
    with FakeEdge(address) as edge:
        for seat in range(4):
            edge.open(seat + 1, table, seat)
        n = 0
        while n < 12:  # the four bids and two tricks
            seat = seats_to_act(get_view(server.stub, table, 0))[0]
            action_id = f"a{n}"
            edge.act(seat + 1, choose(get_view(server.stub, table, seat)), action_id)
            result = edge.wait_result(seat + 1, action_id)
            assert not result.HasField("error"), result
            n += 1
        end = last_seq(server, table)
        for seat in range(4):
            got = [e for e in edge.wait_seq(seat + 1, end) if e.seq <= end]
            over_grpc = read_until(stream_events(server.stub, table, seat), end)
            assert wire(got) == wire(over_grpc), f"seat {seat}"
        assert edge.answers >= 1 and not edge.closes


def test_a_retried_action_is_answered_once_and_a_refusal_leaves_the_call_open(
    linked: tuple[Server, str],
) -> None:
    server, address = linked
    table = create_match(server.stub, seed=5)
    with FakeEdge(address) as edge:
        seat = seats_to_act(get_view(server.stub, table, 0))[0]
        edge.open(7, table, seat)
        action = choose(get_view(server.stub, table, seat))
        edge.act(7, action, "same")
        first = edge.wait_result(7, "same")
        before = last_seq(server, table)
        edge.act(7, action, "same")
        edge.wait("the retry's answer", lambda: len(edge.results(7)) == 2)
        again = edge.results(7)[1]
        assert again == first and last_seq(server, table) == before
        edge.act(7, play_card(pb.SUIT_HEARTS, pb.RANK_ACE), "out-of-turn")
        refused = edge.wait_result(7, "out-of-turn")
        assert refused.HasField("error")
        assert refused.error.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
        assert 7 not in edge.closes


def test_a_call_resumed_after_a_sequence_gets_what_its_seat_missed(
    linked: tuple[Server, str],
) -> None:
    server, address = linked
    table = create_match(server.stub, seed=3)
    for n in range(3):
        seat = seats_to_act(get_view(server.stub, table, 0))[0]
        server.stub.SubmitAction(
            pb.SubmitActionRequest(
                match_id=table.match_id,
                action=choose(get_view(server.stub, table, seat)),
                action_id=f"s{n}",
            ),
            metadata=(("authorization", f"Bearer {table.tokens[seat]}"),),
            timeout=RPC_TIMEOUT,
        )
    end = last_seq(server, table)
    with FakeEdge(address) as edge:
        edge.open(1, table, 2, after_seq=2)
        got = edge.wait_seq(1, end)
        over_grpc = read_until(stream_events(server.stub, table, 2, after_seq=2), end)
        assert wire(got) == wire(over_grpc)
        assert got[0].seq > 2


def test_a_bad_token_ends_its_call_with_the_status_grpc_would_send(
    linked: tuple[Server, str],
) -> None:
    server, address = linked
    table = create_match(server.stub)
    with FakeEdge(address) as edge:
        edge.open(3, table, 0, token=f"{table.match_id}.not-the-secret")
        edge.open(4, None, 0, token="")
        edge.wait("both ends", lambda: 3 in edge.closes and 4 in edge.closes)
        for conn in (3, 4):
            status = edge.closes[conn]
            assert status.code == grpc.StatusCode.UNAUTHENTICATED.value[0], status
            info = error_details_pb2.ErrorInfo()
            assert any(d.Unpack(info) for d in status.details)
            assert info.reason
        # The link goes on: a good call opens on it.
        edge.open(5, table, 1)
        edge.wait_seq(5, 1)


def test_a_frame_that_is_not_a_link_message_ends_that_link_only(
    linked: tuple[Server, str],
) -> None:
    server, address = linked
    table = create_match(server.stub)
    bad = FakeEdge(address)
    bad.open(1, table, 0)
    bad.wait_seq(1, 1)
    bad.send_raw(b"\xff\xff\xff\xff not protobuf")
    assert_link_ends(bad)
    with FakeEdge(address) as good:
        good.open(1, table, 0)
        good.wait_seq(1, 1)


def assert_link_ends(edge: FakeEdge) -> None:
    d = Deadline(10)
    while True:
        try:
            down = edge.downs.get(timeout=max(0.01, d.left()))
        except queue.Empty:
            raise AssertionError("the server kept a link that sent garbage") from None
        if down is None:
            return


def test_a_call_the_client_ended_frees_its_stream(make_server: Callable[..., Server]) -> None:
    server = make_server("--edge-link", "127.0.0.1:0", "--streams-per-match", "1")
    address = edge_address(server)
    table = create_match(server.stub)
    with FakeEdge(address) as edge:
        edge.open(1, table, 0)
        edge.wait_seq(1, 1)
        edge.open(2, table, 1)  # a second stream on the match: refused
        edge.wait("the refusal", lambda: 2 in edge.closes)
        assert edge.closes[2].code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
        edge.send(lpb.Up(conn=1, closed=True))
        d = Deadline(10)
        conn = 3
        while True:  # the slot frees once the first call's handler has ended
            edge.open(conn, table, 1)
            edge.wait(f"call {conn}", lambda c=conn: c in edge.closes or bool(edge.events(c)))
            if conn not in edge.closes:
                break
            d.check("the ended call's stream to be freed")
            conn += 1


def test_a_server_stopping_ends_the_edges_calls_with_where_to_resume(
    make_server: Callable[..., Server],
) -> None:
    server = make_server("--edge-link", "127.0.0.1:0")
    address = edge_address(server)
    table = create_match(server.stub)
    edge = FakeEdge(address)
    edge.open(1, table, 0)
    edge.wait_seq(1, 1)
    assert server.stop() == 0
    edge.wait("the end of the call", lambda: 1 in edge.closes)
    assert edge.closes[1].code == grpc.StatusCode.UNAVAILABLE.value[0]
    assert "after_seq=" in edge.closes[1].message
    assert_link_ends(edge)


def reason_of(status: status_pb2.Status) -> str:
    info = error_details_pb2.ErrorInfo()
    assert any(d.Unpack(info) for d in status.details), status
    return info.reason


def test_bots_moves_reach_an_edge_call_and_a_long_history_comes_in_stream_sized_batches(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(
        "--edge-link", "127.0.0.1:0", "--bot-delay-ms", "0", "--actions-per-second", "1000"
    )
    address = edge_address(server)
    table = create_match(
        server.stub, bots=(1, 2, 3), seed=9, target_score=2000, no_mercy_score=True
    )
    with FakeEdge(address) as edge:
        edge.open(1, table, 0)  # live, while the bots play
        edge.wait_seq(1, 1)
        play_one_seat(server.stub, table, 0, until=lambda _: last_seq(server, table) > 600)
        end = last_seq(server, table)
        edge.open(2, table, 0)  # the whole history at once
        over_grpc = read_until(stream_events(server.stub, table, 0), end)
        for conn in (1, 2):
            got = [e for e in edge.wait_seq(conn, end) if e.seq <= end]
            assert wire(got) == wire(over_grpc), f"call {conn}"
        with edge.lock:
            sizes = [len(r.events) for r in edge.responses[2]]
        assert max(sizes) == 256 and len(sizes) >= 2, sizes
        assert not edge.closes


def test_a_reissued_token_ends_the_edge_call_it_opened(linked: tuple[Server, str]) -> None:
    server, address = linked
    table = create_match(server.stub)
    with FakeEdge(address) as edge:
        edge.open(1, table, 0)
        edge.open(2, table, 1)
        edge.wait_seq(1, 1)
        server.stub.ReissueSeatToken(
            pb.ReissueSeatTokenRequest(match_id=table.match_id, seat=0),
            metadata=OP,
            timeout=RPC_TIMEOUT,
        )
        edge.wait("the end of the call", lambda: 1 in edge.closes)
        assert edge.closes[1].code == grpc.StatusCode.UNAUTHENTICATED.value[0]
        assert reason_of(edge.closes[1]) == "TOKEN_REVOKED"
        # The other seat's call goes on and sees the change.
        edge.wait(
            "the reissue's event on seat 1",
            lambda: any(e.HasField("seat_control_changed") for e in edge.events(2)),
        )
        assert 2 not in edge.closes


def test_a_message_after_open_that_is_not_an_action_ends_the_call_and_changes_nothing(
    linked: tuple[Server, str],
) -> None:
    server, address = linked
    table = create_match(server.stub)
    with FakeEdge(address) as edge:
        first = seats_to_act(get_view(server.stub, table, 0))[0]
        edge.open(1, table, first)
        edge.wait_seq(1, 1)
        before = last_seq(server, table)
        again = pb.PlayRequest(open=pb.PlayOpen(match_id=table.match_id))
        good = pb.PlayRequest(
            action=pb.PlayAction(action=choose(get_view(server.stub, table, first)), action_id="x")
        )
        # An action behind the bad message is never applied: a gRPC call
        # stops reading at a bad message.
        edge.send(
            lpb.Up(conn=1, request=again.SerializeToString()),
            lpb.Up(conn=1, request=good.SerializeToString()),
        )
        edge.open(2, table, (first + 1) % 4)
        edge.send(lpb.Up(conn=2, request=b"\xff\xff not a message"))
        edge.wait("both ends", lambda: 1 in edge.closes and 2 in edge.closes)
        assert edge.closes[1].code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        assert reason_of(edge.closes[1]) == "ACTION_EXPECTED"
        assert edge.closes[2].code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        assert last_seq(server, table) == before
        # A late message for an ended call opens nothing.
        edge.act(1, choose(get_view(server.stub, table, first)), "late")
        edge.open(3, table, (first + 2) % 4)
        edge.wait_seq(3, 1)
        assert not edge.results(1) and last_seq(server, table) == before


def test_an_edge_that_floods_one_call_with_actions_ends_that_call_only(
    linked: tuple[Server, str],
) -> None:
    server, address = linked
    table = create_match(server.stub)
    with FakeEdge(address) as edge:
        edge.open(1, table, 0)
        edge.open(2, table, 1)
        edge.wait_seq(2, 1)
        bad = pb.PlayRequest(action=pb.PlayAction(action=play_card(pb.SUIT_HEARTS, pb.RANK_ACE)))
        flood = [
            lpb.Up(conn=1, request=bad.SerializeToString()) for _ in range(500)
        ]  # no action ids: each refused, but they arrive faster than they are answered
        edge.send(*flood)
        edge.wait("the flooded call's end", lambda: 1 in edge.closes)
        assert edge.closes[1].code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
        assert reason_of(edge.closes[1]) == "TOO_MANY_PENDING"
        assert 2 not in edge.closes
