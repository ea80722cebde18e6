"""Rollouts: playing a sampled deal to the end with a fast heuristic policy.

A Monte-Carlo bot plays each candidate card on many sampled deals and finishes
the hand with a *default policy*; the better that policy plays, the better the
average says which card is best.  Uniformly random play (``kernel.playout_random``)
is the cheapest, but it throws away aces, overtakes its partner and never
protects a nil, so its averages hardly tell a good card from a bad one.

This policy plays like a plain club player who can see the sampled deal (every
seat plays it, the viewer's own future cards included).  Each seat has a mode
for the current trick, from the bids and the tricks taken so far:

* ``TAKE`` — some side is still short of its contract (its own: make it;
  another: set it): lead a winner (the top card left of a suit) if it holds
  one, else a low card; when following, win with the cheapest card nobody
  after it can beat, leave a trick its partner is already sure to win, and
  otherwise play low.
* ``AVOID`` — its own nil is alive, or every contract is made (bags): play the
  highest card that does not win, lead low.
* ``COVER`` — its partner's nil is alive: overtake the partner, play high in
  front of it.
* ``SET`` — an opponent's nil is alive: never overtake the nil bidder's card,
  play low in front of it, lead low.

It reads only the position (:class:`~spades_engine.kernel.SimState`) and works on
the hand masks directly, a few microseconds a card.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from ..kernel import SimState
from ..ruleset import Ruleset
from .cardsets import beaters

Rnd = Callable[[], float]

# Final: compiled by mypyc, a Final constant is a static value, not a look-up
# in the module's dict at every use.
TAKE: Final = 0
AVOID: Final = 1
COVER: Final = 2
SET: Final = 3

_SUIT: Final = (0xFFFF, 0xFFFF << 16, 0xFFFF << 32, 0xFFFF << 48)
_SPADE: Final = 0xFFFF << 48
_NON_SPADES: Final = (1 << 48) - 1


class Table:
    """What the policy needs to know about the table: bids, partners, sides.

    ``bids`` are by seat, ``None`` for a bid not yet made (the seat then plays
    to take tricks, as it would when bidding).
    """

    __slots__ = ("bids", "contract", "n", "partner", "side_of", "sides")

    def __init__(self, rules: Ruleset, bids: Sequence[int | None]) -> None:
        n = rules.players
        self.n = n
        self.partner = tuple(_or_none(rules.partner_of(s)) for s in range(n))
        self.bids = tuple(-1 if b is None else b for b in bids)
        self.sides = tuple(rules.seats_of(side) for side in range(rules.sides))
        self.side_of = tuple(rules.side_of(s) for s in range(n))
        self.contract = tuple(
            -1 if any(self.bids[s] < 0 for s in seats) else sum(self.bids[s] for s in seats)
            for seats in self.sides
        )

    def modes(self, tricks_won: Sequence[int]) -> tuple[list[int], list[int]]:
        """Each seat's mode for the next trick, and its target seat (the nil
        bidder it covers or sets; -1 for none)."""
        n, bids, side_of = self.n, self.bids, self.side_of
        live = [bids[s] == 0 and tricks_won[s] == 0 for s in range(n)]
        # Is some side still short of its contract (unknown: assume so)?
        any_short = False
        contract = self.contract
        for side, seats in enumerate(self.sides):
            c = contract[side]
            if c < 0:
                any_short = True
                break
            taken = 0
            for s in seats:
                taken += tricks_won[s]
            if taken < c:
                any_short = True
                break
        modes = [TAKE] * n
        target = [-1] * n
        for s in range(n):
            p = self.partner[s]
            if live[s]:
                modes[s] = AVOID
            elif p >= 0 and live[p]:
                modes[s] = COVER
                target[s] = p
            else:
                for o in range(n):
                    if live[o] and side_of[o] != side_of[s]:
                        modes[s] = SET
                        target[s] = o
                        break
                else:
                    if not any_short:
                        modes[s] = AVOID  # every contract is made: dodge bags
        return modes, target


def _or_none(p: int | None) -> int:
    return -1 if p is None else p


def _low_side_first(cards: int) -> int:
    """The lowest-ranked card of ``cards``, a side suit before a spade."""
    best = -1
    best_rank = 99
    for suit in range(3):
        chunk = cards >> 16 * suit & 0x7FFF
        if chunk:
            r = (chunk & -chunk).bit_length() - 1
            if r < best_rank:
                best_rank, best = r, 16 * suit + r
    if best < 0:
        return (cards & -cards).bit_length() - 1
    return best


def _high_side_first(cards: int) -> int:
    """The highest-ranked card of ``cards``, a side suit before a spade."""
    best = -1
    best_rank = -1
    for suit in range(3):
        chunk = cards >> 16 * suit & 0x7FFF
        if chunk:
            r = chunk.bit_length() - 1
            if r > best_rank:
                best_rank, best = r, 16 * suit + r
    if best < 0:
        return cards.bit_length() - 1
    return best


def _lead(legal: int, hand: int, alive: int, mode: int) -> int:
    """The lead: a winner in ``TAKE``/``COVER`` mode if one is held, else low."""
    if mode in (TAKE, COVER):
        others = alive & ~hand
        for suit in (0, 1, 2, 3):
            mine = legal & _SUIT[suit]
            if mine:
                top = mine.bit_length() - 1
                if top > (others & _SUIT[suit]).bit_length() - 1:
                    return top
    return _low_side_first(legal)


def choose(
    hands: list[int],
    seat: int,
    trick_len: int,
    leader: int,
    led: int,
    best: int,
    win: int,
    broken: bool,
    mode: int,
    target: int,
    partner: int,
) -> int:
    """The policy's card for ``seat``; ``best``/``win`` are the winning card and
    seat of the trick so far (ignored on a lead)."""
    hand = hands[seat]
    n = len(hands)
    if trick_len == 0:
        legal = hand if broken else (hand & _NON_SPADES or hand)
        if not legal & (legal - 1):
            return legal.bit_length() - 1
        alive = 0
        for h in hands:
            alive |= h
        return _lead(legal, hand, alive, mode)
    follow = hand & _SUIT[led]
    legal = follow or hand
    if not legal & (legal - 1):
        return legal.bit_length() - 1
    after = n - trick_len - 1
    if mode == AVOID:
        lose = legal & ~beaters(legal, best)
        if lose:
            return lose.bit_length() - 1 if follow else _high_side_first(lose)
        return legal.bit_length() - 1 if after == 0 else (legal & -legal).bit_length() - 1
    if mode == SET and target >= 0:
        if (target - leader) % n < trick_len:  # the nil bidder has played
            if win == target:  # keep it winning
                lose = legal & ~beaters(legal, best)
                if lose:
                    return lose.bit_length() - 1 if follow else _high_side_first(lose)
        else:  # play low in front of the nil bidder
            return (legal & -legal).bit_length() - 1 if follow else _low_side_first(legal)
    if mode == COVER and target >= 0:
        if win == target:  # overtake the nil partner, as cheaply as possible
            beat = beaters(legal, best)
            if beat:
                return (beat & -beat).bit_length() - 1
        elif (target - leader) % n >= trick_len:  # the nil partner plays after: go high
            if follow:
                return legal.bit_length() - 1
            beat = beaters(legal, best)
            if beat:
                return (beat & -beat).bit_length() - 1
    # TAKE: the bar to clear is the best card so far or any opponent's after.
    bar = best
    for i in range(1, after + 1):
        p = (seat + i) % n
        if p == partner:
            continue
        h = hands[p]
        f = h & _SUIT[led]
        top = f.bit_length() - 1 if f else (h & _SPADE).bit_length() - 1
        if top > bar:  # noqa: PLR1730 - a builtin call costs more in the hot loop
            bar = top
    if win == partner and partner >= 0 and bar == best:  # partner's trick is safe
        return (legal & -legal).bit_length() - 1 if follow else _low_side_first(legal)
    safe = beaters(legal, bar)
    if safe:
        return (safe & -safe).bit_length() - 1
    return (legal & -legal).bit_length() - 1 if follow else _low_side_first(legal)


def playout(state: SimState, table: Table, rnd: Rnd, noise: float = 0.0) -> list[int]:
    """Tricks won by seat when the hand is played out from ``state`` by the
    policy; ``state`` is consumed (pass a copy).  With probability ``noise`` a
    card is instead a uniformly random legal one, one ``rnd()`` call per card."""
    hands = state.hands
    n = len(hands)
    won = state.tricks_won
    partner = table.partner
    leader = state.leader
    seat = state.to_act
    trick = state.trick
    broken = state.spades_broken
    trumping = state.trumping
    led = state.led_suit
    best = -1
    win = -1
    for i, c in enumerate(trick):
        if i == 0 or (c > best and (c >> 4 == best >> 4 or c >= 48)):
            best, win = c, (leader + i) % n
    count = len(trick)
    modes, target = table.modes(won)
    while hands[seat]:
        if noise and rnd() < noise:
            hand = hands[seat]
            if count == 0:
                legal = hand if broken else (hand & _NON_SPADES or hand)
            else:
                legal = hand & _SUIT[led] or hand
            c = _kth(legal, int(rnd() * float(legal.bit_count())))
        else:
            c = choose(
                hands,
                seat,
                count,
                leader,
                led,
                best,
                win,
                broken,
                modes[seat],
                target[seat],
                partner[seat],
            )
        hands[seat] = hands[seat] ^ 1 << c  # not ^=: compiled, a generic boxed xor
        if c >= 48 and (not trumping or (count and led != 3)):
            broken = True  # any spade, or with trumping one played to a side suit
        if count == 0:
            led = c >> 4
            best, win = c, seat
        elif c > best and (c >> 4 == best >> 4 or c >= 48):
            best, win = c, seat
        count += 1
        if count == n:
            won[win] = won[win] + 1
            leader = seat = win
            count = 0
            modes, target = table.modes(won)
        else:
            seat = seat + 1 if seat + 1 < n else 0
    return won


def _kth(mask: int, k: int) -> int:
    for _ in range(k):
        mask &= mask - 1
    return (mask & -mask).bit_length() - 1
