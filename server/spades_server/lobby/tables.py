"""Tables: open, join, leave, start early; the start itself; tables that fall due.

A table waits (WAITING) until its last seat is taken, its host starts it, or
its wait runs out (bots fill it, or it closes). Starting is two commits with
the match's creation between them: the table becomes STARTING (with a lease
and a seed), the match is created under the table's id with the seats' token
hashes, and the table becomes STARTED. A replica that dies between the two
leaves a STARTING table whose lease runs out; any replica's sweeper then
starts it again. Creating the match a second time finds it there
(``MatchExists``) and goes on: both attempts made the same seats and tokens,
so whichever came first is the match.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
import structlog

from spades_engine import Match

from .. import access
from ..errors import ServiceError, denied, invalid, not_found, precondition
from ..gen.spades.v1 import lobby_pb2 as lpb
from ..gen.spades.v1 import spades_pb2 as pb
from ..matches import SeatSpec
from ..players import Player
from ..store import MatchExists, StoreError
from ..store.lobby import Tx
from . import invites, presence, results, shards
from . import rules as rules_mod
from .context import Context
from .docs import (
    BOT,
    CLOSED,
    DUE,
    LOBBY,
    OPEN,
    OPENED,
    PLAYER,
    STARTED,
    STARTING,
    WAITING,
    SeatDoc,
    TableDoc,
    invite_key,
    live,
    lobby_set,
    player_key,
    table_event,
    table_key,
)

log = structlog.get_logger("spades.lobby.tables")

MAX_TABLE_ID = 64
MAX_TURN_TIMER_MS = 3_600_000
BOT_LEVELS = frozenset(pb.BotLevel.values()) - {pb.BOT_LEVEL_UNSPECIFIED}

STATE_PB = {
    WAITING: lpb.TABLE_STATE_WAITING,
    STARTING: lpb.TABLE_STATE_STARTING,
    STARTED: lpb.TABLE_STATE_STARTED,
    CLOSED: lpb.TABLE_STATE_CLOSED,
}
KIND_PB = {
    OPENED: lpb.TABLE_KIND_OPENED,
    "quick": lpb.TABLE_KIND_QUICK_PLAY,
    "rematch": lpb.TABLE_KIND_REMATCH,
}
SEAT_PB = {
    OPEN: lpb.TABLE_SEAT_STATE_OPEN,
    PLAYER: lpb.TABLE_SEAT_STATE_PLAYER,
    BOT: lpb.TABLE_SEAT_STATE_BOT,
}


def bot_name(seat: int) -> str:
    return f"Bot {seat + 1}"


def table_pb(doc: TableDoc, version: int, viewer: str = "", code_shown: bool = False) -> lpb.Table:
    """The table as ``viewer`` (a player id) sees it: the invite code only for
    a player seated at it, or one who gave the code."""
    rules = rules_mod.stored(doc.ruleset)
    show_code = code_shown or (viewer != "" and doc.seat_of(viewer) is not None)
    return lpb.Table(
        table_id=doc.id,
        state=STATE_PB[doc.state],
        kind=KIND_PB[doc.kind],
        ruleset=rules.request,
        resolved_ruleset=rules.resolved,
        seats=[
            lpb.TableSeat(
                seat=i,
                state=SEAT_PB[s.state],
                player_id=s.player,
                name=s.name,
                bot_level=s.level,  # type: ignore[arg-type]
                accepted=s.accepted,
            )
            for i, s in enumerate(doc.seats)
        ],
        host_player_id=doc.host,
        visibility=lpb.TABLE_VISIBILITY_PUBLIC if doc.public else lpb.TABLE_VISIBILITY_INVITE_ONLY,
        invite_code=invites.shown(doc.code) if show_code else "",
        turn_timer_ms=doc.timer_ms,
        spectators=doc.spectators,  # type: ignore[arg-type]
        created_ms=doc.created_ms,
        deadline_ms=doc.deadline_ms if doc.state == WAITING else 0,
        unattended=(
            lpb.UNATTENDED_CLOSE if doc.unattended == "close" else lpb.UNATTENDED_FILL_WITH_BOTS
        ),
        bot_level=doc.bot_level,  # type: ignore[arg-type]
        match_id=doc.id if doc.state == STARTED else "",
        close_reason=doc.close_reason,
        rematch_of=doc.rematch_of,
        version=version,
        rated=doc.rated,
        rating_pool=doc.pool if doc.rated else "",
    )


@dataclass(frozen=True, slots=True)
class Seated:
    """A player's seat at a table, and the table as it is now."""

    table: TableDoc
    version: int
    seat: int
    token: str


def check_table_id(table_id: str, field: str = "table_id") -> str:
    if not table_id:
        raise invalid("BAD_TABLE_ID", f"{field} is required", field)
    if len(table_id) > MAX_TABLE_ID or not table_id.isascii() or not table_id.isalnum():
        raise invalid("BAD_TABLE_ID", f"{field} is not a table id", field)
    return table_id


def table_closed(doc: TableDoc) -> ServiceError:
    return precondition(
        "TABLE_CLOSED", f"table {doc.id} is closed ({doc.close_reason})", table_id=doc.id
    )


def table_started(doc: TableDoc) -> ServiceError:
    return precondition("TABLE_STARTED", f"table {doc.id} has started", table_id=doc.id)


class Tables:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # -- reading ------------------------------------------------------------------
    async def read(self, table_id: str) -> tuple[TableDoc, int]:
        (doc,) = await self.ctx.at(table_id).get([table_key(table_id)])
        doc = live(doc)
        if doc is None:
            raise not_found("table", table_id)
        return TableDoc.from_bytes(doc.data), doc.version

    async def pending(self, table_id: str) -> bool:
        """Whether ``table_id`` is a table that has not started (yet)."""
        if len(table_id) > MAX_TABLE_ID:
            return False
        (doc,) = await self.ctx.at(table_id).get([table_key(table_id)])
        doc = live(doc)
        return doc is not None and TableDoc.from_bytes(doc.data).state in (WAITING, STARTING)

    async def by_code(self, player: Player, text: str) -> str:
        """The table an invite code opens; every attempt counts against the
        player's (RESOURCE_EXHAUSTED INVITE_ATTEMPTS past them)."""
        store = self.ctx.store
        key = f"invite:{player_key(player.id)}"
        if not await store.take_token(key, invites.INVITE_RATE, invites.INVITE_BURST):
            retry_ms = int(1000 / invites.INVITE_RATE)
            raise ServiceError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "INVITE_ATTEMPTS",
                f"too many invite codes tried: one more in {retry_ms // 1000} s",
                metadata={"retry_after_ms": str(retry_ms)},
            )
        code = invites.normalised(text)
        found = None if code is None else (await store.get([invite_key(code)]))[0]
        if found is None:
            raise ServiceError(
                grpc.StatusCode.NOT_FOUND, "INVITE_NOT_FOUND", "no table has this invite code"
            )
        return found.data.decode()

    def seat_token(self, doc: TableDoc, seat: int) -> str:
        return self.ctx.seat_token(doc.id, seat, doc.seats[seat].nonce)

    # -- opening --------------------------------------------------------------------
    async def open(self, player: Player, req: lpb.OpenTableRequest) -> Seated:
        ctx, settings = self.ctx, self.ctx.settings
        rules = rules_mod.from_request(req.ruleset)
        players = rules.engine.players
        bots = set()
        for i, s in enumerate(req.bot_seats):
            if not 0 <= s < players or s in bots:
                raise invalid(
                    "BAD_SEAT",
                    f"bot_seats[{i}] = {s}: seats are 0 to {players - 1}, each once",
                    f"bot_seats[{i}]",
                )
            bots.add(s)
        seat = req.seat if req.HasField("seat") else 0
        if not 0 <= seat < players or seat in bots:
            raise invalid(
                "BAD_SEAT", f"seat {seat}: yours must be 0 to {players - 1}, not a bot's", "seat"
            )
        level = self._bot_level(req.bot_level, "bot_level")
        if not 0 <= req.turn_timer_ms <= MAX_TURN_TIMER_MS:
            raise invalid(
                "BAD_TURN_TIMER", f"turn_timer_ms must be 0 to {MAX_TURN_TIMER_MS}", "turn_timer_ms"
            )
        if req.visibility not in lpb.TableVisibility.values():
            raise invalid("BAD_VISIBILITY", f"visibility {req.visibility} is unknown", "visibility")
        if req.unattended not in lpb.Unattended.values():
            raise invalid("BAD_UNATTENDED", f"unattended {req.unattended} is unknown", "unattended")
        if not 0 <= req.wait_seconds <= settings.table_wait_s:
            raise invalid(
                "BAD_WAIT_SECONDS",
                f"wait_seconds must be 0 (the default) to {settings.table_wait_s}",
                "wait_seconds",
            )
        spectators = access.spectators_from_pb(req.spectators)
        if req.rated and bots and not ctx.settings.rated_bots.allowed:
            raise invalid(
                "RATED_WITHOUT_BOTS",
                "a rated table seats humans only on this server: no bot_seats",
                "bot_seats",
            )
        await ctx.check_rate(player)
        if await ctx.store.zcard(DUE) >= settings.max_waiting_tables:
            raise ServiceError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "TOO_MANY_TABLES",
                f"this service holds at most {settings.max_waiting_tables} waiting tables",
            )
        invite_only = req.visibility == lpb.TABLE_VISIBILITY_INVITE_ONLY
        refused: list[str] = []  # tables this call claimed whose commit was refused

        async def decide() -> tuple[Tx | None, TableDoc]:
            here = await presence.read(ctx, player.id, dead=refused)
            here.refuse_if_busy()
            now = ctx.now_ms()
            # A new id each try: a claimed one may have been fenced meanwhile.
            doc = TableDoc(
                id=shards.new_id(shards.HOME),  # beside the listing and invite codes
                kind=OPENED,
                state=WAITING,
                ruleset=rules.stored,
                rules_key=rules.key,
                seats=[
                    SeatDoc(BOT, name=bot_name(i), level=level) if i in bots else SeatDoc(OPEN)
                    for i in range(players)
                ],
                created_ms=now,
                deadline_ms=now + 1000 * (req.wait_seconds or settings.table_wait_s),
                host=player.id,
                public=not invite_only,
                code=invites.new_code() if invite_only else "",
                timer_ms=req.turn_timer_ms,
                spectators=spectators,
                unattended="close" if req.unattended == lpb.UNATTENDED_CLOSE else "bots",
                bot_level=level,
                rated=req.rated,
            )
            self.set_rated(doc)
            doc.seats[seat] = SeatDoc(
                PLAYER, player.id, player.name, nonce=ctx.seat_keys.new_nonce()
            )
            await presence.claim_table(ctx, here, doc.id, 0, refused)
            tx = Tx(expect={table_key(doc.id): 0})
            if doc.code:
                tx.expect[invite_key(doc.code)] = 0
                tx.put[invite_key(doc.code)] = doc.id.encode()
                tx.ttl_ms[invite_key(doc.code)] = doc.deadline_ms - now + 60_000
            if not doc.open_seats():
                self._begin_start(doc, now)
            self.write(tx, doc, 0)
            return tx, doc

        doc = await ctx.transact(decide)
        log.info("table opened", table_id=doc.id, public=doc.public, players=players)
        if doc.state == STARTING:
            found, version = await self.start(doc.id)
        else:
            found, version = await self.read(doc.id)
        return Seated(found, version, seat, self.seat_token(found, seat))

    def _bot_level(self, value: int, field: str) -> int:
        if value == pb.BOT_LEVEL_UNSPECIFIED:
            return self.ctx.settings.bot_level
        if value not in BOT_LEVELS:
            raise invalid("BAD_BOT_LEVEL", f"{field} {value} is not a BotLevel value", field)
        return value

    # -- joining and leaving ----------------------------------------------------------
    async def join(
        self, player: Player, table_id: str, code: str, seat: int | None
    ) -> tuple[Seated, bool]:
        """Seat the player; also whether the code was given (it shows the code)."""
        ctx = self.ctx
        if code:
            table_id = await self.by_code(player, code)
        else:
            check_table_id(table_id)

        refused: list[str] = []  # as open's

        async def decide() -> tuple[Tx | None, tuple[TableDoc, int, int]]:
            here = await presence.read(ctx, player.id, dead=refused)
            doc, version = await self.read(table_id)
            mine = doc.seat_of(player.id)
            if mine is not None and doc.state != CLOSED:
                return None, (doc, version, mine)  # already there: the same seat again
            self._check_joinable(doc, code != "")
            here.refuse_if_busy()
            chosen = self._free_seat(doc, seat)
            doc.seats[chosen] = SeatDoc(
                PLAYER, player.id, player.name, nonce=ctx.seat_keys.new_nonce()
            )
            await presence.claim_table(ctx, here, doc.id, version, refused)
            tx = Tx(expect={table_key(doc.id): version})
            if not doc.open_seats():
                self._begin_start(doc, ctx.now_ms())
            self.write(tx, doc, version)
            return tx, (doc, version + 1, chosen)

        await ctx.check_rate(player)
        doc, version, chosen = await ctx.transact(decide, at=ctx.at(table_id))
        if doc.state == STARTING:
            doc, version = await self.start(doc.id)
        return Seated(doc, version, chosen, self.seat_token(doc, chosen)), code != ""

    def _check_joinable(self, doc: TableDoc, with_code: bool) -> None:
        if doc.kind != OPENED:
            raise denied("NOT_JOINABLE", "quick play and rematch tables seat their own players")
        if not doc.public and not with_code:
            raise denied("INVITE_REQUIRED", "this table is joined with its invite code")
        if doc.state == CLOSED:
            raise table_closed(doc)
        if doc.state != WAITING:
            raise table_started(doc)

    @staticmethod
    def _free_seat(doc: TableDoc, seat: int | None) -> int:
        free = doc.open_seats()
        if seat is None:
            if not free:
                raise precondition("TABLE_FULL", "every seat is taken", table_id=doc.id)
            return free[0]
        if not 0 <= seat < len(doc.seats):
            raise invalid("BAD_SEAT", f"seat {seat}: seats are 0 to {len(doc.seats) - 1}", "seat")
        if seat not in free:
            raise precondition("SEAT_TAKEN", f"seat {seat} is taken", table_id=doc.id)
        return seat

    async def leave(self, player: Player, table_id: str) -> tuple[TableDoc, int]:
        ctx = self.ctx
        check_table_id(table_id)

        async def decide() -> tuple[Tx | None, tuple[TableDoc, int]]:
            doc, version = await self.read(table_id)
            mine = doc.seat_of(player.id)
            if mine is None:
                raise precondition("NOT_SEATED", "you do not sit at this table", table_id=doc.id)
            if doc.kind != OPENED:
                raise denied(
                    "NOT_JOINABLE", "quick play and rematch seats are left on the match (LeaveSeat)"
                )
            if doc.state == CLOSED:
                raise table_closed(doc)
            if doc.state != WAITING:
                raise table_started(doc)
            # The player's claim on it stays: it binds them no longer once
            # they do not sit there (presence).
            doc.seats[mine] = SeatDoc(OPEN)
            tx = Tx(expect={table_key(doc.id): version})
            players = [s.player for s in doc.seats if s.state == PLAYER]
            if not players:
                self._close(doc, "empty", tx)
            elif doc.host == player.id:
                doc.host = players[0]
            self.write(tx, doc, version)
            return tx, (doc, version + 1)

        await ctx.check_rate(player)
        return await ctx.transact(decide, at=ctx.at(table_id))

    async def start_early(self, player: Player, table_id: str) -> tuple[TableDoc, int]:
        """The host's StartTable: bots take the open seats."""
        ctx = self.ctx
        check_table_id(table_id)

        async def decide() -> tuple[Tx | None, None]:
            doc, version = await self.read(table_id)
            if doc.host != player.id:
                raise denied("NOT_HOST", "only the table's host may start it")
            if doc.state == CLOSED:
                raise table_closed(doc)
            if doc.state != WAITING:
                return None, None  # started already: StartTable is done
            tx = Tx(expect={table_key(doc.id): version})
            self._fill_with_bots(doc)
            self._begin_start(doc, ctx.now_ms())
            self.write(tx, doc, version)
            return tx, None

        await ctx.check_rate(player)
        await ctx.transact(decide, at=ctx.at(table_id))
        return await self.start(table_id)

    # -- state changes, as parts of a commit -------------------------------------------
    @staticmethod
    def _fill_with_bots(doc: TableDoc) -> None:
        for i in doc.open_seats():
            doc.seats[i] = SeatDoc(BOT, name=bot_name(i), level=doc.bot_level)

    def set_rated(self, doc: TableDoc) -> None:
        """Settle whether a table is rated, and its pool: a rated table that
        bots sit at is not, unless the server allows it."""
        doc.rated = results.keeps_rating(doc, self.ctx.settings.rated_bots)
        doc.pool = results.pool_of(doc.ruleset, self.ctx.settings.rating_pools) if doc.rated else ""

    def _begin_start(self, doc: TableDoc, now: int) -> None:
        self.set_rated(doc)
        doc.state = STARTING
        doc.deadline_ms = now + self.ctx.settings.start_lease_ms
        doc.seed = self.ctx.new_seed()

    def _close(self, doc: TableDoc, reason: str, tx: Tx) -> None:
        doc.state = CLOSED
        doc.close_reason = reason
        if doc.code:
            tx.delete.append(invite_key(doc.code))

    def write(self, tx: Tx, doc: TableDoc, version: int) -> None:
        """Put ``doc`` (read at ``version``) and keep the lobby's and the due
        set's entries in step with its state."""
        key = table_key(doc.id)
        tx.expect.setdefault(key, version)
        tx.put[key] = doc.to_bytes()
        lobby_sets = (LOBBY, lobby_set(doc.rules_key))
        if doc.listed():
            tx.zadd += [(s, doc.id, float(doc.created_ms)) for s in lobby_sets]
        elif doc.public and doc.kind == OPENED:
            tx.zrem += [(s, doc.id) for s in lobby_sets]
        if doc.state in (WAITING, STARTING):
            tx.zadd.append((DUE, key, float(doc.deadline_ms)))
        else:
            tx.zrem.append((DUE, key))
            tx.ttl_ms[key] = 1000 * self.ctx.settings.keep_s
        tx.events.append(table_event(doc, version + 1))

    # -- starting -------------------------------------------------------------------------
    async def start(self, table_id: str) -> tuple[TableDoc, int]:
        """Deal a STARTING table's match and mark it STARTED (see the module's
        docstring); returns the table as it is then (still STARTING if the
        match could not be created now: the sweeper tries again)."""
        ctx = self.ctx
        for _ in range(4):
            doc, version = await self.read(table_id)
            if doc.state != STARTING:
                return doc, version
            try:
                await self._create_match(doc)
            except MatchExists:
                pass  # an earlier attempt created it: the same seats and tokens
            except (ServiceError, StoreError) as e:
                log.warning("a table could not start yet", table_id=table_id, error=str(e))
                return doc, version
            doc.state = STARTED
            tx = Tx()
            self.write(tx, doc, version)
            results.schedule(tx, doc.id, ctx.now_ms(), ctx.settings.result_check_ms)
            if await ctx.at(table_id).commit(tx) is not None:
                log.info("table started", table_id=table_id, kind=doc.kind)
                return doc, version + 1
        return await self.read(table_id)

    async def _create_match(self, doc: TableDoc) -> None:
        rules = rules_mod.stored(doc.ruleset)
        keys = self.ctx.seat_keys
        specs = [
            SeatSpec(s.name, True, s.level or self.ctx.settings.bot_level)
            if s.state == BOT
            else SeatSpec(s.name, False, 0, token_hash=keys.token_hash(doc.id, i, s.nonce))
            for i, s in enumerate(doc.seats)
        ]
        await self.ctx.registry.create(
            Match(rules.engine, seed=doc.seed),
            specs,
            doc.timer_ms,
            spectators=doc.spectators,
            match_id=doc.id,
        )

    # -- falling due -----------------------------------------------------------------------
    async def fall_due(self, table_id: str) -> None:
        """A table whose deadline passed: a waiting one fills with bots (and
        starts) or closes; a starting one whose lease ran out is started here."""
        ctx, store = self.ctx, self.ctx.at(table_id)
        now = ctx.now_ms()
        doc, version = await self.read(table_id)
        if doc.state in (STARTED, CLOSED):  # done: only its due entry was left behind
            await store.commit(Tx(zrem=[(DUE, table_key(doc.id))]))
            return
        tx = Tx(expect={table_key(doc.id): version})
        if doc.state == STARTING:
            if doc.deadline_ms > now:
                return
            doc.deadline_ms = now + ctx.settings.start_lease_ms  # the lease is ours now
        elif doc.state == WAITING:
            if doc.deadline_ms > now:
                return
            if doc.kind == OPENED and doc.unattended == "bots":
                self._fill_with_bots(doc)
                self._begin_start(doc, now)
            else:
                self._close(doc, "unattended" if doc.kind == OPENED else "expired", tx)
        self.write(tx, doc, version)
        if await store.commit(tx) is None:
            return  # someone else changed it: it is theirs
        if doc.state == STARTING:
            await self.start(table_id)
