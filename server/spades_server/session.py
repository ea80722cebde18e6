"""A match session: one engine match, its event log, its seats, bots and timer.

One writer at a time (``lock``).  An action is applied to the engine, its
events are appended to the store — durable when ``append`` returns — and only
then published to streams (the ``EventLog``, event_log.py) and acknowledged.
If the store refuses, the session is marked broken and the registry reloads it
from the store, the source of truth, so an unacknowledged action never shows.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
import structlog
from prometheus_client import Counter

from spades_engine import Action, IllegalAction, Match, Phase, parse_action
from spades_engine.record import record_of

from . import auth, convert, tracing
from .access import TOKEN, Check, Spectating
from .allowance import Allowances, SessionLimits
from .errors import ServiceError, exhausted, precondition, store_message, unavailable
from .event_log import EventLog, Payload, engine_payloads
from .gen.spades.v1 import spades_pb2 as pb
from .metrics import ACTIONS, REJECTIONS, STORE_LATENCY
from .replica import ReplicaLink, Resynced, catch_up_locked, resync
from .seat_bots import SeatBots
from .seats import CONTROL_HUMAN, CONTROL_OPEN, CONTROL_STAND_IN, HUMAN_CONTROLS, Seat
from .store import (
    ActionToken,
    LoadedMatch,
    NoActionToken,
    SeqConflict,
    SharedStore,
    Store,
    StoredAction,
    StoreError,
    as_shared,
)
from .stream_slots import StreamSlots
from .turn_timer import TurnTimer

_APPEND_LATENCY = STORE_LATENCY.labels("append")
log = structlog.get_logger("spades.session")


_SEQ_MASK = (1 << 32) - 1


@functools.cache
def _action_counter(kind: str, by: str) -> Counter:
    """``ACTIONS`` for one type of action by one kind of player, looked up once:
    ``labels`` takes a lock and builds a key on every call."""
    return ACTIONS.labels(kind, by)


_T = TypeVar("_T")
# How often a call decides again after losing a race to another replica
# (a shared store) before it gives up with UNAVAILABLE.
MAX_RESYNCS = 5


def _now_ms() -> int:
    return int(time.time() * 1000)


class Session:
    """One match on this server, and the coordinator of its jobs: the event log
    and its streams, the seats' allowances, the bots and the turn timer."""

    def __init__(
        self,
        match_id: str,
        match: Match,
        seats: list[Seat],
        turn_timer_ms: int,
        store: Store,
        limits: SessionLimits,
        created_ms: int,
        action_base: int = 0,
        spectating: Spectating | None = None,
    ) -> None:
        self.match_id = match_id
        self.match = match
        self.seats = seats
        self.turn_timer_ms = turn_timer_ms
        self.store = store
        self.limits = limits
        self.created_ms = created_ms
        self.spectating = spectating or Spectating()
        # Engine actions the match already had when it came to this server (an
        # imported snapshot's history). The store numbers actions from 0, so the
        # store index of an engine action is its position minus this base.
        self.action_base = action_base
        self.lock = asyncio.Lock()
        # Each seat's answered action ids: action_id -> first_seq << 32 | last_seq
        # (a match's sequence numbers stay far below 2**32). A str -> int dict
        # is never tracked by the cyclic garbage collector; tuples were two
        # more objects per action for every collection to visit.
        self._answered: list[dict[str, int]] = [{} for _ in seats]
        self.snapshot_actions = 0
        self.stored_actions = 0  # actions in the store (engine actions past action_base)
        self.last_event_ms = created_ms  # the time of the latest event
        # The due time this replica's appends last wrote (shared stores), until
        # another replica's appends are caught up with: see ``_due_to_write``.
        self.due_written: int | None = None
        # A store that other replicas append to too (Redis): appends may lose
        # a race, and other replicas' appends arrive through ``replica``.
        self.shared_store = as_shared(store)
        self.shared = self.shared_store is not None
        # This replica's streams of the match, counted in the store (shared).
        self.slots = (
            None
            if self.shared_store is None
            else StreamSlots(self.shared_store, match_id, limits.streams_per_match)
        )
        self.closing = False
        self.broken = False
        self._snapshots: set[asyncio.Task[None]] = set()  # being saved (a strong reference)
        # The session's jobs, one module each; the session calls on them.
        self.event_log = EventLog(match.rules, len(seats), limits.streams_per_match)
        self.allowances = Allowances(limits)
        self.bots = SeatBots()
        self.timer = TurnTimer()
        self.replica = ReplicaLink()
        # Called after a change that leaves the match over (set by the registry).
        self.on_over: Callable[[Session], None] | None = None

    # -- identity and visibility ------------------------------------------------
    @property
    def last_seq(self) -> int:
        return len(self.event_log.framed)  # not EventLog.last_seq: one call fewer per action

    def meta(self, last_seq: int | None = None) -> bytes:
        """The match's stored metadata; ``last_seq`` when the log is about to
        end later than it does now (events staged, not yet published)."""
        doc: dict[str, Any] = {
            # Field by field: dataclasses.asdict deep-copies every value, and
            # this runs on each ClaimSeat and each change of a seat's control.
            "seats": [
                {
                    "name": s.name,
                    "bot_level": s.bot_level,
                    "token_hash": s.token_hash,
                    "control": s.control,
                }
                for s in self.seats
            ],
            "turn_timer_ms": self.turn_timer_ms,
            "created_ms": self.created_ms,
            "action_base": self.action_base,
            "spectators": self.spectating.to_doc(),
        }
        if self.match.is_over:
            # Lets a restarted server list a finished match without loading it.
            summary = self.summary()
            summary.last_seq = self.last_seq if last_seq is None else last_seq
            doc["summary"] = base64.b64encode(summary.SerializeToString()).decode()
        return json.dumps(doc, separators=(",", ":")).encode()

    @staticmethod
    def stored_summary(meta: bytes) -> bytes | None:
        """The serialized MatchSummary the metadata of a finished match holds."""
        summary = json.loads(meta).get("summary")
        return None if summary is None else base64.b64decode(summary)

    # -- building the log ---------------------------------------------------------
    async def append(
        self,
        payloads: list[Payload],
        action: StoredAction | None = None,
        meta: bool = False,
        token: ActionToken | None = None,
    ) -> None:
        """Number ``payloads``, store them (with ``action``, and the metadata
        when ``meta``, taking ``token``) and publish them once stored; the
        lock held."""
        stored = self.event_log.stage(payloads)
        now = _now_ms()
        due = self._due_to_write(self.due_ms(now), now) if self.shared else None
        t0 = time.perf_counter()
        try:
            pending = self.store.append(
                self.match_id,
                self.last_seq,
                stored,
                action,
                self.meta(stored[-1].seq if stored else None) if meta else None,
                due_ms=due,
                token=token,
            )
            if tracing.ON:
                pending = tracing.store_append(pending, self.match_id, self.store, len(stored))
            await pending
        except SeqConflict as e:
            if not self.shared:  # this process is the only writer: a conflict is a bug
                self.mark_broken()
                raise unavailable(
                    "STORE_FAILED", store_message("the store refused the write", e)
                ) from e
            # Another replica appended first: become what the store holds and
            # let the caller decide again (replica.py).
            await resync(self, rebuild=True)
            raise Resynced from e
        except NoActionToken as e:
            # Nothing stored: undo what was applied here (rare: the replica's
            # own allowance refuses first unless the seat acts on several).
            await resync(self, rebuild=True)
            raise self._rate_limited() from e
        except StoreError as e:
            self.mark_broken()
            raise unavailable(
                "STORE_FAILED", store_message("the store refused the write", e)
            ) from e
        finally:
            _APPEND_LATENCY.observe(time.perf_counter() - t0)
        if tracing.ON:
            tracing.fan_out(self.event_log, stored, self.match_id)
        else:
            self.event_log.publish(stored)
        if stored:
            self.last_event_ms = now
        if due is not None:
            self.due_written = due
        if action is not None:
            self.stored_actions += 1

    def _due_to_write(self, due: int | None, now: int) -> int | None:
        """The due time an append writes, or None to leave the due set as it
        is. The set's entry may be earlier than the match's due time, never
        later: a replica that claims it early catches up, finds it not due
        and sets it right (``replica.take_over``: "later"). So an append
        that moves the due time later need not write it while the entry
        this replica wrote is at least half the way from now to the new due
        time: a match that keeps acting writes its due time about once per
        half a turn timer, not once per action (each write is a command on
        another slot of a cluster), and one that stops is looked at early
        at most once."""
        last = self.due_written
        if due is None or last is None or due < last:
            return due
        return None if due - last <= (due - now) // 2 else due

    def due_ms(self, at_ms: int) -> int | None:
        """When, after a change at ``at_ms``, another replica should take the
        match over if nothing happened: a bot's move or a turn deadline, plus
        ``takeover_ms``; None if the match waits only for people (or is over)."""
        pending = self.pending_seats()
        if not pending:
            return None
        if any(self.seats[s].control not in HUMAN_CONTROLS for s in pending):
            return at_ms + int(self.limits.bot_delay_s * 1000) + self.limits.takeover_ms
        if self.turn_timer_ms > 0:
            return at_ms + self.turn_timer_ms + self.limits.takeover_ms
        return None

    def answer(self, action: StoredAction) -> None:
        """Remember a stored action's result for retries of its action id."""
        self._answered[action.seat][action.action_id] = action.first_seq << 32 | action.last_seq

    @property
    def shared_only(self) -> SharedStore:
        assert self.shared_store is not None, "a shared store's call on a single one"
        return self.shared_store

    def check_action_rate(self, seat: int) -> None:
        """Take one of the seat's action allowance before an action: here; on
        a shared store the append also takes one from the bucket every
        replica shares (``ActionToken``), in the same round trip."""
        self.allowances.check_rate(seat)

    def action_token(self, seat: int, by: str) -> ActionToken | None:
        if not self.shared or by != "human":
            return None
        return ActionToken(seat, self.limits.actions_per_second, self.limits.action_burst)

    def _rate_limited(self) -> ServiceError:
        REJECTIONS.labels("RATE_LIMITED").inc()
        return exhausted(
            "RATE_LIMITED",
            f"more than {self.limits.actions_per_second:g} actions per second from this seat",
        )

    async def check_rate(self, seat: int) -> None:
        """Take one of the seat's action allowance for a seat change: on a
        shared store from the bucket every replica shares, else here."""
        if not self.shared:
            self.allowances.check_rate(seat)
            return
        lim = self.limits
        try:
            granted = await self.shared_only.take_action_token(
                self.match_id, seat, lim.actions_per_second, lim.action_burst
            )
        except StoreError as e:
            raise unavailable(
                "STORE_UNAVAILABLE", store_message("the store did not answer", e)
            ) from e
        if not granted:
            raise self._rate_limited()

    @contextlib.asynccontextmanager
    async def stream_slot(self) -> AsyncIterator[None]:
        """Hold one of the match's stream slots while a stream (or a poll) runs:
        on a shared store counted over every replica (``streams_per_match``);
        here the event log counts its own."""
        if self.slots is None:
            yield
            return
        await self.slots.take()
        try:
            yield
        finally:
            self.slots.release()

    async def refresh_streams(self) -> None:
        """Renew this replica's stream count before it expires (shared store)."""
        if self.slots is not None:
            await self.slots.refresh()

    async def ensure_seq(self, seq: int, field: str = "after_seq") -> None:
        """Refuse to resume after a sequence number the match has not reached
        (FUTURE_SEQUENCE): events "after" it would be ones the client claims
        to have. On a shared store, first read what the store has: the client
        may have seen it through another replica."""
        if seq <= self.last_seq:
            return
        if self.shared:
            async with self.lock:
                self.check_usable()
                if seq > self.last_seq:
                    await catch_up_locked(self)
        if seq > self.last_seq:
            REJECTIONS.labels("FUTURE_SEQUENCE").inc()
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "FUTURE_SEQUENCE",
                f"{field} {seq} is after the match's last event, {self.last_seq}",
                fields=(field,),
                metadata={"current_seq": str(self.last_seq)},
            )

    def mark_broken(self) -> None:
        """The engine may be ahead of the store: refuse every call until the
        registry reloads the match from the store (closing this session)."""
        self.broken = True
        self.event_log.interrupted = True  # not woken: the reload's close wakes them

    # -- acting ---------------------------------------------------------------------
    async def submit(
        self,
        seat: int,
        action_id: str,
        action: Action,
        expected_seq: int | None,
        check: Check | None = None,
    ) -> tuple[int, int]:
        """Apply a human's action; returns the sequence numbers of the first and
        last events it caused (those of the first time, for a retry). ``check``
        refuses it if the caller's token was reissued meanwhile."""
        async with self.lock:
            if self.shared and expected_seq is not None and expected_seq > self.last_seq:
                await catch_up_locked(self)  # the client saw it on another replica
            return await self._deciding(
                lambda: self._submit_locked(seat, action_id, action, expected_seq, check)
            )

    async def _deciding(self, decide: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``decide`` (the lock held), again each time it lost a race to
        another replica and the session was rebuilt (``Resynced``)."""
        for _ in range(MAX_RESYNCS):
            try:
                return await decide()
            except Resynced:
                continue
        raise unavailable("CONTENDED", "other replicas kept changing the match; retry")

    async def _submit_locked(
        self,
        seat: int,
        action_id: str,
        action: Action,
        expected_seq: int | None,
        check: Check | None,
    ) -> tuple[int, int]:
        self.check_usable()
        if check is not None:
            check()
        done = self._answered[seat].get(action_id)
        if done is not None:
            return done >> 32, done & _SEQ_MASK
        last_visible = self.event_log.last_visible
        if expected_seq is not None and expected_seq > self.last_seq:
            REJECTIONS.labels("FUTURE_SEQUENCE").inc()
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "FUTURE_SEQUENCE",
                f"expected_seq {expected_seq} is after the match's last event; "
                f"seat {seat}'s latest is {last_visible[seat]}",
                fields=("expected_seq",),
                metadata={"current_seq": str(last_visible[seat])},
            )
        if expected_seq is not None and last_visible[seat] > expected_seq:
            REJECTIONS.labels("STALE_SEQUENCE").inc()
            raise precondition(
                "STALE_SEQUENCE",
                f"seat {seat} has events after sequence {expected_seq}; "
                f"its latest is {last_visible[seat]}",
                current_seq=str(last_visible[seat]),
            )
        return await self.apply_locked(seat, action, action_id, by="human")

    def check_usable(self) -> None:
        if self.closing:
            raise unavailable("SHUTTING_DOWN", "the server is shutting down; retry on another")
        if self.broken:
            raise unavailable("MATCH_RELOADING", "the match is being reloaded; retry")

    async def apply_locked(
        self, seat: int, action: Action, action_id: str, by: str
    ) -> tuple[int, int]:
        """Apply, store and publish ``seat``'s action, the lock held; ``by`` is
        "human" (``submit``) or "bot" (``SeatBots``)."""
        try:
            if tracing.ON:
                engine_events = tracing.apply(self.match, seat, action, self.match_id, by)
            else:
                engine_events = self.match.apply(seat, action)
        except IllegalAction as e:
            REJECTIONS.labels(e.reason.value).inc()
            raise
        payloads: list[Payload] = []
        took_back = by == "human" and self.seats[seat].control == CONTROL_STAND_IN
        if took_back:
            self.seats[seat].control = CONTROL_HUMAN
            payloads.append(self.control_payload(seat, "acted"))
        payloads += engine_payloads(engine_events)
        first = self.last_seq + 1
        last = self.last_seq + len(payloads)
        index = len(self.match.actions) - 1 - self.action_base
        stored = StoredAction(index, seat, str(action), action_id, first, last)
        # The action that ends the match stores its summary (see meta).
        await self.append(
            payloads, stored, took_back or self.match.is_over, self.action_token(seat, by)
        )
        self.answer(stored)
        _action_counter(type(action).__name__, by).inc()
        self._maybe_snapshot()
        self.after_change()
        return first, last

    def _maybe_snapshot(self) -> None:
        """Save a snapshot every ``snapshot_every`` actions and at the end.

        The action that triggers it does not wait for it: its events are
        already durable, and a snapshot only shortens recovery. Awaiting it
        gave every 64th action a second store round trip, and those actions
        made the p99 of an action at 930 actions/s (bench/server.py
        --think-ms 100). The store runs requests in the order they come, so the
        snapshot is committed no later than this match's next append.
        """
        if not self.store.durable:  # nothing to recover from: the work would serve nothing
            return
        count = len(self.match.actions) - self.action_base  # actions in the store
        if count - self.snapshot_actions < self.limits.snapshot_every and not self.match.is_over:
            return
        previous, self.snapshot_actions = self.snapshot_actions, count
        task = asyncio.get_running_loop().create_task(
            self._save_snapshot(self.match.to_snapshot(), count, previous)
        )
        self._snapshots.add(task)
        task.add_done_callback(self._snapshots.discard)

    async def _save_snapshot(self, data: bytes, count: int, previous: int) -> None:
        t0 = time.perf_counter()
        try:
            await self.store.save_snapshot(self.match_id, data, count)
        except StoreError:
            # A missed snapshot only lengthens recovery (the log is intact);
            # the next action tries again unless a newer one is on its way.
            if self.snapshot_actions == count:
                self.snapshot_actions = previous
        STORE_LATENCY.labels("snapshot").observe(time.perf_counter() - t0)

    async def saved(self) -> None:
        """Wait until the snapshots started so far are stored (or failed)."""
        await asyncio.gather(*self._snapshots, return_exceptions=True)

    # -- seats ------------------------------------------------------------------------
    def control_payload(self, seat: int, reason: str) -> Payload:
        ev = pb.MatchEvent()
        ev.seat_control_changed.CopyFrom(
            pb.SeatControlChanged(seat=seat, control=self.seats[seat].control, reason=reason)  # type: ignore[arg-type]
        )
        return "everyone", ev

    async def set_control(
        self, seat: int, control: int, reason: str, check: Check | None = None
    ) -> None:
        async with self.lock:
            await self._deciding(lambda: self._set_control_locked(seat, control, reason, check))

    async def _set_control_locked(
        self, seat: int, control: int, reason: str, check: Check | None
    ) -> None:
        self.check_usable()
        if check is not None:
            check()
        self._check_not_over()
        if self.seats[seat].control == control:
            return
        self.allowances.seat_change(self.match.hand_number, seat)
        self.seats[seat].control = control
        await self.append([self.control_payload(seat, reason)], meta=True)
        self.after_change()

    def _check_not_over(self) -> None:
        if self.match.is_over:
            REJECTIONS.labels("MATCH_OVER").inc()
            raise precondition("MATCH_OVER", "the match is over")

    async def reissue(self, seat: int) -> str:
        """Replace a human seat's token (the operator's call); returns the new
        token. Its old holder is out: the seat is OPEN again if they held it."""
        async with self.lock:
            return await self._deciding(lambda: self._reissue_locked(seat))

    async def _reissue_locked(self, seat: int) -> str:
        self.check_usable()
        self._check_not_over()
        state = self.seats[seat]
        if state.is_bot_seat:
            raise precondition("BOT_SEAT", f"seat {seat} is a bot's: it has no token")
        secret = auth.new_secret()
        state.token_hash = auth.hash_secret(secret)
        if state.control == CONTROL_HUMAN:
            state.control = CONTROL_OPEN
        await self.append([self.control_payload(seat, "token_reissued")], meta=True)
        self.after_change()
        return f"{self.match_id}.{secret}"

    async def set_spectators(self, mode: int) -> str:
        """Change who may watch (the operator's call); returns the new
        spectator token with TOKEN, else ""."""
        async with self.lock:
            return await self._deciding(lambda: self._set_spectators_locked(mode))

    async def _set_spectators_locked(self, mode: int) -> str:
        self.check_usable()
        self._check_not_over()
        token, digest = "", ""
        if mode == TOKEN:
            secret = auth.new_secret()
            token, digest = f"{self.match_id}.{secret}", auth.hash_secret(secret)
        self.spectating = Spectating(mode, digest)
        ev = pb.MatchEvent()
        ev.spectators_changed.spectators = mode  # type: ignore[assignment]
        await self.append([("everyone", ev)], meta=True)
        return token

    async def chat(self, seat: int, text: str, check: Check | None = None) -> int:
        async with self.lock:
            return await self._deciding(lambda: self._chat_locked(seat, text, check))

    async def _chat_locked(self, seat: int, text: str, check: Check | None) -> int:
        self.check_usable()
        if check is not None:
            check()
        self._check_chat(seat, text)
        ev = pb.MatchEvent()
        ev.chat_message.CopyFrom(pb.ChatMessage(seat=seat, text=text))
        await self.append([(f"team:{seat & 1}", ev)])
        return self.last_seq

    def _check_chat(self, seat: int, text: str) -> None:
        if not self.match.rules.partnerships:
            raise precondition("NO_PARTNER", "chat is between partners; this table is cutthroat")
        if self.match.phase is not Phase.BIDDING:
            raise precondition("CHAT_CLOSED", "partners may talk only during bidding")
        self.allowances.chat(self.match.hand_number, seat, text)

    # -- bots and the turn timer ------------------------------------------------------
    def pending_seats(self) -> list[int]:
        """The seats the match waits for."""
        st = self.match.state
        if self.match.phase is Phase.EXCHANGE:
            h = st.hand
            if len(h.exchange_decisions) < len(h.exchange_deciders):  # the optional form
                return [s for s in h.exchange_deciders if s not in h.exchange_decisions]
            return [s for s in h.exchange_seats if s not in h.exchange_chosen]
        if self.match.is_over:
            return []
        return [self.match.to_act]

    def after_change(self, timer_left_s: float | None = None) -> None:
        """Set the bots and the turn timer going for the seats the match now
        waits for (the timer for ``timer_left_s`` when a replica takes the
        match over, else the whole turn), or tell the registry the match is over."""
        if self.closing or self.match.is_over:
            self.timer.cancel()
            if self.match.is_over and self.on_over is not None:
                self.on_over(self)
            return
        pending = self.pending_seats()
        self.bots.wake(self, pending)
        self.timer.arm(self, pending, timer_left_s)

    # -- reading -------------------------------------------------------------------
    def seat_infos(self) -> list[pb.SeatInfo]:
        return [
            pb.SeatInfo(seat=i, name=s.name, control=s.control, bot_level=s.bot_level)  # type: ignore[arg-type]
            for i, s in enumerate(self.seats)
        ]

    def view(self, seat: int | None) -> pb.SeatView:
        return convert.view_to_pb(
            self.match.view(seat), as_of_seq=self.last_seq, seats=self.seat_infos()
        )

    def summary(self) -> pb.MatchSummary:
        m = self.match
        return pb.MatchSummary(
            match_id=self.match_id,
            ruleset=convert.resolved_ruleset_pb(m.rules),
            seats=self.seat_infos(),
            phase=convert.phase_to_pb(m.phase),
            hand_number=m.hand_number,
            scores=list(m.scores),
            last_seq=self.last_seq,
            winner=-1 if m.winner is None else m.winner,
            turn_timer_ms=self.turn_timer_ms,
            spectators=self.spectating.mode,  # type: ignore[arg-type]
        )

    def idle(self) -> bool:
        """Nothing here uses the session: no stream or poll, no call holding
        it, no bot or timer of this replica's."""
        return (
            not self.event_log.streams
            and not (self.slots is not None and self.slots.count)
            and not self.lock.locked()
            and not self.bots.running
            and not self.timer.armed
        )

    def record_json(self) -> str:
        return json.dumps(record_of(self.match))

    def close(self) -> None:
        """Stop bots and the timer and wake every stream so it ends."""
        self.closing = True
        self.timer.cancel()
        self.bots.cancel()
        self.replica.cancel()
        self.event_log.interrupt()

    # -- restoring -------------------------------------------------------------------
    @classmethod
    def restore(cls, loaded: LoadedMatch, store: Store, limits: SessionLimits) -> Session:
        meta = json.loads(loaded.meta)
        match = Match.from_snapshot(loaded.snapshot)
        for a in loaded.actions[loaded.snapshot_actions :]:
            match.apply(a.seat, parse_action(a.action))
        seats = [Seat(**s) for s in meta["seats"]]
        s = cls(
            loaded.match_id,
            match,
            seats,
            meta["turn_timer_ms"],
            store,
            limits,
            meta["created_ms"],
            meta.get("action_base", 0),
            Spectating.from_doc(meta.get("spectators")),
        )
        s.snapshot_actions = loaded.snapshot_actions
        s.stored_actions = len(loaded.actions)
        s.event_log.publish(loaded.events)
        if loaded.events:
            s.last_event_ms = pb.MatchEvent.FromString(loaded.events[-1].payload).time_ms
        for a in loaded.actions:
            s.answer(a)
        return s

    def start(self) -> None:
        """Resume bots and timers (after creation or restore)."""
        self.after_change()
