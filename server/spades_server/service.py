"""The spades.v1 servicer: checks credentials and input, then calls a session.

Every handler runs inside ``_unary`` / ``_streaming``, which bind the request
id, match id and seat to the logs, count the RPC, and turn any refusal into a
gRPC status with google.rpc details.
"""

from __future__ import annotations

import functools
import itertools
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
import structlog
from grpc_status import rpc_status

from spades_engine import (
    ActionParseError,
    CardError,
    DealError,
    IllegalAction,
    Match,
    Reason,
    RulesetError,
    SnapshotError,
    SpadesError,
    replay_snapshot,
)

from . import access, auth, calls, convert, play
from .errors import ServiceError, denied, invalid, store_message, unauthenticated, unavailable
from .gen.spades.v1 import spades_pb2 as pb
from .matches import Registry, SeatSpec
from .metrics import OPEN_STREAMS, RPC_LATENCY, RPCS
from .seats import CONTROL_HUMAN, CONTROL_STAND_IN
from .session import Session
from .store import StoreError

log = structlog.get_logger("spades.rpc")

Req = TypeVar("Req")
Resp = TypeVar("Resp")

# Refusals that are wrong whatever the state of the match (INVALID_ARGUMENT);
# every other rule violation depends on the state (FAILED_PRECONDITION).
_ARGUMENT_REASONS = {
    Reason.BID_OUT_OF_RANGE,
    Reason.UNKNOWN_ACTION,
    Reason.WRONG_PASS_COUNT,
    Reason.NOT_A_SUIT,
}
MAX_NAME = 64
MAX_ACTION_ID = 64
MAX_MATCH_ID = 64  # ids this server makes are 16 characters
MAX_PRESET = 32
MAX_TURN_TIMER_MS = 3_600_000
DEFAULT_POLL_MAX_WAIT_MS = 25_000
# A PollEvents wait ends this long before the call's deadline, so that its
# (empty) answer arrives before the client gives up on the call.
POLL_DEADLINE_MARGIN_S = 0.5
_BOT_LEVELS = frozenset(pb.BotLevel.values())


def service_error(exc: BaseException) -> ServiceError:
    """The status a client receives for an exception raised in a handler."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, IllegalAction):
        code = (
            grpc.StatusCode.INVALID_ARGUMENT
            if exc.reason in _ARGUMENT_REASONS
            else grpc.StatusCode.FAILED_PRECONDITION
        )
        return ServiceError(
            code, exc.reason.value, exc.message, fields=("action",), metadata={"rule": exc.rule}
        )
    if isinstance(exc, RulesetError):
        fields = tuple(f"ruleset.{o}" for o in exc.options)
        return invalid("INVALID_RULESET", str(exc), *fields)
    if isinstance(exc, convert.ConversionError):
        return invalid("INVALID_ARGUMENT", str(exc), exc.field_path)
    if isinstance(exc, SnapshotError):
        return invalid("INVALID_SNAPSHOT", str(exc), "snapshot")
    if isinstance(exc, SpadesError):  # the engine refused its input: never INTERNAL
        reason = next((r for t, r in _ENGINE_REASONS if isinstance(exc, t)), "INVALID_ARGUMENT")
        return invalid(reason, str(exc))
    if isinstance(exc, StoreError):
        # Loading a match (or listing) failed: the store is unreachable or
        # refused; nothing changed, and the same call can be retried.
        return unavailable("STORE_UNAVAILABLE", store_message("the store did not answer", exc))
    return ServiceError(grpc.StatusCode.INTERNAL, "INTERNAL", "internal error")


_ENGINE_REASONS: tuple[tuple[type[SpadesError], str], ...] = (
    (DealError, "INVALID_DEAL"),
    (ActionParseError, "INVALID_ACTION"),
    (CardError, "INVALID_CARD"),
)


# Request ids made here: a random per-process prefix and a counter, unique across
# replicas without a random draw (a syscall) per request.
_ID_PREFIX = secrets.token_hex(4)
_ids = itertools.count(1)


def _request_id(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == "x-request-id" and isinstance(value, str) and 0 < len(value) <= 128:
            return value
    return f"{_ID_PREFIX}-{next(_ids)}"


async def _refuse(
    context: grpc.aio.ServicerContext[Any, Any], name: str, exc: BaseException
) -> ServiceError:
    err = service_error(exc)
    if err.code is grpc.StatusCode.INTERNAL:
        log.exception("rpc failed", method=name)
    else:
        log.info("rpc refused", method=name, code=err.code.name, reason=err.reason)
    return err


def _request_type(name: str) -> tuple[Callable[[bytes], Any], str, bool]:
    """The parser of method ``name``'s request, the message's name, and whether
    the client streams requests."""
    method = pb.DESCRIPTOR.services_by_name["SpadesService"].methods_by_name[name]
    request = getattr(pb, method.input_type.name)
    return request.FromString, method.input_type.full_name, method.client_streaming


def _unary(
    fn: Callable[[Any, Req, grpc.aio.ServicerContext[Any, Any]], Awaitable[Resp]],
) -> Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Resp]]:
    """A unary handler, registered as request-streaming (see ``calls``): it
    receives and parses the request, then runs ``fn`` on it."""
    name = fn.__name__
    parse, type_name, _ = _request_type(name)
    ok_count = RPCS.labels(name, "OK")  # children looked up once, not per call
    latency = RPC_LATENCY.labels(name)
    limit = calls.CALLS

    @functools.wraps(fn)
    async def wrapper(
        self: Any, requests: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Resp:
        structlog.contextvars.bind_contextvars(request_id=_request_id(context), method=name)
        t0 = time.perf_counter()
        code = "OK"
        try:
            with limit.admit():
                request = await calls.receive(context.read, parse, type_name)
                return await fn(self, request, context)
        except Exception as exc:
            err = await _refuse(context, name, exc)
            code = err.code.name
            await context.abort_with_status(rpc_status.to_status(err.to_status()))
            raise  # abort_with_status always raises; this keeps type checkers honest
        finally:
            (ok_count if code == "OK" else RPCS.labels(name, code)).inc()
            latency.observe(time.perf_counter() - t0)
            structlog.contextvars.clear_contextvars()

    return wrapper


def _streaming(
    fn: Callable[
        [Any, Req, grpc.aio.ServicerContext[Any, Any], Callable[[], None]], Awaitable[None]
    ],
) -> Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[None]]:
    """A server-streaming handler that writes serialized responses with
    ``context.write``, counted and logged like ``_unary``; it calls the
    ``first_sent`` it is given after its first message, which ends the latency
    the histogram records for it. A method with one request receives it as
    ``_unary`` does; a bidirectional one (Play) reads its own requests, as bytes."""
    name = fn.__name__
    parse, type_name, client_streaming = _request_type(name)
    latency = RPC_LATENCY.labels(name)
    limit = calls.CALLS

    @functools.wraps(fn)
    async def wrapper(
        self: Any, requests: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        structlog.contextvars.bind_contextvars(request_id=_request_id(context), method=name)
        t0 = time.perf_counter()
        code = "OK"

        def first_sent() -> None:
            latency.observe(time.perf_counter() - t0)

        OPEN_STREAMS.inc()
        try:
            with limit.admit():
                if not client_streaming:
                    requests = await calls.receive(context.read, parse, type_name)
                await fn(self, requests, context, first_sent)
        except Exception as exc:
            if type(exc).__name__ == "ExecuteBatchError":
                # grpc's (grpc._cython.cygrpc, no public name): a write on a call
                # whose client went away before the cancellation reached this
                # handler. Nobody is left to tell, and it is no server failure.
                code = "CANCELLED"
                log.info("rpc cancelled", method=name, during="write")
                return
            err = await _refuse(context, name, exc)
            code = err.code.name
            await context.abort_with_status(rpc_status.to_status(err.to_status()))
        finally:
            OPEN_STREAMS.dec()
            RPCS.labels(name, code).inc()
            structlog.contextvars.clear_contextvars()

    return wrapper


class SpadesService:
    def __init__(
        self,
        registry: Registry,
        operator_token: str,
        poll_max_wait_ms: int = DEFAULT_POLL_MAX_WAIT_MS,
        operator_needs_client_cert: bool = False,
    ) -> None:
        self.registry = registry
        self.operator_token = operator_token
        self.poll_max_wait_ms = poll_max_wait_ms
        # With --tls-client-ca: operator calls come only over a connection whose
        # client certificate that CA signed (the operator port), token or not.
        self.operator_needs_client_cert = operator_needs_client_cert

    # -- helpers -------------------------------------------------------------------
    def _operator(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        if self.operator_needs_client_cert and not context.peer_identities():
            raise denied(
                "CLIENT_CERT_REQUIRED",
                "operator calls need a client certificate: call the operator port "
                "(--operator-port) with a certificate signed by the server's --tls-client-ca",
            )
        auth.require_operator(auth.bearer(context.invocation_metadata()), self.operator_token)

    @staticmethod
    def _match_id(match_id: str, field: str = "match_id") -> str:
        """``match_id`` if it may be an id at all: checked before any lookup, so
        a huge one costs nothing and is not echoed back in a refusal."""
        if len(match_id) > MAX_MATCH_ID:
            raise invalid("BAD_MATCH_ID", f"{field} is at most {MAX_MATCH_ID} characters", field)
        return match_id

    async def _seat(
        self, context: grpc.aio.ServicerContext[Any, Any], match_id: str, field: str = "match_id"
    ) -> tuple[Session, int, access.Check]:
        """The caller's session and seat, and the check that its seat token
        still holds (run again inside the match's lock and by its streams)."""
        self._match_id(match_id, field)
        session, seat, digest = await self.registry.seat_of(
            auth.bearer(context.invocation_metadata()), match_id
        )
        structlog.contextvars.bind_contextvars(match_id=session.match_id, seat=seat)
        return session, seat, access.seat_check(lambda: session.seats, seat, digest)

    def _seat_specs(self, configs: Any, players: int) -> list[SeatSpec]:
        if not configs:
            return [SeatSpec(f"Seat {i}", False, 0) for i in range(players)]
        if len(configs) != players:
            raise invalid(
                "WRONG_SEAT_COUNT",
                f"this ruleset seats {players} players, got {len(configs)}",
                "seats",
            )
        specs = []
        for i, c in enumerate(configs):
            if len(c.name) > MAX_NAME:
                raise invalid(
                    "NAME_TOO_LONG", f"names are at most {MAX_NAME} characters", f"seats[{i}].name"
                )
            # Checked on every seat: a human seat ignores it, but it is still a level.
            if c.bot_level not in _BOT_LEVELS:
                raise invalid(
                    "BAD_BOT_LEVEL",
                    f"seat {i}: bot_level {c.bot_level} is not a BotLevel value",
                    f"seats[{i}].bot_level",
                )
            specs.append(SeatSpec(c.name or f"Seat {i}", c.bot, int(c.bot_level)))
        return specs

    def _turn_timer(self, ms: int) -> int:
        if not 0 <= ms <= MAX_TURN_TIMER_MS:
            raise invalid(
                "BAD_TURN_TIMER", f"turn_timer_ms must be 0 to {MAX_TURN_TIMER_MS}", "turn_timer_ms"
            )
        return ms

    @staticmethod
    def _check_importable(match: Match, history: list[Any]) -> None:
        """Refuse an imported match holding a value the API cannot carry, before
        anything is stored: checked value by value (naming it), then by
        building what every later call builds from it (its ruleset, each
        seat's view and the spectator's, every event of its history)."""
        try:
            convert.check_match_ranges(match)
        except convert.OutOfRange as e:
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "VALUE_OUT_OF_RANGE",
                f"the snapshot's {e}",
                fields=("snapshot",),
                metadata={"value": e.value_path},
            ) from None
        try:
            convert.resolved_ruleset_pb(match.rules)
            for seat in (*range(match.rules.players), None):
                convert.view_to_pb(match.view(seat), as_of_seq=0, seats=())
            for event in history:
                convert.event_to_pb(event, 0, 0)
        except ValueError as e:
            raise invalid(
                "VALUE_OUT_OF_RANGE",
                f"the snapshot holds a value the API cannot carry: {e}",
                "snapshot",
            ) from None

    def _tokens(self, tokens: list[tuple[int, str]]) -> list[pb.SeatToken]:
        return [pb.SeatToken(seat=s, token=t) for s, t in tokens]

    # -- administration --------------------------------------------------------------
    @_unary
    async def CreateMatch(
        self, request: pb.CreateMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.CreateMatchResponse:
        self._operator(context)
        if len(request.ruleset.preset) > MAX_PRESET:
            raise RulesetError(f"preset names are at most {MAX_PRESET} characters", ("preset",))
        rules = convert.ruleset_from_pb(request.ruleset)
        specs = self._seat_specs(request.seats, rules.players)
        timer = self._turn_timer(request.turn_timer_ms)
        spectators = access.spectators_from_pb(request.spectators)
        seed = request.seed if request.has_seed else secrets.randbits(63)
        session, tokens, spectator_token = await self.registry.create(
            Match(rules, seed=seed), specs, timer, spectators=spectators
        )
        structlog.contextvars.bind_contextvars(match_id=session.match_id)
        log.info("match created", seats=len(specs), seed=seed)
        return pb.CreateMatchResponse(
            match=session.summary(),
            seat_tokens=self._tokens(tokens),
            spectator_token=spectator_token,
        )

    @_unary
    async def ImportMatch(
        self, request: pb.ImportMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ImportMatchResponse:
        self._operator(context)
        # Replayed from its deal, so the new log holds the whole story: a stream
        # from the start shows what it would have on the server it came from.
        match, history = replay_snapshot(request.snapshot)
        self._check_importable(match, history)
        specs = self._seat_specs(request.seats, match.rules.players)
        timer = self._turn_timer(request.turn_timer_ms)
        spectators = access.spectators_from_pb(request.spectators)
        session, tokens, spectator_token = await self.registry.create(
            match, specs, timer, history, spectators
        )
        log.info("match imported", match_id=session.match_id)
        return pb.ImportMatchResponse(
            match=session.summary(),
            seat_tokens=self._tokens(tokens),
            spectator_token=spectator_token,
        )

    @_unary
    async def GetMatch(
        self, request: pb.GetMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.GetMatchResponse:
        self._operator(context)
        session = await self.registry.get(self._match_id(request.match_id))
        return pb.GetMatchResponse(match=session.summary())

    @_unary
    async def ListMatches(
        self, request: pb.ListMatchesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListMatchesResponse:
        self._operator(context)
        if request.page_size < 0:
            raise invalid(
                "BAD_PAGE_SIZE", "page_size must be 0 (the default, 50) or more", "page_size"
            )
        summaries, nxt = await self.registry.page(request.page_size, request.page_token)
        return pb.ListMatchesResponse(matches=summaries, next_page_token=nxt)

    @_unary
    async def ExportMatch(
        self, request: pb.ExportMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ExportMatchResponse:
        self._operator(context)
        session = await self.registry.get(self._match_id(request.match_id))
        async with session.lock:
            return pb.ExportMatchResponse(
                snapshot=session.match.to_snapshot(),
                record_json=session.record_json(),
                match=session.summary(),
            )

    @_unary
    async def ReissueSeatToken(
        self, request: pb.ReissueSeatTokenRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ReissueSeatTokenResponse:
        self._operator(context)
        session = await self.registry.get(self._match_id(request.match_id))
        structlog.contextvars.bind_contextvars(match_id=session.match_id, seat=request.seat)
        if not 0 <= request.seat < len(session.seats):
            last = len(session.seats) - 1
            raise invalid("BAD_SEAT", f"seat must be 0 to {last}, got {request.seat}", "seat")
        token = await session.reissue(request.seat)
        log.info("seat token reissued")
        return pb.ReissueSeatTokenResponse(
            seat_token=pb.SeatToken(seat=request.seat, token=token), match=session.summary()
        )

    @_unary
    async def SetSpectators(
        self, request: pb.SetSpectatorsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.SetSpectatorsResponse:
        self._operator(context)
        mode = access.spectators_from_pb(request.spectators)
        session = await self.registry.get(self._match_id(request.match_id))
        structlog.contextvars.bind_contextvars(match_id=session.match_id)
        token = await session.set_spectators(mode)
        log.info("spectators set", spectators=mode)
        return pb.SetSpectatorsResponse(spectator_token=token, match=session.summary())

    # -- seats -------------------------------------------------------------------------
    @_unary
    async def ClaimSeat(
        self, request: pb.ClaimSeatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ClaimSeatResponse:
        session, seat, check = await self._seat(context, request.match_id)
        await session.check_rate(seat)  # seat changes share the seat's action allowance
        await session.set_control(seat, CONTROL_HUMAN, "claimed", check)
        async with session.lock:
            return pb.ClaimSeatResponse(seat=seat, view=session.view(seat))

    @_unary
    async def LeaveSeat(
        self, request: pb.LeaveSeatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.LeaveSeatResponse:
        session, seat, check = await self._seat(context, request.match_id)
        await session.check_rate(seat)
        await session.set_control(seat, CONTROL_STAND_IN, "left", check)
        return pb.LeaveSeatResponse(seat=seat)

    @_unary
    async def GetView(
        self, request: pb.GetViewRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.GetViewResponse:
        session, seat, _ = await self._seat(context, request.match_id)
        async with session.lock:
            return pb.GetViewResponse(view=session.view(seat))

    async def _act(
        self,
        session: Session,
        seat: int,
        request: pb.SubmitActionRequest | pb.PlayAction,
        check: access.Check,
    ) -> tuple[int, int]:
        """Check and apply an action (SubmitAction's or a Play call's); returns the
        sequence numbers of the first and last events it caused."""
        if not 0 < len(request.action_id) <= MAX_ACTION_ID:
            raise invalid(
                "BAD_ACTION_ID", f"action_id must be 1 to {MAX_ACTION_ID} characters", "action_id"
            )
        action = convert.action_from_pb(request.action)
        await session.check_rate(seat)
        expected = request.expected_seq if request.HasField("expected_seq") else None
        return await session.submit(seat, request.action_id, action, expected, check)

    @_unary
    async def SubmitAction(
        self, request: pb.SubmitActionRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.SubmitActionResponse:
        session, seat, check = await self._seat(context, request.match_id)
        first, last = await self._act(session, seat, request, check)
        return pb.SubmitActionResponse(
            events=session.event_log.visible_range(seat, first, last), last_seq=last
        )

    @_unary
    async def SendChat(
        self, request: pb.SendChatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.SendChatResponse:
        session, seat, check = await self._seat(context, request.match_id)
        return pb.SendChatResponse(seq=await session.chat(seat, request.text, check))

    # -- streams -----------------------------------------------------------------------
    @_streaming
    async def StreamEvents(
        self,
        request: pb.StreamEventsRequest,
        context: grpc.aio.ServicerContext[Any, Any],
        first_sent: Callable[[], None],
    ) -> None:
        session, seat, check = await self._seat(context, request.match_id)
        await session.ensure_seq(request.after_seq)
        async with session.stream_slot():
            # Each write is a serialized StreamEventsResponse (see add_to_server).
            await session.event_log.pump(
                seat, request.after_seq, context.write, first_sent, check=check
            )

    @_streaming
    async def Play(
        self,
        requests: AsyncIterator[pb.PlayRequest],
        context: grpc.aio.ServicerContext[Any, Any],
        first_sent: Callable[[], None],
    ) -> None:
        # Requests are read with context.read; `requests` is left untouched.
        opened = await play.first_request(context.read)
        if opened is None:
            return  # the client closed the call before opening it
        session, seat, check = await self._seat(context, opened.match_id, "open.match_id")
        await session.ensure_seq(opened.after_seq, "open.after_seq")

        async def act(request: pb.PlayAction) -> tuple[bytes, int]:
            t0 = time.perf_counter()
            try:
                first, last = await self._act(session, seat, request, check)
                _PLAY_ACTION_OK.inc()
                return play.accepted(request.action_id, first, last), last
            except Exception as exc:
                err = await _refuse(context, _PLAY_ACTION, exc)
                RPCS.labels(_PLAY_ACTION, err.code.name).inc()
                return play.refused(request.action_id, err.to_status()), 0
            finally:
                _PLAY_ACTION_LATENCY.observe(time.perf_counter() - t0)

        outbox = play.Outbox()
        reader = play.Reader(context.read, act, outbox)
        reader.start()
        try:
            async with session.stream_slot():
                # Each write is a serialized PlayResponse (see add_to_server).
                await session.event_log.pump(
                    seat, opened.after_seq, context.write, first_sent, outbox, check
                )
        finally:
            reader.stop()

    @_streaming
    async def Spectate(
        self,
        request: pb.SpectateRequest,
        context: grpc.aio.ServicerContext[Any, Any],
        first_sent: Callable[[], None],
    ) -> None:
        session = await self.registry.get(self._match_id(request.match_id))
        structlog.contextvars.bind_contextvars(match_id=session.match_id, seat="spectator")
        # Any credential is ignored on a public match (the call needs none);
        # on a SPECTATORS_TOKEN match it must be the spectator token.
        digest = access.spectator_digest(
            auth.bearer(context.invocation_metadata()), session.match_id
        )

        def check() -> None:
            session.spectating.check(digest)

        check()
        await session.ensure_seq(request.after_seq)
        async with session.stream_slot():
            # Each write is a serialized SpectateResponse (see add_to_server).
            await session.event_log.pump(
                None, request.after_seq, context.write, first_sent, check=check
            )

    @_unary
    async def PollEvents(
        self, request: pb.PollEventsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.PollEventsResponse:
        if request.wait_ms < 0:
            raise invalid("BAD_WAIT_MS", "wait_ms must be 0 (answer at once) or more", "wait_ms")
        wait_s = min(request.wait_ms, self.poll_max_wait_ms) / 1000
        remaining = context.time_remaining()
        if remaining is not None:
            wait_s = min(wait_s, max(0.0, remaining - POLL_DEADLINE_MARGIN_S))
        # A seat's view with a seat token; the public one with no credential at
        # all (a public match) or with the spectator token; any other
        # authorization (an operator token, a malformed or unknown token,
        # another scheme) is refused as on every seat call, never answered
        # with the public view.
        token = auth.bearer(context.invocation_metadata())
        if token is None and _has_authorization(context):
            raise unauthenticated("this call needs a seat token (authorization: Bearer …)")
        session, seat, check = await self.registry.viewer_of(
            token, self._match_id(request.match_id)
        )
        structlog.contextvars.bind_contextvars(
            match_id=session.match_id, seat="spectator" if seat is None else seat
        )
        await session.ensure_seq(request.after_seq)
        async with session.stream_slot():
            data, last_seq, more = await session.event_log.poll(
                seat, request.after_seq, wait_s, check
            )
        events = pb.StreamEventsResponse.FromString(data).events if data else ()
        return pb.PollEventsResponse(events=events, last_seq=last_seq, more=more)

    @_unary
    async def Ping(
        self, request: pb.PingRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.PingResponse:
        return pb.PingResponse()


def _has_authorization(context: grpc.aio.ServicerContext[Any, Any]) -> bool:
    return any(key.lower() == "authorization" for key, _ in context.invocation_metadata() or ())


# Actions on Play calls are counted and timed as if each were an RPC of this name.
_PLAY_ACTION = "Play.action"
_PLAY_ACTION_OK = RPCS.labels(_PLAY_ACTION, "OK")
_PLAY_ACTION_LATENCY = RPC_LATENCY.labels(_PLAY_ACTION)


def _serialized(message: Any) -> bytes:
    return message if isinstance(message, bytes) else bytes(message.SerializeToString())


def add_to_server(servicer: SpadesService, server: grpc.aio.Server) -> None:
    """Register every method of spades.v1.SpadesService (from the proto descriptor,
    so a method missing here fails at start-up). Every method is registered as
    request-streaming with no deserializer: its wrapper receives the request
    bytes itself, within a time limit, and parses them (see ``calls``). Stream
    responses are built as bytes once per event by the session and sent as they
    are; unary ones are messages serialized by gRPC."""
    service = pb.DESCRIPTOR.services_by_name["SpadesService"]
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in service.methods:
        fn = getattr(servicer, method.name)
        response = getattr(pb, method.output_type.name)
        if method.client_streaming and not method.server_streaming:
            raise TypeError(f"{method.full_name}: client streaming alone is not served")
        if method.server_streaming:
            handlers[method.name] = grpc.stream_stream_rpc_method_handler(
                fn, request_deserializer=None, response_serializer=_serialized
            )
        else:
            handlers[method.name] = grpc.stream_unary_rpc_method_handler(
                fn, request_deserializer=None, response_serializer=response.SerializeToString
            )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )
    server.add_registered_method_handlers(service.full_name, handlers)
