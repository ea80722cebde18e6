"""A fast simulation kernel for the play of a hand, for Monte-Carlo bots.

The public ``Match`` checks every action, records it and emits events; a bot
that plays thousands of random hands per decision needs none of that.  This
module plays the same rules (the play rules of RULES.md section 1, for 3, 4 or
5 players, jokers included) on plain integers, with no validation, no events
and no objects made per card: the hot loop (:func:`_playout`) is table
look-ups and small-int arithmetic, inlined, about half a microsecond a card.

Cards and hands are those of :mod:`spades_engine.cards`: a card is
``suit * 16 + rank`` with spades the highest suit (3) and the jokers spade
ranks 13 and 14, and a hand is an ``int`` whose bits are its cards.  With that
layout every spade is numerically above every other card, so "does ``c`` beat
the best card so far" is a plain comparison:

* a card of the suit of the best card wins when it is higher;
* a spade beats any non-spade;
* any other card never wins.

Random choices.  Wherever the kernel picks a card at random it takes the
``k``-th lowest legal card with ``k = int(rnd() * number_of_legal_cards)``,
one ``rnd()`` call per card.  Driving the public ``Match`` with the same rule
(``acts[int(rnd() * len(acts))]`` over ``legal_actions``, which lists cards
lowest first) from the same ``rnd`` stream therefore replays a kernel playout
card for card; the tests rely on that.

Entry points:

* Auction trump: ``SimState(..., trump=suit)`` plays a hand whose trump is
  another suit than spades (it wins tricks and must be broken before it is
  led, as spades otherwise).  :func:`legal_mask`, :func:`play` and
  :func:`playout_random` follow it; the playout then goes card by card
  instead of through the fast loop, which is written for spades.  (The bots
  play such hands on views with the trump suit and spades swapped, which is
  the same game, so their rollouts keep the fast loop.)
* :class:`SimState`: a position in the play of a hand, built from the hands
  (for a bot: its own hand plus a determinization of the unseen cards), who
  leads, tricks already won, the cards of the trick in progress, whether
  spades are broken and what breaks them (``trumping=True`` for the
  ruleset's ``spades_broken="trumping"``).  :func:`legal_mask` and
  :func:`play` step it.
* :func:`playout_random`: uniformly random legal plays to the end of the hand.
* :func:`random_hand`: deal, random bids, random play and scoring of one full
  hand, through :func:`spades_engine.scoring.score_hand`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Final

from .cards import TWO_OF_CLUBS
from .events import SideScore
from .ruleset import SUICIDE_MIN_BID, FirstLead, Ruleset, SpadesBroken
from .scoring import score_hand
from .trick import SUIT_RANKS

__all__ = [
    "RANKS",
    "SimState",
    "deal_random",
    "first_leader",
    "legal_mask",
    "play",
    "playout_random",
    "random_bids",
    "random_hand",
    "trick_winner",
]

Rnd = Callable[[], float]
"""A source of uniform floats in [0, 1), typically ``random.Random(seed).random``."""

NON_SPADES: Final = (1 << 48) - 1
"""Every card of clubs, diamonds and hearts."""
_SUIT_MASKS: Final = (0xFFFF, 0xFFFF << 16, 0xFFFF << 32, 0xFFFF << 48)
_SPADE_LOW: Final = 48  # the lowest spade card index: c >= 48 means c is a spade
_NON_TRUMP: Final = tuple(~m for m in _SUIT_MASKS)
# Every bit that can be a card: ranks 0..14, and spade rank 15, the top spade
# of the bots' deuces-high deck (bots/deuces.py).
_CARD_BITS: Final = 0xFFFF_7FFF_7FFF_7FFF
_TOP_SPADE: Final = 63


RANKS: Final = SUIT_RANKS
"""``RANKS[chunk]``: the ranks set in a 15-bit suit chunk, lowest first
(``trick.SUIT_RANKS``).

A random card of a suit is ``suit * 16 + t[int(rnd() * len(t))]`` with
``t = RANKS[hand >> 16 * suit & 0x7FFF]``: one table look-up, no loop.
"""

_FLOATS: Final = tuple(float(n) for n in range(65))
"""``_FLOATS[n]`` is ``float(n)``: ``rnd() * _FLOATS[n]`` is ``rnd() * n``, but
compiled by mypyc a native multiplication (a float times an int is a generic
one there: both boxed, then ``PyNumber_Multiply``), and no slower uncompiled."""

_FOLLOW_SLOTS: Final[dict[int, tuple[tuple[tuple[int, ...], ...], ...]]] = {
    n: tuple(
        tuple(tuple((lead + i) % n * 4 + suit for i in range(1, n)) for suit in range(4))
        for lead in range(n)
    )
    for n in range(2, 7)
}
"""``_FOLLOW_SLOTS[players][leader][suit]``: the slots ``4 * seat + suit`` of
the other seats, in play order (see :func:`_suit_chunks`)."""


class SimState:
    """A position in the play of a hand.

    ``hands`` are the cards still held by seat (masks), ``leader`` led the
    trick in progress, ``trick`` holds its cards in play order, ``to_act`` is
    the seat to play, ``led_suit`` is -1 before the lead, and ``tricks_won``
    counts tricks by seat.  ``trumping`` is the rule that breaks spades: false,
    any spade played (``spades_broken="any_spade"``); true, only a spade
    played to a trick led with another suit (``"trumping"``).  Fields are
    public and mutable; :func:`play` advances the state, :meth:`copy` keeps a
    position for repeated playouts.
    """

    __slots__ = (
        "hands",
        "leader",
        "led_suit",
        "spades_broken",
        "to_act",
        "trick",
        "tricks_won",
        "trump",
        "trumping",
    )

    def __new__(cls, *args: object, **kwargs: object) -> SimState:
        # Compiled by mypyc, a class's default __new__ runs its __init__ too,
        # and object.__new__ refuses it: this one only allocates, for copy().
        return object.__new__(cls)

    def __init__(
        self,
        hands: Sequence[int],
        leader: int,
        tricks_won: Sequence[int] | None = None,
        trick: Sequence[int] = (),
        spades_broken: bool = False,
        *,
        trumping: bool = False,
        trump: int = 3,
    ) -> None:
        """Build a position; the number of seats is ``len(hands)``.

        ``trick`` are the cards already played to the trick in progress, from
        ``leader`` on; they are not in ``hands``.  A spade in ``trick`` breaks
        spades as it does in the engine: any spade, or with ``trumping`` one
        played to a side-suit lead.  Raises ``ValueError`` when the
        description is not a possible position (overlapping hands, or hand
        sizes that do not fit the trick in progress).
        """
        n = len(hands)
        if not 2 <= n <= 6 or not 0 <= leader < n or len(trick) >= n or trump not in range(4):
            raise ValueError(f"bad position: {n} hands, leader {leader}, {len(trick)} trick cards")
        self.hands: list[int] = list(hands)
        self.leader = leader
        self.to_act = (leader + len(trick)) % n
        self.trick: list[int] = list(trick)
        self.led_suit = trick[0] >> 4 if trick else -1
        self.trumping = trumping
        self.trump = trump
        breakers: Sequence[int] = trick
        if trumping:  # only a trump played to a side-suit lead breaks trump
            breakers = trick[1:] if trick and trick[0] >> 4 != trump else ()
        self.spades_broken = spades_broken or any(c >> 4 == trump for c in breakers)
        self.tricks_won: list[int] = list(tricks_won) if tricks_won is not None else [0] * n
        if len(self.tricks_won) != n:
            raise ValueError("tricks_won needs one count per seat")
        seen = 0
        for c in trick:
            if not (0 <= c < 64 and _CARD_BITS >> c & 1) or seen >> c & 1:
                raise ValueError(f"{c} in the trick is not a card, or is there twice")
            seen |= 1 << c
        size = hands[self.to_act].bit_count()
        for i in range(n):
            seat = (leader + i) % n
            h = hands[seat]
            if h < 0 or h & ~_CARD_BITS:
                raise ValueError(f"seat {seat}'s hand {h:#x} holds bits that are not cards")
            if h & seen:
                raise ValueError(f"seat {seat} holds a card that is already played or held")
            seen |= h
            if h.bit_count() != size - (i < len(trick)):
                raise ValueError("hand sizes do not fit the trick in progress")

    def copy(self) -> SimState:
        # A blank state, without __init__'s checks: uncompiled object.__new__,
        # which skips the Python-level call of SimState.__new__; compiled, the
        # native call of that __new__ (see _OBJECT_NEW).
        new = object.__new__(SimState) if _OBJECT_NEW else SimState.__new__(SimState)
        new.hands = self.hands[:]
        new.leader = self.leader
        new.to_act = self.to_act
        new.trick = self.trick[:]
        new.led_suit = self.led_suit
        new.spades_broken = self.spades_broken
        new.trumping = self.trumping
        new.trump = self.trump
        new.tricks_won = self.tricks_won[:]
        return new

    @property
    def is_over(self) -> bool:
        """Whether every card of the hand has been played."""
        return not self.trick and not self.hands[self.to_act]

    def __repr__(self) -> str:
        return (
            f"SimState(hands={[hex(h) for h in self.hands]}, leader={self.leader}, "
            f"to_act={self.to_act}, trick={self.trick}, spades_broken={self.spades_broken}, "
            f"tricks_won={self.tricks_won}, trumping={self.trumping}, trump={self.trump})"
        )


def _object_new_works() -> bool:
    try:
        object.__new__(SimState)
    except TypeError:  # "not safe, use SimState.__new__()": compiled by mypyc
        return False
    return True


_OBJECT_NEW: Final = _object_new_works()
_DEALER: Final = FirstLead.DEALER
_TWO_OF_CLUBS: Final = FirstLead.TWO_OF_CLUBS
_TRUMPING: Final = SpadesBroken.TRUMPING
"""Whether ``object.__new__`` allocates a ``SimState`` (false when this module
is compiled by mypyc): how :meth:`SimState.copy` allocates fastest."""


def legal_mask(state: SimState) -> int:
    """The cards the seat to act may play: follow suit if able, else anything;
    a lead is a trump only once trump is broken or when only trump is held."""
    hand = state.hands[state.to_act]
    led = state.led_suit
    if led < 0:
        return hand if state.spades_broken else (hand & _NON_TRUMP[state.trump] or hand)
    return hand & _SUIT_MASKS[led] or hand


def trick_winner(leader: int, cards: Sequence[int], players: int, trump: int = 3) -> int:
    """The seat that wins a trick led by ``leader`` with ``cards`` in play order
    (``trump``: the hand's trump suit, spades unless auction trump named another)."""
    best, win = cards[0], 0
    if trump == 3:
        for i in range(1, len(cards)):
            c = cards[i]
            if c > best and (c >> 4 == best >> 4 or c >= _SPADE_LOW):
                best, win = c, i
        return (leader + win) % players
    for i in range(1, len(cards)):
        c = cards[i]
        s = c >> 4
        if (s == best >> 4 and c > best) or (s == trump and best >> 4 != trump):
            best, win = c, i
    return (leader + win) % players


def play(state: SimState, card: int) -> int:
    """Play ``card`` for the seat to act; the caller guarantees it is legal.

    Returns the seat that won the trick when this card completes it, else -1.
    """
    hands = state.hands
    seat = state.to_act
    hands[seat] = hands[seat] ^ 1 << card  # not ^=: compiled, a generic boxed xor
    trump = state.trump
    if card >> 4 == trump and (not state.trumping or 0 <= state.led_suit != trump):
        state.spades_broken = True  # any trump, or with trumping one played to a side suit
    trick = state.trick
    if not trick:
        state.led_suit = card >> 4
    trick.append(card)
    n = len(hands)
    if len(trick) < n:
        state.to_act = seat + 1 if seat + 1 < n else 0
        return -1
    win = trick_winner(state.leader, trick, n, trump)
    won = state.tricks_won
    won[win] = won[win] + 1
    trick.clear()
    state.led_suit = -1
    state.leader = state.to_act = win
    return win


def playout_random(state: SimState, rnd: Rnd) -> list[int]:
    """Tricks won by seat at the end of the hand when every remaining card is a
    uniformly random legal play.  ``state`` is left unchanged.

    ``rnd`` is called once per card (see the module notes on how a card is
    picked); pass ``random.Random(seed).random`` for reproducible playouts.
    """
    st = state
    if st.trump != 3 or any(h >> _TOP_SPADE for h in st.hands):
        # auction trump named another suit, or a spade of rank 15 (the bots'
        # deuces-high deck): card by card, not the fast loop's 15-rank tables
        st = st.copy()
        while not st.is_over:
            m = legal_mask(st)
            play(st, _kth_card(m, int(rnd() * _FLOATS[m.bit_count()])))
        return st.tricks_won
    if st.trick:  # finish the trick in progress card by card, on a copy
        st = st.copy()
        while st.trick:
            m = legal_mask(st)
            play(st, _kth_card(m, int(rnd() * _FLOATS[m.bit_count()])))
    won = st.tricks_won[:]
    hands = st.hands
    _playout(
        _suit_chunks(hands),
        st.leader,
        st.spades_broken,
        won,
        rnd,
        hands[0].bit_count(),
        trumping=st.trumping,
    )
    return won


def _kth_card(mask: int, k: int) -> int:
    """The ``k``-th lowest card of ``mask`` (``0 <= k < mask.bit_count()``)."""
    base = 0
    while True:
        t = RANKS[mask >> base & 0x7FFF]
        if k < len(t):
            return base + t[k]
        if base == 48:  # past spade ranks 0..14: the deuces-high deck's top spade
            return _TOP_SPADE
        k -= len(t)
        base += 16


def _suit_chunks(hands: Sequence[int]) -> list[int]:
    """The hands as 15-bit suit chunks: ``chunks[4 * seat + suit]``."""
    chunks: list[int] = []
    for h in hands:
        chunks += (h & 0x7FFF, h >> 16 & 0x7FFF, h >> 32 & 0x7FFF, h >> 48)
    return chunks


def _playout(  # noqa: PLR0915 - one inlined loop, on purpose
    chunks: list[int],
    leader: int,
    broken: bool,
    won: list[int],
    rnd: Rnd,
    tricks: int,
    *,
    trumping: bool,
) -> None:
    """Play ``tricks`` tricks of random legal cards, from the start of a trick.

    The hot loop of the module, written for speed.  Hands are suit chunks
    (:func:`_suit_chunks`, emptied in place): small ints, so following suit
    is one table look-up with no 64-bit arithmetic.  ``won`` counts tricks.
    Cards are picked as the module notes say, the lowest suit first.
    ``trumping``: only a spade played by a void seat breaks spades, not a
    spade lead (a void seat's spade is always a trump: a seat void in the
    suit led holds no spade when spades are led).
    """
    ranks = RANKS
    fl = _FLOATS
    slots = _FOLLOW_SLOTS[len(won)]
    for _ in range(tricks):
        # The lead: any card once spades are broken, else a non-spade if held.
        b = 4 * leader
        t0 = ranks[chunks[b]]
        t1 = ranks[chunks[b + 1]]
        t2 = ranks[chunks[b + 2]]
        n0 = len(t0)
        n1 = n0 + len(t1)
        n2 = n1 + len(t2)
        t3 = ranks[chunks[b + 3]]
        k = int(rnd() * fl[n2 + len(t3) if broken or not n2 else n2])
        if k < n0:
            suit = 0
            best = t0[k]
        elif k < n1:
            suit = 1
            best = t1[k - n0]
        elif k < n2:
            suit = 2
            best = t2[k - n1]
        else:
            suit = 3
            best = t3[k - n2]
            if not trumping:
                broken = True
        slot = b + suit
        chunks[slot] = chunks[slot] ^ 1 << best  # not ^=: compiled, a generic boxed xor
        base = 16 * suit
        best += base  # the best card so far, as a card index
        win = b
        for i in slots[leader][suit]:
            chunk = chunks[i]
            if chunk:  # follow suit: a higher card of the suit led takes the lead
                t = ranks[chunk]
                r = t[int(rnd() * fl[len(t)])]
                chunks[i] = chunk ^ 1 << r
                r += base
                if r > best:
                    best = r
                    win = i
            else:  # void: any card; only a spade can win
                j = i - suit
                c0 = chunks[j]
                c1 = chunks[j + 1]
                c2 = chunks[j + 2]
                c3 = chunks[j + 3]
                t0 = ranks[c0]
                t1 = ranks[c1]
                t2 = ranks[c2]
                t3 = ranks[c3]
                n0 = len(t0)
                n1 = n0 + len(t1)
                n2 = n1 + len(t2)
                k = int(rnd() * fl[n2 + len(t3)])
                if k < n0:
                    chunks[j] = c0 ^ 1 << t0[k]
                elif k < n1:
                    chunks[j + 1] = c1 ^ 1 << t1[k - n0]
                elif k < n2:
                    chunks[j + 2] = c2 ^ 1 << t2[k - n1]
                else:
                    r = t3[k - n2]
                    chunks[j + 3] = c3 ^ 1 << r
                    broken = True
                    r += 48
                    if r > best:
                        best = r
                        win = i
        leader = win >> 2
        won[leader] = won[leader] + 1


class _Deck:
    """How :func:`_deal_chunks` deals one table's deck (see there)."""

    __slots__ = ("cards", "dealt", "limits", "players", "size")

    def __init__(self, mask: int, players: int, size: int) -> None:
        self.cards = [c for c in range(64) if mask >> c & 1]
        self.players = players
        self.size = size
        self.dealt = players * size  # with two players, 26: the rest is out of play
        n = len(self.cards)
        # Positions i, i+1, ... draw from one 62-bit number while the product of
        # their ranges (n - i, n - i - 1, ...) stays within 2**55: limits[i] is
        # where the group starting at i rejects (0 inside a group).
        limits = [0] * self.dealt
        i = 0
        while i < self.dealt:
            span, j = 1, i
            while j < self.dealt and span * (n - j) <= _GROUP_SPAN:
                span *= n - j
                j += 1
            limits[i] = (1 << 62) // span * span
            i = j
        self.limits = tuple(limits)


_GROUP_SPAN: Final = 1 << 55
_DECKS: Final[dict[int, _Deck]] = {}


def _deal_chunks(rules: Ruleset, rng: random.Random) -> list[int]:
    """A uniformly random deal as suit chunks (``chunks[4 * seat + suit]``, see
    :func:`_suit_chunks`).

    A Fisher-Yates shuffle of the positions dealt: position ``i`` takes a card
    uniformly from those not yet dealt, ``j = i + r % (n - i)``.  The draws of
    a few positions come from one ``rng.getrandbits(62)`` as the digits of a
    mixed-radix number (``r % m``, then ``r //= m``), rejected and drawn again
    when it falls past the last whole multiple of the product of their ranges,
    so each deal is exactly uniform; about five calls of ``rng`` per deal.
    """
    key = rules.deck_mask << 3 | rules.players  # two and four players share a deck
    deck = _DECKS.get(key)
    if deck is None:
        deck = _DECKS[key] = _Deck(rules.deck_mask, rules.players, rules.hand_size)
    getbits = rng.getrandbits
    limits = deck.limits
    cards = deck.cards[:]
    n = len(cards)
    size = deck.size
    chunks: list[int] = []
    r = 0
    i = 0
    for _ in range(deck.players):
        low = 0  # clubs, diamonds and hearts: 48 bits
        top = 0  # the spade chunk
        for _ in range(size):
            lim = limits[i]
            if lim:
                r = getbits(62)
                while r >= lim:
                    r = getbits(62)
            m = n - i
            j = i + r % m
            r //= m
            c = cards[j]
            cards[j] = cards[i]
            if c < _SPADE_LOW:
                low |= 1 << c
            else:
                top |= 1 << (c - _SPADE_LOW)
            i += 1
        chunks += (low & 0x7FFF, low >> 16 & 0x7FFF, low >> 32, top)
    return chunks


def _hands_of(chunks: list[int]) -> list[int]:
    """The hand masks of suit chunks (the inverse of :func:`_suit_chunks`)."""
    return [
        chunks[b] | chunks[b + 1] << 16 | chunks[b + 2] << 32 | chunks[b + 3] << 48
        for b in range(0, len(chunks), 4)
    ]


def deal_random(rules: Ruleset, rng: random.Random) -> list[int]:
    """A uniformly random deal for ``rules``: hand masks by seat.

    A Fisher-Yates shuffle drawing its positions from ``rng.getrandbits``
    (see :func:`_deal_chunks`).  Not the engine's seeded deal: see
    ``deck.deal`` for that.  With two players it is what a draw could leave:
    13 cards each, the other 26 out of play.
    """
    return _hands_of(_deal_chunks(rules, rng))


def random_bids(rules: Ruleset, rnd: Rnd) -> list[int]:
    """A uniformly random regular bid for every seat (never a blind nil).
    Under suicide, a uniformly random partner of each side bids nil and the
    other a uniformly random 4 or more, which is legal in any bidding order."""
    low = rules.min_bid
    if rules.suicide:
        bids = [0] * rules.players
        span = _FLOATS[rules.hand_size + 1 - SUICIDE_MIN_BID]
        for side in range(rules.sides):
            seats = rules.seats_of(side)
            bids[seats[int(rnd() * _FLOATS[len(seats)])]] = SUICIDE_MIN_BID + int(rnd() * span)
        return bids
    span = _FLOATS[rules.hand_size + 1 - low]
    return [low + int(rnd() * span) for _ in range(rules.players)]


def first_leader(rules: Ruleset, hands: Sequence[int], dealer: int) -> int:
    """Who leads the first trick of a hand (the ruleset's ``first_lead``)."""
    lead = rules.first_lead
    if lead is _DEALER:
        return dealer
    if lead is _TWO_OF_CLUBS:
        for seat, h in enumerate(hands):
            if h >> TWO_OF_CLUBS & 1:
                return seat
    return (dealer + 1) % rules.players


def _first_leader_chunks(rules: Ruleset, chunks: list[int], dealer: int) -> int:
    """:func:`first_leader` of a deal in suit chunks."""
    lead = rules.first_lead
    if lead is _DEALER:
        return dealer
    if lead is _TWO_OF_CLUBS:
        for b in range(0, len(chunks), 4):
            if chunks[b] >> TWO_OF_CLUBS & 1:  # the two of clubs is card 0: clubs, rank 0
                return b >> 2
    return (dealer + 1) % rules.players


def random_hand(
    rules: Ruleset,
    rng: random.Random,
    dealer: int = 0,
    scores: Sequence[int] | None = None,
    bags: Sequence[int] | None = None,
) -> tuple[SideScore, ...]:
    """Deal, bid and play one full hand at random, and score it.

    The deal is :func:`deal_random`, the bids :func:`random_bids` (no blind
    nil, so no exchange), with ``auction_trump`` a uniformly random trump suit
    (``int(rnd() * 4)``, clubs to spades, named after the bids), every card a
    uniformly random legal play, and the result is
    :func:`spades_engine.scoring.score_hand` from ``scores`` and ``bags``
    before the hand (zero when not given).
    """
    chunks = _deal_chunks(rules, rng)
    rnd = rng.random
    bids = random_bids(rules, rnd)
    players = rules.players
    won = [0] * players
    leader = _first_leader_chunks(rules, chunks, dealer)
    trumping = rules.spades_broken is _TRUMPING
    trump = int(rnd() * 4.0) if rules.auction_trump else 3
    if trump == 3:
        _playout(chunks, leader, False, won, rnd, rules.hand_size, trumping=trumping)
    else:
        hands = _hands_of(chunks)
        won = playout_random(SimState(hands, leader, trumping=trumping, trump=trump), rnd)
    if scores is None or bags is None:
        zeros = (0,) * rules.sides
        scores = zeros if scores is None else scores
        bags = zeros if bags is None else bags
    return score_hand(rules, bids, (False,) * players, won, scores, bags)
