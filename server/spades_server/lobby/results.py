"""A lobby match's result, recorded once it ends: its ratings when rated, and
every human's record (issue 26).

When a table starts, its match goes into the ``playing`` set, due for a
check a while later. Two paths record it:

* at once: the match registry tells the lobby each time this process sees a
  match end (every replica following it may), and the result is recorded;
* by the sweeper: a match still in ``playing`` when its check falls due (the
  replica that saw it end died first, or the store was away) is read from
  the match store; over, it is recorded; not over, it is checked again later.

The result is read from the match's stored log alone (its final scores, its
hands, which seat a stand-in played), and the ledger applies it exactly once
(``ratings.Ledger``), however many of these paths run.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import structlog

from .. import tasks
from ..errors import ServiceError
from ..gen.spades.v1 import spades_pb2 as pb
from ..player_stats import seat_records, side_of
from ..rating import Participant, RatedBots, Rating, RatingError, seat_turns
from ..store import MatchNotFound, StoreError
from ..store.base import LoadedMatch
from ..store.lobby import Tx
from . import rules as rules_mod
from .context import Context
from .docs import BOT, PLAYER, STARTED, TableDoc, live, table_key
from .ratings import Finished, Ledger

log = structlog.get_logger("spades.lobby.results")

PLAYING = "playing"  # started lobby matches whose result is not recorded, by next check
MAX_CHECK_MS = 3_600_000  # the first check (Settings.result_check_ms), then as long as it ran


def pool_of(table_rules: str, pools: str) -> str:
    """The rating pool of a table's rules: its preset's, or "all" for one pool."""
    if pools == "one":
        return "all"
    preset = rules_mod.stored(table_rules).request.preset.lower()
    return preset or "classic"


def keeps_rating(doc: TableDoc, bots: RatedBots) -> bool:
    """Whether a rated table stays rated as it starts: bots make it unrated
    unless allowed."""
    return doc.rated and (bots.allowed or all(s.state != BOT for s in doc.seats))


def schedule(tx: Tx, table_id: str, now_ms: int, check_ms: int) -> None:
    """A started table's match: to be checked for a result (in ``tx``)."""
    tx.zadd.append((PLAYING, table_id, float(now_ms + check_ms)))


class Results:
    def __init__(self, ctx: Context, ledger: Ledger, bots: RatedBots) -> None:
        self.ctx = ctx
        self.ledger = ledger
        self.bots = bots
        self._running: dict[str, asyncio.Task[None]] = {}

    def on_over(self, match_id: str) -> None:
        """The registry saw ``match_id`` end: record it (once at a time here)."""
        if match_id in self._running:
            return
        task = asyncio.get_running_loop().create_task(self._record_now(match_id))
        self._running[match_id] = task
        task.add_done_callback(lambda _: self._running.pop(match_id, None))

    async def close(self) -> None:
        """Stop recording (shutting down): what was not recorded is the
        sweeper's, on whichever replica runs next."""
        for task in list(self._running.values()):
            await tasks.stop(task)

    async def _record_now(self, match_id: str) -> None:
        try:
            await self.record(match_id)
        except (StoreError, ServiceError) as e:  # the sweeper tries again later
            log.warning("a result was not recorded yet", match_id=match_id, error=str(e))
        except Exception:
            log.exception("recording a result failed", match_id=match_id)

    async def record(self, match_id: str) -> bool | None:
        """Record the match's result: True if this call applied it, False if
        it was applied before, None if it is not a lobby match or not over."""
        store = self.ctx.at(match_id)
        (doc,) = await store.get([table_key(match_id)])
        doc = live(doc)
        table = None if doc is None else TableDoc.from_bytes(doc.data)
        if table is None or table.state != STARTED:
            return None
        try:
            loaded = await self.ctx.registry.store.load_match(match_id)
        except MatchNotFound:
            await store.commit(Tx(zrem=[(PLAYING, match_id)]))
            return None
        done = finished(table, loaded, self.bots, self.ctx.now_ms())
        if done is None:
            return None
        try:
            applied = await self.ledger.record(done)
        except RatingError as e:  # nothing to rate by: keep the records
            log.warning("a match could not be rated", match_id=match_id, error=str(e))
            applied = await self.ledger.record(replace(done, pool="", participants=[], fixed={}))
        await store.commit(Tx(zrem=[(PLAYING, match_id)]))
        if applied:
            log.info("result recorded", match_id=match_id, pool=done.pool)
        return applied

    async def fall_due(self, match_id: str) -> None:
        """The sweeper's check: record the match if it is over, else look again later."""
        if await self.record(match_id) is not None:
            return
        store = self.ctx.at(match_id)
        (doc,) = await store.get([table_key(match_id)])
        doc = live(doc)
        now = self.ctx.now_ms()
        if doc is None:  # expired with its match unfinished: nothing will be recorded
            await store.commit(Tx(zrem=[(PLAYING, match_id)]))
            return
        created = TableDoc.from_bytes(doc.data).created_ms
        first = self.ctx.settings.result_check_ms
        wait = min(max(MAX_CHECK_MS, first), max(first, now - created))
        await store.commit(Tx(zadd=[(PLAYING, match_id, float(now + wait))]))


def finished(table: TableDoc, loaded: LoadedMatch, bots: RatedBots, now_ms: int) -> Finished | None:
    """What a lobby match's stored log says of its end; None while not over."""
    controls: list[tuple[int, int, int]] = []
    hands: list[pb.HandScored] = []
    ended: pb.MatchEnded | None = None
    for e in loaded.events:
        if e.audience != "everyone":
            continue
        ev = pb.MatchEvent.FromString(e.payload)
        kind = ev.WhichOneof("kind")
        if kind == "seat_control_changed":
            c = ev.seat_control_changed
            controls.append((e.seq, c.seat, int(c.control)))
        elif kind == "hand_scored":
            hands.append(ev.hand_scored)
        elif kind == "match_ended":
            ended = ev.match_ended
    if ended is None:
        return None
    engine = rules_mod.stored(table.ruleset).engine
    seats = len(table.seats)
    turns = seat_turns(controls, [(a.first_seq, a.seat) for a in loaded.actions], seats)
    best = max(ended.scores)
    winners = [side for side, score in enumerate(ended.scores) if score == best]
    records = seat_records(hands, seats, engine.partnerships, winners)
    participants: list[Participant] = []
    fixed: dict[str, Rating] = {}
    humans = {}
    for seat, s in enumerate(table.seats):
        side = side_of(seat, engine.partnerships)
        score = ended.scores[side] if side < len(ended.scores) else 0
        player = s.player if s.state == PLAYER else f"bot:{seat}"
        if s.state == PLAYER and s.player:
            humans[s.player] = records[seat]
        elif s.state == BOT:
            fixed[player] = bots.ratings.get(s.level, Rating(25.0, 1.0))
        participants.append(Participant(player, side, score, *turns[seat]))
    rated = table.rated and all(s.state != PLAYER or s.player for s in table.seats)
    names = {s.player: s.name for s in table.seats if s.state == PLAYER and s.player}
    return Finished(
        match_id=table.id,
        pool=table.pool if rated else "",
        participants=participants if rated else [],
        records=humans,
        names=names,
        with_bots=any(s.state == BOT for s in table.seats),
        ended_ms=now_ms,
        fixed=fixed if rated else {},
    )
