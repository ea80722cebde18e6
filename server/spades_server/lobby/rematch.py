"""Rematch: another match with the same seats, once every human accepts.

The first human of a finished match to ask opens a rematch table (its key,
``r:<match id>``, is written in the same commit, so two asking at once open
one); each human's call accepts. Humans keep their seats and names; bots stay
bots. Once every human seat has accepted, the table starts like any other
(``tables``); unless all accept within ``--rematch-seconds`` it closes.
A human is known by the seat token of the finished match, so a rematch works
for matches from the lobby, quick play or CreateMatch alike.
"""

from __future__ import annotations

from ..errors import precondition
from ..session import Session
from ..store.lobby import Tx
from . import rules as rules_mod
from . import shards
from .context import Context
from .docs import (
    BOT,
    PLAYER,
    REMATCH,
    STARTING,
    WAITING,
    SeatDoc,
    TableDoc,
    live,
    rematch_key,
    table_key,
)
from .tables import Tables


class Rematches:
    def __init__(self, ctx: Context, tables: Tables) -> None:
        self.ctx = ctx
        self.tables = tables

    async def ask(self, session: Session, seat: int, decline: bool) -> tuple[TableDoc, int]:
        """Open or accept (or decline) the rematch of ``session``'s match for
        ``seat``; the rematch table as it is then."""
        if not session.match.is_over:
            raise precondition("MATCH_NOT_OVER", "a rematch is asked for once the match is over")
        ctx = self.ctx

        async def decide() -> tuple[Tx | None, tuple[TableDoc, int]]:
            (pointer,) = await ctx.store.get([rematch_key(session.match_id)])
            tx = Tx()
            if pointer is None:
                doc, version = await self._new_table(session), 0
                tx.expect[rematch_key(session.match_id)] = 0
                tx.put[rematch_key(session.match_id)] = doc.id.encode()
                tx.ttl_ms[rematch_key(session.match_id)] = 1000 * ctx.settings.keep_s
            else:
                doc, version = await self.tables.read(pointer.data.decode())
            if doc.state != WAITING:
                return None, (doc, version)  # started, or closed: nothing to accept
            if decline:
                doc.state, doc.close_reason = "closed", "declined"
            else:
                doc.seats[seat].accepted = True
                if all(s.accepted for s in doc.seats if s.state == PLAYER):
                    doc.state = STARTING
                    doc.deadline_ms = ctx.now_ms() + ctx.settings.start_lease_ms
                    doc.seed = self.ctx.new_seed()
            self.tables.write(tx, doc, version)
            return tx, (doc, version + 1)

        doc, version = await ctx.transact(decide)
        if doc.state == STARTING:
            doc, version = await self.tables.start(doc.id)
        return doc, version

    async def _new_table(self, session: Session) -> TableDoc:
        """The rematch table: the finished match's seats, rules, timer and
        spectators; its players' ids when it came from a table."""
        ctx = self.ctx
        (old,) = await ctx.at(session.match_id).get([table_key(session.match_id)])
        old = live(old)
        table = None if old is None else TableDoc.from_bytes(old.data)
        rules = (
            rules_mod.stored(table.ruleset)
            if table is not None
            else rules_mod.of_engine(session.match.rules)
        )
        seats = []
        for i, s in enumerate(session.seats):
            if s.is_bot_seat:
                seats.append(SeatDoc(BOT, name=s.name, level=s.bot_level))
            else:
                player = "" if table is None else table.seats[i].player
                seats.append(SeatDoc(PLAYER, player, s.name, nonce=ctx.seat_keys.new_nonce()))
        now = ctx.now_ms()
        return TableDoc(
            id=shards.new_id(shards.HOME),  # beside its r: key
            kind=REMATCH,
            state=WAITING,
            ruleset=rules.stored,
            rules_key=rules.key,
            seats=seats,
            created_ms=now,
            deadline_ms=now + 1000 * ctx.settings.rematch_s,
            public=False,
            timer_ms=session.turn_timer_ms,
            spectators=session.spectating.mode,
            unattended="close",
            bot_level=ctx.settings.bot_level,
            rematch_of=session.match_id,
        )
