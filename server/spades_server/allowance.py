"""What each seat of a match may do, and how often: the session's limits.

A seat's actions and seat changes draw on one token bucket; its chat lines are
checked for their text and counted a minute back; its chat lines and seat
changes are also counted per hand. A refusal raises the ``ServiceError`` the
client receives, and changes nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .errors import ServiceError, exhausted, invalid
from .metrics import REJECTIONS


@dataclass(slots=True)
class SessionLimits:
    streams_per_match: int = 64
    actions_per_second: float = 20.0  # per seat token, sustained
    action_burst: int = 40
    chat_per_minute: int = 20
    chat_max_chars: int = 200
    # Per seat and hand, so that a seat that holds up the table cannot grow
    # the log without bound: the hand moves on only by play.
    chat_per_hand: int = 40
    seat_changes_per_hand: int = 16
    snapshot_every: int = 64  # actions between snapshots
    bot_delay_s: float = 0.0
    bot_budget_ms: int = 200
    # On a shared store: how long past a match's due time (a bot's move, a
    # turn deadline) another replica waits before it takes the match over.
    takeover_ms: int = 3000


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float


class Allowances:
    """Each seat's allowances in one match, under ``limits``."""

    def __init__(self, limits: SessionLimits) -> None:
        self.limits = limits
        self._buckets: dict[int, _Bucket] = {}
        self._chat: dict[int, list[float]] = {}
        # Chat lines and seat-control changes each seat made in one hand:
        # (hand number, seat, kind) -> count; cleared when a hand starts.
        self._per_hand: dict[tuple[int, int, str], int] = {}

    def check_rate(self, seat: int) -> None:
        now = time.monotonic()
        lim = self.limits
        b = self._buckets.get(seat)
        if b is None:
            b = self._buckets[seat] = _Bucket(float(lim.action_burst), now)
        b.tokens = min(float(lim.action_burst), b.tokens + (now - b.stamp) * lim.actions_per_second)
        b.stamp = now
        if b.tokens < 1.0:
            raise exhausted(
                "RATE_LIMITED",
                f"more than {lim.actions_per_second:g} actions per second from this seat",
            )
        b.tokens -= 1.0

    def _count_per_hand(
        self, hand: int, seat: int, kind: str, limit: int, refusal: ServiceError
    ) -> None:
        """Count one more ``kind`` of event by ``seat`` in ``hand``, or raise
        ``refusal`` when it has had ``limit``."""
        key = (hand, seat, kind)
        if not any(k[0] == hand for k in self._per_hand):
            self._per_hand.clear()  # a new hand: forget the last one's
        count = self._per_hand.get(key, 0)
        if count >= limit:
            REJECTIONS.labels(refusal.reason).inc()
            raise refusal
        self._per_hand[key] = count + 1

    def note(self, hand: int, seat: int, kind: str) -> None:
        """Count a "chat" line or a "control" change another replica made
        (read from the log), so that the per-hand limits hold across replicas."""
        key = (hand, seat, kind)
        if not any(k[0] == hand for k in self._per_hand):
            self._per_hand.clear()
        self._per_hand[key] = self._per_hand.get(key, 0) + 1

    def seat_change(self, hand: int, seat: int) -> None:
        """Count a change of ``seat``'s control in ``hand``."""
        lim = self.limits.seat_changes_per_hand
        self._count_per_hand(
            hand,
            seat,
            "control",
            lim,
            exhausted(
                "SEAT_CHANGES_EXHAUSTED",
                f"at most {lim} seat changes per seat in a hand; play on",
            ),
        )

    def chat(self, hand: int, seat: int, text: str) -> None:
        """Check and count a chat line ``seat`` sends in ``hand``."""
        lim = self.limits
        problem = (
            "chat text is empty"
            if not text
            else "chat text is blank: it holds only whitespace"
            if not text.strip()
            else f"chat text is {len(text)} characters; at most {lim.chat_max_chars}"
            if len(text) > lim.chat_max_chars
            else None
        )
        if problem is not None:
            raise invalid("CHAT_TEXT_INVALID", problem, "text")
        now = time.monotonic()
        recent = [t for t in self._chat.get(seat, []) if now - t < 60.0]
        if len(recent) >= lim.chat_per_minute:
            raise exhausted("CHAT_RATE_LIMITED", f"at most {lim.chat_per_minute} lines a minute")
        self._count_per_hand(
            hand,
            seat,
            "chat",
            lim.chat_per_hand,
            exhausted("CHAT_QUOTA_EXHAUSTED", f"at most {lim.chat_per_hand} lines a hand"),
        )
        recent.append(now)
        self._chat[seat] = recent
