"""One match held by several replicas (a shared store: Redis).

Any replica may append to a match; the store's compare-and-set on the last
sequence number orders them. A replica's session therefore has one more job,
kept here: staying equal to the store.

* **Catching up.** The store tells each replica holding a match of every
  append (``RedisStore.follow``); a session behind it reads the tail (the
  actions and events after its own) and applies it: the actions to its engine
  match, the events to its event log, whose streams send them as if they had
  been made here. The replica that appended drives the match (its bots and
  turn timer); one that catches up with a new action stops driving.
* **Losing a race.** An append refused with ``SeqConflict`` left the engine
  match ahead of the store: the session rebuilds it from the store (snapshot
  plus actions) and raises ``Resynced``, and the caller decides again on the
  new state (a retried action id is then answered with its first result).
* **Taking over.** Every append also records when the match next needs a
  server (``Session.due_ms``: a bot's move, a turn deadline, plus
  ``takeover_ms``). A replica that claims a due match (``Registry``'s due
  loop) catches up and, if the match has not moved since, drives it: the
  replica that should have is gone.

Exactly once does not depend on any of the timing: whichever replicas try, an
action, a bot's move or a timer's stand-in is stored by one append only.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Literal

from spades_engine import Match, parse_action

from .access import Spectating
from .errors import ServiceError, store_message, unavailable
from .gen.spades.v1 import spades_pb2 as pb
from .metrics import REPLICA_EVENTS
from .seats import Seat
from .store import StoredAction, StoredEvent, StoreError

if TYPE_CHECKING:
    from .session import Session


class Resynced(Exception):
    """The store had moved on: the session now holds the store's state, and
    the caller should decide again."""


Outcome = Literal["idle", "later", "driving"]


class ReplicaLink:
    """The catching up of one session (one task at a time)."""

    def __init__(self) -> None:
        self._noted = 0  # the highest sequence number the store announced
        self._task: asyncio.Task[None] | None = None
        self._again = False

    def note(self, session: Session, seq: int) -> None:
        """The store announced an append up to ``seq``."""
        if seq <= session.last_seq and not self._again:
            return  # ours, or already read
        self._noted = max(self._noted, seq)
        self._start(session)

    def refresh(self, session: Session) -> None:
        """Appends may have gone unannounced (the subscription was lost): read once."""
        self._again = True
        self._start(session)

    def _start(self, session: Session) -> None:
        if self._task is None and not session.closing:
            self._task = asyncio.get_running_loop().create_task(self._run(session))

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self, session: Session) -> None:
        pause = 0.25
        try:
            while not session.closing and (self._again or self._noted > session.last_seq):
                self._again = False
                async with session.lock:
                    if session.closing or session.broken:
                        return
                    try:
                        await catch_up_locked(session)
                        pause = 0.25
                        continue
                    except ServiceError:
                        self._again = True  # the store is away: nothing changed here
                await asyncio.sleep(pause)  # try again, less often while it stays away
                pause = min(5.0, pause * 2)
        finally:
            self._task = None


async def catch_up_locked(session: Session) -> None:
    """Read and apply what the store has after this session (the lock held);
    stop driving the match if another replica moved it."""
    moved = await resync(session, rebuild=False)
    if moved:
        session.bots.cancel()
        session.timer.cancel()
    if session.match.is_over and session.on_over is not None:
        session.on_over(session)


async def resync(session: Session, rebuild: bool) -> bool:
    """Make the session equal to the store (the lock held). ``rebuild``: the
    engine match may hold an action the store refused, so build it again from
    the store's snapshot. Returns whether the tail held an action or a change
    of a seat's control (which tells who drives the match now)."""
    store = session.shared_only
    try:
        if rebuild:
            loaded = await store.load_match(session.match_id, after_seq=session.last_seq)
            match = Match.from_snapshot(loaded.snapshot)
            for a in loaded.actions[loaded.snapshot_actions :]:
                match.apply(a.seat, parse_action(a.action))
            session.match = match
            new_actions = loaded.actions[session.stored_actions :]
            meta, events = loaded.meta, loaded.events
            session.snapshot_actions = max(session.snapshot_actions, loaded.snapshot_actions)
        else:
            _, meta, new_actions, events = await store.tail(
                session.match_id, session.last_seq, session.stored_actions
            )
            for a in new_actions:
                session.match.apply(a.seat, parse_action(a.action))
    except StoreError as e:
        if rebuild:  # the engine may hold what the store refused
            session.mark_broken()
        raise unavailable("STORE_FAILED", store_message("the store did not answer", e)) from e
    REPLICA_EVENTS.labels("conflict" if rebuild else "catch_up").inc()
    session.due_written = None  # another replica's appends wrote theirs
    controls = [s.control for s in session.seats]
    adopt(session, meta, new_actions, events)
    return bool(new_actions) or controls != [s.control for s in session.seats]


def adopt(
    session: Session, meta: bytes, actions: list[StoredAction], events: list[StoredEvent]
) -> None:
    """Take the store's seats (their tokens), spectator setting, actions and
    events after the session's own."""
    doc = json.loads(meta)
    session.seats = [Seat(**s) for s in doc["seats"]]
    session.spectating = Spectating.from_doc(doc.get("spectators"))
    for a in actions:
        session.answer(a)
    session.stored_actions += len(actions)
    fresh = [e for e in events if e.seq > session.last_seq]
    if not fresh:
        return
    session.event_log.publish(fresh)
    hand = session.match.hand_number
    for e in fresh:
        ev = pb.MatchEvent.FromString(e.payload)
        # Another replica's chat lines and seat changes count against the
        # same per-hand limits as this one's.
        if ev.HasField("chat_message"):
            session.allowances.note(hand, ev.chat_message.seat, "chat")
        elif ev.HasField("seat_control_changed") and ev.seat_control_changed.reason in (
            "claimed",
            "left",
        ):
            session.allowances.note(hand, ev.seat_control_changed.seat, "control")
    session.last_event_ms = ev.time_ms


async def take_over(session: Session, now_ms: int) -> tuple[Outcome, int]:
    """This replica claimed the match's due time: catch up and, if nobody
    moved the match since it fell due, drive it. Returns what to do with the
    claim: "idle" (nothing is due: drop it), "later" (due then: set it),
    "driving" (the appends that follow set it)."""
    async with session.lock:
        session.check_usable()
        await catch_up_locked(session)
        due = session.due_ms(session.last_event_ms)
        if due is None:
            return "idle", 0
        if due > now_ms:
            return "later", due
        left_ms = session.last_event_ms + session.turn_timer_ms - now_ms
        REPLICA_EVENTS.labels("takeover").inc()
        session.after_change(timer_left_s=max(0.0, left_ms / 1000))
        return "driving", 0
