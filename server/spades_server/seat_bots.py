"""The bots of a match: they play its bot seats and the seats they stand in for.

One task per session plays every bot seat the match waits for, one action at
a time under the session's lock, through the same path as a human's action
(``Session.apply_locked``). A match never waits on a bot: one that fails
(raises, or answers an action the rules refuse) is logged and counted, and a
legal action drawn from the match's seed is played for it instead.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import TYPE_CHECKING

import structlog

from spades_engine import Action, IllegalAction, Match
from spades_engine.bots import BOTS

from . import tracing
from .errors import ServiceError
from .gen.spades.v1 import spades_pb2 as pb
from .metrics import BOT_FAILURES, BOT_THINK
from .replica import Resynced
from .seats import HUMAN_CONTROLS

if TYPE_CHECKING:
    from .session import Session

_SEARCH_BOTS = frozenset({"expert"})
_BOT_NAMES: dict[int, str] = {
    v: pb.BotLevel.Name(v).removeprefix("BOT_LEVEL_").lower()
    for v in pb.BotLevel.values()
    if v != pb.BOT_LEVEL_UNSPECIFIED
}

log = structlog.get_logger("spades.session")  # the session's log: its bots are part of it


class SeatBots:
    """The bot task of one session.

    It holds no reference to its session: the session is passed in, and only
    the running task keeps it, so a session left idle is freed by reference
    counting, not by a later cyclic collection (main.py makes those rare).
    """

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    def wake(self, session: Session, pending: list[int]) -> None:
        """Start playing if a seat in ``pending`` (those the match waits for)
        is a bot's and the bots are not playing already."""
        seats = session.seats
        bots_to_act = any(seats[s].control not in HUMAN_CONTROLS for s in pending)
        if bots_to_act and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(session))

    @property
    def running(self) -> bool:
        return self._task is not None

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    @staticmethod
    def _seat(session: Session) -> int | None:
        for s in session.pending_seats():
            if session.seats[s].control not in HUMAN_CONTROLS:
                return s
        return None

    async def _run(self, session: Session) -> None:
        """Play every bot seat the match waits for."""
        try:
            while True:
                await asyncio.sleep(session.limits.bot_delay_s)
                async with session.lock:
                    seat = None if session.closing or session.broken else self._seat(session)
                    if seat is None:
                        return
                    if tracing.ON:
                        with tracing.bot_turn(session.match_id, seat):
                            acted = await self._turn(session, seat)
                    else:
                        acted = await self._turn(session, seat)
                    if not acted:
                        return
        except Exception:
            # Not a bot's failure (those are handled in _turn): a bug here,
            # perhaps with the engine ahead of the store. Logged, and the
            # session is reloaded from the store by the next call to it.
            log.exception("bot loop failed", match_id=session.match_id)
            session.mark_broken()
        finally:
            self._task = None

    async def _turn(self, session: Session, seat: int) -> bool:
        """One action for the bot seat ``seat`` (the lock held); False when the
        session can take no more (its store write failed)."""
        match = session.match
        level = session.seats[seat].bot_level or pb.BOT_LEVEL_RANDOM
        action_id = f"bot:{len(match.actions)}"
        try:
            action = await self._decide(session, seat, level)
        except Exception:
            log.exception("bot failed", match_id=session.match_id, seat=seat, bot_level=level)
            action = fallback_action(match, seat, level)
        try:
            await session.apply_locked(seat, action, action_id, by="bot")
            return True
        except ServiceError:
            return False  # the store refused: the session is broken and reloads
        except Resynced:
            return True  # another replica moved first: look at the match again
        except IllegalAction as e:
            log.warning(
                "bot action refused",
                match_id=session.match_id,
                seat=seat,
                bot_level=level,
                action=str(action),
                reason=e.reason.value,
            )
        fallback = fallback_action(match, seat, level)
        try:
            await session.apply_locked(seat, fallback, action_id, by="bot")
        except ServiceError:
            return False
        except Resynced:
            pass
        return True

    @staticmethod
    async def _decide(session: Session, seat: int, level: int) -> Action:
        """The action the bot of ``level`` chooses for ``seat``."""
        match = session.match
        name = _BOT_NAMES.get(level)
        if name is None:
            # A level this server does not know (stored by another version, or
            # written by hand): counted as a failure, played by the random bot.
            log.warning("unknown bot level", match_id=session.match_id, seat=seat, bot_level=level)
            BOT_FAILURES.labels(str(level)).inc()
            name = "random"
        bot = BOTS.get(name, BOTS["random"])
        seed = (match.seed * 1_000_003 + len(match.actions)) & ((1 << 63) - 1)
        view = match.view(seat)
        budget_ms = session.limits.bot_budget_ms
        t0 = time.perf_counter()
        if name in _SEARCH_BOTS:
            # A search spends its whole budget: think on a worker thread so the
            # event loop keeps serving every other match meanwhile.
            action = await asyncio.to_thread(bot, view, seed, budget_ms)
        else:
            action = bot(view, seed, budget_ms)
        BOT_THINK.labels(name).observe(time.perf_counter() - t0)
        return action


def fallback_action(match: Match, seat: int, level: int) -> Action:
    """A legal action for a bot that failed, drawn from the match's seed;
    counted as a failure of its level."""
    BOT_FAILURES.labels(str(level)).inc()
    legal = match.legal_actions(seat)
    rng = random.Random(match.seed * 1_000_033 + len(match.actions))
    return rng.choice(legal)
