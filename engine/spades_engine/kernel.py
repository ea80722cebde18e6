"""A fast simulation kernel for the play of a hand, for Monte-Carlo bots.

The public ``Match`` checks every action, records it and emits events; a bot
that plays thousands of random hands per decision needs none of that.  This
module plays the same rules (the play rules of RULES.md section 1, for 3, 4 or
5 players, jokers included) on plain integers, with no validation, no events
and no objects made per card: the fast loops (:func:`_deal_packed`,
:func:`_fast_playout`) are table look-ups and, compiled, native 64-bit
arithmetic with no Python call or allocation per card.

Cards and hands are those of :mod:`spades_engine.cards`: a card is
``suit * 16 + rank`` with spades the highest suit (3) and the jokers spade
ranks 13 and 14, and a hand is an ``int`` whose bits are its cards.  With that
layout every spade is numerically above every other card, so "does ``c`` beat
the best card so far" is a plain comparison:

* a card of the suit of the best card wins when it is higher;
* a spade beats any non-spade;
* any other card never wins.

Random choices.  Wherever the kernel picks a card at random it takes the
``k``-th lowest legal card, ``k`` uniform in ``[0, number_of_legal_cards)``,
one choice per card: from a :class:`Draws` (``draws.below(n)``: the fast
loops), or from a ``Rnd`` callable, ``k = int(rnd() * n)`` (card by card).
Driving the public ``Match`` with the same rule (``acts[k]`` over
``legal_actions``, which lists cards lowest first) from the same source
therefore replays a kernel playout card for card; the tests rely on that.

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
* :class:`Draws`: the seeded source of the fast loops' choices.
* :func:`playout_random`: uniformly random legal plays to the end of the hand.
* :func:`random_hand`: deal, random bids, random play and scoring of one full
  hand, through :func:`spades_engine.scoring.score_hand`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from .cards import TWO_OF_CLUBS
from .events import SideScore
from .ruleset import SUICIDE_MIN_BID, FirstLead, Ruleset, SpadesBroken
from .scoring import score_hand
from .trick import SUIT_RANKS

if TYPE_CHECKING:
    # Only the compiler reads it: mypyc makes an ``i64`` a native 64-bit
    # integer (no tag checks, no boxing).  Uncompiled, the annotations are
    # never evaluated (``from __future__ import annotations``), so the package
    # keeps no run-time dependency; hence no ``i64(...)`` call anywhere.
    from mypy_extensions import i64

__all__ = [
    "RANKS",
    "Draws",
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


def playout_random(state: SimState, rnd: Rnd | Draws) -> list[int]:
    """Tricks won by seat at the end of the hand when every remaining card is a
    uniformly random legal play.  ``state`` is left unchanged.

    Each card is the ``k``-th lowest legal one, with ``k`` drawn once per card
    (see the module notes): from ``rnd`` a :class:`Draws` (the fast loop), or a
    ``Rnd`` callable, ``int(rnd() * n)``, card by card.
    """
    st = state.copy()
    if not isinstance(rnd, Draws):
        _play_cards(st, rnd)
        return st.tricks_won
    if st.trump != 3 or any(h >> _TOP_SPADE for h in st.hands):
        # auction trump named another suit, or a spade of rank 15 (the bots'
        # deuces-high deck): card by card, not the fast loop's 15-rank suits
        _play_cards(st, rnd)
        return st.tricks_won
    while st.trick:  # finish the trick in progress card by card
        m = legal_mask(st)
        play(st, _kth_card(m, rnd.below(m.bit_count())))
    won = st.tricks_won
    hands = [_Hand(_pack(h)) for h in st.hands]
    _fast_playout(
        hands, st.leader, st.spades_broken, won, rnd, st.hands[0].bit_count(), st.trumping
    )
    return won


def _pick(rnd: Rnd | Draws, n: int) -> int:
    """``k`` uniformly in ``[0, n)`` from either kind of source."""
    if isinstance(rnd, Draws):
        return rnd.below(n)
    return int(rnd() * _FLOATS[n])


def _play_cards(st: SimState, rnd: Rnd | Draws) -> None:
    """Play ``st`` to the end card by card (:func:`legal_mask`, :func:`play`)."""
    while not st.is_over:
        m = legal_mask(st)
        play(st, _kth_card(m, _pick(rnd, m.bit_count())))


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


# The fast loops (:func:`_deal_packed`, :func:`_fast_playout`) hold a hand
# "packed", 15 bits a suit: card ``15 * suit + rank``, ranks 0..14, so a hand
# is below 2**60 and, compiled, a native 64-bit integer (``i64``: no tag
# checks, no boxing).  The tables are bytes, whose items mypyc reads natively:
# ``_COUNT[v]`` is the number of ranks in a 15-bit suit ``v``, and
# ``_SELECT[v << 4 | k]`` its ``k``-th lowest rank.
_COUNT: Final = bytes(len(t) for t in SUIT_RANKS)
_SELECT: Final = b"".join(bytes(t).ljust(16, b"\0") for t in SUIT_RANKS)
_LIMIT: Final = bytes(65536 % n if n else 0 for n in range(65))
"""``_LIMIT[n]``: a 16-bit draw ``u`` gives ``k = u * n >> 16`` unless the
low half of ``u * n`` is below this, when it is drawn again: exactly uniform
(Lemire's method); about one draw in 2,000 is redrawn when ``n`` is 52."""
_DRAW_BYTES: Final = 4096
_RESERVE: Final = 128
"""Bytes left in a buffer before a deal or a trick: room for 64 draws, so the
loops read them inline without a bounds check of their own."""
_HAND_BYTES: Final = 2 * _RESERVE


class Draws:
    """A seeded source of uniformly random choices for the kernel.

    ``Draws(seed)``, or ``Draws(rng)`` to draw from a ``random.Random``.  The
    choices come from one stream of bytes, ``rng.randbytes`` read in order
    (``buffer`` bytes at a time, always a whole number of the generator's
    32-bit words, so where the buffer is refilled changes nothing): each
    choice :meth:`below` ``n`` takes the next 16 bits, and again when they are
    rejected, which makes it exactly uniform.  The fast loops of
    :func:`playout_random`, :func:`deal_random` and :func:`random_hand` read
    the bytes inline, compiled without a Python call per card, and take each
    choice exactly as ``below`` would, so a test replays them with ``below``.
    The same seed gives the same choices in both builds.
    """

    __slots__ = ("_buf", "_end", "_pos", "_rng", "_size")

    def __init__(self, seed: int | random.Random, *, buffer: int = _DRAW_BYTES) -> None:
        if isinstance(seed, random.Random):
            rng = seed
        elif isinstance(seed, int) and not isinstance(seed, bool):
            rng = random.Random(seed)
        else:
            raise TypeError(f"Draws needs an int seed or a random.Random, not {seed!r}")
        if not isinstance(buffer, int) or buffer < _HAND_BYTES or buffer % 4:
            raise ValueError(f"buffer must be a multiple of 4 bytes, at least {_HAND_BYTES}")
        self._rng = rng
        self._size = buffer
        self._buf = b""
        self._pos = 0
        self._end = 0
        self._refill()

    def below(self, n: int) -> int:
        """A uniformly random integer in ``[0, n)``, ``1 <= n <= 64``."""
        if not 1 <= n <= 64:
            raise ValueError(f"below({n}): n must be in 1..64")
        limit = _LIMIT[n]
        while True:
            if self._pos + 2 > len(self._buf):
                self._refill()
            i = self._pos
            buf = self._buf
            m = (buf[i] | buf[i + 1] << 8) * n
            self._pos = i + 2
            if m & 0xFFFF >= limit:
                return m >> 16

    def _redraw(self, pos: int, n: int) -> int:
        """A loop's inline draw that ended at ``pos`` was rejected: draw again
        (:meth:`below`), then keep a section's reserve ahead."""
        self._pos = pos
        k = self.below(n)
        self._reserve()
        return k

    def _reserve(self) -> None:
        """Make room for the next section's inline draws (:data:`_RESERVE`)."""
        if self._pos > self._end:
            self._refill()

    def _refill(self) -> None:
        # The bytes not yet drawn stay first: the stream goes on unbroken.
        self._buf = self._buf[self._pos :] + self._rng.randbytes(self._size)
        self._pos = 0
        self._end = len(self._buf) - _RESERVE


class _Hand:
    """A seat's cards in the fast loops, packed; an object, so that storing a
    hand boxes nothing (a list of ints would allocate on every card)."""

    __slots__ = ("cards",)

    def __init__(self, cards: i64) -> None:
        self.cards: i64 = cards


def _pack(hand: int) -> i64:
    """A hand mask (16 bits a suit) packed 15 bits a suit (rank 15 is lost)."""
    return (
        hand & 0x7FFF
        | (hand >> 1 & 0x7FFF << 15)
        | (hand >> 2 & 0x7FFF << 30)
        | (hand >> 3 & 0x7FFF << 45)
    )


def _unpack(cards: i64) -> int:
    """The hand mask of a packed hand (the inverse of :func:`_pack`)."""
    return int(
        cards & 0x7FFF
        | (cards & 0x7FFF << 15) << 1
        | (cards & 0x7FFF << 30) << 2
        | (cards >> 45) << 48
    )


def _fast_playout(  # noqa: PLR0915 - one inlined loop, on purpose
    hands: list[_Hand],
    leader: int,
    broken: bool,
    won: list[int],
    d: Draws,
    held: int,
    trumping: bool,
    tricks: int = -1,
) -> None:
    """Play random legal cards from the start of a trick, each seat holding
    ``held`` cards: ``tricks`` tricks, or (-1) to the end of the hand.

    The hot loop of the module, written for speed: each draw is read inline
    from ``d``'s buffer (a rejected one goes through :meth:`Draws._redraw`),
    cards are picked as the module notes say, lowest suit first.  ``won``
    counts tricks.  ``trumping``: only a spade played by a void seat breaks
    spades, not a spade lead (a void seat's spade is always a trump: a seat
    void in the suit led holds no spade when spades are led).

    A card's bit is ``(1 << rank) << suit_base``, never ``1 << card``: mypyc
    (2.4.1) writes ``1 << x`` of an ``i64`` as a shift of a C ``int``, wrong
    past bit 31; the rank's shift stays below that, the second is 64-bit.
    """
    count = _COUNT
    select = _SELECT
    limit = _LIMIT
    n = len(hands)
    buf = d._buf
    i: i64 = d._pos
    left: i64 = held  # the cards each seat holds at the start of a trick
    stop: i64 = 0 if tricks < 0 else held - tricks
    while left > stop:
        if i > d._end:
            d._pos = i
            d._refill()
            buf = d._buf
            i = 0
        # The lead: any card once spades are broken, else a non-spade if held.
        h = hands[leader]
        p: i64 = h.cards
        legal: i64 = left
        if not broken:
            spades: i64 = count[p >> 45]
            if spades < left:
                legal = left - spades
        m: i64 = (buf[i] | buf[i + 1] << 8) * legal
        i += 2
        if m & 0xFFFF < limit[legal]:
            k: i64 = d._redraw(i, legal)
            buf = d._buf
            i = d._pos
        else:
            k = m >> 16
        base: i64 = 0
        v: i64 = p & 0x7FFF
        c: i64 = count[v]
        while k >= c:
            k -= c
            base += 15
            v = p >> base & 0x7FFF
            c = count[v]
        rank: i64 = select[v << 4 | k]
        best: i64 = base + rank
        h.cards = p ^ (1 << rank) << base  # two shifts: see the docstring
        if base == 45 and not trumping:
            broken = True
        win = leader
        seat = leader
        for _j in range(n - 1):
            seat = seat + 1 if seat + 1 < n else 0
            h = hands[seat]
            p = h.cards
            v = p >> base & 0x7FFF
            if v:  # follow suit: a higher card of the suit led takes the lead
                legal = count[v]
                m = (buf[i] | buf[i + 1] << 8) * legal
                i += 2
                if m & 0xFFFF < limit[legal]:
                    k = d._redraw(i, legal)
                    buf = d._buf
                    i = d._pos
                else:
                    k = m >> 16
                rank = select[v << 4 | k]
                r: i64 = base + rank
                h.cards = p ^ (1 << rank) << base
                if r > best:
                    best = r
                    win = seat
            else:  # void: any card; only a spade can win
                m = (buf[i] | buf[i + 1] << 8) * left
                i += 2
                if m & 0xFFFF < limit[left]:
                    k = d._redraw(i, left)
                    buf = d._buf
                    i = d._pos
                else:
                    k = m >> 16
                b: i64 = 0
                v = p & 0x7FFF
                c = count[v]
                while k >= c:
                    k -= c
                    b += 15
                    v = p >> b & 0x7FFF
                    c = count[v]
                rank = select[v << 4 | k]
                r = b + rank
                h.cards = p ^ (1 << rank) << b
                if b == 45:
                    broken = True
                    if r > best:  # above a side suit's card, or a higher spade
                        best = r
                        win = seat
        leader = win
        won[win] = won[win] + 1
        left -= 1
    d._pos = i


def _deal_packed(rules: Ruleset, d: Draws) -> list[_Hand]:  # noqa: PLR0915 - inlined, as the playout
    """A uniformly random deal, packed hands by seat.

    Seat by seat, each card is drawn uniformly from those not yet dealt (the
    ``k``-th lowest of them, ``k`` one draw of ``d``), which makes every deal
    equally likely.  When the whole deck is dealt the last seat takes what is
    left, undrawn; with two players the 26 cards left are out of play.

    The four suits are written out, each with its count of cards left, where
    :func:`_fast_playout` walks the suits of a hand: a deal draws from up to 54
    cards, and the walk's count look-ups made the pure build's deal markedly
    slower and the compiled one no faster.
    """
    count = _COUNT
    select = _SELECT
    limit = _LIMIT
    deck: i64 = _pack(rules.deck_mask)
    d0: i64 = deck & 0x7FFF
    d1: i64 = deck >> 15 & 0x7FFF
    d2: i64 = deck >> 30 & 0x7FFF
    d3: i64 = deck >> 45
    n0: i64 = count[d0]
    n1: i64 = count[d1]
    n2: i64 = count[d2]
    left: i64 = n0 + n1 + n2 + count[d3]
    seats = rules.players
    size: i64 = rules.hand_size
    drawn = seats - 1 if seats * size == left else seats
    d._reserve()
    buf = d._buf
    i: i64 = d._pos
    hands: list[_Hand] = []
    for _seat in range(drawn):
        h: i64 = 0
        for _j in range(size):
            m: i64 = (buf[i] | buf[i + 1] << 8) * left
            i += 2
            if m & 0xFFFF < limit[left]:
                k: i64 = d._redraw(i, left)
                buf = d._buf
                i = d._pos
            else:
                k = m >> 16
            left -= 1
            if k < n0:
                rank: i64 = select[d0 << 4 | k]
                bit: i64 = 1 << rank  # below bit 15: see _fast_playout on shifts
                d0 ^= bit
                h |= bit
                n0 -= 1
                continue
            k -= n0
            if k < n1:
                rank = select[d1 << 4 | k]
                bit = 1 << rank
                d1 ^= bit
                h |= bit << 15
                n1 -= 1
                continue
            k -= n1
            if k < n2:
                rank = select[d2 << 4 | k]
                bit = 1 << rank
                d2 ^= bit
                h |= bit << 30
                n2 -= 1
                continue
            rank = select[d3 << 4 | (k - n2)]
            bit = 1 << rank
            d3 ^= bit
            h |= bit << 45
        hands.append(_Hand(h))
    d._pos = i
    if drawn < seats:
        hands.append(_Hand(d0 | d1 << 15 | d2 << 30 | d3 << 45))
    return hands


def deal_random(rules: Ruleset, rng: random.Random | Draws) -> list[int]:
    """A uniformly random deal for ``rules``: hand masks by seat.

    Drawn by :class:`Draws` (from ``rng`` itself, or a ``Draws`` over a
    ``random.Random``), seat by seat, each card uniformly from those not yet
    dealt.  Not the engine's seeded deal: see ``deck.deal`` for that.  With
    two players it is what a draw could leave: 13 cards each, the other 26
    out of play.
    """
    d = rng if isinstance(rng, Draws) else Draws(rng, buffer=_HAND_BYTES)
    return [_unpack(h.cards) for h in _deal_packed(rules, d)]


def random_bids(rules: Ruleset, rnd: Rnd | Draws) -> list[int]:
    """A uniformly random regular bid for every seat (never a blind nil).
    Under suicide, a uniformly random partner of each side bids nil and the
    other a uniformly random 4 or more, which is legal in any bidding order.
    Each choice is one draw of ``rnd`` (see :func:`playout_random`)."""
    low = rules.min_bid
    if rules.suicide:
        bids = [0] * rules.players
        span = rules.hand_size + 1 - SUICIDE_MIN_BID
        for side in range(rules.sides):
            seats = rules.seats_of(side)
            bids[seats[_pick(rnd, len(seats))]] = SUICIDE_MIN_BID + _pick(rnd, span)
        return bids
    span = rules.hand_size + 1 - low
    return [low + _pick(rnd, span) for _ in range(rules.players)]


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


def random_hand(
    rules: Ruleset,
    rng: random.Random | Draws,
    dealer: int = 0,
    scores: Sequence[int] | None = None,
    bags: Sequence[int] | None = None,
) -> tuple[SideScore, ...]:
    """Deal, bid and play one full hand at random, and score it.

    Every choice is a draw of a :class:`Draws` (``rng`` itself, or one over the
    ``random.Random``; pass a ``Draws`` when playing many hands): the deal is
    :func:`deal_random`, the bids :func:`random_bids` (no blind nil, so no
    exchange), with ``auction_trump`` a uniformly random trump suit (clubs to
    spades, named after the bids), every card a uniformly random legal play,
    and the result is :func:`spades_engine.scoring.score_hand` from ``scores``
    and ``bags`` before the hand (zero when not given).
    """
    d = rng if isinstance(rng, Draws) else Draws(rng, buffer=_HAND_BYTES)
    hands = _deal_packed(rules, d)
    bids = random_bids(rules, d)
    players = rules.players
    leader = _first_leader_packed(rules, hands, dealer)
    trumping = rules.spades_broken is _TRUMPING
    trump = d.below(4) if rules.auction_trump else 3
    if trump == 3:
        won = [0] * players
        _fast_playout(hands, leader, False, won, d, rules.hand_size, trumping)
    else:
        st = SimState([_unpack(h.cards) for h in hands], leader, trumping=trumping, trump=trump)
        _play_cards(st, d)
        won = st.tricks_won
    if scores is None or bags is None:
        zeros = _ZEROS[rules.sides]
        scores = zeros if scores is None else scores
        bags = zeros if bags is None else bags
    return score_hand(rules, bids, _NO_BLIND[players], won, scores, bags)


# Shared, not made per hand: random_hand runs millions of times.
_ZEROS: Final = tuple((0,) * n for n in range(7))
_NO_BLIND: Final = tuple((False,) * n for n in range(7))


def _first_leader_packed(rules: Ruleset, hands: list[_Hand], dealer: int) -> int:
    """:func:`first_leader` of a packed deal."""
    lead = rules.first_lead
    if lead is _DEALER:
        return dealer
    if lead is _TWO_OF_CLUBS:
        for seat, h in enumerate(hands):
            if h.cards & 1:  # the two of clubs is card 0: clubs, rank 0
                return seat
    return (dealer + 1) % rules.players
