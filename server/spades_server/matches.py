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
import contextlib
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc
import structlog

from spades_engine import Event, Match

from . import access, auth, page_tokens, replica, tasks
from .allowance import SessionLimits
from .errors import (
    ServiceError,
    denied,
    exhausted,
    not_found,
    precondition,
    unauthenticated,
)
from .event_log import engine_payloads
from .gen.spades.v1 import spades_pb2 as pb
from .metrics import ACTIVE_MATCHES, LOADED_MATCHES
from .seats import CONTROL_BOT, CONTROL_OPEN, Seat
from .session import Session
from .store import (
    MatchExists,
    MatchNotFound,
    SharedStore,
    Store,
    StoredEvent,
    StoreError,
    as_shared,
)

# A page token: "p1." and the count of matches older than the next page's
# first (page_tokens: opaque, strictly read). ASCII digits without sign,
# space or leading zero, so no spelling but the one issued is accepted.
_TOKEN_BODY = re.compile(r"p1\.([1-9][0-9]{0,18})")


def _page_token(end: int) -> str:
    return page_tokens.encode(f"p1.{end}")


def _page_end(token: str, count: int) -> int:
    end = int(page_tokens.decode(token, _TOKEN_BODY)[1])
    if end > count:
        raise page_tokens.bad_token()  # a position this server never reached
    return end


log = structlog.get_logger("spades.matches")


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class SeatSpec:
    name: str
    bot: bool
    bot_level: int
    # A human seat whose token was made elsewhere (a table's, lobby/seat_keys):
    # the hash of its secret. Empty: the registry makes the token.
    token_hash: str = ""


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
        # One lock per match being loaded: two calls for the same match load
        # it once, calls for different matches load in parallel (a replica
        # taking over a dead one's matches loads many at once).
        self._load_locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}  # with its users
        self._unloads: dict[str, asyncio.TimerHandle] = {}
        # A store other replicas share (Redis): matches are loaded when asked
        # for, followed while held, and taken over when due (``start``).
        self.shared_store = as_shared(store)
        self.shared = self.shared_store is not None
        self.due_poll_s = 0.25
        self._due_task: asyncio.Task[None] | None = None
        self._closed = False
        self._touched: dict[str, float] = {}  # match id -> monotonic time of its last use
        # Counted when scraped: recounting on every change cost O(matches) per
        # CreateMatch (bench/server.py --idle-matches 10000: 166 creations/s
        # with it, 951 without) and missed matches that ended.
        # Whether an id no match has is a table of the lobby that has not
        # started (set by the lobby): its seat token is refused more clearly.
        self.pending_table: Callable[[str], Awaitable[bool]] | None = None
        # Told each time this process sees a match end (set by the lobby, which
        # records the result; it may be told more than once, by every replica).
        self.match_over: Callable[[str], None] | None = None
        ACTIVE_MATCHES.set_function(self.active)
        LOADED_MATCHES.set_function(lambda: len(self.sessions))

    async def restore_all(self) -> int:
        """Load every stored match that is not over (snapshot plus log tail);
        a finished one stays unloaded, known by the summary its metadata
        keeps. Returns how many matches there are. On a shared store nothing
        is loaded: a match is loaded by the replica asked for it (or that
        takes it over, ``start``)."""
        if self.shared:
            try:
                return len(await self._shared.match_ids())
            except StoreError as e:  # serve anyway: calls answer UNAVAILABLE until it is back
                log.warning("the store is unreachable at start", error=str(e))
                return 0
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

    @property
    def _shared(self) -> SharedStore:
        assert self.shared_store is not None, "a shared store's call on a single one"
        return self.shared_store

    def start(self) -> None:
        """On a shared store: follow other replicas' appends to the matches
        held here, and take over the matches that fall due."""
        if not self.shared:
            return
        self._shared.follow(self._on_append, self._on_reset)
        self._due_task = asyncio.get_running_loop().create_task(self._due_loop())

    def _on_append(self, match_id: str, seq: int) -> None:
        session = self.sessions.get(match_id)
        if session is not None and not session.broken:
            session.replica.note(session, seq)

    def _on_reset(self) -> None:
        for session in self.sessions.values():
            session.replica.refresh(session)

    async def _due_loop(self) -> None:
        lease_ms = max(1000, self.limits.takeover_ms)
        sweep_at = time.monotonic()
        while not self._closed:
            await asyncio.sleep(self.due_poll_s)
            try:
                claims = await self._shared.claim_due(_now_ms(), lease_ms)
            except StoreError:
                continue  # Redis is away: try again at the next tick
            for match_id, lease_end in claims:
                await self._take_over(match_id, lease_end)
            await self._reload_broken()
            if time.monotonic() >= sweep_at:
                sweep_at = time.monotonic() + 10.0
                for session in list(self.sessions.values()):
                    await session.refresh_streams()
                await self._drop_idle()

    async def _reload_broken(self) -> None:
        """Reload the matches whose write failed (Redis went away): their
        streams end so that clients resume on the reloaded match, which may
        have no caller here to reload it (a replica that only follows)."""
        for match_id, session in list(self.sessions.items()):
            if session.broken:
                with contextlib.suppress(ServiceError, StoreError):
                    await self._load(match_id)

    async def _take_over(self, match_id: str, lease_end: int) -> None:
        store = self._shared
        try:
            session = await self.get(match_id)
            outcome, due = await replica.take_over(session, _now_ms())
            if outcome == "idle":
                await store.release_due(match_id, lease_end)
            elif outcome == "later":
                await store.set_due(match_id, due)
        except ServiceError as e:
            if e.code is grpc.StatusCode.NOT_FOUND:
                with contextlib.suppress(StoreError):
                    await store.release_due(match_id, lease_end)
            # else: the lease runs out and a replica claims it again
        except StoreError:
            pass
        except Exception:
            log.exception("taking a match over failed", match_id=match_id)

    async def _drop_idle(self) -> None:
        """On a shared store, forget matches nobody here has used for
        ``unload_after_s``: no stream, no call, no bot or timer of ours. The
        store has them; any replica loads them again when asked."""
        if self.unload_after_s < 0:
            return
        cutoff = time.monotonic() - self.unload_after_s
        for match_id, session in list(self.sessions.items()):
            if self._touched.get(match_id, 0.0) > cutoff or not session.idle():
                continue
            del self.sessions[match_id]
            self._touched.pop(match_id, None)
            session.close()
            with contextlib.suppress(StoreError):
                await self._shared.unwatch(match_id)

    def _add(self, session: Session) -> None:
        match_id = session.match_id
        self._touched[match_id] = time.monotonic()
        if match_id not in self.sessions and self.unloaded.pop(match_id, None) is None:
            self.order.append(match_id)
        self.sessions[match_id] = session
        session.on_over = self._over

    def _over(self, session: Session) -> None:
        self._schedule_unload(session)
        if self.match_over is not None:
            self.match_over(session.match_id)

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
        if self.shared:
            asyncio.get_running_loop().create_task(self._unwatch(match_id))

    async def _unwatch(self, match_id: str) -> None:
        with contextlib.suppress(StoreError):
            await self._shared.unwatch(match_id)

    def active(self) -> int:
        """Matches held here that are not over."""
        return sum(1 for s in self.sessions.values() if not s.match.is_over)

    async def create(
        self,
        match: Match,
        seats: list[SeatSpec],
        turn_timer_ms: int,
        history: list[Event] | None = None,
        spectators: int = access.PUBLIC,
        match_id: str = "",
    ) -> tuple[Session, list[tuple[int, str]], str]:
        """A new session, its seat tokens (of the human seats without a
        ``token_hash``) and its spectator token ("" unless ``spectators`` is
        TOKEN); its event log starts with ``history`` (an imported match's
        events so far) or else the match's opening deal. ``match_id``: a
        table's, which becomes this match (MatchExists if it already has)."""
        if len(self.sessions) >= self.max_matches:
            raise exhausted(
                "TOO_MANY_MATCHES", f"this server holds at most {self.max_matches} matches"
            )
        if match_id in self.sessions or match_id in self.unloaded:
            raise MatchExists(match_id)
        match_id = match_id or secrets.token_hex(8)
        tokens: list[tuple[int, str]] = []
        seat_states: list[Seat] = []
        for i, spec in enumerate(seats):
            if spec.bot:
                seat_states.append(
                    Seat(spec.name, spec.bot_level or pb.BOT_LEVEL_RANDOM, "", CONTROL_BOT)
                )
            elif spec.token_hash:
                seat_states.append(Seat(spec.name, 0, spec.token_hash, CONTROL_OPEN))
            else:
                secret = auth.new_secret()
                tokens.append((i, f"{match_id}.{secret}"))
                seat_states.append(Seat(spec.name, 0, auth.hash_secret(secret), CONTROL_OPEN))
        spectator_token, spectating = "", access.Spectating(spectators)
        if spectators == access.TOKEN:
            secret = auth.new_secret()
            spectator_token = f"{match_id}.{secret}"
            spectating.token_hash = auth.hash_secret(secret)
        session = Session(
            match_id,
            match,
            seat_states,
            turn_timer_ms,
            self.store,
            self.limits,
            int(time.time() * 1000),
            action_base=len(match.actions),  # an imported match keeps its history
            spectating=spectating,
        )
        opening = match.opening_events if history is None else history
        stored: list[StoredEvent] = session.event_log.stage(engine_payloads(opening))
        meta = session.meta(stored[-1].seq if stored else None)
        await self.store.create_match(match_id, meta, match.to_snapshot(), stored)
        session.snapshot_actions = 0  # the stored snapshot: no stored action yet
        session.event_log.publish(stored)
        self._add(session)
        if self.shared:
            await self._follow_new(session)
        session.start()
        return session, tokens, spectator_token

    async def _follow_new(self, session: Session) -> None:
        store = self._shared
        try:
            await store.watch(session.match_id)
            due = session.due_ms(session.last_event_ms)
            if due is not None:
                await store.set_due(session.match_id, due)
        except StoreError:
            log.warning("could not follow a new match", match_id=session.match_id)

    async def get(self, match_id: str) -> Session:
        try:
            return await self._get(match_id)
        except ServiceError as e:
            if e.code is grpc.StatusCode.NOT_FOUND and await self._pending_table(match_id):
                raise precondition(
                    "TABLE_NOT_STARTED",
                    f"{match_id} is a table still waiting for players: its seat tokens "
                    "play once it has started (LobbyService.GetTable says when)",
                    table_id=match_id,
                ) from None
            raise

    async def _pending_table(self, match_id: str) -> bool:
        if self.pending_table is None:
            return False
        with contextlib.suppress(StoreError):
            return await self.pending_table(match_id)
        return False

    async def _get(self, match_id: str) -> Session:
        session = self.sessions.get(match_id)
        if session is None and match_id not in self.unloaded and not self.shared:
            raise not_found("match", match_id)
        if session is None or session.broken:
            session = await self._load(match_id)
        if self.shared:
            self._touched[match_id] = time.monotonic()
        return session

    async def _load(self, match_id: str) -> Session:
        """Load a match from the store: one unloaded, or one whose write
        failed (its session no longer knows what the store holds)."""
        entry = self._load_locks.setdefault(match_id, (asyncio.Lock(), [0]))
        lock, users = entry
        users[0] += 1
        try:
            async with lock:
                return await self._load_locked(match_id)
        finally:
            users[0] -= 1
            if not users[0]:
                del self._load_locks[match_id]

    async def _load_locked(self, match_id: str) -> Session:
        current = self.sessions.get(match_id)
        if current is not None:
            if not current.broken:
                return current  # another call loaded it meanwhile
            current.close()
        if self.shared and current is None and len(self.sessions) >= self.max_matches:
            raise exhausted(
                "TOO_MANY_MATCHES", f"this server holds at most {self.max_matches} matches"
            )
        if self.shared:
            # Before reading, so that no append between the read and the
            # subscription goes unseen (the refresh below reads it).
            await self._shared.watch(match_id)
        try:
            loaded = await self.store.load_match(match_id)
        except MatchNotFound:
            if self.shared:
                await self._unwatch(match_id)
            raise not_found("match", match_id) from None
        session = Session.restore(loaded, self.store, self.limits)
        self._add(session)
        if self.shared:
            # Another replica drives it; this one only follows (until it
            # acts on it, or takes it over when it falls due).
            session.replica.refresh(session)
            if session.match.is_over:
                self._schedule_unload(session)
        else:
            session.start()  # one that is over schedules its unloading again
        return session

    async def _token_match(self, token: str, match_id: str) -> tuple[Session, str]:
        """The session a token of the form ``<match_id>.<secret>`` names (it
        must be ``match_id``'s, when that is given), and the secret's hash."""
        token_match, secret = auth.split_seat_token(token)
        if match_id and match_id != token_match:
            raise denied("WRONG_MATCH", "this token belongs to another match")
        return await self.get(token_match), auth.hash_secret(secret)

    @staticmethod
    def _seat_holding(session: Session, digest: str) -> int:
        for seat, s in enumerate(session.seats):
            if s.token_hash and auth.same(s.token_hash, digest):
                return seat
        raise unauthenticated("unknown seat token for this match")

    async def seat_of(self, token: str | None, match_id: str) -> tuple[Session, int, str]:
        """The session and seat a seat token acts for, and the token's hash
        (which ``access.seat_check`` checks again while the call runs)."""
        if token is None:
            raise unauthenticated("this call needs a seat token (authorization: Bearer …)")
        session, digest = await self._token_match(token, match_id)
        return session, self._seat_holding(session, digest), digest

    async def viewer_of(
        self, token: str | None, match_id: str
    ) -> tuple[Session, int | None, access.Check]:
        """Who a credential views a match as: a seat (a seat token), or the
        public (no token: a match anyone may watch; or the spectator token),
        and the check that the credential still holds."""
        if token is None:
            session, digest = await self.get(match_id), None
        else:
            session, digest = await self._token_match(token, match_id)
            spectating = session.spectating
            if spectating.mode != access.TOKEN or not auth.same(spectating.token_hash, digest):
                seat = self._seat_holding(session, digest)
                return session, seat, access.seat_check(lambda: session.seats, seat, digest)
        session.spectating.check(digest)
        return session, None, lambda: session.spectating.check(digest)

    async def page(self, size: int, token: str) -> tuple[list[pb.MatchSummary], str]:
        """A page of matches, newest first, and the token of the next one.

        A token names a position in creation order counted from the oldest
        match (``self.order`` only ever grows, and a restarted server rebuilds
        it in the same order), so matches created between two pages neither
        shift nor repeat the pages that follow: they are newer than every page
        after the first.
        """
        order = await self._shared.match_ids() if self.shared else self.order
        end = len(order) if not token else _page_end(token, len(order))
        size = 50 if size <= 0 else min(size, 500)
        start = max(0, end - size)
        chunk = order[start:end]
        chunk.reverse()
        if self.shared:
            summaries = []
            for m in chunk:  # matches held by other replicas are loaded here
                if m not in self.sessions and m not in self.unloaded:
                    try:
                        await self.get(m)
                    except ServiceError:
                        continue  # in the index, not (yet, or any more) stored
                summaries.append(self._summary(m))
            return summaries, _page_token(start) if start else ""
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
        self._closed = True
        await tasks.stop(self._due_task)
        for timer in self._unloads.values():
            timer.cancel()
        self._unloads.clear()
        for s in self.sessions.values():
            s.close()
        # let streams and bot tasks observe the close before the store goes away
        await asyncio.sleep(0)
        await asyncio.gather(*(s.saved() for s in self.sessions.values()))
