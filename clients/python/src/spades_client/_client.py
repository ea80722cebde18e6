"""The asyncio client: a channel, the operator's calls, and seats."""

from __future__ import annotations

import asyncio
import os
import random
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import grpc

from . import _tracing
from ._errors import ConnectionLost, SpadesError, TableClosed
from ._gen.spades.v1 import lobby_pb2 as lpb
from ._gen.spades.v1 import lobby_pb2_grpc, spades_pb2_grpc
from ._gen.spades.v1 import spades_pb2 as pb
from ._lobby import LobbyCalls
from ._retry import (
    DEFAULT_POLL_WAIT_MS,
    MIN_EMPTY_POLL_S,
    POLL_DEADLINE_MARGIN_S,
    Backoff,
    is_transient,
)
from ._session import Session, new_action_id, settle

__all__ = ["DEFAULT_POLL_WAIT_MS", "DEFAULT_TIMEOUT", "TLS", "Client", "Seat", "connect"]

DEFAULT_TIMEOUT: Final = 10.0  # seconds, each unary call
Resp = TypeVar("Resp")

# Channel options: reconnect quickly after a drop (gRPC's own default waits 1 s
# and more), and ping an idle connection so that a vanished network is noticed
# (the server accepts pings every 10 s or slower: --min-client-ping-seconds).
# Not grpc.min_reconnect_backoff_ms: gRPC takes it as the least time a
# connection attempt gets (20 s), which a slow mobile handshake needs.
DEFAULT_OPTIONS: Final[tuple[tuple[str, int], ...]] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 5000),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
)


StrPath = str | os.PathLike[str]


@dataclass(frozen=True)
class TLS:
    """How a channel speaks TLS: the certificates that sign the server's
    (``ca``, PEM; None: the system's roots) and, for mutual TLS (a server's
    operator port, ``--tls-client-ca``), the client's certificate chain and
    private key (``cert`` and ``key``, PEM, both or neither).
    ``server_name``: the name to check the server's certificate against when
    it is not the host of the address (an address by IP, a tunnel)."""

    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None
    server_name: str | None = None

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise ValueError("TLS: cert and key go together (a client certificate needs its key)")

    @classmethod
    def files(
        cls,
        ca: StrPath | None = None,
        cert: StrPath | None = None,
        key: StrPath | None = None,
        *,
        server_name: str | None = None,
    ) -> TLS:
        """The same, read from PEM files now (a missing file fails here, not
        on the first call)."""

        def read(path: StrPath | None) -> bytes | None:
            return None if path is None else Path(path).read_bytes()

        return cls(read(ca), read(cert), read(key), server_name)

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca, private_key=self.key, certificate_chain=self.cert
        )


def connect(
    address: str,
    *,
    tls: bool | TLS | grpc.ChannelCredentials = False,
    operator_token: str | None = None,
    credential: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    backoff: Backoff | None = None,
    options: Sequence[tuple[str, Any]] = (),
) -> Client:
    """A client of the server at ``address`` (``host:port``).

    ``tls``: False for plaintext (the server's own listener without
    ``--tls-cert``), True for TLS with the system's roots, a ``TLS`` (a CA of
    your own, a client certificate for the operator port), or
    ``grpc.ChannelCredentials`` of your own. ``operator_token``: the operator
    credential, for ``create_match``, ``get_match``, ``list_matches``,
    ``reissue_seat_token``, ``set_spectators``. ``credential``: the player
    credential (the JWT the game's identity provider signed for the player),
    for the lobby's calls (``open_table``, ``quick_play``, ...); assign
    ``client.credential`` a fresh one when it expires. ``timeout``: the deadline of
    each unary call, in seconds (None: none). ``backoff``: how calls and
    sessions retry after transient failures. ``options``: more gRPC channel
    options (they override the defaults). Call it from a coroutine (the
    channel belongs to the running event loop) and close the client when done
    (``async with``).
    """
    merged: dict[str, Any] = dict(DEFAULT_OPTIONS)
    if isinstance(tls, TLS) and tls.server_name is not None:
        merged["grpc.ssl_target_name_override"] = tls.server_name
    merged |= dict(options)
    if tls is False:
        channel = grpc.aio.insecure_channel(
            address, options=list(merged.items()), interceptors=_tracing.interceptors()
        )
    else:
        if tls is True:
            creds = grpc.ssl_channel_credentials()
        elif isinstance(tls, TLS):
            creds = tls.credentials()
        else:
            creds = tls
        channel = grpc.aio.secure_channel(
            address, creds, options=list(merged.items()), interceptors=_tracing.interceptors()
        )
    return Client(
        channel,
        operator_token=operator_token,
        credential=credential,
        timeout=timeout,
        backoff=backoff,
    )


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


SeatTokenHolder = (
    lpb.OpenTableResponse | lpb.JoinTableResponse | lpb.Placement | lpb.RematchResponse
)


class Client(LobbyCalls):
    """Calls of the spades.v1 services (SpadesService, LobbyService) on one channel.

    Refusals raise ``SpadesError``. Calls that are safe to repeat (reads,
    claiming and leaving a seat, an action with its ``action_id``, joining a
    table, cancelling a ticket) are retried after a transient failure with
    ``backoff``; creating a match, opening a table, asking for quick play and
    chat lines are not. The operator's calls carry ``operator_token``, the
    lobby's ``credential`` (the player's), a seat's its seat token.
    """

    def __init__(
        self,
        channel: grpc.aio.Channel,
        *,
        operator_token: str | None = None,
        credential: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        backoff: Backoff | None = None,
    ) -> None:
        self.channel = channel
        self.stub = spades_pb2_grpc.SpadesServiceStub(channel)
        self.lobby_stub = lobby_pb2_grpc.LobbyServiceStub(channel)
        self.operator_token = operator_token
        self.credential = credential
        self.timeout = timeout
        self.backoff = backoff or Backoff()
        self._sessions: weakref.WeakSet[Session] = weakref.WeakSet()
        self._rng = random.Random()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every session opened through this client, then the channel."""
        await asyncio.gather(*(s.close() for s in list(self._sessions)))
        await self.channel.close()

    # -- calls -----------------------------------------------------------------------
    def _operator(self) -> tuple[tuple[str, str], ...]:
        return _bearer(self.operator_token) if self.operator_token else ()

    async def call(
        self,
        method: Callable[..., Awaitable[Resp]],
        request: Any,
        *,
        metadata: Sequence[tuple[str, str]] = (),
        timeout: float | None = None,
        retry: bool = False,
        retry_deadline: bool = False,
    ) -> Resp:
        """One unary call of ``self.stub``, its failure as ``SpadesError``.

        With ``retry``, a transient failure is retried (``self.backoff``);
        with ``retry_deadline`` too, a deadline that ran out (for an idempotent
        action whose answer may have been lost)."""
        failures = 0
        while True:
            try:
                return await method(
                    request,
                    metadata=tuple(metadata),
                    timeout=self.timeout if timeout is None else timeout,
                )
            except grpc.RpcError as e:
                err = SpadesError.from_rpc_error(e)
                cause: BaseException = e
            again = is_transient(err) or (
                retry_deadline and err.code is grpc.StatusCode.DEADLINE_EXCEEDED
            )
            if not (retry and again):
                raise err from cause
            failures += 1
            if failures >= self.backoff.max_attempts:
                raise ConnectionLost(failures, err) from cause
            await asyncio.sleep(self.backoff.delay(failures - 1, self._rng))

    async def ping(self, *, timeout: float | None = None) -> None:
        await self.call(self.stub.Ping, pb.PingRequest(), timeout=timeout, retry=True)

    # -- the operator's calls ---------------------------------------------------------
    async def create_match(
        self,
        request: pb.CreateMatchRequest | None = None,
        *,
        ruleset: pb.Ruleset | None = None,
        seats: Sequence[pb.SeatConfig] = (),
        seed: int | None = None,
        turn_timer_ms: int = 0,
        spectators: pb.Spectators.ValueType = pb.SPECTATORS_UNSPECIFIED,
        timeout: float | None = None,
    ) -> pb.CreateMatchResponse:
        """Create a match (operator): a whole ``request``, or its fields. A
        ``seed`` makes the deals (and the bots' choices) repeatable;
        ``spectators`` says who may watch (unset: anyone; with
        ``pb.SPECTATORS_TOKEN`` the response's ``spectator_token`` is the
        watchers' credential). The response's ``seat_tokens`` hold one token
        per human seat: pass one to ``seat``. Not retried (a retry could create
        a second match)."""
        if request is None:
            request = pb.CreateMatchRequest(
                ruleset=ruleset, seats=seats, turn_timer_ms=turn_timer_ms, spectators=spectators
            )
            if seed is not None:
                request.seed, request.has_seed = seed, True
        return await self.call(
            self.stub.CreateMatch, request, metadata=self._operator(), timeout=timeout
        )

    async def get_match(self, match_id: str, *, timeout: float | None = None) -> pb.MatchSummary:
        """One match's public summary (operator)."""
        response: pb.GetMatchResponse = await self.call(
            self.stub.GetMatch,
            pb.GetMatchRequest(match_id=match_id),
            metadata=self._operator(),
            timeout=timeout,
            retry=True,
        )
        return response.match

    async def list_matches(
        self, page_size: int = 0, page_token: str = "", *, timeout: float | None = None
    ) -> pb.ListMatchesResponse:
        """One page of matches, newest first (operator); ``next_page_token``
        is empty on the last page."""
        return await self.call(
            self.stub.ListMatches,
            pb.ListMatchesRequest(page_size=page_size, page_token=page_token),
            metadata=self._operator(),
            timeout=timeout,
            retry=True,
        )

    async def matches(self, page_size: int = 0) -> AsyncIterator[pb.MatchSummary]:
        """Every match, newest first, a page at a time (operator)."""
        token = ""
        while True:
            page = await self.list_matches(page_size, token)
            for summary in page.matches:
                yield summary
            token = page.next_page_token
            if not token:
                return

    async def reissue_seat_token(
        self, match_id: str, seat: int, *, timeout: float | None = None
    ) -> pb.ReissueSeatTokenResponse:
        """Replace a human seat's token (operator): the old one is refused from
        now on and the streams opened with it end (``TOKEN_REVOKED``); the seat
        is OPEN again. The response has the new ``seat_token``. Retried after a
        transient failure: a repeat replaces the token once more, and its
        answer holds the token that is current."""
        return await self.call(
            self.stub.ReissueSeatToken,
            pb.ReissueSeatTokenRequest(match_id=match_id, seat=seat),
            metadata=self._operator(),
            timeout=timeout,
            retry=True,
        )

    async def set_spectators(
        self,
        match_id: str,
        spectators: pb.Spectators.ValueType,
        *,
        timeout: float | None = None,
    ) -> pb.SetSpectatorsResponse:
        """Change who may watch a match (operator); with ``pb.SPECTATORS_TOKEN``
        the response's ``spectator_token`` is a new one (any earlier one is
        refused from now on). Retried after a transient failure, as
        ``reissue_seat_token``: the last answer holds the current token."""
        return await self.call(
            self.stub.SetSpectators,
            pb.SetSpectatorsRequest(match_id=match_id, spectators=spectators),
            metadata=self._operator(),
            timeout=timeout,
            retry=True,
        )

    # -- seats and spectators ---------------------------------------------------------
    def seat(self, token: str | SeatTokenHolder) -> Seat:
        """The seat a seat token acts for (``<match_id>.<secret>``): a token,
        or what the lobby answers with one (``open_table``'s and
        ``join_table``'s responses, a ticket's ``Placement``, a rematch's
        response); a table's token plays once the table has started."""
        return Seat(self, token if isinstance(token, str) else token.seat_token)

    def spectate(
        self, match_id: str, *, after_seq: int = 0, spectator_token: str | None = None
    ) -> AsyncIterator[pb.MatchEvent]:
        """The match's public events after ``after_seq``, then live ones, resumed
        after a dropped connection without a gap or a repeat. No credential on
        a public match; ``spectator_token`` on a ``SPECTATORS_TOKEN`` one (never
        the operator token: it is not a spectator's)."""
        metadata = _bearer(spectator_token) if spectator_token else ()

        def open_call(after: int) -> grpc.aio.UnaryStreamCall[Any, Any]:
            request = pb.SpectateRequest(match_id=match_id, after_seq=after)
            return self.stub.Spectate(request, metadata=metadata)

        return _resuming_events(open_call, after_seq, self.backoff, self._rng)

    def poll_spectate(
        self,
        match_id: str,
        *,
        after_seq: int = 0,
        wait_ms: int = DEFAULT_POLL_WAIT_MS,
        spectator_token: str | None = None,
    ) -> AsyncIterator[pb.MatchEvent]:
        """The match's public events, as ``spectate`` has them, on ``PollEvents``
        long polls (no credential, or ``spectator_token``): for where a stream
        stalls. See ``Seat.poll_events``."""
        metadata = _bearer(spectator_token) if spectator_token else ()

        def poll(after: int, wait: int, timeout: float) -> Awaitable[pb.PollEventsResponse]:
            request = pb.PollEventsRequest(match_id=match_id, after_seq=after, wait_ms=wait)
            return self.stub.PollEvents(request, metadata=metadata, timeout=timeout)

        return _polled_events(poll, after_seq, wait_ms, self.backoff, self._rng)

    def _track(self, session: Session) -> None:
        self._sessions.add(session)


class Seat:
    """A seat of a match, acted for with its seat token."""

    def __init__(self, client: Client, token: str) -> None:
        self.client = client
        self.token = token
        self.match_id = token.partition(".")[0]
        self._metadata = _bearer(token)
        # The newest event this seat has seen through this object: its
        # actions' results, its views, and the events its streams and polls
        # delivered. ``view`` asks for a view at least as new (``min_seq``),
        # so that a server replica a moment behind answers only once it has
        # caught up, as the one the client left had.
        self.seen_seq = 0

    def __repr__(self) -> str:
        return f"Seat(match_id={self.match_id!r})"

    def _saw(self, seq: int) -> None:
        self.seen_seq = max(self.seen_seq, seq)

    async def _noting(self, events: AsyncIterator[pb.MatchEvent]) -> AsyncIterator[pb.MatchEvent]:
        async for event in events:
            self._saw(event.seq)
            yield event

    async def claim(self, *, timeout: float | None = None) -> pb.ClaimSeatResponse:
        """Take the seat (from its bot, or open): the response has the seat and its view."""
        return await self.client.call(
            self.client.stub.ClaimSeat,
            pb.ClaimSeatRequest(match_id=self.match_id),
            metadata=self._metadata,
            timeout=timeout,
            retry=True,
        )

    async def leave(self, *, timeout: float | None = None) -> int:
        """Leave the seat to a bot until it is claimed again; returns the seat."""
        response: pb.LeaveSeatResponse = await self.client.call(
            self.client.stub.LeaveSeat,
            pb.LeaveSeatRequest(match_id=self.match_id),
            metadata=self._metadata,
            timeout=timeout,
            retry=True,
        )
        return response.seat

    async def view(
        self, *, min_seq: int | None = None, timeout: float | None = None
    ) -> pb.SeatView:
        """The match as this seat may see it, with its ``legal_actions``; at
        least as new as ``min_seq`` (default: ``seen_seq``, the newest event
        this seat has seen here). A ``min_seq`` the match has not reached
        raises ``SpadesError`` OUT_OF_RANGE, reason ``SEQ_AHEAD``."""
        wanted = self.seen_seq if min_seq is None else min_seq
        response: pb.GetViewResponse = await self.client.call(
            self.client.stub.GetView,
            pb.GetViewRequest(match_id=self.match_id, min_seq=wanted),
            metadata=self._metadata,
            timeout=timeout,
            retry=True,
        )
        self._saw(response.view.as_of_seq)
        return response.view

    async def legal_actions(self, *, timeout: float | None = None) -> list[pb.Action]:
        """The actions the seat may take now (empty when it is not its turn)."""
        return list((await self.view(timeout=timeout)).legal_actions)

    async def submit(
        self,
        action: pb.Action,
        *,
        action_id: str | None = None,
        expected_seq: int | None = None,
        timeout: float | None = None,
    ) -> pb.SubmitActionResponse:
        """Act with one unary call (``SubmitAction``); retried with the same
        ``action_id`` after a transient failure or a deadline, so an action is
        applied once. A session's ``act`` does the same on its ``Play`` call."""
        request = pb.SubmitActionRequest(
            match_id=self.match_id, action_id=action_id or new_action_id(), action=action
        )
        if expected_seq is not None:
            request.expected_seq = expected_seq
        response: pb.SubmitActionResponse = await self.client.call(
            self.client.stub.SubmitAction,
            request,
            metadata=self._metadata,
            timeout=timeout,
            retry=True,
            retry_deadline=True,
        )
        self._saw(response.last_seq)
        return response

    async def chat(self, text: str, *, timeout: float | None = None) -> int:
        """Send a line to the partner (bidding only); its event's sequence number."""
        response: pb.SendChatResponse = await self.client.call(
            self.client.stub.SendChat,
            pb.SendChatRequest(match_id=self.match_id, text=text),
            metadata=self._metadata,
            timeout=timeout,
        )
        return response.seq

    async def rematch(
        self,
        *,
        decline: bool = False,
        after_version: int = 0,
        wait_ms: int = 0,
        timeout: float | None = None,
    ) -> lpb.RematchResponse:
        """Once the match is over, ask for another with the same seats (the
        first call opens the rematch, each human seat's accepts it), or
        ``decline`` it (it closes for everyone), as a long poll on the
        rematch table (see ``Client.get_table``). The response's
        ``seat_token`` plays this seat in the new match
        (``table.match_id``) once the table has ``STARTED``, after every
        human accepted. Carries this seat's token, no player credential.
        Idempotent: retried after a transient failure or a deadline."""
        response: lpb.RematchResponse = await self.client.call(
            self.client.lobby_stub.Rematch,
            lpb.RematchRequest(
                match_id=self.match_id,
                decline=decline,
                after_version=after_version,
                wait_ms=wait_ms,
            ),
            metadata=self._metadata,
            timeout=timeout if timeout is not None else wait_ms / 1000 + POLL_DEADLINE_MARGIN_S,
            retry=True,
            retry_deadline=True,
        )
        return response

    async def wait_for_rematch(
        self, *, wait_ms: int = DEFAULT_POLL_WAIT_MS, timeout: float | None = None
    ) -> lpb.RematchResponse:
        """Accept a rematch (opening it if nobody has yet) and wait until every
        human has: the response of a ``STARTED`` rematch, whose seat token
        plays this seat in the new match (``client.seat(response)``).
        ``TableClosed`` if it closes (declined, or not accepted in time);
        ``TimeoutError`` after ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            version = 0
            while True:
                got = await self.rematch(after_version=version, wait_ms=wait_ms)
                if got.table.state == lpb.TABLE_STATE_CLOSED:
                    raise TableClosed(got.table)
                if got.table.state == lpb.TABLE_STATE_STARTED:
                    return got
                version = max(version, got.table.version)

    def session(self, *, after_seq: int = 0, backoff: Backoff | None = None) -> Session:
        """The seat's ``Play`` session (not yet open: ``async with`` it), with
        the events after ``after_seq`` (0: all of them)."""
        session = Session(
            self.client.stub,
            self.token,
            self.match_id,
            after_seq=after_seq,
            backoff=backoff or self.client.backoff,
            on_seq=self._saw,
        )
        self.client._track(session)
        return session

    def stream_events(self, *, after_seq: int = 0) -> AsyncIterator[pb.MatchEvent]:
        """The seat's events on ``StreamEvents`` (no actions), resumed like
        ``Client.spectate``."""

        def open_call(after: int) -> grpc.aio.UnaryStreamCall[Any, Any]:
            request = pb.StreamEventsRequest(match_id=self.match_id, after_seq=after)
            return self.client.stub.StreamEvents(request, metadata=self._metadata)

        events = _resuming_events(open_call, after_seq, self.client.backoff, self.client._rng)
        return self._noting(events)

    def poll_events(
        self, *, after_seq: int = 0, wait_ms: int = DEFAULT_POLL_WAIT_MS
    ) -> AsyncIterator[pb.MatchEvent]:
        """The seat's events, as ``stream_events`` has them, on ``PollEvents``
        long polls: for where a stream stalls (an HTTP stack or a proxy that
        buffers a response until it ends).

        Each poll asks for the events after the previous answer's
        ``last_seq`` (past the events hidden from this seat) and waits on the
        server up to ``wait_ms`` for one; its deadline is the wait plus
        ``POLL_DEADLINE_MARGIN_S``. After an answer that says ``more`` the next
        poll goes at once without waiting; after any other answer at once too.
        A transient failure, or a deadline that ran out, is retried with the
        client's backoff, from where the polls had got to (no event is
        repeated or skipped), at most ``Backoff.max_attempts`` times in a row
        (then ``ConnectionLost``); a refusal raises its ``SpadesError``. Closing
        the iterator (``aclose()``, or cancelling the task that awaits it)
        cancels the poll that waits."""

        def poll(after: int, wait: int, timeout: float) -> Awaitable[pb.PollEventsResponse]:
            request = pb.PollEventsRequest(match_id=self.match_id, after_seq=after, wait_ms=wait)
            return self.client.stub.PollEvents(request, metadata=self._metadata, timeout=timeout)

        events = _polled_events(poll, after_seq, wait_ms, self.client.backoff, self.client._rng)
        return self._noting(events)


async def _polled_events(
    poll: Callable[[int, int, float], Awaitable[pb.PollEventsResponse]],
    after_seq: int,
    wait_ms: int,
    backoff: Backoff,
    rng: random.Random,
) -> AsyncIterator[pb.MatchEvent]:
    """The events of a loop of ``PollEvents`` calls, ``poll(after_seq,
    wait_ms, timeout)``, from ``after_seq``."""
    last = after_seq  # the last event delivered: nothing at or below it again
    cursor = after_seq  # the next poll's after_seq: the last answer's last_seq
    more, failures = False, 0
    loop = asyncio.get_running_loop()
    while True:
        wait = 0 if more else wait_ms
        started = loop.time()
        try:
            response = await poll(cursor, wait, wait / 1000 + POLL_DEADLINE_MARGIN_S)
        except grpc.RpcError as e:
            err = SpadesError.from_rpc_error(e)
            # A poll is a read: one whose deadline ran out may be sent again.
            if not (is_transient(err) or err.code is grpc.StatusCode.DEADLINE_EXCEEDED):
                raise err from e
            failures += 1
            if failures >= backoff.max_attempts:
                raise ConnectionLost(failures, err) from e
            more = False
            await asyncio.sleep(backoff.delay(failures - 1, rng))
            continue
        failures = 0
        # last_seq is below after_seq only for an after_seq beyond the match's
        # end (the server answers with its last number): keep ours.
        cursor = max(cursor, response.last_seq)
        more = response.more
        for event in response.events:
            if event.seq > last:
                last = event.seq
                yield event
        took = loop.time() - started
        if not response.events and not more and took < MIN_EMPTY_POLL_S:
            await asyncio.sleep(MIN_EMPTY_POLL_S - took)


async def _resuming_events(
    open_call: Callable[[int], grpc.aio.UnaryStreamCall[Any, Any]],
    after_seq: int,
    backoff: Backoff,
    rng: random.Random,
) -> AsyncIterator[pb.MatchEvent]:
    """The events of a server stream (``StreamEvents``, ``Spectate``),
    reopened after the last one seen whenever it fails transiently."""
    last, failures = after_seq, 0
    while True:
        call = open_call(last)
        try:
            async for response in call:
                failures = 0
                for event in response.events:
                    if event.seq > last:
                        last = event.seq
                        yield event
            err = SpadesError(grpc.StatusCode.UNAVAILABLE, "the server ended the stream")
        except grpc.RpcError as e:
            err = SpadesError.from_rpc_error(e)
        finally:
            await settle(call)
        if not is_transient(err):
            raise err
        failures += 1
        if failures >= backoff.max_attempts:
            raise ConnectionLost(failures, err)
        await asyncio.sleep(backoff.delay(failures - 1, rng))
