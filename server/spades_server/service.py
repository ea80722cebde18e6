"""The spades.v1 servicer: checks credentials and input, then calls a session.

Every handler runs inside ``rpc.unary`` / ``rpc.streaming``, which bind the
request id, match id and seat to the logs, count the RPC, and turn any refusal
into a gRPC status with google.rpc details.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import structlog

from spades_engine import Match, RulesetError, replay_snapshot

from . import access, auth, convert, play, replica, rpc, tracing
from .errors import ServiceError, denied, invalid, unauthenticated
from .gen.spades.v1 import spades_pb2 as pb
from .matches import Registry, SeatSpec
from .metrics import RPC_LATENCY, RPCS
from .rpc import service_error
from .seats import CONTROL_HUMAN, CONTROL_STAND_IN
from .session import Session

__all__ = ["SpadesService", "add_to_server", "service_error"]

log = structlog.get_logger("spades.rpc")

MAX_NAME = 64
MAX_ACTION_ID = 64
MAX_MATCH_ID = 64  # ids this server makes are 16 characters
MAX_PRESET = 32
MAX_TURN_TIMER_MS = 3_600_000
DEFAULT_POLL_MAX_WAIT_MS = 25_000
_BOT_LEVELS = frozenset(pb.BotLevel.values())


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
    @rpc.unary
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

    @rpc.unary
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

    @rpc.unary
    async def GetMatch(
        self, request: pb.GetMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.GetMatchResponse:
        self._operator(context)
        session = await self.registry.get(self._match_id(request.match_id))
        return pb.GetMatchResponse(match=session.summary())

    @rpc.unary
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

    @rpc.unary
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

    @rpc.unary
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

    @rpc.unary
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
    @rpc.unary
    async def ClaimSeat(
        self, request: pb.ClaimSeatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ClaimSeatResponse:
        session, seat, check = await self._seat(context, request.match_id)
        await session.check_rate(seat)  # seat changes share the seat's action allowance
        await session.set_control(seat, CONTROL_HUMAN, "claimed", check)
        async with session.lock:
            return pb.ClaimSeatResponse(seat=seat, view=session.view(seat))

    @rpc.unary
    async def LeaveSeat(
        self, request: pb.LeaveSeatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.LeaveSeatResponse:
        session, seat, check = await self._seat(context, request.match_id)
        await session.check_rate(seat)
        await session.set_control(seat, CONTROL_STAND_IN, "left", check)
        return pb.LeaveSeatResponse(seat=seat)

    @rpc.unary
    async def GetView(
        self, request: pb.GetViewRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.GetViewResponse:
        session, seat, _ = await self._seat(context, request.match_id)
        async with session.lock:
            if request.min_seq > session.last_seq and session.shared and not session.broken:
                # This replica may be a moment behind the one the caller left.
                await replica.catch_up_locked(session)
            if request.min_seq > session.last_seq:
                raise ServiceError(
                    grpc.StatusCode.OUT_OF_RANGE,
                    "SEQ_AHEAD",
                    f"the match has no event {request.min_seq} yet: its last is {session.last_seq}",
                    fields=("min_seq",),
                    metadata={"last_seq": str(session.last_seq)},
                )
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
        session.check_action_rate(seat)
        expected = request.expected_seq if request.HasField("expected_seq") else None
        return await session.submit(seat, request.action_id, action, expected, check)

    @rpc.unary
    async def SubmitAction(
        self, request: pb.SubmitActionRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.SubmitActionResponse:
        session, seat, check = await self._seat(context, request.match_id)
        first, last = await self._act(session, seat, request, check)
        return pb.SubmitActionResponse(
            events=session.event_log.visible_range(seat, first, last), last_seq=last
        )

    @rpc.unary
    async def SendChat(
        self, request: pb.SendChatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.SendChatResponse:
        session, seat, check = await self._seat(context, request.match_id)
        return pb.SendChatResponse(seq=await session.chat(seat, request.text, check))

    # -- streams -----------------------------------------------------------------------
    @rpc.streaming
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

    @rpc.streaming
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
        session, seat, check = await self.open_play(context, opened)

        act = functools.partial(self.play_action, session, seat, check)
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

    async def open_play(
        self, context: grpc.aio.ServicerContext[Any, Any], opened: pb.PlayOpen
    ) -> tuple[Session, int, access.Check]:
        """A Play call's ``open``: the seat its credential holds, and where it
        may resume from (a gRPC call's, or one an edge holds: ``edge_link``)."""
        session, seat, check = await self._seat(context, opened.match_id, "open.match_id")
        await session.ensure_seq(opened.after_seq, "open.after_seq")
        return session, seat, check

    async def play_action(
        self, session: Session, seat: int, check: access.Check, request: pb.PlayAction
    ) -> tuple[bytes, int]:
        """One action of a Play call, answered: the result's bytes and the
        last sequence number its events need to have been sent through."""
        t0 = time.perf_counter()
        span = (
            tracing.ActionSpan(_PLAY_ACTION, session.match_id, seat, request.action_id)
            if tracing.ON
            else None
        )
        try:
            first, last = await self._act(session, seat, request, check)
            _PLAY_ACTION_OK.inc()
            return play.accepted(request.action_id, first, last), last
        except Exception as exc:
            err = rpc.refuse(_PLAY_ACTION, exc)
            RPCS.labels(_PLAY_ACTION, err.code.name).inc()
            if span is not None:
                span.refused(err)
            return play.refused(request.action_id, err.to_status()), 0
        finally:
            _PLAY_ACTION_LATENCY.observe(time.perf_counter() - t0)
            if span is not None:
                span.end()

    @rpc.streaming
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

    @rpc.unary
    async def PollEvents(
        self, request: pb.PollEventsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.PollEventsResponse:
        wait_s = rpc.poll_wait_s(request.wait_ms, context, self.poll_max_wait_ms)
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

    @rpc.unary
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


def add_to_server(servicer: SpadesService, server: grpc.aio.Server) -> None:
    """Register every method of spades.v1.SpadesService (see ``rpc.add_to_server``)."""
    rpc.add_to_server(servicer, server, "SpadesService")
