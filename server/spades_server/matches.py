"""The registry of match sessions in this process: create, find, restore, close.

A match that is over leaves memory ``unload_after_s`` seconds after it ended
(later while a stream is open on it or a call is using it); the registry keeps
its summary for listing and loads it again from the store when it is asked
for; a restarted server does not load finished matches at all. Without that
a long-running server kept every match it ever held
(bench/finished.py: 45.7 KiB per finished match of random bots kept, 4.0 KiB
unloaded).
"""

from __future__ import annotations

import asyncio
import base64
import re
import secrets
import time
from dataclasses import dataclass

import structlog

from spades_engine import Event, Match

from . import auth
from .allowance import SessionLimits
from .errors import denied, exhausted, invalid, not_found, unauthenticated
from .event_log import engine_payloads
from .gen.spades.v1 import spades_pb2 as pb
from .metrics import ACTIVE_MATCHES, LOADED_MATCHES
from .seats import CONTROL_BOT, CONTROL_OPEN, Seat
from .session import Session
from .store import MatchNotFound, Store, StoredEvent

# A page token: "p1." and the count of matches older than the next page's
# first, in urlsafe base64 so that clients treat it as opaque. Decoded strictly:
# ASCII digits without sign, space or leading zero, and it must encode back to
# the very same token, so no spelling but the one issued is accepted.
_TOKEN_PREFIX = "p1."
MAX_PAGE_TOKEN = 64
_TOKEN_BODY = re.compile(r"p1\.[1-9][0-9]{0,18}")


def _page_token(end: int) -> str:
    return base64.urlsafe_b64encode(f"{_TOKEN_PREFIX}{end}".encode()).decode().rstrip("=")


def _page_end(token: str, count: int) -> int:
    bad = invalid("BAD_PAGE_TOKEN", "page_token is not one this server gave", "page_token")
    if len(token) > MAX_PAGE_TOKEN or not token.isascii():
        raise bad
    try:
        body = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        raise bad from None
    if not _TOKEN_BODY.fullmatch(body):
        raise bad
    end = int(body.removeprefix(_TOKEN_PREFIX))
    if _page_token(end) != token or end > count:
        raise bad  # another spelling, or a position this server never reached
    return end


log = structlog.get_logger("spades.matches")


@dataclass(frozen=True, slots=True)
class SeatSpec:
    name: str
    bot: bool
    bot_level: int


class Registry:
    def __init__(
        self,
        store: Store,
        limits: SessionLimits,
        max_matches: int,
        unload_after_s: float = 300.0,
    ) -> None:
        self.store = store
        self.limits = limits
        self.max_matches = max_matches  # loaded matches
        self.unload_after_s = unload_after_s  # negative: never
        self.sessions: dict[str, Session] = {}  # loaded
        self.unloaded: dict[str, bytes] = {}  # over and out of memory: serialized MatchSummary
        self.order: list[str] = []  # creation order of both, for listing
        self._reload_lock = asyncio.Lock()
        self._unloads: dict[str, asyncio.TimerHandle] = {}
        # Counted when scraped: recounting on every change cost O(matches) per
        # CreateMatch (bench/server.py --idle-matches 10000: 166 creations/s
        # with it, 951 without) and missed matches that ended.
        ACTIVE_MATCHES.set_function(self.active)
        LOADED_MATCHES.set_function(lambda: len(self.sessions))

    async def restore_all(self) -> int:
        """Load every stored match that is not over (snapshot plus log tail);
        a finished one stays unloaded, known by the summary its metadata
        keeps. Returns how many matches there are."""
        for match_id, meta in await self.store.match_metas():
            summary = Session.stored_summary(meta) if self.unload_after_s >= 0 else None
            if summary is not None:
                self.order.append(match_id)
                self.unloaded[match_id] = summary
                continue
            loaded = await self.store.load_match(match_id)
            session = Session.restore(loaded, self.store, self.limits)
            self._add(session)
            session.start()
        return len(self.order)

    def _add(self, session: Session) -> None:
        match_id = session.match_id
        if match_id not in self.sessions and self.unloaded.pop(match_id, None) is None:
            self.order.append(match_id)
        self.sessions[match_id] = session
        session.on_over = self._schedule_unload

    def _schedule_unload(self, session: Session, delay: float | None = None) -> None:
        if self.unload_after_s < 0 or session.match_id in self._unloads:
            return
        self._unloads[session.match_id] = asyncio.get_running_loop().call_later(
            self.unload_after_s if delay is None else delay, self._unload, session
        )

    def _unload(self, session: Session) -> None:
        match_id = session.match_id
        del self._unloads[match_id]
        current = self.sessions.get(match_id)
        if current is not session:  # replaced: reloaded after a failed write
            if current is not None and current.match.is_over:
                self._schedule_unload(current)
            return
        if session.closing:
            return  # shutting down
        if session.event_log.streams or session.lock.locked():
            # Someone is watching or changing it (a seat leaving): ask again
            # later, at most once a second.
            self._schedule_unload(session, max(1.0, self.unload_after_s))
            return
        self.unloaded[match_id] = session.summary().SerializeToString()
        del self.sessions[match_id]

    def active(self) -> int:
        """Matches held here that are not over."""
        return sum(1 for s in self.sessions.values() if not s.match.is_over)

    async def create(
        self,
        match: Match,
        seats: list[SeatSpec],
        turn_timer_ms: int,
        history: list[Event] | None = None,
    ) -> tuple[Session, list[tuple[int, str]]]:
        """A new session; its event log starts with ``history`` (an imported match's
        events so far) or else the match's opening deal."""
        if len(self.sessions) >= self.max_matches:
            raise exhausted(
                "TOO_MANY_MATCHES", f"this server holds at most {self.max_matches} matches"
            )
        match_id = secrets.token_hex(8)
        tokens: list[tuple[int, str]] = []
        seat_states: list[Seat] = []
        for i, spec in enumerate(seats):
            if spec.bot:
                seat_states.append(
                    Seat(spec.name, spec.bot_level or pb.BOT_LEVEL_RANDOM, "", CONTROL_BOT)
                )
            else:
                secret = auth.new_secret()
                tokens.append((i, f"{match_id}.{secret}"))
                seat_states.append(Seat(spec.name, 0, auth.hash_secret(secret), CONTROL_OPEN))
        session = Session(
            match_id,
            match,
            seat_states,
            turn_timer_ms,
            self.store,
            self.limits,
            int(time.time() * 1000),
            action_base=len(match.actions),  # an imported match keeps its history
        )
        opening = match.opening_events if history is None else history
        stored: list[StoredEvent] = session.event_log.stage(engine_payloads(opening))
        meta = session.meta(stored[-1].seq if stored else None)
        await self.store.create_match(match_id, meta, match.to_snapshot(), stored)
        session.snapshot_actions = 0  # the stored snapshot: no stored action yet
        session.event_log.publish(stored)
        self._add(session)
        session.start()
        return session, tokens

    async def get(self, match_id: str) -> Session:
        session = self.sessions.get(match_id)
        if session is None and match_id not in self.unloaded:
            raise not_found("match", match_id)
        if session is None or session.broken:
            session = await self._load(match_id)
        return session

    async def _load(self, match_id: str) -> Session:
        """Load a match from the store: one unloaded, or one whose write
        failed (its session no longer knows what the store holds)."""
        async with self._reload_lock:
            current = self.sessions.get(match_id)
            if current is not None:
                if not current.broken:
                    return current  # another call loaded it meanwhile
                current.close()
            try:
                loaded = await self.store.load_match(match_id)
            except MatchNotFound:
                raise not_found("match", match_id) from None
            session = Session.restore(loaded, self.store, self.limits)
            self._add(session)
            session.start()  # one that is over schedules its unloading again
            return session

    async def seat_of(self, token: str | None, match_id: str) -> tuple[Session, int]:
        """The session and seat a seat token acts for."""
        if token is None:
            raise unauthenticated("this call needs a seat token (authorization: Bearer …)")
        token_match, secret = auth.split_seat_token(token)
        if match_id and match_id != token_match:
            raise denied("WRONG_MATCH", "this seat token belongs to another match")
        session = await self.get(token_match)
        digest = auth.hash_secret(secret)
        for seat, s in enumerate(session.seats):
            if s.token_hash and auth.same(s.token_hash, digest):
                return session, seat
        raise unauthenticated("unknown seat token for this match")

    def page(self, size: int, token: str) -> tuple[list[pb.MatchSummary], str]:
        """A page of matches, newest first, and the token of the next one.

        A token names a position in creation order counted from the oldest
        match (``self.order`` only ever grows, and a restarted server rebuilds
        it in the same order), so matches created between two pages neither
        shift nor repeat the pages that follow: they are newer than every page
        after the first.
        """
        end = len(self.order) if not token else _page_end(token, len(self.order))
        size = 50 if size <= 0 else min(size, 500)
        start = max(0, end - size)
        chunk = self.order[start:end]
        chunk.reverse()
        return [self._summary(m) for m in chunk], _page_token(start) if start else ""

    def _summary(self, match_id: str) -> pb.MatchSummary:
        session = self.sessions.get(match_id)
        if session is None:
            return pb.MatchSummary.FromString(self.unloaded[match_id])
        try:
            return session.summary()
        except ValueError:
            # A match stored before imports were range-checked may hold a value
            # the API cannot carry: list it by id rather than fail the page.
            log.exception("match summary failed", match_id=match_id)
            return pb.MatchSummary(match_id=match_id, last_seq=session.last_seq, winner=-1)

    async def close(self) -> None:
        for timer in self._unloads.values():
            timer.cancel()
        self._unloads.clear()
        for s in self.sessions.values():
            s.close()
        # let streams and bot tasks observe the close before the store goes away
        await asyncio.sleep(0)
        await asyncio.gather(*(s.saved() for s in self.sessions.values()))
