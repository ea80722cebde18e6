"""Determinization: what a seat knows about the other hands, and random deals of
the unseen cards that agree with it.

Everything here comes from a :class:`~spades_engine.view.SeatView`, so a bot
that samples with it still sees only what its seat may see.  What is known:

* the viewer's own hand, and every card played this hand (never re-dealt);
* how many cards each seat holds now;
* voids: a seat that did not follow the suit led holds none of that suit, and
  a seat that led a trump (a spade, or the suit named under auction trump)
  before trump was broken (by the ruleset's ``spades_broken`` rule) held
  nothing but trump;
* the blind nil exchange: the cards the viewer passed are in the partner's hand
  (until the partner plays them);
* two players' draw: the viewer's own discards are out of play, and the top
  card of the stock it is looking at is in nobody's hand.  The other unseen
  cards are more than the opponent holds (its discards, and during the draw
  the rest of the stock, are among them): the ones a deal does not place are
  out of play.

:func:`sample_deal` deals the unseen cards at random under those constraints,
and :func:`bid_weight` says how likely a deal is given the bids that were made,
so a Monte-Carlo average can weight each deal by it.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass

from ..ruleset import SpadesBroken
from ..view import SeatView
from .hand_eval import expected_tricks


@dataclass(frozen=True, slots=True)
class Knowledge:
    """What the viewer knows about where the cards are, as masks by seat."""

    seat: int
    hand: int  # the viewer's cards now
    unseen: int  # cards some other seat holds now
    sizes: tuple[int, ...]  # cards each seat holds now
    voids: tuple[int, ...]  # suits (bit = suit) each seat is known to hold none of
    pinned: tuple[int, ...]  # cards known to be in each seat's hand (never the viewer's)
    played: tuple[int, ...]  # cards each seat has played this hand
    out_of_play: int = 0  # unseen cards in no hand: two players' discards and stock

    # Copies and pickles set the fields back with object.__setattr__, as
    # @dataclass's own methods for a frozen class do (see Ruleset.__getstate__).
    def __getstate__(self) -> list[object]:
        return [getattr(self, f.name) for f in dataclasses.fields(self)]

    def __setstate__(self, state: list[object]) -> None:
        for f, value in zip(dataclasses.fields(self), state, strict=True):
            object.__setattr__(self, f.name, value)


def knowledge_from_view(view: SeatView) -> Knowledge:
    """What ``view``'s seat knows: its hand must be visible (not face down)."""
    if view.seat is None or view.hand is None:
        raise ValueError("a determinization needs a seat that can see its own hand")
    seat, n = view.seat, view.rules.players
    hand = 0
    for c in view.hand:
        hand |= 1 << c
    voids = [0] * n
    played = [0] * n
    broken = False
    trumping = view.rules.spades_broken is SpadesBroken.TRUMPING
    trump = view.trump  # spades, or the suit named under auction trump
    side_suits = 0b1111 & ~(1 << trump)
    tricks = [(t.leader, t.cards) for t in view.tricks]
    if view.trick:
        tricks.append((view.leader, view.trick))
    for leader, cards in tricks:
        led = cards[0] >> 4
        if led == trump and not broken:
            voids[leader] |= side_suits  # a trump lead before trump broke: only trump held
        for i, c in enumerate(cards):
            s = (leader + i) % n
            played[s] |= 1 << c
            if c >> 4 != led:
                voids[s] |= 1 << led
            if c >> 4 == trump and (not trumping or led != trump):
                broken = True  # with trumping, only a trump played to a side suit
    gone = hand | view.played_cards()
    for c in view.discards:
        gone |= 1 << c
    if view.stock_top is not None:
        gone |= 1 << view.stock_top
    pinned = [0] * n
    if view.passed and view.received:  # the exchange is done: the partner has my cards
        partner = (seat + 2) % 4
        for c in view.passed:
            if not gone >> c & 1:
                pinned[partner] |= 1 << c
    unseen = view.rules.deck_mask & ~gone
    held = sum(view.hand_sizes) - view.hand_sizes[seat]
    return Knowledge(
        seat=seat,
        hand=hand,
        unseen=unseen,
        sizes=view.hand_sizes,
        voids=tuple(voids),
        pinned=tuple(pinned),
        played=tuple(played),
        out_of_play=unseen.bit_count() - held,
    )


def sample_deal(k: Knowledge, rng: random.Random) -> list[int]:
    """A random deal of the unseen cards: hand masks by seat, the viewer's own
    hand included, respecting sizes, voids and pinned cards.  Unseen cards
    beyond the other seats' room (``k.out_of_play``) go to no hand.

    Cards are dealt one at a time, the suits with the fewest possible holders
    first, each to a seat with room drawn in proportion to its room, the cards
    out of play being one more holder, of any suit, with room for all of them:
    with no constraints that is exactly a shuffle and deal.  A dead end (every
    seat that may hold the card is full) is retried; after a few, each card is
    placed only where the rest can still be dealt (Hall's condition on suits),
    which always succeeds when the knowledge is consistent.
    """
    for _ in range(4):
        hands = _deal(k, rng, checked=False)
        if hands is not None:
            return hands
    hands = _deal(k, rng, checked=True)
    if hands is None:  # inconsistent knowledge cannot come from a real view
        raise ValueError("no deal of the unseen cards fits what the seat has seen")
    return hands


def _deal(k: Knowledge, rng: random.Random, checked: bool) -> list[int] | None:
    n = len(k.sizes)
    hands = list(k.pinned)
    hands[k.seat] = k.hand
    room = [k.sizes[s] - k.pinned[s].bit_count() for s in range(n)]
    room[k.seat] = 0
    free = k.unseen
    for p in k.pinned:
        free &= ~p
    # Seats that may hold each suit, and the free cards of each suit.
    holders = [
        [s for s in range(n) if s != k.seat and not k.voids[s] >> suit & 1] for suit in range(4)
    ]
    left = [(free >> 16 * suit & 0xFFFF).bit_count() for suit in range(4)]
    order = sorted((suit for suit in range(4) if left[suit]), key=lambda su: len(holders[su]))
    rnd = rng.random
    # The cards no hand takes: one holder more, of every suit, so the order
    # of the suits (fewest holders first) stays as it is.
    if k.out_of_play > 0:
        room.append(k.out_of_play)
        hands.append(0)
        for seats in holders:
            seats.append(n)
    for suit in order:
        chunk = free >> 16 * suit & 0xFFFF
        ranks = [r for r in range(16) if chunk >> r & 1]
        rng.shuffle(ranks)
        seats = holders[suit]
        for r in ranks:
            left[suit] -= 1
            able = [
                s
                for s in seats
                if room[s] and (not checked or _still_dealable(left, room, holders, s))
            ]
            if not able:
                return None
            x = rnd() * sum(room[s] for s in able)
            for pick in able:  # the last one if rounding leaves x at 0
                x -= room[pick]
                if x < 0:
                    break
            room[pick] -= 1
            hands[pick] |= 1 << (16 * suit + r)
    if k.out_of_play > 0:
        hands.pop()
    return hands


def _still_dealable(left: list[int], room: list[int], holders: list[list[int]], s: int) -> bool:
    """Whether the cards ``left`` (by suit) still fit once seat ``s`` takes one more
    card: every set of suits fits in the room of the seats that may hold them
    (the holder of the cards out of play, when there is one, among them)."""
    room[s] -= 1
    ok = True
    for subset in range(1, 16):
        need = 0
        seats: set[int] = set()
        for suit in range(4):
            if subset >> suit & 1 and left[suit]:
                need += left[suit]
                seats.update(holders[suit])
        if need > sum(room[t] for t in seats):
            ok = False
            break
    room[s] += 1
    return ok


# How far (in tricks) a seat's count may plausibly be from its bid: one
# standard deviation of a Gaussian weight.  Bidders differ, so it is wide.
_BID_SIGMA = 2.0
_NIL_SIGMA = 1.2


def bid_weight(k: Knowledge, hands: list[int], view: SeatView) -> float:
    """The relative likelihood of the deal ``hands`` given the other seats' bids.

    Each other seat that has bid contributes a Gaussian factor on the distance
    between its bid and the strength (:func:`~.hand_eval.expected_tricks`) of its
    hand as dealt, that is its cards now plus the cards it has played.  A nil is
    a bid of no tricks with a narrower spread; a blind nil says nothing.
    """
    rules = view.rules
    log_w = 0.0
    for s, b in enumerate(view.bids):
        if s == k.seat or b is None or view.blind[s]:
            continue
        strength = expected_tricks(hands[s] | k.played[s], rules)
        sigma = _NIL_SIGMA if b == 0 else _BID_SIGMA
        log_w -= (strength - b) ** 2 / (2 * sigma * sigma)
    return math.exp(log_w)
