"""The lobby's calls (``spades.v1.LobbyService``) with the client's player credential.

``Client`` inherits them from ``LobbyCalls``: tables (open, join by id or by
invite code, leave, start, look at, watch), the lobby's listing (pages, a
stream and a long poll of its changes, and ``follow_lobby``, the listing kept
up to date), quick play (ask, look at, watch, cancel, wait until placed),
and rated play's standings (a pool's leaderboard, a page at a time, and a
player's profile). Rematch needs a seat token, not a credential: it is
``Seat.rematch``.

Every call here carries ``Client.credential`` as ``authorization: Bearer
<jwt>`` (none if it is None: the server answers ``UNAUTHENTICATED``
``CREDENTIAL_REQUIRED``). A seat token the lobby hands out (``seat_token`` of
a join, an open, a placement) is a seat token like ``CreateMatch``'s: pass it
(or the response that holds it) to ``Client.seat`` once the table has started.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import grpc

from ._errors import ConnectionLost, SpadesError, TableClosed, TicketCancelled
from ._gen.spades.v1 import lobby_pb2 as lpb
from ._gen.spades.v1 import lobby_pb2_grpc
from ._gen.spades.v1 import spades_pb2 as pb
from ._retry import (
    DEFAULT_POLL_WAIT_MS,
    MIN_EMPTY_POLL_S,
    POLL_DEADLINE_MARGIN_S,
    Backoff,
    is_transient,
)
from ._session import settle

__all__ = ["LobbyCalls", "ResumedStream"]

Resp = TypeVar("Resp")
Msg = TypeVar("Msg")

_TABLE_OVER = frozenset({lpb.TABLE_STATE_STARTED, lpb.TABLE_STATE_CLOSED})
_TICKET_OVER = frozenset({lpb.TICKET_STATE_PLACED, lpb.TICKET_STATE_CANCELLED})


def _poll_timeout(wait_ms: int, timeout: float | None) -> float | None:
    """A long poll's deadline: its wait plus a margin, unless one is given."""
    if timeout is not None:
        return timeout
    return max(0, wait_ms) / 1000 + POLL_DEADLINE_MARGIN_S


def _filter(ruleset: pb.Ruleset | None) -> lpb.LobbyFilter:
    return lpb.LobbyFilter() if ruleset is None else lpb.LobbyFilter(ruleset=ruleset)


class LobbyCalls:
    """The ``LobbyService`` calls of ``Client`` (see the module's doc)."""

    # Provided by Client.
    lobby_stub: lobby_pb2_grpc.LobbyServiceAsyncStub
    credential: str | None
    backoff: Backoff
    _rng: random.Random

    if TYPE_CHECKING:

        async def call(
            self,
            method: Callable[..., Awaitable[Resp]],
            request: Any,
            *,
            metadata: Sequence[tuple[str, str]] = (),
            timeout: float | None = None,
            retry: bool = False,
            retry_deadline: bool = False,
        ) -> Resp: ...

    def _player(self) -> tuple[tuple[str, str], ...]:
        """The player credential's metadata (read at each call, so that a
        fresh credential assigned to ``credential`` is used from then on)."""
        return (("authorization", f"Bearer {self.credential}"),) if self.credential else ()

    # -- tables ----------------------------------------------------------------------
    async def open_table(
        self,
        request: lpb.OpenTableRequest | None = None,
        *,
        ruleset: pb.Ruleset | None = None,
        bot_seats: Iterable[int] = (),
        bot_level: pb.BotLevel.ValueType = pb.BOT_LEVEL_UNSPECIFIED,
        seat: int | None = None,
        turn_timer_ms: int = 0,
        visibility: lpb.TableVisibility.ValueType = lpb.TABLE_VISIBILITY_UNSPECIFIED,
        unattended: lpb.Unattended.ValueType = lpb.UNATTENDED_UNSPECIFIED,
        wait_seconds: int = 0,
        spectators: pb.Spectators.ValueType = pb.SPECTATORS_UNSPECIFIED,
        rated: bool = False,
        timeout: float | None = None,
    ) -> lpb.OpenTableResponse:
        """Open a table and sit at it (``seat``, 0 unless given): a whole
        ``request``, or its fields. ``bot_seats`` are played by bots from the
        start; the others wait for players until the table is full, its host
        starts it (``start_table``) or its wait (``wait_seconds``, 0: the
        server's) runs out (``unattended``: bots fill it, or it closes). An
        ``TABLE_VISIBILITY_INVITE_ONLY`` table is not listed: the response's
        ``table.invite_code`` is how others join. ``rated``: the match counts
        in its rating pool (``table.rating_pool``); humans only, so with
        ``bot_seats`` it is refused ``INVALID_ARGUMENT`` ``RATED_WITHOUT_BOTS``,
        and bots filling open seats at the start make it unrated
        (``table.rated`` false). The response's ``seat_token`` plays the seat
        once the table has started. Not retried
        (a repeat after a lost answer is refused ``ALREADY_SEATED``, whose
        ``metadata["table_id"]`` names the table)."""
        if request is None:
            request = lpb.OpenTableRequest(
                ruleset=ruleset,
                bot_seats=list(bot_seats),
                bot_level=bot_level,
                turn_timer_ms=turn_timer_ms,
                visibility=visibility,
                unattended=unattended,
                wait_seconds=wait_seconds,
                spectators=spectators,
                rated=rated,
            )
            if seat is not None:
                request.seat = seat
        return await self.call(
            self.lobby_stub.OpenTable, request, metadata=self._player(), timeout=timeout
        )

    async def join_table(
        self,
        table_id: str = "",
        *,
        invite_code: str = "",
        seat: int | None = None,
        timeout: float | None = None,
    ) -> lpb.JoinTableResponse:
        """Sit at a table: a public one by its ``table_id``, an invite-only
        one by its ``invite_code`` (as shown or read aloud: case, spaces and
        dashes do not matter; a wrong one is ``NOT_FOUND`` ``INVITE_NOT_FOUND``,
        and too many ``RESOURCE_EXHAUSTED`` ``INVITE_ATTEMPTS``). ``seat``:
        the seat wanted (None: the lowest open one). The response's table is
        ``STARTED`` when this filled it; its ``seat_token`` plays the seat.
        Idempotent on the server (the same seat and token again), so retried
        after a transient failure."""
        request = lpb.JoinTableRequest(table_id=table_id, invite_code=invite_code)
        if seat is not None:
            request.seat = seat
        return await self.call(
            self.lobby_stub.JoinTable,
            request,
            metadata=self._player(),
            timeout=timeout,
            retry=True,
        )

    async def leave_table(self, table_id: str, *, timeout: float | None = None) -> lpb.Table:
        """Stand up from a waiting table (the seat token is worthless from
        now); the table after it. Not retried (a repeat is ``NOT_SEATED``)."""
        response: lpb.LeaveTableResponse = await self.call(
            self.lobby_stub.LeaveTable,
            lpb.LeaveTableRequest(table_id=table_id),
            metadata=self._player(),
            timeout=timeout,
        )
        return response.table

    async def start_table(self, table_id: str, *, timeout: float | None = None) -> lpb.Table:
        """The host starts the table now, bots in its open seats; the table,
        ``STARTED``. Not retried (a repeat is ``TABLE_STARTED``)."""
        response: lpb.StartTableResponse = await self.call(
            self.lobby_stub.StartTable,
            lpb.StartTableRequest(table_id=table_id),
            metadata=self._player(),
            timeout=timeout,
        )
        return response.table

    async def get_table(
        self,
        table_id: str = "",
        *,
        invite_code: str = "",
        after_version: int = 0,
        wait_ms: int = 0,
        timeout: float | None = None,
    ) -> lpb.Table:
        """A table (by id, or an invite-only one by its code), as a long poll:
        at once if its ``version`` is past ``after_version``, else when it
        changes, or as it is after ``wait_ms`` (0: at once). The deadline is
        the wait plus a margin unless ``timeout`` says otherwise. A read:
        retried after a transient failure or a deadline."""
        response: lpb.GetTableResponse = await self.call(
            self.lobby_stub.GetTable,
            lpb.GetTableRequest(
                table_id=table_id,
                invite_code=invite_code,
                after_version=after_version,
                wait_ms=wait_ms,
            ),
            metadata=self._player(),
            timeout=_poll_timeout(wait_ms, timeout),
            retry=True,
            retry_deadline=True,
        )
        return response.table

    def watch_table(self, table_id: str) -> AsyncGenerator[lpb.Table, None]:
        """The table now, then again after every change, until it has started
        or closed (then the iteration ends). Reopened after a dropped
        connection (each version once, in order)."""

        def open_call() -> grpc.aio.UnaryStreamCall[Any, lpb.WatchTableResponse]:
            request = lpb.WatchTableRequest(table_id=table_id)
            return self.lobby_stub.WatchTable(request, metadata=self._player())

        async def tables() -> AsyncGenerator[lpb.Table, None]:
            last = 0
            stream = ResumedStream(
                open_call, lpb.WatchTableResponse, self.backoff, self._rng, ends=True
            )
            async with contextlib.aclosing(stream):
                async for message in stream:
                    if message.table.version > last:
                        last = message.table.version
                        yield message.table

        return tables()

    async def wait_for_start(
        self,
        table_id: str,
        *,
        after_version: int = 0,
        watch: bool = False,
        wait_ms: int = DEFAULT_POLL_WAIT_MS,
        timeout: float | None = None,
    ) -> lpb.Table:
        """Wait until the table has started and return it (its ``match_id``
        plays with the seat token the join or the open gave): ``get_table``
        long polls of ``wait_ms`` each, or with ``watch`` its ``watch_table``
        stream. ``TableClosed`` if it closes instead; ``TimeoutError`` after
        ``timeout`` seconds (None: no limit)."""
        async with asyncio.timeout(timeout):
            if watch:
                tables = self.watch_table(table_id)
                async with contextlib.aclosing(tables):
                    async for table in tables:
                        if table.state in _TABLE_OVER:
                            return _started(table)
                raise SpadesError(grpc.StatusCode.UNAVAILABLE, "the table's stream ended early")
            version = after_version
            while True:
                table = await self.get_table(table_id, after_version=version, wait_ms=wait_ms)
                if table.state in _TABLE_OVER:
                    return _started(table)
                version = max(version, table.version)

    # -- the lobby -------------------------------------------------------------------
    async def list_tables(
        self,
        ruleset: pb.Ruleset | None = None,
        *,
        page_size: int = 0,
        page_token: str = "",
        timeout: float | None = None,
    ) -> lpb.ListTablesResponse:
        """One page of the public tables waiting for players, oldest first
        (only those of ``ruleset``'s rules if given, compared once resolved);
        ``next_page_token`` is empty on the last page, and ``version`` is the
        lobby's when the first page was read: follow it from there
        (``watch_lobby``, ``poll_lobby``) and no change is missed."""
        return await self.call(
            self.lobby_stub.ListTables,
            lpb.ListTablesRequest(
                filter=_filter(ruleset), page_size=page_size, page_token=page_token
            ),
            metadata=self._player(),
            timeout=timeout,
            retry=True,
        )

    async def tables(
        self, ruleset: pb.Ruleset | None = None, *, page_size: int = 0
    ) -> AsyncGenerator[lpb.Table, None]:
        """Every public waiting table, oldest first, a page at a time."""
        token = ""
        while True:
            page = await self.list_tables(ruleset, page_size=page_size, page_token=token)
            for table in page.tables:
                yield table
            token = page.next_page_token
            if not token:
                return

    async def lobby_snapshot(
        self, ruleset: pb.Ruleset | None = None, *, page_size: int = 0
    ) -> tuple[list[lpb.Table], int]:
        """Every public waiting table (all pages, oldest first) and the
        lobby's version to follow it from."""
        token, version = "", 0
        out: list[lpb.Table] = []
        while True:
            page = await self.list_tables(ruleset, page_size=page_size, page_token=token)
            if not token:
                version = page.version
            out += page.tables
            token = page.next_page_token
            if not token:
                return out, version

    def watch_lobby(
        self, ruleset: pb.Ruleset | None = None, *, after_version: int = 0
    ) -> AsyncGenerator[lpb.WatchLobbyResponse, None]:
        """The lobby's changes after ``after_version`` (``list_tables``'s
        ``version``; 0: from now), then live ones, a batch at a time: tables
        opened or changed (replace what you hold), tables gone. A batch with
        ``reset`` says the changes after that version are no longer kept:
        list the lobby again (``follow_lobby`` does all this). Reopened after
        a dropped connection from the last batch's version, so no change is
        missed (with ``after_version`` 0, changes before the first batch may
        be, if the first call drops)."""
        stream = self._lobby_stream(ruleset, after_version)

        async def batches() -> AsyncGenerator[lpb.WatchLobbyResponse, None]:
            async with contextlib.aclosing(stream):
                async for batch in stream:
                    stream.after_version = max(stream.after_version, batch.version)
                    yield batch

        return batches()

    def _lobby_stream(self, ruleset: pb.Ruleset | None, after_version: int) -> _LobbyStream:
        return _LobbyStream(self, _filter(ruleset), after_version)

    async def poll_lobby(
        self,
        ruleset: pb.Ruleset | None = None,
        *,
        after_version: int = 0,
        wait_ms: int = DEFAULT_POLL_WAIT_MS,
        timeout: float | None = None,
    ) -> lpb.WatchLobbyResponse:
        """``watch_lobby`` as one long poll: the changes after
        ``after_version`` (0: from now), as soon as there are any, or none
        once ``wait_ms`` has run out; ask again from the answer's ``version``."""
        response: lpb.PollLobbyResponse = await self.call(
            self.lobby_stub.PollLobby,
            lpb.PollLobbyRequest(
                filter=_filter(ruleset), after_version=after_version, wait_ms=wait_ms
            ),
            metadata=self._player(),
            timeout=_poll_timeout(wait_ms, timeout),
            retry=True,
            retry_deadline=True,
        )
        return response.changes

    async def follow_lobby(
        self,
        ruleset: pb.Ruleset | None = None,
        *,
        poll: bool = False,
        wait_ms: int = DEFAULT_POLL_WAIT_MS,
    ) -> AsyncGenerator[list[lpb.Table], None]:
        """The public waiting tables (of ``ruleset``'s rules if given), oldest
        first: now, then again after each change. It lists the lobby, follows
        it from the listing's version (``watch_lobby``, or with ``poll``
        ``poll_lobby`` long polls of ``wait_ms``), and lists it again after a
        ``reset``. Each list is a new one."""
        held: dict[str, lpb.Table] = {}

        def listed() -> list[lpb.Table]:
            return sorted(held.values(), key=lambda t: (t.created_ms, t.table_id))

        async def relist() -> int:
            tables, version = await self.lobby_snapshot(ruleset)
            held.clear()
            held.update((t.table_id, t) for t in tables)
            return version

        version = await relist()
        yield listed()
        while True:
            if poll:
                started = asyncio.get_running_loop().time()
                batch = await self.poll_lobby(ruleset, after_version=version, wait_ms=wait_ms)
                quiet = not (batch.tables or batch.removed_table_ids or batch.reset)
                took = asyncio.get_running_loop().time() - started
                if quiet and took < MIN_EMPTY_POLL_S:
                    await asyncio.sleep(MIN_EMPTY_POLL_S - took)
                changed = _apply(held, batch)
                version = max(version, batch.version)
                if batch.reset:
                    version = await relist()
                if changed or batch.reset:
                    yield listed()
                continue
            stream = self._lobby_stream(ruleset, version)
            async with contextlib.aclosing(stream):
                async for batch in stream:
                    version = max(version, batch.version)
                    stream.after_version = version
                    if batch.reset:
                        break  # list again, and follow from there on a new stream
                    if _apply(held, batch):
                        yield listed()
            version = await relist()
            yield listed()

    # -- quick play ------------------------------------------------------------------
    async def quick_play(
        self,
        ruleset: pb.Ruleset | None = None,
        *,
        partner_player_id: str = "",
        rated: bool = False,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> lpb.Ticket:
        """Ask for a game of ``ruleset``'s rules (None: classic): alone, or as
        ``partner_player_id``'s partner (both ask, naming each other; the
        first waits, ``TICKET_STATE_WAITING_FOR_PARTNER``). ``rated``: a
        rated game, queued apart from unrated ones (a party's players both
        ask for the same); if bots fill the table, it is not rated. The
        ticket: wait for its placement with ``wait_for_placement``.

        Retried while the server is unreachable or slow, with one
        ``request_id`` (a new random one when None), so that a repeat whose
        first answer was lost answers with the ticket that first call made,
        even once it is placed, instead of opening a second. Pass your own to
        resend a call after this one has given up."""
        request = lpb.QuickPlayRequest(
            ruleset=ruleset,
            partner_player_id=partner_player_id,
            rated=rated,
            request_id=uuid.uuid4().hex if request_id is None else request_id,
        )
        response: lpb.QuickPlayResponse = await self.call(
            self.lobby_stub.QuickPlay,
            request,
            metadata=self._player(),
            timeout=timeout,
            retry=True,
            retry_deadline=True,
        )
        return response.ticket

    async def get_ticket(
        self,
        ticket_id: str = "",
        *,
        after_version: int = 0,
        wait_ms: int = 0,
        timeout: float | None = None,
    ) -> lpb.Ticket:
        """A ticket (``ticket_id`` empty: the caller's latest), as a long poll
        like ``get_table``. Once placed, its ``placement`` (match, seat, seat
        token) is the same every time it is asked for: after a lost
        connection, ask again."""
        response: lpb.GetTicketResponse = await self.call(
            self.lobby_stub.GetTicket,
            lpb.GetTicketRequest(ticket_id=ticket_id, after_version=after_version, wait_ms=wait_ms),
            metadata=self._player(),
            timeout=_poll_timeout(wait_ms, timeout),
            retry=True,
            retry_deadline=True,
        )
        return response.ticket

    def watch_ticket(self, ticket_id: str = "") -> AsyncGenerator[lpb.Ticket, None]:
        """The ticket (empty: the latest) now, then after every change, until
        it is placed or cancelled (then the iteration ends). Reopened after a
        dropped connection, on the same ticket."""
        chosen = ticket_id

        def open_call() -> grpc.aio.UnaryStreamCall[Any, lpb.WatchTicketResponse]:
            request = lpb.WatchTicketRequest(ticket_id=chosen)
            return self.lobby_stub.WatchTicket(request, metadata=self._player())

        async def tickets() -> AsyncGenerator[lpb.Ticket, None]:
            nonlocal chosen
            last = 0
            stream = ResumedStream(
                open_call, lpb.WatchTicketResponse, self.backoff, self._rng, ends=True
            )
            async with contextlib.aclosing(stream):
                async for message in stream:
                    chosen = chosen or message.ticket.ticket_id
                    if message.ticket.version > last:
                        last = message.ticket.version
                        yield message.ticket

        return tickets()

    async def cancel_ticket(
        self, ticket_id: str = "", *, timeout: float | None = None
    ) -> lpb.Ticket:
        """Withdraw a ticket not placed yet (empty: the latest; a party's, for
        both players); the ticket, ``CANCELLED``. A placed one is refused
        ``TICKET_PLACED``. Idempotent: retried after a transient failure."""
        response: lpb.CancelTicketResponse = await self.call(
            self.lobby_stub.CancelTicket,
            lpb.CancelTicketRequest(ticket_id=ticket_id),
            metadata=self._player(),
            timeout=timeout,
            retry=True,
        )
        return response.ticket

    async def wait_for_placement(
        self,
        ticket: lpb.Ticket | str = "",
        *,
        watch: bool = False,
        wait_ms: int = DEFAULT_POLL_WAIT_MS,
        timeout: float | None = None,
    ) -> lpb.Placement:
        """Wait until the ticket (a ``Ticket``, its id, or empty: the latest)
        is placed and return where: ``match_id``, ``seat``, ``seat_token``
        (pass the placement to ``Client.seat``) and the ``table``. It follows
        the ticket with ``get_ticket`` long polls of ``wait_ms`` each, or with
        ``watch`` its ``watch_ticket`` stream. ``TicketCancelled`` if it is
        cancelled instead; ``TimeoutError`` after ``timeout`` seconds."""
        if isinstance(ticket, lpb.Ticket):
            ticket_id, version = ticket.ticket_id, ticket.version
            if ticket.state in _TICKET_OVER:
                return _placed(ticket)
        else:
            ticket_id, version = ticket, 0
        async with asyncio.timeout(timeout):
            if watch:
                tickets = self.watch_ticket(ticket_id)
                async with contextlib.aclosing(tickets):
                    async for got in tickets:
                        if got.state in _TICKET_OVER:
                            return _placed(got)
                raise SpadesError(grpc.StatusCode.UNAVAILABLE, "the ticket's stream ended early")
            while True:
                got = await self.get_ticket(ticket_id, after_version=version, wait_ms=wait_ms)
                if got.state in _TICKET_OVER:
                    return _placed(got)
                ticket_id, version = got.ticket_id, max(version, got.version)

    # -- rated play: leaderboards and profiles -----------------------------------------
    async def leaderboard(
        self,
        pool: str = "",
        *,
        page_size: int = 0,
        page_token: str = "",
        around_player_id: str = "",
        timeout: float | None = None,
    ) -> lpb.GetLeaderboardResponse:
        """One page of a rating pool's leaderboard, best first (``pool``
        empty: the server's default, ``classic``; the pools are the presets).
        The top; or the page after or before a page (its ``next_page_token``,
        empty on the last page, or its ``previous_page_token``, empty at the
        top) as ``page_token``; or the page that holds ``around_player_id``
        (not with a token). ``page_size``: 0 is 25, at most 200. The
        response has each entry's ``rank`` (from 1), ``total_players`` and
        ``min_games`` (the rated games a player needs to be listed).
        Refusals: ``NOT_FOUND`` ``POOL_NOT_FOUND``, ``PLAYER_NOT_RATED``;
        ``INVALID_ARGUMENT`` ``BAD_POOL``, ``BAD_PAGE_TOKEN`` (a token the
        server did not give, or another pool's), ``BAD_PAGE_SIZE``,
        ``TOKEN_AND_PLAYER``. A read: retried after a transient failure."""
        return await self.call(
            self.lobby_stub.GetLeaderboard,
            lpb.GetLeaderboardRequest(
                pool=pool,
                page_size=page_size,
                page_token=page_token,
                around_player_id=around_player_id,
            ),
            metadata=self._player(),
            timeout=timeout,
            retry=True,
        )

    async def leaderboard_pages(
        self,
        pool: str = "",
        *,
        page_size: int = 0,
        page_token: str = "",
        around_player_id: str = "",
        backward: bool = False,
    ) -> AsyncGenerator[lpb.GetLeaderboardResponse, None]:
        """The pages of a leaderboard from the top (or from ``page_token``, or
        from the page of ``around_player_id``) to the last one, each as
        ``leaderboard`` answers it; with ``backward``, from there up to the
        top. A page's tokens name the player at its edge, so the walk follows
        the players it reached while ratings move."""
        token, around = page_token, around_player_id
        while True:
            page = await self.leaderboard(
                pool, page_size=page_size, page_token=token, around_player_id=around
            )
            yield page
            token = page.previous_page_token if backward else page.next_page_token
            around = ""
            if not token:
                return

    async def leaderboard_entries(
        self, pool: str = "", *, page_size: int = 0
    ) -> AsyncGenerator[lpb.LeaderboardEntry, None]:
        """Every entry of a leaderboard, best first, a page at a time."""
        async for page in self.leaderboard_pages(pool, page_size=page_size):
            for entry in page.entries:
                yield entry

    async def profile(
        self, player_id: str = "", *, timeout: float | None = None
    ) -> lpb.PlayerProfile:
        """A player's public profile (``player_id`` empty: the caller's own):
        ``ratings`` (one ``PlayerRating`` per pool they played a rated match
        in: ``mu``, ``sigma``, ``conservative``, ``games``, ``wins``,
        ``losses``, ``rank``, 0 while under the minimum of games), their
        record ``with_humans`` and ``with_bots`` (``PlayerStats``), and
        ``last_played_ms``. ``NOT_FOUND`` ``PLAYER_NOT_FOUND`` for a player who
        finished no lobby match (a match's result is recorded just after it
        ends); ``INVALID_ARGUMENT`` ``BAD_PLAYER_ID`` for an id over 128
        characters. A read: retried after a transient failure."""
        response: lpb.GetProfileResponse = await self.call(
            self.lobby_stub.GetProfile,
            lpb.GetProfileRequest(player_id=player_id),
            metadata=self._player(),
            timeout=timeout,
            retry=True,
        )
        return response.profile


def _started(table: lpb.Table) -> lpb.Table:
    if table.state == lpb.TABLE_STATE_CLOSED:
        raise TableClosed(table)
    return table


def _placed(ticket: lpb.Ticket) -> lpb.Placement:
    if ticket.state == lpb.TICKET_STATE_CANCELLED:
        raise TicketCancelled(ticket)
    return ticket.placement


def _apply(held: dict[str, lpb.Table], batch: lpb.WatchLobbyResponse) -> bool:
    """Apply a batch of lobby changes to the tables held; whether any changed
    (a table's older version never replaces a newer one)."""
    changed = False
    for table in batch.tables:
        mine = held.get(table.table_id)
        if mine is None or table.version >= mine.version:
            changed = changed or mine != table
            held[table.table_id] = table
    for table_id in batch.removed_table_ids:
        changed = held.pop(table_id, None) is not None or changed
    return changed


class ResumedStream(Generic[Msg]):
    """The messages of a server stream (an async iterator), opened again
    (``open_call()``, which says from where) after a transient failure, with
    ``backoff``; a refusal raises its ``SpadesError``, too many failures in a
    row ``ConnectionLost``. ``ends``: the stream ends by itself once done
    (``WatchTable``, ``WatchTicket``), and so does the iteration; else an end
    is a drop. ``aclose()`` cancels the call.

    A class, not an async generator: the generators that hold one close it
    in their ``finally`` whichever way they end, even when the event loop
    finalizes them (an async generator inside another may be finalized
    concurrently with it, and refuse to be closed twice)."""

    def __init__(
        self,
        open_call: Callable[[], grpc.aio.UnaryStreamCall[Any, Msg]],
        message_type: type[Msg],
        backoff: Backoff,
        rng: random.Random,
        *,
        ends: bool,
    ) -> None:
        self._open_call = open_call
        self._type = message_type
        self._backoff = backoff
        self._rng = rng
        self._ends = ends
        self._call: grpc.aio.UnaryStreamCall[Any, Msg] | None = None
        self._failures = 0
        self._done = False

    def __aiter__(self) -> ResumedStream[Msg]:
        return self

    async def __anext__(self) -> Msg:
        while not self._done:
            if self._call is None:
                self._call = self._open_call()
            try:
                message = await self._call.read()
            except grpc.RpcError as e:
                err = SpadesError.from_rpc_error(e)
            else:
                if isinstance(message, self._type):
                    self._failures = 0
                    return message
                if self._ends:  # the end (EOF): the call ended OK
                    break
                err = SpadesError(grpc.StatusCode.UNAVAILABLE, "the server ended the stream")
            call, self._call = self._call, None
            await settle(call)
            if not is_transient(err):
                self._done = True
                raise err
            self._failures += 1
            if self._failures >= self._backoff.max_attempts:
                self._done = True
                raise ConnectionLost(self._failures, err)
            await asyncio.sleep(self._backoff.delay(self._failures - 1, self._rng))
        await self.aclose()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self._done = True
        call, self._call = self._call, None
        if call is not None:
            await settle(call)


class _LobbyStream(ResumedStream[lpb.WatchLobbyResponse]):
    """``WatchLobby``, opened again from ``after_version`` (which its reader
    moves on as batches come)."""

    def __init__(self, calls: LobbyCalls, filter_: lpb.LobbyFilter, after_version: int) -> None:
        def open_call() -> grpc.aio.UnaryStreamCall[Any, lpb.WatchLobbyResponse]:
            request = lpb.WatchLobbyRequest(filter=filter_, after_version=self.after_version)
            return calls.lobby_stub.WatchLobby(request, metadata=calls._player())

        super().__init__(open_call, lpb.WatchLobbyResponse, calls.backoff, calls._rng, ends=False)
        self.after_version = after_version
