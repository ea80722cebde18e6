"""The turn timer: a bot stands in for a human who takes too long.

Armed after every change that leaves the match waiting for a human (an open
or claimed seat), for the match's ``turn_timer_ms`` (0: never); any change
re-arms or cancels it. When it runs out with no action since, each such seat
the match waits for is handed to a bot standing in (reason ``turn_timer``),
which the human takes back by claiming the seat or acting.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .errors import ServiceError
from .event_log import Payload
from .replica import Resynced
from .seats import CONTROL_STAND_IN, HUMAN_CONTROLS

if TYPE_CHECKING:
    from .session import Session


class TurnTimer:
    """The turn timer of one session.

    It holds no reference to its session: the session is passed in, and only
    an armed timer keeps it, so a session left idle is freed by reference
    counting, not by a later cyclic collection (main.py makes those rare).
    """

    def __init__(self) -> None:
        self._handle: asyncio.TimerHandle | None = None
        self._firing: asyncio.Future[None] | None = None

    @property
    def armed(self) -> bool:
        return self._handle is not None

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def arm(self, session: Session, pending: list[int], left_s: float | None = None) -> None:
        """Start over for the seats ``pending`` (those the match waits for),
        for the whole turn or, when a replica takes the match over, ``left_s``."""
        self.cancel()
        humans = [s for s in pending if session.seats[s].control in HUMAN_CONTROLS]
        if not humans or session.turn_timer_ms <= 0:
            return
        mark = len(session.match.actions)
        self._handle = asyncio.get_running_loop().call_later(
            session.turn_timer_ms / 1000.0 if left_s is None else left_s,
            self._fire,
            session,
            mark,
        )

    def _fire(self, session: Session, mark: int) -> None:
        self._handle = None
        # Held until it ends: the event loop keeps only a weak reference to tasks.
        self._firing = asyncio.ensure_future(self._on_timeout(session, mark))

    @staticmethod
    async def _on_timeout(session: Session, mark: int) -> None:
        """Stand bots in, unless the match moved on since ``mark`` actions."""
        async with session.lock:
            if session.closing or session.broken or len(session.match.actions) != mark:
                return
            payloads: list[Payload] = []
            for s in session.pending_seats():
                if session.seats[s].control in HUMAN_CONTROLS:
                    session.seats[s].control = CONTROL_STAND_IN
                    payloads.append(session.control_payload(s, "turn_timer"))
            if payloads:
                try:
                    await session.append(payloads, meta=True)
                except (ServiceError, Resynced):
                    return  # broken, or another replica moved the match: it drives it
            session.after_change()
