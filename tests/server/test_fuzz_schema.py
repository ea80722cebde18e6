"""The schema-driven fuzz of spades.v1.SpadesService, against a real server.

While a few client threads play matches legally to the end, one thread sends
requests generated from the proto descriptors (every method, streaming ones
included), valid-but-wrong requests (real match ids and seat tokens in the
wrong places, stale and future sequence numbers, legal actions for the wrong
seat), and bytes that are not the request's message; another writes broken
HTTP/2 to the server's port. Then: the server is alive and plays a legal game,
every refusal was a status with an ErrorInfo, every match equals a replay of
its own game record, and nothing refused changed anything.

The run is reproducible in what it generates (``derandomize``), not in what it
meets: the matches it aims at move on under the legal players.
"""

from __future__ import annotations

import collections
import json
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from fuzz_schema import (
    HEADERS,
    field_paths,
    fields_named,
    frames_in,
    malformed_payloads,
    message_strategy,
    raw_connections,
    send_raw,
    sweep_values,
    type_has_field,
    with_value,
)
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Deadline,
    Server,
    Table,
    choose,
    create_match,
    failure_of,
    get_view,
    play_humans,
    seat_md,
    seats_to_act,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc

from spades_engine.record import loads_record, replay

SERVICE = pb.DESCRIPTOR.services_by_name["SpadesService"]
METHODS: list[MethodDescriptor] = list(SERVICE.methods)

# Operator methods that change a match that already exists. With the operator
# credential the fuzz sends them only at a match kept for them (``reserved``):
# aimed at a match the legal players use, a successful call would change it
# under them (a reissued token locks its player out), and aimed at the quiet
# match it would break "nothing refused changed anything" without anything
# being wrong. A method added to the proto that changes a match with the
# operator credential belongs here; until it is, the quiet match's check fails.
OPERATOR_METHODS_THAT_CHANGE_A_MATCH = frozenset({"ReissueSeatToken", "SetSpectators"})

EXAMPLES = 1200  # hypothesis examples: each one call (a stream is one call)
LEGAL_PLAYERS = 3
LEGAL_PAUSE = 0.005  # seconds between a legal player's actions
MAX_MESSAGE_BYTES = 256 * 1024
STREAM_DEADLINE = 0.4  # seconds; a stream that is still open then ends DEADLINE_EXCEEDED
SWEEP_STREAM_DEADLINE = 0.15  # the same, in the sweep of edge values (many streams)
STREAM_READS = 3  # responses read from a stream before the fuzz cancels it
TARGET_SCORE = 120  # legal matches last two or three hands

SERVER_FLAGS = (
    "--actions-per-second",
    "100000",
    # Matches the fuzz creates may seat Expert bots, whose search would spend
    # this 2-core machine's CPU for the whole run: their bots wait instead.
    # Legal play does not need them (a human may act for a seat a bot stands in).
    "--bot-delay-ms",
    "600000",
    # A PollEvents call answers within this, not 25 s.
    "--poll-max-wait-ms",
    "200",
    # Low, so that requests over it are cheap to make (grpc refuses them).
    "--max-message-bytes",
    str(MAX_MESSAGE_BYTES),
    "--request-timeout-seconds",
    "2",
)

# Codes a reply may carry without an ErrorInfo, each only in the case named:
# grpc's own refusals and statuses the client makes itself, never the service's.
#  - DEADLINE_EXCEEDED: a stream the fuzz gave a short deadline, still open then;
#  - CANCELLED: a call the fuzz cancelled itself after reading enough;
#  - RESOURCE_EXHAUSTED: a request over --max-message-bytes (grpc core refuses
#    it before any handler runs; docs/api.md, "Limits").
# Anything else without an ErrorInfo, and INTERNAL or UNKNOWN at all, fails.
BARE_DEADLINE = grpc.StatusCode.DEADLINE_EXCEEDED
BARE_CANCELLED = grpc.StatusCode.CANCELLED
BARE_TOO_LARGE = grpc.StatusCode.RESOURCE_EXHAUSTED
NEVER = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)

_CODES = {c.value[0]: c for c in grpc.StatusCode}


# -- the matches the fuzz knows ---------------------------------------------------------


@dataclass
class World:
    """Every match the test knows of, and what each fuzz request did."""

    live: list[Table] = field(default_factory=list)  # being played legally now
    finished: list[Table] = field(default_factory=list)  # played to the end
    quiet: Table | None = None  # only ever sent requests that must be refused
    reserved: Table | None = None  # the target of OPERATOR_METHODS_THAT_CHANGE_A_MATCH
    # Every match id an OK reply (or the setup) made: at the end, exactly the
    # matches the server holds.
    made: set[str] = field(default_factory=set)
    # Fuzz actions sent with a real seat token under an id no other call used:
    # (match id, action id) -> accepted (True), refused (False), unknown (None).
    actions: dict[tuple[str, str], bool | None] = field(default_factory=dict)
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    codes: collections.Counter[str] = field(default_factory=collections.Counter)
    errors: list[BaseException] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def tables(self) -> list[Table]:
        """Matches whose seat tokens a fuzz request may carry (never the quiet one's)."""
        with self.lock:
            out = [*self.live, *self.finished[-8:]]
        assert self.reserved is not None
        return [*out, self.reserved]

    def count(self, kind: str, n: int = 1) -> None:
        with self.lock:
            self.counts[kind] += n


def _channel(port: int) -> grpc.Channel:
    # Each client its own TCP connection (gRPC would share one subchannel).
    return grpc.insecure_channel(
        f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]
    )


# -- legal play ---------------------------------------------------------------------------

# What a legal player may meet while the fuzz plays in its matches too: the fuzz
# acted first (the turn moved), a chat line or seat change made its view stale.
_LEGAL_REFUSALS = {"STALE_SEQUENCE", "NOT_YOUR_TURN", "WRONG_PHASE", "MATCH_OVER"}


def play_to_the_end(world: World, stub: Any, table: Table, *, expect_seq: bool) -> int:
    """Play every seat of ``table`` legally until the match is over, whatever
    the fuzz does meanwhile; returns the number of actions accepted."""
    accepted = 0
    d = Deadline(90.0)
    seat0 = next(iter(table.tokens))
    while True:
        d.check(f"match {table.match_id} to end under the fuzz")
        public = get_view(stub, table, seat0)
        pending = seats_to_act(public)
        if not pending:
            return accepted
        seat = pending[0]
        view = public if seat == seat0 else get_view(stub, table, seat)
        if not view.legal_actions:
            continue  # the fuzz moved the match between the two views
        req = pb.SubmitActionRequest(
            match_id=table.match_id,
            action_id=f"legal-{table.match_id}-{view.as_of_seq}-{seat}-{accepted}",
            action=choose(view),
        )
        if expect_seq:
            req.expected_seq = view.as_of_seq
        try:
            stub.SubmitAction(req, metadata=seat_md(table.tokens[seat]), timeout=RPC_TIMEOUT)
            accepted += 1
            # At full speed three players spend the CPU the fuzz and the
            # tests beside it (pytest -n) need; a few hundred actions a second
            # keep every table moving under the fuzz.
            time.sleep(LEGAL_PAUSE)
        except grpc.RpcError as err:
            f = failure_of(err)
            assert f.reason in _LEGAL_REFUSALS, f"a legal action was refused: {f}"


def legal_player(world: World, port: int, index: int) -> None:
    """Play matches to the end, one after the other, until the fuzz is done."""
    try:
        with _channel(port) as channel:
            stub = spades_pb2_grpc.SpadesServiceStub(channel)
            n = 0
            while not world.stop.is_set():
                table = create_match(stub, seed=1000 * index + n, target_score=TARGET_SCORE)
                n += 1
                with world.lock:
                    world.made.add(table.match_id)
                    world.live.append(table)
                world.count(
                    "legal actions", play_to_the_end(world, stub, table, expect_seq=index % 2 == 0)
                )
                with world.lock:
                    world.live.remove(table)
                    world.finished.append(table)
                world.count("legal matches")
    except BaseException as e:  # reported by the main thread
        world.errors.append(e)


# -- replies ------------------------------------------------------------------------------


@dataclass
class Reply:
    """How a call ended, with what the fuzz knows about it."""

    method: str
    code: grpc.StatusCode
    status: status_pb2.Status | None  # the google.rpc.Status details, if any
    responses: list[Any]
    cancelled: bool = False  # by the fuzz, after reading enough
    streaming: bool = False
    too_large: bool = False  # a request over --max-message-bytes
    note: str = ""

    def describe(self) -> str:
        return f"{self.method} {self.code.name} ({self.note[:300]})"


def reason_of(status: status_pb2.Status | None) -> str | None:
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            if info.domain == "spades.v1" and info.reason:
                return info.reason
    return None


def check_reply(world: World, reply: Reply) -> None:
    """Every refusal the service makes carries an ErrorInfo; the few statuses
    grpc makes by itself are allowed only where they are expected."""
    world.codes[reply.code.name] += 1
    if reply.code is grpc.StatusCode.OK:
        return
    assert reply.code not in NEVER, f"the server failed: {reply.describe()}"
    if reason_of(reply.status) is not None:
        return
    bare_ok = (
        (reply.code is BARE_DEADLINE and reply.streaming)
        or (reply.code is BARE_CANCELLED and reply.cancelled)
        or (reply.code is BARE_TOO_LARGE and reply.too_large)
    )
    assert bare_ok, f"a refusal without ErrorInfo: {reply.describe()}"
    world.codes[f"{reply.code.name} (no ErrorInfo, expected)"] += 1


def _status(err: grpc.RpcError) -> status_pb2.Status | None:
    try:
        return rpc_status.from_call(err)  # type: ignore[arg-type]
    except ValueError as e:  # the details' code is not the call's
        raise AssertionError(f"grpc-status-details-bin disagrees with the status: {e}") from None


def _plain(msg: Any) -> bytes:
    return msg if isinstance(msg, bytes) else bytes(msg.SerializeToString())


def call(
    channel: grpc.Channel,
    method: MethodDescriptor,
    requests: Sequence[Any],
    metadata: Sequence[tuple[str, str]],
    *,
    note: str = "",
    results_expected: int = 0,
    read_all: bool = False,
    deadline: float = STREAM_DEADLINE,
) -> Reply:
    """One call of ``method`` with ``requests`` (messages or raw bytes; one
    unless the client streams). A stream is read for at most STREAM_READS
    responses (or until ``results_expected`` Play results came) and then
    cancelled; every call has a deadline."""
    path = f"/{SERVICE.full_name}/{method.name}"
    out_cls = message_factory.GetMessageClass(method.output_type)
    size = max((len(_plain(r)) for r in requests), default=0)
    reply = Reply(
        method.name,
        grpc.StatusCode.OK,
        None,
        [],
        note=note,
        streaming=method.server_streaming,
        too_large=size > MAX_MESSAGE_BYTES,
    )
    kw: dict[str, Any] = {"request_serializer": _plain, "response_deserializer": out_cls.FromString}
    try:
        if not method.server_streaming:
            assert not method.client_streaming, f"{method.full_name}: client streaming alone"
            fn = channel.unary_unary(path, **kw)
            reply.responses.append(fn(requests[0], metadata=metadata, timeout=RPC_TIMEOUT))
            return reply
        if method.client_streaming:
            stream = channel.stream_stream(path, **kw)(
                iter(requests), metadata=metadata, timeout=deadline
            )
        else:
            stream = channel.unary_stream(path, **kw)(
                requests[0], metadata=metadata, timeout=deadline
            )
        results = 0
        for resp in stream:
            reply.responses.append(resp)
            results += len(getattr(resp, "results", ()))
            enough = len(reply.responses) >= STREAM_READS and results >= results_expected
            if enough and not read_all:
                reply.cancelled = True
                stream.cancel()
                break
        reply.code = stream.code() or grpc.StatusCode.OK
        # The call may have ended by itself just before the cancel: then its
        # status is the server's, details and all.
        if reply.code not in (grpc.StatusCode.OK, grpc.StatusCode.CANCELLED):
            reply.status = _status(stream)  # type: ignore[arg-type]
    except grpc.RpcError as err:
        reply.code = err.code()  # type: ignore[attr-defined]
        reply.status = _status(err)
    return reply


def play_results(reply: Reply) -> Iterator[pb.ActionResult]:
    for resp in reply.responses:
        yield from getattr(resp, "results", ())


def check_play_results(world: World, reply: Reply) -> None:
    """A refused action on a Play call carries the status SubmitAction would
    have, ErrorInfo included."""
    for result in play_results(reply):
        if result.HasField("error"):
            status = status_pb2.Status.FromString(result.error.SerializeToString())
            code = _CODES.get(status.code)
            assert code not in (None, *NEVER), f"Play result {result}"
            assert reason_of(status) is not None, f"a Play refusal without ErrorInfo: {result}"
            world.codes[f"Play.action {code.name}"] += 1  # type: ignore[union-attr]


# -- credentials --------------------------------------------------------------------------

_junk = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=300)
GARBAGE = st.one_of(
    st.sampled_from(
        [
            "Bearer",
            "Bearer ",
            "Basic b3A6b3A=",
            "Bearer a.b",
            "Bearer ..",
            "Bearer .x",
            "Bearer x.",
            "Bearer " + "m" * 65 + ".s",
            "Bearer " + "m.s" * 100,
            "op",
        ]
    ),
    st.builds(lambda s: f"Bearer {s}", _junk),
    _junk,
).filter(lambda v: v.split()[-1:] != ["op"])


KINDS = ("valid-but-wrong", "generated", "raw payloads")
CREDENTIALS = ("none", "garbage", "seat", "operator")
# Half of the valid-but-wrong requests carry a real seat token of a match.
WRONG_CREDENTIALS = ("none", "garbage", "operator", "two", "other match's seat", *["seat"] * 5)
# Methods that act for a seat (their requests hold an action id) are drawn
# three times as often: they are where a refusal could still change a match.
METHOD_DRAW = [
    m.name for m in METHODS for _ in range(3 if type_has_field(m.input_type, "action_id") else 1)
]


def request_id() -> st.SearchStrategy[list[tuple[str, str]]]:
    ascii_ = st.characters(min_codepoint=32, max_codepoint=126)
    return st.one_of(
        st.just([]), st.builds(lambda s: [("x-request-id", s)], st.text(ascii_, max_size=200))
    )


# -- the fuzz -----------------------------------------------------------------------------


class Fuzz:
    def __init__(self, world: World, srv: Server) -> None:
        self.world = world
        self.srv = srv
        self.channel = _channel(srv.port)
        self.stub = spades_pb2_grpc.SpadesServiceStub(self.channel)
        self.ids = iter(range(1, 1 << 40))
        self.snapshots: list[bytes] = []
        self.examples = 0

    # helpers: calls the fuzz makes to aim its requests, not counted as tried
    def summary(self, match_id: str) -> pb.MatchSummary:
        return self.stub.GetMatch(
            pb.GetMatchRequest(match_id=match_id), metadata=OP, timeout=RPC_TIMEOUT
        ).match

    def unique_action_ids(self, requests: Sequence[Any], match_id: str) -> list[str]:
        """Give each action id a request may set that could be accepted (1 to 64
        characters) a prefix no other call uses, keeping the generated text."""
        ids = []
        for req in requests:
            for msg, f in fields_named(req, "action_id"):
                text = getattr(msg, f.name)
                if 0 < len(text) <= 64:
                    prefix = f"fz{next(self.ids)}-"
                    text = (prefix + text)[:64]
                    setattr(msg, f.name, text)
                    ids.append(text)
                    self.world.actions[(match_id, text)] = None
        return ids

    def example(self, data: Any) -> None:
        # Hypothesis draws what it sends (the method, its requests, the bytes);
        # everything else (the credential, which match, whose turn it is) is
        # chosen by ``rng``, since it depends on the matches as they are now and
        # hypothesis's draws must not depend on state outside the example. The
        # seed takes in the example's number: hypothesis draws the same small
        # integers often, and the mix would repeat itself.
        method = SERVICE.methods_by_name[data.draw(st.sampled_from(METHOD_DRAW), label="method")]
        kind = data.draw(st.sampled_from(KINDS), label="kind")
        self.examples += 1
        rng = random.Random(f"{self.examples}-{data.draw(st.integers(0, 2**64 - 1))}")
        if kind == "raw payloads":
            payload = data.draw(st.binary(max_size=300), label="payload")
            md = rng.choice([(), OP])
            self.send(kind, method, [payload], md, note=repr(payload[:40]))
            return
        strategy = message_strategy(method.input_type)
        if method.client_streaming:
            requests = data.draw(st.lists(strategy, max_size=4), label="requests")
        else:
            requests = [data.draw(strategy, label="request")]
        extra = data.draw(request_id(), label="x-request-id")
        garbage = data.draw(GARBAGE, label="garbage credential")
        if kind == "generated":
            cred = rng.choice(CREDENTIALS)
            self.generated(rng, method, requests, cred, garbage, extra)
        else:
            cred = rng.choice(WRONG_CREDENTIALS)
            self.wrong(rng, method, requests, cred, garbage, extra)

    def generated(
        self,
        rng: random.Random,
        method: MethodDescriptor,
        requests: list[Any],
        cred: str,
        garbage: str,
        extra: list[Any],
    ) -> None:
        md: list[tuple[str, str]] = []
        match_id = ""
        if cred == "garbage":
            md = [("authorization", garbage)]
        elif cred == "operator":
            md = list(OP)
        elif cred == "seat":
            table = rng.choice(self.world.tables())
            md = list(seat_md(table.tokens[rng.choice(sorted(table.tokens))]))
            match_id = table.match_id
        ids = self.unique_action_ids(requests, match_id) if match_id else []
        self.send("generated", method, requests, md + extra, action_ids=ids, match_id=match_id)

    def wrong(
        self,
        rng: random.Random,
        method: MethodDescriptor,
        requests: list[Any],
        cred: str,
        garbage: str,
        extra: list[Any],
    ) -> None:
        """Real ids and tokens in the wrong places, sequence numbers off by some,
        legal actions for the wrong seat."""
        world = self.world
        assert world.quiet is not None and world.reserved is not None
        if method.name in OPERATOR_METHODS_THAT_CHANGE_A_MATCH:
            target = world.reserved
        else:
            with world.lock:
                # Mostly matches in play, where a wrong request meets a moving table.
                # The quiet and the reserved match stand still between the
                # fuzz's own requests: a legal action aimed at them stays legal.
                pool = [*world.live * 3, *world.finished[-2:], *[world.quiet, world.reserved] * 3]
            target = rng.choice(pool)
        quiet = target is world.quiet
        # A match no legal player moves: a legal action found for it is still
        # legal when sent, so only what the fuzz made wrong can refuse it.
        still = quiet or target is world.reserved
        others = [t for t in world.tables() if t.match_id != target.match_id]
        last_seq = self.summary(target.match_id).last_seq
        actor = None  # the seat whose legal action the request now carries
        opening = open_request(method.input_type, target.match_id)
        if method.client_streaming and opening is not None and rng.random() < 0.75:
            requests.insert(0, opening)

        for req in requests:
            for msg, f in fields_named(req, "action_id"):
                # An id, so that the action may go further (on a match that
                # stands still, always one that the server takes).
                if not getattr(msg, f.name) or still:
                    setattr(msg, f.name, getattr(msg, f.name)[:50] or "w")
            for msg, f in fields_named(req, "match_id"):
                if still or rng.random() < 0.9:
                    setattr(msg, f.name, target.match_id)
            for msg, f in fields_named(req, "after_seq"):
                setattr(msg, f.name, rng.choice([0, 1, last_seq, last_seq + 1, 2**64 - 1]))
            for msg, f in fields_named(req, "expected_seq"):
                # Unset, stale (the start, one before the end), current, or past the end.
                off = rng.choice(["unset", "start", -1, 0, 1, 1000])
                if off == "unset":
                    msg.ClearField(f.name)
                else:
                    setattr(msg, f.name, 0 if off == "start" else max(0, last_seq + off))
            for msg, f in fields_named(req, "snapshot"):
                if f.type == FieldDescriptor.TYPE_BYTES:
                    setattr(msg, f.name, self.mutated_snapshot(rng))
            for msg, f in fields_named(req, "action"):
                is_action = (
                    f.message_type is not None and f.message_type.full_name == "spades.v1.Action"
                )
                if is_action and (still or rng.random() < 0.6):
                    action, actor = self.someones_legal_action(rng, target)
                    getattr(msg, f.name).CopyFrom(action)

        md: list[tuple[str, str]] = []
        acting_on = ""
        if cred == "garbage":
            md = [("authorization", garbage)]
        elif cred == "operator":
            md = list(OP)
        elif cred == "two":  # two authorization headers: garbage first, then a real one
            md = [("authorization", garbage), *OP]
        elif cred == "other match's seat" and others:
            other = rng.choice(others)
            md = list(seat_md(other.tokens[rng.choice(sorted(other.tokens))]))
            acting_on = other.match_id
        elif cred == "seat" and (not quiet or type_has_field(method.input_type, "expected_seq")):
            # The seat whose action it is, or another one (on a match that
            # stands still always its own: then only the sequence number, the
            # match id or the action id can be wrong).
            seat = actor if actor is not None and (still or rng.random() < 0.5) else None
            md = list(
                seat_md(target.tokens[rng.choice(sorted(target.tokens)) if seat is None else seat])
            )
            acting_on = target.match_id
            if quiet:
                # The quiet match's own token only with sequence numbers past
                # its end: refused whatever else the request says.
                for req in requests:
                    for msg, f in fields_named(req, "expected_seq"):
                        setattr(msg, f.name, last_seq + 1 + rng.randrange(2**32))
        ids = self.unique_action_ids(requests, acting_on) if acting_on else []
        self.send(
            "valid-but-wrong", method, requests, md + extra, action_ids=ids, match_id=acting_on
        )
        if quiet:
            assert self.summary(target.match_id).last_seq == last_seq, (
                f"a refused {method.name} moved the quiet match's last_seq"
            )

    def someones_legal_action(self, rng: random.Random, table: Table) -> tuple[pb.Action, int]:
        """A legal action of the seat to act (to be sent by it, by another seat,
        or late), or of any seat (none if it is not its turn), and the seat."""
        seats = sorted(table.tokens)
        try:
            pending = seats_to_act(get_view(self.stub, table, seats[0]))
            seat = rng.choice(pending) if pending and rng.random() < 0.8 else rng.choice(seats)
            view = get_view(self.stub, table, seat)
        except grpc.RpcError:
            return pb.Action(), seats[0]
        if view.legal_actions:
            return rng.choice(list(view.legal_actions)), seat
        return pb.Action(bid=pb.BidAction(tricks=3)), seat

    def mutated_snapshot(self, rng: random.Random) -> bytes:
        """A real match's snapshot, as it is or with a bit flipped, cut short, or
        with bytes after it."""
        snap = bytearray(rng.choice(self.snapshots))
        how = rng.choice(["as is", "flip", "cut", "append"])
        if how == "flip" and snap:
            snap[rng.randrange(len(snap))] ^= 1 << rng.randrange(8)
        elif how == "cut":
            del snap[rng.randrange(len(snap) + 1) :]
        elif how == "append":
            snap += rng.randbytes(rng.randrange(1, 20))
        return bytes(snap)

    def send(
        self,
        kind: str,
        method: MethodDescriptor,
        requests: Sequence[Any],
        md: Sequence[tuple[str, str]],
        *,
        note: str = "",
        action_ids: Sequence[str] = (),
        match_id: str = "",
        expect_malformed: bool = False,
        deadline: float = STREAM_DEADLINE,
    ) -> Reply:
        if not method.client_streaming and not requests:
            requests = [b""]
        actions = (
            sum(
                1
                for r in requests[1:]
                if not isinstance(r, bytes) and r.WhichOneof("kind") == "action"
            )
            if method.client_streaming
            else 0
        )
        reply = call(
            self.channel,
            method,
            requests,
            md,
            note=note or repr(requests)[:300],
            results_expected=actions,
            read_all=expect_malformed,  # the refusal comes after the events
            deadline=deadline,
        )
        self.world.count(kind)
        check_reply(self.world, reply)
        check_play_results(self.world, reply)
        if expect_malformed:
            assert (reply.code, reason_of(reply.status)) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "MALFORMED_REQUEST",
            ), reply.describe()
        self.settle(reply, action_ids, match_id)
        return reply

    def settle(self, reply: Reply, action_ids: Sequence[str], match_id: str) -> None:
        """Note what became of the actions and matches of one reply."""
        world = self.world
        for resp in reply.responses:
            made = [getattr(resp, "match", None)] if reply.code is grpc.StatusCode.OK else []
            for m in made:
                if (
                    m is not None
                    and m.match_id
                    and resp.DESCRIPTOR.fields_by_name.get("seat_tokens")
                ):
                    world.made.add(m.match_id)
        if not action_ids:
            return
        results = {r.action_id: not r.HasField("error") for r in play_results(reply)}
        for aid in action_ids:
            key = (match_id, aid)
            if reply.streaming:
                world.actions[key] = results.get(aid)
            else:
                world.actions[key] = reply.code is grpc.StatusCode.OK

    # -- the quiet match: legal but for a sequence number past its end --------------------
    def quiet_probe(self) -> None:
        """For each method whose request may carry an expected_seq: the seat to
        act's legal action on the quiet match, with its own token, a valid id
        and an expected_seq past the match's end. Refused, it must change
        nothing (checked after each call and at the end)."""
        quiet = self.world.quiet
        assert quiet is not None
        rng = random.Random(11)
        for method in METHODS:
            if not type_has_field(method.input_type, "expected_seq"):
                continue
            cls = message_factory.GetMessageClass(method.input_type)
            for _ in range(3):
                last_seq = self.summary(quiet.match_id).last_seq
                action, actor = self.someones_legal_action(rng, quiet)
                req = cls()
                if "expected_seq" not in method.input_type.fields_by_name:
                    # Client streaming: the member of the message's oneof that holds it.
                    for f in method.input_type.fields:
                        if f.message_type is not None and type_has_field(
                            f.message_type, "expected_seq"
                        ):
                            getattr(req, f.name).SetInParent()
                for msg, f in fields_named(req, "expected_seq"):
                    setattr(msg, f.name, last_seq + 1)
                for msg, f in fields_named(req, "match_id"):
                    setattr(msg, f.name, quiet.match_id)
                for msg, f in fields_named(req, "action_id"):
                    setattr(msg, f.name, "q")
                for msg, f in fields_named(req, "action"):
                    if (
                        f.message_type is not None
                        and f.message_type.full_name == "spades.v1.Action"
                    ):
                        getattr(msg, f.name).CopyFrom(action)
                requests = [req]
                opening = open_request(method.input_type, quiet.match_id)
                if method.client_streaming and opening is not None:
                    requests = [opening, req]
                ids = self.unique_action_ids(requests, quiet.match_id)
                self.send(
                    "valid-but-wrong",
                    method,
                    requests,
                    seat_md(quiet.tokens[actor]),
                    action_ids=ids,
                    match_id=quiet.match_id,
                )
                assert self.summary(quiet.match_id).last_seq == last_seq, (
                    f"a {method.name} refused for its expected_seq moved the quiet match"
                )

    # -- every field of every request at its edges -----------------------------------------
    def sweep(self) -> None:
        """Each field of each method's request (nested ones included) set alone
        to each of its edge values, sent with no credential, the operator's and
        a live match's seat token (whose match an empty match_id means)."""
        n = 0
        for method in METHODS:
            cls = message_factory.GetMessageClass(method.input_type)
            for path in field_paths(method.input_type):
                for value in sweep_values(path):
                    for cred in ("none", "operator", "seat"):
                        n += 1
                        tables = self.world.tables()
                        table = tables[n % len(tables)]
                        req = cls()
                        with_value(req, path, value)
                        for msg, f in fields_named(req, "action_id"):
                            if f.full_name != path[-1].full_name and not getattr(msg, f.name):
                                setattr(msg, f.name, "s")  # an id, so that the action goes on
                        requests = [req]
                        opening = open_request(method.input_type, "")
                        if method.client_streaming and opening is not None:
                            oneof = path[0].containing_oneof
                            if oneof is None or opening.WhichOneof(oneof.name) != path[0].name:
                                requests = [opening, req]
                        md: Sequence[tuple[str, str]] = ()
                        acting_on = ""
                        if cred == "operator":
                            md = OP
                        elif cred == "seat":
                            md = seat_md(table.tokens[sorted(table.tokens)[n % len(table.tokens)]])
                            acting_on = table.match_id
                        ids = self.unique_action_ids(requests, acting_on) if acting_on else []
                        self.send(
                            "edge sweep",
                            method,
                            requests,
                            md,
                            note=f"{'.'.join(f.name for f in path)}={str(value)[:40]!r} {cred}",
                            action_ids=ids,
                            match_id=acting_on,
                            deadline=SWEEP_STREAM_DEADLINE,
                        )

    # -- raw payloads of every method, each certain not to parse --------------------------
    def malformed(self) -> None:
        table = self.world.tables()[0]
        for method in METHODS:
            valid = open_request(method.input_type, table.match_id)
            if valid is None:
                valid = message_factory.GetMessageClass(method.input_type)()
                if "match_id" in method.input_type.fields_by_name:
                    valid.match_id = table.match_id
            parse = message_factory.GetMessageClass(method.input_type).FromString
            for label, payload in malformed_payloads(method.input_type, valid.SerializeToString()):
                # Refused exactly when protobuf's own parser refuses it (the
                # server's): upb accepts a field number 0 in a message with no
                # fields (PingRequest), which is then just another request.
                try:
                    parse(payload)
                    refused = False
                except DecodeError:
                    refused = True
                for md in ((), OP, seat_md(table.tokens[0])):
                    self.send(
                        "raw payloads", method, [payload], md, note=label, expect_malformed=refused
                    )
                if method.client_streaming and refused:
                    # After a good first message, a malformed one ends the call too.
                    opening = open_request(method.input_type, table.match_id)
                    if opening is not None:
                        self.send(
                            "raw payloads",
                            method,
                            [opening, payload],
                            seat_md(table.tokens[0]),
                            note=f"after open: {label}",
                            expect_malformed=True,
                        )


def open_request(desc: Descriptor, match_id: str) -> Any | None:
    """A first message of a client-streaming method: the first oneof member
    whose message names a match (Play's ``open``), aimed at ``match_id``."""
    cls = message_factory.GetMessageClass(desc)
    for oneof in desc.oneofs:
        for f in oneof.fields:
            if f.message_type is not None and "match_id" in f.message_type.fields_by_name:
                msg = cls()
                getattr(msg, f.name).SetInParent()
                getattr(msg, f.name).match_id = match_id
                return msg
    return None


# -- raw HTTP/2 ---------------------------------------------------------------------------


def answered(got: bytes) -> bool:
    """Whether a raw connection's bytes hold the HEADERS of stream 1."""
    return any((k, s) == (HEADERS, 1) for k, _, s in frames_in(got))


def raw_frames(world: World, port: int, rounds: int) -> None:
    try:
        ping = f"/{SERVICE.full_name}/Ping"
        rng = random.Random(7)
        for _ in range(rounds):
            for label, data in raw_connections(ping):
                control = label.endswith("(control)")
                # The control's answer may take a while on a busy machine: read
                # until its HEADERS come (or 5 s), the others for 0.3 s.
                wait = (5.0, answered) if control else (0.3, None)
                got = send_raw(port, data, read_for=wait[0], enough=wait[1])
                world.count("raw frames")
                if control:
                    kinds = {(k, s) for k, _, s in frames_in(got[:])}
                    assert (HEADERS, 1) in kinds, (
                        f"the well-formed raw Ping got no HEADERS: {got[:200]!r}"
                    )
            # And bytes nobody chose, after a valid preface.
            for _ in range(5):
                junk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 400)))
                send_raw(port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + junk, read_for=0.2)
                world.count("raw frames")
    except BaseException as e:
        world.errors.append(e)


# -- checks -------------------------------------------------------------------------------


def export(stub: Any, match_id: str) -> pb.ExportMatchResponse:
    return stub.ExportMatch(
        pb.ExportMatchRequest(match_id=match_id), metadata=OP, timeout=RPC_TIMEOUT
    )


def all_matches(stub: Any) -> list[pb.MatchSummary]:
    out: list[pb.MatchSummary] = []
    token = ""
    d = Deadline(30)
    while True:
        d.check("the last page of ListMatches")
        page = stub.ListMatches(
            pb.ListMatchesRequest(page_size=500, page_token=token), metadata=OP, timeout=RPC_TIMEOUT
        )
        out += page.matches
        token = page.next_page_token
        if not token:
            return out


def stored_action_ids(srv: Server) -> set[tuple[str, str]]:
    with sqlite3.connect(f"file:{srv.db}?mode=ro", uri=True, timeout=10) as db:
        return set(db.execute("SELECT match_id, action_id FROM actions"))


def test_fuzz_the_service_from_its_schema(
    make_server: Callable[..., Server], figures: Callable[[str], None]
) -> None:
    t0 = time.monotonic()
    srv = make_server(*SERVER_FLAGS)
    world = World()
    stub = srv.stub
    quiet = create_match(stub, seed=5, target_score=TARGET_SCORE)
    play_humans(
        stub, quiet, until=lambda v: v.phase == pb.PHASE_PLAYING
    )  # mid-hand, with a history
    world.quiet = quiet
    world.reserved = create_match(stub, seed=6, target_score=TARGET_SCORE)
    world.made |= {quiet.match_id, world.reserved.match_id}
    quiet_before = export(stub, quiet.match_id)

    players = [
        threading.Thread(target=legal_player, args=(world, srv.port, i), daemon=True)
        for i in range(LEGAL_PLAYERS)
    ]
    for p in players:
        p.start()
    frames = threading.Thread(target=raw_frames, args=(world, srv.port, 2), daemon=True)
    frames.start()
    fuzz = Fuzz(world, srv)
    wait_for_live(world)
    fuzz.snapshots = [quiet_before.snapshot, export(stub, world.reserved.match_id).snapshot]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,  # CI runs the same requests every time
        database=None,
        # Each example acts on a live server that has moved on since: a
        # failure does not replay, so shrinking would chase a moving target.
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def fuzz_one(data: Any) -> None:
        if world.errors:
            return  # a client thread failed: reported below, outside hypothesis
        fuzz.example(data)

    try:
        fuzz.malformed()
        fuzz.quiet_probe()
        fuzz.sweep()
        fuzz_one()
    except BaseException:
        if world.errors:  # the cause, rather than what it made hypothesis say
            raise world.errors[0] from None
        raise
    finally:
        world.stop.set()
        fuzz.channel.close()
        for t in (*players, frames):
            t.join(120)
    if world.errors:
        raise world.errors[0]
    assert not any(t.is_alive() for t in (*players, frames)), "a client thread still runs"

    # The server is alive, answers, and plays a legal game to the end.
    assert srv.running(), srv.log_tail()
    stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
    after = create_match(stub, seed=99, target_score=TARGET_SCORE)
    world.made.add(after.match_id)
    world.count("legal actions", len(play_humans(stub, after)))
    assert get_view(stub, after, 0).phase == pb.PHASE_MATCH_OVER

    # Nothing refused changed anything: the quiet match is byte for byte as it was...
    quiet_after = export(stub, quiet.match_id)
    assert quiet_after.snapshot == quiet_before.snapshot
    assert quiet_after.record_json == quiet_before.record_json
    assert quiet_after.match == quiet_before.match  # last_seq included
    # ... no match exists that no OK reply made ...
    held = {m.match_id for m in all_matches(stub)}
    assert held == world.made, (held - world.made, world.made - held)
    # ... and no refused action is in the store, every accepted one is.
    stored = stored_action_ids(srv)
    for key, accepted in world.actions.items():
        if accepted is not None:
            assert (key in stored) == accepted, (
                f"action {key} was {'accepted' if accepted else 'refused'}, "
                f"and is {'' if key in stored else 'not '}in the store"
            )

    # Every match equals a replay of its own record.
    for match_id in sorted(held):
        exported = export(stub, match_id)
        again = replay(loads_record(exported.record_json))
        assert again.to_snapshot() == exported.snapshot, match_id
        assert len(json.loads(exported.record_json)["actions"]) == len(again.actions)

    tried = {
        k: world.counts[k]
        for k in (
            "generated",
            "edge sweep",
            "valid-but-wrong",
            "raw payloads",
            "raw frames",
            "legal actions",
        )
    }
    decided = collections.Counter(v for v in world.actions.values())
    lines: list[str] = []
    lines.append(
        f"\nfuzz: {sum(tried.values())} requests tried in {time.monotonic() - t0:.1f}s: "
        + ", ".join(f"{v} {k}" for k, v in tried.items())
        + f"; {world.counts['legal matches']} legal matches,"
        f" {len(held)} matches checked by replay; fuzz actions accepted {decided[True]},"
        f" refused {decided[False]}, unknown {decided[None]}"
    )
    lines.append("fuzz: codes " + ", ".join(f"{k} {v}" for k, v in sorted(world.codes.items())))
    figures("\n".join(lines))


def wait_for_live(world: World) -> None:
    d = Deadline(30)
    while True:
        with world.lock:
            if world.live:
                return
        if world.errors:
            raise world.errors[0]
        d.check("a legal player's first match")
        time.sleep(0.01)
