"""A real spades-server process on loopback, and helpers to talk to it.

Every test in ``tests/server/test_service_*.py`` runs against a server started
here as a subprocess (``python -m spades_server.main``) and real gRPC channels:
nothing is mocked. Every wait has a deadline and every RPC a timeout, so a
hung server fails a test instead of hanging CI.

Fixtures (re-exported by ``conftest.py``):

- ``shared_server``: one server for the whole session, with a rate limit high
  enough that tests can play matches as fast as they like;
- ``make_server``: a factory for servers with their own flags and database,
  each stopped (SIGTERM) when the test ends.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc

OPERATOR_TOKEN = "op"
OP = (("authorization", f"Bearer {OPERATOR_TOKEN}"),)
RPC_TIMEOUT = 10.0  # every unary call
STREAM_TIMEOUT = 60.0  # every stream (a deadline, so no stream outlives a test)
START_TIMEOUT = 20.0  # from spawn to the ready line
STOP_TIMEOUT = 20.0  # from SIGTERM to exit
POLL = 0.003

_OPERATOR_PORT = re.compile(r"operator port [\d.]+:(?P<port>\d+) \(mutual TLS\)")
_READY = re.compile(
    r"spades-server listening on (?P<host>[\d.]+):(?P<port>\d+) \(gRPC\); "
    r"metrics at (?P<metrics>\S+)"
)


def seat_md(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


class Deadline:
    """``while d.left():`` loops end after ``seconds``; ``d.check(what)`` fails the test."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.end

    def check(self, what: str) -> None:
        if self.expired():
            raise AssertionError(f"timed out after {self.seconds:g}s waiting for {what}")


def wait_until(pred: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    d = Deadline(timeout)
    while not pred():
        d.check(what)
        time.sleep(POLL)


# -- the server process ----------------------------------------------------------------


class Server:
    """One ``spades-server`` subprocess with a SQLite database in ``workdir``."""

    def __init__(self, workdir: Path, *extra_args: str) -> None:
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.db = workdir / "s.db"
        self.extra_args = extra_args
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.metrics_url = ""
        self.channel: grpc.Channel | None = None
        self._stub: spades_pb2_grpc.SpadesServiceStub | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.starts = 0
        # A server started with --tls-cert: the credentials its channel uses.
        self.credentials: grpc.ChannelCredentials | None = None
        self.operator_port = 0  # with --tls-client-ca

    # lifecycle -----------------------------------------------------------------
    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "spades_server.main",
            "--port",
            "0",
            "--metrics-port",
            "0",
            "--store",
            "sqlite",
            "--db",
            str(self.db),
            "--operator-token",
            OPERATOR_TOKEN,
            "--grace-seconds",
            "2",
            *self.extra_args,
        ]

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        log = open(self.workdir / f"server-{self.starts}.log", "w")  # noqa: SIM115
        self._lines = queue.Queue()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            self.argv(),
            cwd=self.workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=env,
        )
        log.close()  # the child holds its own descriptor
        # The queue is handed over, not looked up: the previous process's pump
        # may still be draining its pipe, and its end-of-output None must not
        # land in this start's queue ("exited before it was ready").
        threading.Thread(target=self._pump, args=(self.proc, self._lines), daemon=True).start()
        d = Deadline(START_TIMEOUT)
        while True:
            try:
                line = self._lines.get(timeout=max(0.01, d.left()))
            except queue.Empty:
                line = ""
            if line is None:
                raise AssertionError(f"server exited before it was ready:\n{self.log_tail()}")
            op = _OPERATOR_PORT.search(line or "")
            if op:
                self.operator_port = int(op["port"])
            m = _READY.search(line or "")
            if m:
                self.port = int(m["port"])
                self.metrics_url = m["metrics"]
                break
            if d.expired():
                self.kill9()
                raise AssertionError(f"server not ready in {START_TIMEOUT}s:\n{self.log_tail()}")
        address = f"127.0.0.1:{self.port}"
        self.channel = (
            grpc.insecure_channel(address)
            if self.credentials is None
            else grpc.secure_channel(address, self.credentials)
        )
        grpc.channel_ready_future(self.channel).result(timeout=RPC_TIMEOUT)
        self._stub = spades_pb2_grpc.SpadesServiceStub(self.channel)

    @staticmethod
    def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    @property
    def stub(self) -> spades_pb2_grpc.SpadesServiceStub:
        assert self._stub is not None, "server not started"
        return self._stub

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _close_channel(self) -> None:
        if self.channel is not None:
            self.channel.close()
        self.channel = None
        self._stub = None

    def terminate(self) -> None:
        """Send SIGTERM without waiting (the channel stays open)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = STOP_TIMEOUT) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
            raise AssertionError(
                f"server did not exit within {timeout}s:\n{self.log_tail()}"
            ) from None

    def stop(self) -> int:
        """Graceful stop: SIGTERM, then wait for the exit; returns the exit status."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.terminate()
        code = self.wait()
        self._close_channel()
        return code

    def kill9(self) -> None:
        """SIGKILL: no shutdown code runs, exactly like a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self._close_channel()

    def restart_after_kill(self) -> None:
        """kill -9, then start again on the same database (a new port)."""
        self.kill9()
        self.start()

    def log_tail(self, lines: int = 40) -> str:
        path = self.workdir / f"server-{self.starts}.log"
        with contextlib.suppress(OSError):
            return "\n".join(path.read_text().splitlines()[-lines:])
        return ""


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("shared-server"), "--actions-per-second", "10000")
    srv.start()
    yield srv
    code = srv.stop()
    assert code == 0, srv.log_tail()


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def make(*extra_args: str) -> Server:
        srv = Server(tmp_path / f"server{len(started)}", *extra_args)
        started.append(srv)
        srv.start()
        return srv

    yield make
    failures: list[AssertionError] = []
    for srv in started:  # every one, even after one failed to stop
        if srv.running():
            try:
                srv.stop()
            except AssertionError as e:
                failures.append(e)
    if failures:
        raise failures[0]


# -- errors ---------------------------------------------------------------------------


@dataclass
class Failure:
    """A refused call: its code, and the google.rpc details it carried."""

    code: grpc.StatusCode
    message: str
    reason: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    fields: list[str] = field(default_factory=list)


def failure_of(err: grpc.RpcError) -> Failure:
    assert isinstance(err, grpc.Call), err
    out = Failure(err.code(), err.details() or "")
    status = rpc_status.from_call(err)
    if status is not None:
        _add_details(out, status.details)
    return out


def refusal_of(result: pb.ActionResult) -> Failure:
    """The refusal an action result of a Play call carries (as google.rpc.Status)."""
    assert result.HasField("error"), f"action {result.action_id} was accepted"
    status = status_pb2.Status.FromString(result.error.SerializeToString())
    out = Failure(grpc.StatusCode(_CODES[status.code]), status.message)
    _add_details(out, status.details)
    return out


_CODES = {c.value[0]: c.value for c in grpc.StatusCode}


def _add_details(out: Failure, details: Iterable[Any]) -> None:
    for detail in details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            out.reason = info.reason
            out.metadata = dict(info.metadata)
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            out.fields = [v.field for v in bad.field_violations]


def expect_failure(code: grpc.StatusCode, fn: Callable[..., Any], *args: Any, **kw: Any) -> Failure:
    """Call ``fn`` (an RPC, or anything that makes one) and check it is refused with ``code``."""
    try:
        result = fn(*args, **kw)
    except grpc.RpcError as err:
        f = failure_of(err)
        assert f.code == code, f
        return f
    raise AssertionError(f"expected {code.name}, the call returned {result!r}")


# -- calls ----------------------------------------------------------------------------


@dataclass
class Table:
    """A match created for a test: its id and one token per human seat."""

    match_id: str
    tokens: dict[int, str]
    summary: pb.MatchSummary


def create_match(
    stub: spades_pb2_grpc.SpadesServiceStub,
    *,
    bots: Iterable[int] = (),
    seed: int = 7,
    turn_timer_ms: int = 0,
    players: int | None = None,
    **ruleset: Any,
) -> Table:
    """Create a match (``ruleset`` holds Ruleset fields); every seat not in ``bots`` is human."""
    bot_seats = set(bots)
    if players is not None:
        ruleset["players"] = players
    req = pb.CreateMatchRequest(
        ruleset=pb.Ruleset(**ruleset),
        seats=[
            pb.SeatConfig(name=f"p{i}", bot=i in bot_seats, bot_level=pb.BOT_LEVEL_RANDOM)
            for i in range(players or 4)
        ],
        seed=seed,
        has_seed=True,
        turn_timer_ms=turn_timer_ms,
    )
    resp = stub.CreateMatch(req, metadata=OP, timeout=RPC_TIMEOUT)
    return Table(resp.match.match_id, {t.seat: t.token for t in resp.seat_tokens}, resp.match)


def get_view(
    stub: spades_pb2_grpc.SpadesServiceStub, table: Table, seat: int, min_seq: int = 0
) -> pb.SeatView:
    return stub.GetView(
        pb.GetViewRequest(match_id=table.match_id, min_seq=min_seq),
        metadata=seat_md(table.tokens[seat]),
        timeout=RPC_TIMEOUT,
    ).view


def get_match(stub: spades_pb2_grpc.SpadesServiceStub, match_id: str) -> pb.MatchSummary:
    return stub.GetMatch(
        pb.GetMatchRequest(match_id=match_id), metadata=OP, timeout=RPC_TIMEOUT
    ).match


_action_ids = iter(range(1, 1 << 62))


def new_action_id() -> str:
    return f"a{next(_action_ids)}-{os.getpid()}"


def submit(
    stub: spades_pb2_grpc.SpadesServiceStub,
    table: Table,
    seat: int,
    action: pb.Action,
    *,
    action_id: str | None = None,
    expected_seq: int | None = None,
) -> pb.SubmitActionResponse:
    req = pb.SubmitActionRequest(
        match_id=table.match_id, action_id=action_id or new_action_id(), action=action
    )
    if expected_seq is not None:
        req.expected_seq = expected_seq
    return stub.SubmitAction(req, metadata=seat_md(table.tokens[seat]), timeout=RPC_TIMEOUT)


def play_card(suit: int, rank: int) -> pb.Action:
    return pb.Action(play_card=pb.PlayCardAction(card=pb.Card(suit=suit, rank=rank)))  # type: ignore[arg-type]


def bid(tricks: int) -> pb.Action:
    return pb.Action(bid=pb.BidAction(tricks=tricks))


# -- choosing actions ------------------------------------------------------------------

Chooser = Callable[[pb.SeatView], pb.Action]


def kind(action: pb.Action) -> str:
    return action.WhichOneof("kind") or ""


def choose(view: pb.SeatView, *, target_bid: int = 3, blind_nil: bool = False) -> pb.Action:
    """A deterministic legal action: look at the cards (or bid blind nil if asked),
    bid the legal bid closest to ``target_bid``, pass or play the first legal option."""
    legal = list(view.legal_actions)
    assert legal, f"seat {view.seat} has no legal action"
    by_kind: dict[str, list[pb.Action]] = {}
    for a in legal:
        by_kind.setdefault(kind(a), []).append(a)
    if blind_nil and "blind_nil" in by_kind:
        return by_kind["blind_nil"][0]
    if "look" in by_kind:
        return by_kind["look"][0]
    if "bid" in by_kind:
        return min(by_kind["bid"], key=lambda a: (abs(a.bid.tricks - target_bid), a.bid.tricks))
    return legal[0]


def seats_to_act(view: pb.SeatView) -> list[int]:
    """The seats the rules wait for, from any seat's view."""
    if view.phase == pb.PHASE_MATCH_OVER:
        return []
    if view.to_act >= 0:
        return [view.to_act]
    decided = {d.seat for d in view.exchange_decisions}
    undecided = [s for s in view.exchange_deciders if s not in decided]
    if undecided:  # the optional exchange: its decisions come first
        return undecided
    return [s for s in view.exchange_seats if s not in view.exchange_chosen]


@dataclass
class Step:
    seat: int
    action: pb.Action
    action_id: str
    response: pb.SubmitActionResponse
    view_before: pb.SeatView


def step_humans(
    stub: spades_pb2_grpc.SpadesServiceStub,
    table: Table,
    chooser: Callable[[int, pb.SeatView], pb.Action] | None = None,
) -> Step | None:
    """Make one action for whichever human seat must act; None when the match is over.

    Every seat of ``table`` must be human (no bot acts between the calls)."""
    any_seat = next(iter(table.tokens))
    public = get_view(stub, table, any_seat)
    pending = seats_to_act(public)
    if not pending:
        return None
    seat = pending[0]
    view = public if seat == any_seat else get_view(stub, table, seat)
    action = chooser(seat, view) if chooser else choose(view)
    action_id = new_action_id()
    resp = submit(stub, table, seat, action, action_id=action_id)
    return Step(seat, action, action_id, resp, view)


def play_humans(
    stub: spades_pb2_grpc.SpadesServiceStub,
    table: Table,
    *,
    until: Callable[[pb.SeatView], bool] | None = None,
    max_actions: int = 5000,
    timeout: float = 60.0,
    chooser: Callable[[int, pb.SeatView], pb.Action] | None = None,
) -> list[Step]:
    """Play every (human) seat until the match is over, or ``until(view)`` holds
    for a seat's view taken before an action."""
    steps: list[Step] = []
    d = Deadline(timeout)
    for _ in range(max_actions):
        d.check("the match to advance")
        if until is not None:
            v = get_view(stub, table, next(iter(table.tokens)))
            if until(v):
                return steps
        step = step_humans(stub, table, chooser)
        if step is None:
            return steps
        steps.append(step)
    raise AssertionError(f"still playing after {max_actions} actions")


def play_one_seat(
    stub: spades_pb2_grpc.SpadesServiceStub,
    table: Table,
    seat: int,
    *,
    until: Callable[[pb.SeatView], bool] | None = None,
    timeout: float = 60.0,
    on_step: Callable[[Step], None] | None = None,
) -> pb.SeatView:
    """Play one human seat while bots play the others, until the match is over
    (or ``until(view)``); returns the last view."""
    d = Deadline(timeout)
    while True:
        d.check(f"seat {seat} to finish playing")
        view = get_view(stub, table, seat)
        if view.phase == pb.PHASE_MATCH_OVER or (until is not None and until(view)):
            return view
        if not view.legal_actions:
            time.sleep(POLL)
            continue
        action = choose(view)
        action_id = new_action_id()
        resp = submit(stub, table, seat, action, action_id=action_id)
        if on_step is not None:
            on_step(Step(seat, action, action_id, resp, view))


# -- streams --------------------------------------------------------------------------


def stream_events(
    stub: spades_pb2_grpc.SpadesServiceStub, table: Table, seat: int, after_seq: int = 0
) -> Any:
    return stub.StreamEvents(
        pb.StreamEventsRequest(match_id=table.match_id, after_seq=after_seq),
        metadata=seat_md(table.tokens[seat]),
        timeout=STREAM_TIMEOUT,
    )


def spectate(stub: spades_pb2_grpc.SpadesServiceStub, match_id: str, after_seq: int = 0) -> Any:
    return stub.Spectate(
        pb.SpectateRequest(match_id=match_id, after_seq=after_seq), timeout=STREAM_TIMEOUT
    )


def is_match_ended(ev: pb.MatchEvent) -> bool:
    return ev.HasField("match_ended")


class StreamReader:
    """Reads a server stream on a thread into ``events`` until ``stop(event)``,
    ``limit`` events, an error (kept in ``error``) or ``cancel()``."""

    def __init__(
        self,
        call: Any,
        *,
        stop: Callable[[pb.MatchEvent], bool] | None = None,
        limit: int | None = None,
    ) -> None:
        self.call = call
        self.stop = stop
        self.limit = limit
        self.events: list[pb.MatchEvent] = []
        self.error: grpc.RpcError | None = None
        self.fault: str | None = None  # a broken stream promise, seen by the reader
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for resp in self.call:
                if self._handle(resp):
                    break
        except grpc.RpcError as err:
            self.error = err
        finally:
            self.call.cancel()
            with self._cond:
                self._cond.notify_all()

    def _handle(self, resp: Any) -> bool:
        """Keep one response; True once the reader should stop."""
        return self._take(resp.events)

    def _take(self, batch: Sequence[pb.MatchEvent]) -> bool:
        """Keep one response's events; True once the reader should stop."""
        if not 1 <= len(batch) <= 256:
            self.fault = f"a stream response carried {len(batch)} events (1 to 256 promised)"
            return True
        for event in batch:
            with self._cond:
                if self.events and event.seq <= self.events[-1].seq:
                    self.fault = f"seq {event.seq} came after seq {self.events[-1].seq}"
                    return True
                self.events.append(event)
                self._cond.notify_all()
            if (self.stop is not None and self.stop(event)) or (
                self.limit is not None and len(self.events) >= self.limit
            ):
                return True
        return False

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    @property
    def last_seq(self) -> int:
        with self._cond:
            return self.events[-1].seq if self.events else 0

    def wait_for(
        self, pred: Callable[[list[pb.MatchEvent]], bool], what: str, timeout: float = 15.0
    ) -> None:
        d = Deadline(timeout)
        with self._cond:
            while not pred(self.events):
                if self.fault is not None:
                    raise AssertionError(self.fault)
                if self.done and not pred(self.events):
                    raise AssertionError(f"stream ended ({self.error!r}) before {what}")
                d.check(what)
                self._cond.wait(timeout=min(0.05, d.left() + 0.001))

    def wait_seq(self, seq: int, timeout: float = 15.0) -> None:
        self.wait_for(lambda evs: bool(evs) and evs[-1].seq >= seq, f"seq {seq}", timeout)

    def join(self, timeout: float = 15.0) -> None:
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.call.cancel()
            self._thread.join(5)
            raise AssertionError(f"stream reader still running after {timeout}s")
        if self.fault is not None:
            raise AssertionError(self.fault)

    def cancel(self) -> None:
        self.call.cancel()
        self._thread.join(10)


class PlayCall(StreamReader):
    """A Play call for one seat: ``act`` sends actions; a thread reads the events
    (into ``events``, checked as StreamReader checks them) and the results."""

    def __init__(
        self,
        stub: spades_pb2_grpc.SpadesServiceStub,
        table: Table,
        seat: int,
        *,
        after_seq: int = 0,
        first: pb.PlayRequest | None = None,
        stop: Callable[[pb.MatchEvent], bool] | None = None,
    ) -> None:
        self.outgoing: queue.Queue[pb.PlayRequest | None] = queue.Queue()
        self.results: list[pb.ActionResult] = []
        # The last event seq received when each result arrived.
        self.seen_at_result: list[int] = []
        opening = pb.PlayRequest(open=pb.PlayOpen(match_id=table.match_id, after_seq=after_seq))
        self.outgoing.put(first or opening)
        call = stub.Play(
            iter(self.outgoing.get, None),
            metadata=seat_md(table.tokens[seat]),
            timeout=STREAM_TIMEOUT,
        )
        super().__init__(call, stop=stop)

    def _handle(self, resp: Any) -> bool:
        if not resp.events and not resp.results:
            self.fault = "a Play response carried neither events nor results"
            return True
        stop = bool(resp.events) and self._take(resp.events)
        with self._cond:
            for r in resp.results:
                self.results.append(r)
                self.seen_at_result.append(self.events[-1].seq if self.events else 0)
            self._cond.notify_all()
        return stop

    def act(
        self, action: pb.Action, *, action_id: str | None = None, expected_seq: int | None = None
    ) -> str:
        """Send an action (not waiting for its result); returns its action id."""
        sent = pb.PlayAction(
            action_id=new_action_id() if action_id is None else action_id, action=action
        )
        if expected_seq is not None:
            sent.expected_seq = expected_seq
        self.outgoing.put(pb.PlayRequest(action=sent))
        return sent.action_id

    def send(self, request: pb.PlayRequest) -> None:
        self.outgoing.put(request)

    def result(self, action_id: str, timeout: float = 15.0) -> pb.ActionResult:
        """The result of the action ``action_id`` (the first, if it was sent twice)."""

        def arrived(_: list[pb.MatchEvent]) -> bool:
            return any(r.action_id == action_id for r in self.results)

        self.wait_for(arrived, f"the result of {action_id}", timeout)
        with self._cond:
            return next(r for r in self.results if r.action_id == action_id)

    def close_sending(self) -> None:
        """Half-close: no more actions; events keep coming."""
        self.outgoing.put(None)

    def cancel(self) -> None:
        self.outgoing.put(None)
        super().cancel()


def read_until(call: Any, last_seq: int, timeout: float = 15.0) -> list[pb.MatchEvent]:
    """Read a stream synchronously until an event with seq >= ``last_seq``."""
    reader = StreamReader(call, stop=lambda ev: ev.seq >= last_seq)
    try:
        reader.join(timeout)
    finally:
        call.cancel()
    if reader.error is not None:
        raise reader.error
    return reader.events


def wire(events: Iterable[pb.MatchEvent]) -> list[bytes]:
    return [e.SerializeToString(deterministic=True) for e in events]


# -- cards ----------------------------------------------------------------------------


def card_key(card: pb.Card) -> tuple[int, int]:
    return (int(card.suit), int(card.rank))


def cards_in(msg: Any) -> list[pb.Card]:
    """Every Card message anywhere inside ``msg``."""
    found: list[pb.Card] = []
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        items = value if fd.is_repeated else [value]
        for item in items:
            if fd.message_type.full_name == "spades.v1.Card":
                found.append(item)
            else:
                found.extend(cards_in(item))
    return found
