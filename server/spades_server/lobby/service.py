"""The spades.v1.LobbyService servicer: checks the caller and the request,
then calls the lobby's modules (tables, quick play, rematch, listing).

Every call but Rematch needs a player credential (``players.PlayerAuth``);
Rematch needs a seat token of the finished match. The long polls (GetTable,
GetTicket, PollLobby, Rematch) and the streams wait on this process's copy of
the lobby's feed (``feed``), whichever replica made the change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import structlog

from .. import access, auth, rpc
from ..errors import denied, invalid, unauthenticated
from ..gen.spades.v1 import lobby_pb2 as lpb
from ..matches import Registry
from ..players import Player, PlayerAuth
from . import rules as rules_mod
from .context import Context
from .docs import CLOSED, PLACED, STARTED, TableDoc, table_key, ticket_key
from .listing import Listing
from .quickplay import QuickPlay
from .rematch import Rematches
from .standings import Standings
from .tables import Tables, check_table_id, table_pb

log = structlog.get_logger("spades.lobby")

Context_ = grpc.aio.ServicerContext[Any, Any]
MAX_MATCH_ID = 64


class LobbyService:
    def __init__(
        self,
        ctx: Context,
        players: PlayerAuth,
        registry: Registry,
        tables: Tables,
        quickplay: QuickPlay,
        rematches: Rematches,
        listing: Listing,
        standings: Standings,
    ) -> None:
        self.ctx = ctx
        self.players = players
        self.registry = registry
        self.tables = tables
        self.quickplay = quickplay
        self.rematches = rematches
        self.listing = listing
        self.standings = standings

    # -- helpers ------------------------------------------------------------------
    def _player(self, context: Context_) -> Player:
        player = self.players.verify(auth.bearer(context.invocation_metadata()))
        structlog.contextvars.bind_contextvars(player_id=player.id)
        return player

    def _wait_s(self, wait_ms: int, context: Context_) -> float:
        return rpc.poll_wait_s(wait_ms, context, self.ctx.settings.poll_max_wait_ms)

    @staticmethod
    def _rules_key(msg: lpb.LobbyFilter) -> str | None:
        return rules_mod.from_request(msg.ruleset).key if msg.HasField("ruleset") else None

    def _visible(self, doc: TableDoc, player: Player, with_code: bool) -> None:
        """Refuse a table the player may not look at: an invite-only one
        (quick play and rematch tables too) they do not sit at, without its code."""
        if doc.public or with_code or doc.seat_of(player.id) is not None:
            return
        raise denied(
            "INVITE_REQUIRED", "this table is seen by its players, or with its invite code"
        )

    async def _until_changed(
        self,
        key: str,
        after: int,
        wait_s: float,
        read: Callable[[], Awaitable[tuple[Any, int]]],
    ) -> Any:
        """``read()``'s value once its version is past ``after``, or as it is
        when ``wait_s`` runs out (a long poll on one table or ticket)."""
        with self.ctx.feed.watching(key) as waiter:
            value, version = await read()
            while version <= after and wait_s > 0:
                loop = _loop_time()
                if not await waiter.wait(wait_s):
                    break
                waiter.take()
                wait_s -= _loop_time() - loop
                value, version = await read()
            return value

    # -- tables ---------------------------------------------------------------------
    @rpc.unary
    async def OpenTable(
        self, request: lpb.OpenTableRequest, context: Context_
    ) -> lpb.OpenTableResponse:
        player = self._player(context)
        seated = await self.tables.open(player, request)
        structlog.contextvars.bind_contextvars(table_id=seated.table.id)
        return lpb.OpenTableResponse(
            table=table_pb(seated.table, seated.version, player.id),
            seat=seated.seat,
            seat_token=seated.token,
        )

    @rpc.unary
    async def JoinTable(
        self, request: lpb.JoinTableRequest, context: Context_
    ) -> lpb.JoinTableResponse:
        player = self._player(context)
        if bool(request.table_id) == bool(request.invite_code):
            raise invalid(
                "TABLE_OR_CODE",
                "give the table's id or its invite code, one of the two",
                "table_id",
                "invite_code",
            )
        seat = request.seat if request.HasField("seat") else None
        seated, with_code = await self.tables.join(
            player, request.table_id, request.invite_code, seat
        )
        structlog.contextvars.bind_contextvars(table_id=seated.table.id)
        return lpb.JoinTableResponse(
            table=table_pb(seated.table, seated.version, player.id, with_code),
            seat=seated.seat,
            seat_token=seated.token,
        )

    @rpc.unary
    async def LeaveTable(
        self, request: lpb.LeaveTableRequest, context: Context_
    ) -> lpb.LeaveTableResponse:
        player = self._player(context)
        doc, version = await self.tables.leave(player, request.table_id)
        return lpb.LeaveTableResponse(table=table_pb(doc, version, player.id))

    @rpc.unary
    async def StartTable(
        self, request: lpb.StartTableRequest, context: Context_
    ) -> lpb.StartTableResponse:
        player = self._player(context)
        doc, version = await self.tables.start_early(player, request.table_id)
        return lpb.StartTableResponse(table=table_pb(doc, version, player.id))

    @rpc.unary
    async def GetTable(
        self, request: lpb.GetTableRequest, context: Context_
    ) -> lpb.GetTableResponse:
        player = self._player(context)
        wait_s = self._wait_s(request.wait_ms, context)
        with_code = request.invite_code != ""
        if with_code:
            table_id = await self.tables.by_code(player, request.invite_code)
        else:
            table_id = check_table_id(request.table_id)
        doc, _ = await self.tables.read(table_id)
        self._visible(doc, player, with_code)

        async def read() -> tuple[lpb.Table, int]:
            found, version = await self.tables.read(table_id)
            return table_pb(found, version, player.id, with_code), version

        table = await self._until_changed(table_key(table_id), request.after_version, wait_s, read)
        return lpb.GetTableResponse(table=table)

    @rpc.streaming
    async def WatchTable(
        self,
        request: lpb.WatchTableRequest,
        context: Context_,
        first_sent: Callable[[], None],
    ) -> None:
        player = self._player(context)
        table_id = check_table_id(request.table_id)
        with self.ctx.feed.watching(table_key(table_id)) as waiter:
            doc, version = await self.tables.read(table_id)
            self._visible(doc, player, False)
            sent = 0
            while True:
                if version > sent:
                    await context.write(
                        lpb.WatchTableResponse(table=table_pb(doc, version, player.id))
                    )
                    if not sent:
                        first_sent()
                    sent = version
                if doc.state in (STARTED, CLOSED):
                    return
                await waiter.wait(None)
                waiter.take()
                doc, version = await self.tables.read(table_id)

    # -- the lobby ------------------------------------------------------------------
    @rpc.unary
    async def ListTables(
        self, request: lpb.ListTablesRequest, context: Context_
    ) -> lpb.ListTablesResponse:
        self._player(context)
        tables, nxt, version = await self.listing.page(
            self._rules_key(request.filter), request.page_size, request.page_token
        )
        return lpb.ListTablesResponse(tables=tables, next_page_token=nxt, version=version)

    @rpc.unary
    async def GetLeaderboard(
        self, request: lpb.GetLeaderboardRequest, context: Context_
    ) -> lpb.GetLeaderboardResponse:
        self._player(context)
        return await self.standings.leaderboard(request)

    @rpc.unary
    async def GetProfile(
        self, request: lpb.GetProfileRequest, context: Context_
    ) -> lpb.GetProfileResponse:
        player = self._player(context)
        profile = await self.standings.profile(request.player_id or player.id)
        return lpb.GetProfileResponse(profile=profile)

    @rpc.streaming
    async def WatchLobby(
        self,
        request: lpb.WatchLobbyRequest,
        context: Context_,
        first_sent: Callable[[], None],
    ) -> None:
        self._player(context)
        rules_key = self._rules_key(request.filter)
        first = True

        async def send(batch: lpb.WatchLobbyResponse) -> None:
            nonlocal first
            await context.write(batch)
            if first:
                first_sent()
                first = False

        await self.listing.follow(rules_key, request.after_version, send)

    @rpc.unary
    async def PollLobby(
        self, request: lpb.PollLobbyRequest, context: Context_
    ) -> lpb.PollLobbyResponse:
        self._player(context)
        wait_s = self._wait_s(request.wait_ms, context)
        rules_key = self._rules_key(request.filter)
        out = lpb.PollLobbyResponse()

        async def keep(batch: lpb.WatchLobbyResponse) -> None:
            out.changes.CopyFrom(batch)

        after = request.after_version or self.ctx.feed.last
        await self.listing.follow(rules_key, after, keep, wait_s)
        return out

    # -- quick play ------------------------------------------------------------------
    async def _ticket(self, player: Player, ticket_id: str) -> tuple[lpb.Ticket, int]:
        ticket, version, table, table_version = await self.quickplay.read(player, ticket_id)
        msg = self.quickplay.to_pb(ticket, version, table, table_version, player.id)
        return msg, msg.version

    @rpc.unary
    async def QuickPlay(
        self, request: lpb.QuickPlayRequest, context: Context_
    ) -> lpb.QuickPlayResponse:
        player = self._player(context)
        ticket, version = await self.quickplay.ask(player, request)
        structlog.contextvars.bind_contextvars(ticket_id=ticket.id)
        if ticket.state == PLACED:  # a retry's answer: with its placement, as GetTicket's
            return lpb.QuickPlayResponse(ticket=(await self._ticket(player, ticket.id))[0])
        return lpb.QuickPlayResponse(
            ticket=self.quickplay.to_pb(ticket, version, None, 0, player.id)
        )

    @rpc.unary
    async def GetTicket(
        self, request: lpb.GetTicketRequest, context: Context_
    ) -> lpb.GetTicketResponse:
        player = self._player(context)
        wait_s = self._wait_s(request.wait_ms, context)
        msg, _ = await self._ticket(player, request.ticket_id)

        async def read() -> tuple[lpb.Ticket, int]:
            return await self._ticket(player, msg.ticket_id)

        ticket = await self._until_changed(
            ticket_key(msg.ticket_id), request.after_version, wait_s, read
        )
        return lpb.GetTicketResponse(ticket=ticket)

    @rpc.streaming
    async def WatchTicket(
        self,
        request: lpb.WatchTicketRequest,
        context: Context_,
        first_sent: Callable[[], None],
    ) -> None:
        player = self._player(context)
        msg, version = await self._ticket(player, request.ticket_id)
        with self.ctx.feed.watching(ticket_key(msg.ticket_id)) as waiter:
            msg, version = await self._ticket(player, msg.ticket_id)
            sent = 0
            while True:
                if version > sent:
                    await context.write(lpb.WatchTicketResponse(ticket=msg))
                    if not sent:
                        first_sent()
                    sent = version
                if msg.state in (lpb.TICKET_STATE_PLACED, lpb.TICKET_STATE_CANCELLED):
                    return
                await waiter.wait(None)
                waiter.take()
                msg, version = await self._ticket(player, msg.ticket_id)

    @rpc.unary
    async def CancelTicket(
        self, request: lpb.CancelTicketRequest, context: Context_
    ) -> lpb.CancelTicketResponse:
        player = self._player(context)
        ticket, version = await self.quickplay.cancel(player, request.ticket_id)
        return lpb.CancelTicketResponse(
            ticket=self.quickplay.to_pb(ticket, version, None, 0, player.id)
        )

    # -- rematch ---------------------------------------------------------------------
    @rpc.unary
    async def Rematch(self, request: lpb.RematchRequest, context: Context_) -> lpb.RematchResponse:
        if len(request.match_id) > MAX_MATCH_ID:
            raise invalid(
                "BAD_MATCH_ID", f"match_id is at most {MAX_MATCH_ID} characters", "match_id"
            )
        wait_s = self._wait_s(request.wait_ms, context)
        token = auth.bearer(context.invocation_metadata())
        if token is not None and token.count(".") == 2:  # a JWT, not <match_id>.<secret>
            raise unauthenticated(
                "Rematch takes the seat token of the finished match, not a player credential",
                "SEAT_TOKEN_REQUIRED",
            )
        session, seat, digest = await self.registry.seat_of(token, request.match_id)
        check = access.seat_check(lambda: session.seats, seat, digest)
        structlog.contextvars.bind_contextvars(match_id=session.match_id, seat=seat)
        doc, _ = await self.rematches.ask(session, seat, request.decline)

        async def read() -> tuple[tuple[TableDoc, int], int]:
            check()  # the seat token still holds (not reissued meanwhile)
            found = await self.tables.read(doc.id)
            return found, found[1]

        found, version = await self._until_changed(
            table_key(doc.id), request.after_version, wait_s, read
        )
        return lpb.RematchResponse(
            table=table_pb(found, version),
            seat=seat,
            seat_token=self.tables.seat_token(found, seat),
        )


def _loop_time() -> float:
    return asyncio.get_running_loop().time()
