"""Card counting from a seat's view: which cards are still out, who is void.

Everything here is derived from what the seat may see (``SeatView``): its own
hand, the cards played in the finished tricks of this hand and in the trick in
progress, and the cards it passed in a blind nil exchange.  "Out" means held by
another seat: in the deck, not in this hand, not yet played.

Two depths of memory serve the bot levels:

* ``memory=False`` (Normal): only the trick on the table is remembered, so a
  card counts as out unless it is in the hand or in the current trick — the
  way a casual player judges "the ace is still somewhere".
* ``memory=True`` (Hard): every card played this hand is remembered, so are the
  voids players have shown (a seat that did not follow the suit led has none
  of it left), and the cards passed to the partner are known to be there.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..cards import SPADE_MASK, SPADES, SUIT_MASKS
from ..view import SeatView
from .cardsets import above, count


class CardCount:
    """What one seat knows about the cards it cannot see."""

    __slots__ = ("hand", "known_partner", "memory", "opp_out", "out", "played", "voids")

    def __init__(self, view: SeatView, hand: int, *, memory: bool) -> None:
        rules = view.rules
        n = rules.players
        trick = 0
        for c in view.trick:
            trick |= 1 << c
        self.memory = memory
        self.hand = hand
        self.voids: list[int] = [0] * n
        """Per seat, a 4-bit mask of the suits that seat has shown it lacks."""
        self.known_partner = 0
        """Cards known to be in the partner's hand (passed to it, not yet played)."""
        if memory:
            played = trick
            for t in view.tricks:
                _note_voids(self.voids, t.leader, t.cards, n)
                for c in t.cards:
                    played |= 1 << c
            _note_voids(self.voids, view.leader, view.trick, n)
            partner = rules.partner_of(view.seat) if view.seat is not None else None
            if partner is not None:
                for c in view.passed:
                    self.known_partner |= 1 << c
                self.known_partner &= ~played
        else:
            played = trick
        self.played = played
        discards = 0  # two players' draw: the viewer's discards are out of play
        for c in view.discards:
            discards |= 1 << c
        self.out = rules.deck_mask & ~hand & ~played & ~discards
        """Cards some other seat may hold."""
        self.opp_out = self.out & ~self.known_partner
        """Cards an opponent may hold (the out cards not known to be the partner's)."""
        for seat in range(n):  # a suit with no card out is lacked by everyone else
            if seat != view.seat:
                for s in range(4):
                    if not self.out & SUIT_MASKS[s]:
                        self.voids[seat] |= 1 << s

    # -- questions ---------------------------------------------------------------
    def higher_out(self, c: int) -> int:
        """Out cards of ``c``'s suit above ``c``."""
        return self.out & above(c)

    def is_master(self, c: int) -> bool:
        """No card of ``c``'s suit above it is out: it wins any trick of its suit
        that nobody trumps."""
        return not self.out & above(c)

    def is_void(self, seat: int, suit: int) -> bool:
        return bool(self.voids[seat] >> suit & 1)

    def may_hold(self, seat: int, suit: int) -> bool:
        return not self.voids[seat] >> suit & 1

    def out_in_suit(self, suit: int) -> int:
        return self.out & SUIT_MASKS[suit]

    def could_beat(self, c: int, led: int, seats: Sequence[int]) -> bool:
        """Whether any of ``seats`` (playing after ``c`` became the winning card of a
        trick led in ``led``) may beat it: with a higher card of the suit led, or
        by trumping a card that is not a spade."""
        if not seats:
            return False
        higher = self.opp_out & above(c)
        if c >> 4 == SPADES:
            if not higher:
                return False
            if led == SPADES:
                return any(self.may_hold(s, SPADES) for s in seats)
            return any(self.may_hold(s, SPADES) and self._may_lack(s, led, seats) for s in seats)
        if higher and any(self.may_hold(s, led) for s in seats):
            return True
        if not self.opp_out & SPADE_MASK:
            return False
        if not self.memory:  # a casual player fears only the voids it has seen on the table
            return any(self.is_void(s, led) for s in seats)
        return any(self.may_hold(s, SPADES) and self._may_lack(s, led, seats) for s in seats)

    def _may_lack(self, seat: int, suit: int, seats: Sequence[int]) -> bool:
        """Whether ``seat`` may have no card of ``suit`` left: shown void, or (for a
        casual count) always possible, or the suit is nearly gone."""
        if self.is_void(seat, suit):
            return True
        if not self.memory:
            return True
        return count(self.out & SUIT_MASKS[suit]) < 2 * len(seats)

    def masters(self, mask: int) -> int:
        """The cards of ``mask`` no out card of their suit can beat."""
        out = 0
        m = mask
        while m:
            lb = m & -m
            c = lb.bit_length() - 1
            if not self.out & above(c):
                out |= lb
            m ^= lb
        return out

    def sure_tricks(self) -> int:
        """A quick count of the tricks this hand can take by force: its masters,
        plus the spades it holds beyond every spade still out."""
        hand = self.hand
        masters = self.masters(hand)
        spare_spades = count(hand & SPADE_MASK & ~masters)
        long_spades = max(0, spare_spades - count(self.out & SPADE_MASK))
        return count(masters) + long_spades


def _note_voids(voids: list[int], leader: int, cards: Sequence[int], n: int) -> None:
    if len(cards) < 2:
        return
    led = cards[0] >> 4
    for i in range(1, len(cards)):
        if cards[i] >> 4 != led:
            voids[(leader + i) % n] |= 1 << led
