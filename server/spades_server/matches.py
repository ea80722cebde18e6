"""The registry of match sessions in this process: create, find, restore, close."""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass

from spades_engine import Event, Match

from . import auth
from .errors import denied, exhausted, invalid, not_found, unauthenticated
from .gen.spades.v1 import spades_pb2 as pb
from .metrics import ACTIVE_MATCHES
from .session import CONTROL_BOT, CONTROL_OPEN, Seat, Session, SessionLimits
from .store import MatchNotFound, Store, StoredEvent


@dataclass(frozen=True, slots=True)
class SeatSpec:
    name: str
    bot: bool
    bot_level: int


class Registry:
    def __init__(self, store: Store, limits: SessionLimits, max_matches: int) -> None:
        self.store = store
        self.limits = limits
        self.max_matches = max_matches
        self.sessions: dict[str, Session] = {}
        self.order: list[str] = []  # creation order, for listing
        self._reload_lock = asyncio.Lock()
        # Counted when scraped: recounting on every change cost O(matches) per
        # CreateMatch (bench/server.py --idle-matches 10000: 166 creations/s
        # with it, 951 without) and missed matches that ended.
        ACTIVE_MATCHES.set_function(self.active)

    async def restore_all(self) -> int:
        """Load every stored match (snapshot plus log tail); returns how many."""
        for match_id in await self.store.match_ids():
            loaded = await self.store.load_match(match_id)
            session = Session.restore(loaded, self.store, self.limits)
            self._add(session)
            session.start()
        return len(self.sessions)

    def _add(self, session: Session) -> None:
        if session.match_id not in self.sessions:
            self.order.append(session.match_id)
        self.sessions[session.match_id] = session

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
        payloads = session._engine_payloads(opening)
        stored: list[StoredEvent] = session._stage(payloads)
        await self.store.create_match(match_id, session.meta(), match.to_snapshot(), stored)
        session.snapshot_actions = 0  # the stored snapshot: no stored action yet
        session._publish(stored)
        self._add(session)
        session.start()
        return session, tokens

    async def get(self, match_id: str) -> Session:
        session = self.sessions.get(match_id)
        if session is None:
            raise not_found("match", match_id)
        if session.broken:
            session = await self._reload(match_id)
        return session

    async def _reload(self, match_id: str) -> Session:
        """Replace a session whose write failed by the store's version of it."""
        async with self._reload_lock:
            old = self.sessions[match_id]
            if not old.broken:
                return old
            old.close()
            try:
                loaded = await self.store.load_match(match_id)
            except MatchNotFound:
                raise not_found("match", match_id) from None
            fresh = Session.restore(loaded, self.store, self.limits)
            self.sessions[match_id] = fresh
            fresh.start()
            return fresh

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

    def page(self, size: int, token: str) -> tuple[list[Session], str]:
        newest_first = list(reversed(self.order))
        start = 0
        if token:
            try:
                start = int(token)
            except ValueError:
                raise invalid(
                    "BAD_PAGE_TOKEN", "page_token is not one this server gave", "page_token"
                ) from None
        size = 50 if size <= 0 else min(size, 500)
        chunk = newest_first[start : start + size]
        nxt = str(start + size) if start + size < len(newest_first) else ""
        return [self.sessions[m] for m in chunk], nxt

    async def close(self) -> None:
        for s in self.sessions.values():
            s.close()
        # let streams and bot tasks observe the close before the store goes away
        await asyncio.sleep(0)
        await asyncio.gather(*(s.saved() for s in self.sessions.values()))
