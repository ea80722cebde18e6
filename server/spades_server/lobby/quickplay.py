"""Quick play: tickets, and the loop that places them at tables.

A ticket is queued under its rules' key (``rules.key_of``). Every replica
runs the matchmaker loop below, and looks at once at the queues its own
tickets joined: the replica of a queue's newest ticket sees every ticket
before it, so whoever makes a table possible places it. Another replica's
ticket it only notes, looking at its queue ``takeover_s`` later (and its
bots that much after they fall due): the ticket's own replica has placed it
by then unless it died, and the queue's reads no longer grow with the
replicas times the tickets (docs/capacity.md, the lobby's slot). Each
decides from what the store holds
(``matchmaker.decide``) and places a table with one commit that expects every
ticket of it at the version it read: the tickets become PLACED, leave the
queue, and the table is written STARTING, all or nothing. A replica that
loses the race to another finds its commit refused and decides again; one
that dies after its commit leaves a STARTING table that any replica starts
(``tables``). So a ticket is placed once, and never lost.

A party of two: the first player's ticket waits for the partner
(WAITING_FOR_PARTNER); the partner's QuickPlay naming the first joins it, and
the ticket, now of both, is queued. A party's ticket is opened with the
pair's key (``docs.pair_key``) at the version read before the partner's
ticket was looked for, so two partners asking at the same moment cannot both
open a ticket that waits for the other: the second commit is refused, and its
call finds the first's ticket and joins it. Each player's ticket is claimed
on their own document first (``presence``).

A QuickPlay naming a ``request_id`` is idempotent: the player's document
keeps the id that made its latest ticket, and a repeat answers with that
ticket. Without it, a client that retried after losing the answer (its
first call's commit kept, the answer lost in a failover) would open a
second ticket as soon as the first was placed, and a party's retry would
wait for a partner who had already sat down.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import structlog

from .. import tasks
from ..errors import invalid, precondition
from ..gen.spades.v1 import lobby_pb2 as lpb
from ..players import Player
from ..store import StoreError
from ..store.lobby import LobbyStore, Tx
from . import matchmaker, presence, results, shards
from . import rules as rules_mod
from .context import Context
from .docs import (
    ACTIVE_TICKET,
    BOT,
    CANCELLED,
    DUE,
    PARTNER,
    PLACED,
    PLAYER,
    QUEUES,
    QUICK_PLAY,
    SEARCHING,
    STARTED,
    STARTING,
    PlayerDoc,
    SeatDoc,
    TableDoc,
    TicketDoc,
    live,
    pair_key,
    player_key,
    queue_of,
    queue_set,
    table_key,
    ticket_event,
    ticket_key,
)
from .feed import Change
from .ratings import read_standings
from .tables import Tables, bot_name, table_pb

log = structlog.get_logger("spades.lobby.quickplay")

MAX_PLAYER_ID = 128
MAX_TICKET_ID = 64
MAX_REQUEST_ID = 64
# The most tickets of one queue the matchmaker reads at once.
QUEUE_WINDOW = 400
# The most of its own tickets a matchmaker remembers until the feed shows them.
MINE_KEPT = 4096
# A party's pair key outlives the wait for the partner by this much.
PAIR_KEEP_MS = 60_000

STATE_PB = {
    PARTNER: lpb.TICKET_STATE_WAITING_FOR_PARTNER,
    SEARCHING: lpb.TICKET_STATE_SEARCHING,
    PLACED: lpb.TICKET_STATE_PLACED,
    CANCELLED: lpb.TICKET_STATE_CANCELLED,
}


class QuickPlay:
    def __init__(self, ctx: Context, tables: Tables) -> None:
        self.ctx = ctx
        self.tables = tables
        # Told of every ticket this replica queues (the matchmaker's).
        self.on_queued: Callable[[TicketDoc], None] = lambda ticket: None

    # -- reading --------------------------------------------------------------------
    async def read(
        self, player: Player, ticket_id: str
    ) -> tuple[TicketDoc, int, TableDoc | None, int]:
        """The player's ticket (their latest when ``ticket_id`` is empty) and,
        once placed, its table."""
        if len(ticket_id) > MAX_TICKET_ID:
            raise invalid("BAD_TICKET_ID", "ticket_id is not a ticket id", "ticket_id")
        if not ticket_id:
            players = self.ctx.players(player.id)
            (pdoc,) = await players.get([player_key(player.id)])
            ticket_id = PlayerDoc.from_bytes(None if pdoc is None else pdoc.data).ticket
            if not ticket_id:
                raise presence.not_found_ticket("(yours)")
        (doc,) = await self.ctx.at(ticket_id).get([ticket_key(ticket_id)])
        doc = live(doc)
        ticket = None if doc is None else TicketDoc.from_bytes(doc.data)
        if doc is None or ticket is None or player.id not in ticket.players:
            raise presence.not_found_ticket(ticket_id)  # nobody learns of others' tickets
        table, table_version = None, 0
        if ticket.state == PLACED:
            (tdoc,) = await self.ctx.at(ticket.table).get([table_key(ticket.table)])
            if tdoc is not None:
                table, table_version = TableDoc.from_bytes(tdoc.data), tdoc.version
        return ticket, doc.version, table, table_version

    def to_pb(
        self, ticket: TicketDoc, version: int, table: TableDoc | None, table_version: int,
        viewer: str,
    ) -> lpb.Ticket:  # fmt: skip
        """The ticket as ``viewer`` (one of its players) sees it: PLACED only
        once its table's match exists, with the viewer's own seat and token.
        Its version adds the table's, so that the start raises it."""
        rules = rules_mod.stored(ticket.ruleset)
        msg = lpb.Ticket(
            ticket_id=ticket.id,
            state=STATE_PB[ticket.state],
            ruleset=rules.request,
            player_ids=ticket.players,
            partner_player_id=ticket.partner,
            created_ms=ticket.created_ms,
            cancel_reason=ticket.reason,
            version=version + (table_version if ticket.state == PLACED else 0),
            rated=ticket.rated,
        )
        if ticket.state in (SEARCHING, PLACED):
            msg.bots_at_ms = ticket.bots_at_ms
        if ticket.state == PLACED:
            seat = None if table is None else table.seat_of(viewer)
            if table is None or table.state != STARTED or seat is None:
                # The table is being dealt: shown as still searching, at the
                # version it had then (a long poll waits on for the start).
                msg.state = lpb.TICKET_STATE_SEARCHING
                msg.version = version - 1
            else:
                msg.placement.CopyFrom(
                    lpb.Placement(
                        match_id=table.id,
                        seat=seat,
                        seat_token=self.tables.seat_token(table, seat),
                        table=table_pb(table, table_version, viewer),
                    )
                )
        return msg

    # -- asking and cancelling ----------------------------------------------------------
    @staticmethod
    def _check_request(player: Player, req: lpb.QuickPlayRequest) -> rules_mod.Rules:
        """The request's rules, once its party and request id are valid."""
        rules = rules_mod.from_request(req.ruleset)
        partner = req.partner_player_id
        if partner:
            if len(partner) > MAX_PLAYER_ID or partner == player.id:
                raise invalid(
                    "BAD_PARTNER",
                    "partner_player_id must be another player's id (at most 128 characters)",
                    "partner_player_id",
                )
            if not rules.engine.partnerships or rules.engine.players != 4:
                raise invalid(
                    "PARTY_NEEDS_PARTNERSHIPS",
                    "a party of two plays partners: only at partnership tables of four",
                    "partner_player_id",
                )
        if len(req.request_id) > MAX_REQUEST_ID:
            raise invalid("BAD_REQUEST_ID", "request_id has at most 64 characters", "request_id")
        return rules

    async def ask(self, player: Player, req: lpb.QuickPlayRequest) -> tuple[TicketDoc, int]:
        ctx = self.ctx
        rules = self._check_request(player, req)
        partner = req.partner_player_id
        await ctx.check_rate(player)

        who = pair_key(player.id, partner) if partner else player_key(player.id)
        lane = shards.lane(who, ctx.settings.quickplay_lanes)
        queue = queue_of(rules.key, req.rated, lane)
        store = ctx.queue(queue)
        made: list[bool] = []  # whether the commit was this call's, not a retry's
        refused: list[str] = []  # tickets this call claimed whose commit was refused
        # Where the commit goes: the queue's shard, or the partner's ticket's
        # (a replica with other --quickplay-lanes may have put it in another).
        place = [store]

        async def decide() -> tuple[Tx | None, tuple[TicketDoc, int]]:
            made.clear()
            place[0] = store
            here = await presence.read(ctx, player.id, dead=refused)
            if req.request_id and here.doc.request == req.request_id and here.latest:
                return None, (here.latest, here.latest_version)  # a retry: what it made
            made.append(True)
            here.refuse_if_busy()
            now = ctx.now_ms()
            tx = Tx()
            if partner:
                # Read before the partner's ticket: a party they open after
                # this read makes this call's commit refused (docs.pair_key).
                pair = pair_key(player.id, partner)
                (pdoc,) = await store.get([pair])
                theirs = await presence.read(ctx, partner)
                waiting = theirs.ticket
                if (
                    waiting is not None
                    and waiting.state == PARTNER
                    and waiting.partner == player.id
                ):
                    if waiting.rules_key != rules.key or waiting.rated != req.rated:
                        raise precondition(
                            "PARTY_RULESET_MISMATCH",
                            f"{partner} asked for other rules (or rated play): ask for the same",
                            ticket_id=waiting.id,
                        )
                    version = theirs.ticket_version
                    await presence.claim_ticket(
                        ctx, here, waiting.id, version, req.request_id, refused
                    )
                    self._join_party(waiting, player, now)
                    self._write(tx, waiting, version)
                    place[0] = ctx.at(waiting.id)
                    return tx, (waiting, version + 1)
                tx.expect[pair] = 0 if pdoc is None else pdoc.version
                tx.put[pair] = b"1"
                tx.ttl_ms[pair] = 1000 * ctx.settings.party_wait_s + PAIR_KEEP_MS
            ticket = TicketDoc(
                id=shards.new_id(shards.of_queue(queue)),
                state=PARTNER if partner else SEARCHING,
                ruleset=rules.stored,
                rules_key=rules.key,
                players=[player.id],
                names=[player.name],
                created_ms=now,
                partner=partner,
                rated=req.rated,
                lane=lane,
            )
            if not partner:
                ticket.queued_ms = now
                ticket.bots_at_ms = now + self._bot_wait_ms()
            await presence.claim_ticket(ctx, here, ticket.id, 0, req.request_id, refused)
            self._write(tx, ticket, 0)
            return tx, (ticket, 1)

        ticket, version = await ctx.transact(decide, at=lambda: place[0])
        log.info("ticket", ticket_id=ticket.id, state=ticket.state, players=len(ticket.players))
        if made and ticket.state == SEARCHING:
            self.on_queued(ticket)
        return ticket, version

    def _bot_wait_ms(self) -> int:
        return int(self.ctx.settings.quickplay_bot_wait_s * 1000)

    def _join_party(self, ticket: TicketDoc, player: Player, now: int) -> None:
        ticket.state = SEARCHING
        ticket.players.append(player.id)
        ticket.names.append(player.name)
        ticket.queued_ms = now
        ticket.bots_at_ms = now + self._bot_wait_ms()

    def _write(self, tx: Tx, ticket: TicketDoc, version: int) -> None:
        """Put ``ticket`` (read at ``version``) with its queue and due entries."""
        key = ticket_key(ticket.id)
        tx.expect.setdefault(key, version)
        tx.put[key] = ticket.to_bytes()
        queue = queue_set(ticket.queue)
        if ticket.state == SEARCHING:
            tx.zadd += [
                (queue, ticket.id, float(ticket.queued_ms)),
                (QUEUES, ticket.queue, 0.0),
            ]
        else:
            tx.zrem.append((queue, ticket.id))
        if ticket.state == PARTNER:
            deadline = ticket.created_ms + 1000 * self.ctx.settings.party_wait_s
            tx.zadd.append((DUE, key, float(deadline)))
        else:
            tx.zrem.append((DUE, key))
        if ticket.state not in ACTIVE_TICKET:
            tx.ttl_ms[key] = 1000 * self.ctx.settings.keep_s
        tx.events.append(ticket_event(ticket, version + 1))

    async def cancel(self, player: Player, ticket_id: str) -> tuple[TicketDoc, int]:
        ctx = self.ctx

        await ctx.check_rate(player)
        found, _, _, _ = await self.read(player, ticket_id)  # which: where it is

        async def decide() -> tuple[Tx | None, tuple[TicketDoc, int]]:
            ticket, version, _, _ = await self.read(player, found.id)
            if ticket.state == CANCELLED:
                return None, (ticket, version)
            if ticket.state == PLACED:
                raise precondition(
                    "TICKET_PLACED", "the ticket is placed: play, or leave the match's seat",
                    ticket_id=ticket.id,
                )  # fmt: skip
            ticket.state, ticket.reason = CANCELLED, "cancelled"
            tx = Tx()
            self._write(tx, ticket, version)
            return tx, (ticket, version + 1)

        return await ctx.transact(decide, at=ctx.at(found.id))

    async def fall_due(self, ticket_id: str) -> None:
        """A party's ticket whose partner never came: cancelled."""
        ctx, store = self.ctx, self.ctx.at(ticket_id)
        (doc,) = await store.get([ticket_key(ticket_id)])
        doc = live(doc)
        ticket = None if doc is None else TicketDoc.from_bytes(doc.data)
        if doc is None or ticket is None or ticket.state != PARTNER:
            await store.commit(Tx(zrem=[(DUE, ticket_key(ticket_id))]))
            return
        if ticket.created_ms + 1000 * ctx.settings.party_wait_s > ctx.now_ms():
            return
        ticket.state, ticket.reason = CANCELLED, "partner_did_not_join"
        tx = Tx()
        self._write(tx, ticket, doc.version)
        await store.commit(tx)

    # -- placing ------------------------------------------------------------------------
    async def place(self, queue: str) -> int | None:
        """Place what can be placed of one queue (``TicketDoc.queue``) now;
        returns when the queue next needs a look (its oldest ticket's bots),
        None when it is empty."""
        ctx, store = self.ctx, self.ctx.queue(queue)
        members = await store.zrange(queue_set(queue), float("-inf"), float("inf"), 0, QUEUE_WINDOW)
        if not members:
            return None
        ids = [m for m, _ in members]
        docs = await store.get([ticket_key(i) for i in ids])
        tickets: dict[str, tuple[TicketDoc, int]] = {}
        for doc in docs:
            if doc is not None:
                t = TicketDoc.from_bytes(doc.data)
                if t.state == SEARCHING:
                    tickets[t.id] = (t, doc.version)
        if not tickets:
            return None
        first = next(iter(tickets.values()))[0]
        rules = rules_mod.stored(first.ruleset)
        queued = sorted((t for t, _ in tickets.values()), key=lambda t: (t.queued_ms, t.id))
        band = ctx.settings.rating_band if first.rated else None
        ratings = await self._ratings(first.ruleset, queued) if band else {}
        entries = [
            matchmaker.Entry(t.id, tuple(t.players), t.queued_ms, ratings.get(t.id, 0.0))
            for t in queued
        ]
        bot_wait = self._bot_wait_ms()
        now = ctx.now_ms()
        plans = matchmaker.decide(
            entries, rules.engine.players, rules.engine.partnerships, now, bot_wait, band
        )
        # The plans share no ticket: their claims, then their starts, go to the
        # store together (one group commit on SQLite, not one per table).
        claimed = await asyncio.gather(*(self._claim(store, plan, tickets) for plan in plans))
        started = [t for t in claimed if t is not None]
        await asyncio.gather(*(self.tables.start(t) for t in started))
        placed = {t for plan, c in zip(plans, claimed, strict=True) if c for t in plan.tickets}
        left = [e for e in entries if e.ticket_id not in placed]
        return matchmaker.next_deadline(left, bot_wait, now, band)

    async def _ratings(self, ruleset: str, tickets: list[TicketDoc]) -> dict[str, float]:
        """Each rated ticket's rating in its pool: its players' mean mu (a
        player with no rated game has the starting rating)."""
        pool = results.pool_of(ruleset, self.ctx.settings.rating_pools)
        players = sorted({p for t in tickets for p in t.players})
        standings = await read_standings(self.ctx.store, pool, players)
        mu = {s.player: s.rating.mu for s in standings}
        return {t.id: sum(mu[p] for p in t.players) / len(t.players) for t in tickets}

    async def _claim(
        self, store: LobbyStore, plan: matchmaker.Plan, tickets: dict[str, tuple[TicketDoc, int]]
    ) -> str | None:
        """One commit: the plan's tickets placed (at the versions read) and its
        table written STARTING; the table's id, or None if a ticket moved."""
        ctx = self.ctx
        now = ctx.now_ms()
        first = tickets[plan.tickets[0]][0]
        names = {p: n for t, _ in tickets.values() for p, n in zip(t.players, t.names, strict=True)}
        level = ctx.settings.quickplay_bot_level
        doc = TableDoc(
            id=shards.new_id(shards.of_queue(first.queue)),  # beside its tickets
            kind=QUICK_PLAY,
            state=STARTING,
            ruleset=first.ruleset,
            rules_key=first.rules_key,
            seats=[
                SeatDoc(BOT, name=bot_name(i), level=level)
                if s is None
                else SeatDoc(PLAYER, s[1], names[s[1]], nonce=ctx.seat_keys.new_nonce())
                for i, s in enumerate(plan.seats)
            ],
            created_ms=now,
            deadline_ms=now + ctx.settings.start_lease_ms,
            public=False,
            timer_ms=ctx.settings.quickplay_timer_ms,
            bot_level=level,
            seed=self.ctx.new_seed(),
            tickets=plan.tickets,
            rated=first.rated,
        )
        self.tables.set_rated(doc)
        tx = Tx(expect={table_key(doc.id): 0})
        for ticket_id in plan.tickets:
            ticket, version = tickets[ticket_id]
            ticket.state, ticket.table = PLACED, doc.id
            self._write(tx, ticket, version)
        self.tables.write(tx, doc, 0)
        if await store.commit(tx) is None:
            return None
        log.info("tickets placed", table_id=doc.id, tickets=len(plan.tickets))
        return doc.id


class Matchmaker:
    """This replica's matchmaking loop. A queue is looked at when this
    replica queues a ticket there, ``takeover_s`` after another replica's
    ticket joins it (the feed says so), and when its oldest ticket's bots
    fall due (``takeover_s`` later for a queue this replica only took over),
    and not otherwise: a pass costs what changed, not every queue there is.
    Every queue ever used is looked at again at start, after a gap in the
    feed, and every ``rescan_s``."""

    def __init__(
        self,
        ctx: Context,
        quickplay: QuickPlay,
        idle_s: float = 1.0,
        rescan_s: float = 30.0,
        takeover_s: float = 0.5,
    ) -> None:
        self.ctx = ctx
        self.quickplay = quickplay
        self.idle_s = idle_s
        self.rescan_s = rescan_s
        self.takeover_ms = int(takeover_s * 1000)
        self.dirty: set[str] = set()  # queues this replica's tickets joined since the last pass
        self.due: dict[str, int] = {}  # queue -> when it is looked at next
        self.taken_over: set[str] = set()  # due queues this replica has no ticket of
        # Tickets queued here, until the feed passes them on; insertion-ordered
        # and bounded: the feed may pass one on before its commit returns.
        self.mine: dict[str, None] = {}
        self._wake = asyncio.Event()
        self._rescan_at = 0.0  # monotonic: now
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> None:
        self.ctx.feed.subscribe(self._on_change)
        self.quickplay.on_queued = self._queued_here
        self._task = asyncio.get_running_loop().create_task(self._run())

    def _queued_here(self, ticket: TicketDoc) -> None:
        self.mine[ticket.id] = None
        if len(self.mine) > MINE_KEPT:
            del self.mine[next(iter(self.mine))]
        self.dirty.add(ticket.queue)
        self.taken_over.discard(ticket.queue)
        self._wake.set()

    def _on_change(self, change: Change | None) -> None:
        if change is None:
            self._rescan_at = 0.0  # the feed had a gap: look at every queue
            self.mine.clear()
            self._wake.set()
        elif change.ticket is not None and change.ticket.state == SEARCHING:
            if change.ticket.id in self.mine:
                del self.mine[change.ticket.id]
                return
            queue, at = change.ticket.queue, self.ctx.now_ms() + self.takeover_ms
            if queue not in self.due and queue not in self.dirty:
                self.taken_over.add(queue)
            if at < self.due.get(queue, at + 1):
                self.due[queue] = at
                self._wake.set()

    async def _run(self) -> None:
        while not self._closed:
            try:
                if time.monotonic() >= self._rescan_at:
                    self._rescan_at = time.monotonic() + self.rescan_s
                    for place in self.ctx.places():
                        known = await place.zrange(QUEUES, float("-inf"), float("inf"))
                        self.dirty.update(k for k, _ in known)
                await self._pass()
            except StoreError as e:
                log.warning("matchmaking paused: the store did not answer", error=str(e))
                self._rescan_at = 0.0
                await asyncio.sleep(self.idle_s)
            except Exception:
                log.exception("matchmaking failed")
                await asyncio.sleep(self.idle_s)
            await self._sleep()

    async def _pass(self) -> None:
        self._wake.clear()
        now = self.ctx.now_ms()
        keys = self.dirty | {k for k, at in self.due.items() if at <= now}
        self.dirty = set()
        for key in keys:
            try:
                due = await self.quickplay.place(key)
            except BaseException:
                self.dirty.add(key)  # looked at again next time
                raise
            if due is None:
                self.due.pop(key, None)
                self.taken_over.discard(key)
            elif key in self.taken_over:
                self.due[key] = due + self.takeover_ms  # its own replica's first
            else:
                self.due[key] = due

    async def _sleep(self) -> None:
        if self.dirty:
            return
        now = self.ctx.now_ms()
        until = min(self.due.values(), default=now + int(self.idle_s * 1000))
        timeout = min(self.idle_s, max(0.01, (until - now) / 1000))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._wake.wait()

    async def close(self) -> None:
        self._closed = True
        await tasks.stop(self._task)
