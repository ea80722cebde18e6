"""Card play for the Normal and Hard bots: one set of tactics, two depths.

Normal plays with ``CardCount(memory=False)`` (it judges cards by its hand and
the trick on the table) and no plan beyond its own side's contract; Hard plays
with ``CardCount(memory=True)`` (every card played this hand, shown voids) and
``plan=True``: it also plays against the other side's contract and nil.

A decision goes through three questions, in order:

1. Am I a nil bidder who has taken no trick?  Then never win a trick if I can
   help it (:meth:`Tactics.nil_card`).
2. Is my partner such a nil?  Then cover it: take over its winning card, play
   high before it, lead high (:meth:`Tactics.cover_card`).
3. Otherwise play for my side's contract (:meth:`Tactics.contract_card`): win
   tricks while the side still needs some — cheaply, second hand low, third hand
   high, trumping when void, never overtaking a partner's sure winner — and
   duck once the contract is made, so the overtricks (bags) stay few.  Under
   trick-count scoring (``scoring="tricks"``) overtricks are free and every
   trick taken is one the other sides lack, so it keeps winning tricks.
"""

from __future__ import annotations

from ..cards import SPADE_MASK, SPADES, SUIT_MASKS
from ..ruleset import BagRule, Scoring, SetPenalty
from ..trick import trick_winner_index
from ..view import SeatView
from .cardsets import (
    NON_SPADE_MASK,
    above,
    beaters,
    below,
    count,
    high,
    highest_by_rank,
    low,
    lowest_by_rank,
)
from .counting import CardCount

_BAG_LIMITS = {BagRule.TEN_FOR_100: (10, 100), BagRule.FIVE_FOR_50: (5, 50)}


class Tactics:
    """One play decision: the view, the legal cards and what the seat knows."""

    __slots__ = (
        "after",
        "cc",
        "hand",
        "led",
        "legal",
        "n",
        "partner",
        "plan",
        "pos",
        "rules",
        "seat",
        "tricks_left",
        "view",
        "win_card",
        "win_seat",
    )

    def __init__(self, view: SeatView, hand: int, legal: int, cc: CardCount, *, plan: bool):
        assert view.seat is not None
        self.view = view
        self.rules = view.rules
        self.n = n = view.rules.players
        self.seat = seat = view.seat
        self.partner = view.rules.partner_of(seat)
        self.hand = hand
        self.legal = legal
        self.cc = cc
        self.plan = plan
        self.pos = pos = len(view.trick)
        self.led = view.led_suit if pos else -1
        self.after = [(seat + k) % n for k in range(1, n - pos)]
        self.tricks_left = view.rules.tricks_per_hand - len(view.tricks)
        self.win_card: int = -1
        self.win_seat = -1
        if pos:
            i = trick_winner_index(view.trick)
            self.win_card = view.trick[i]
            self.win_seat = (view.leader + i) % n

    # -- facts -----------------------------------------------------------------------
    def nil_alive(self, seat: int) -> bool:
        return self.view.bids[seat] == 0 and self.view.tricks_won[seat] == 0

    def opponents_after(self) -> list[int]:
        return [s for s in self.after if s != self.partner]

    def side_need(self) -> int:
        """Tricks my side still needs for its contract (nil bids count zero)."""
        r = self.rules
        side = r.side_of(self.seat)
        seats = r.seats_of(side)
        contract = sum(self.view.bids[s] or 0 for s in seats)
        taken = sum(self.view.tricks_won[s] for s in seats)
        return contract - taken

    # -- the decision ------------------------------------------------------------------
    def choose(self) -> int:
        if self.nil_alive(self.seat):
            return self.nil_card()
        if self.partner is not None and self.nil_alive(self.partner):
            c = self.cover_card()
            if c >= 0:
                return c
        return self.contract_card()

    # -- playing a nil -------------------------------------------------------------------
    def nil_card(self) -> int:
        legal = self.legal
        if self.pos == 0:
            return self.lead_to_lose(legal)
        safe = legal & ~beaters(legal, self.win_card)
        if safe:
            if self.led >= 0 and safe & SUIT_MASKS[self.led]:
                return high(safe & SUIT_MASKS[self.led])  # the highest card that still loses
            return self.most_dangerous(safe)
        # every card wins for now: the lowest, hoping someone plays over it
        if self.after:
            return self.cheapest(legal)
        return highest_by_rank(legal)  # the trick is lost anyway: shed the best card

    def most_dangerous(self, mask: int) -> int:
        """The card of ``mask`` most likely to win a trick later: fewest higher
        cards out, then highest."""
        best, best_key = -1, (0, 0)
        m = mask
        while m:
            lb = m & -m
            c = lb.bit_length() - 1
            m ^= lb
            key = (-count(self.cc.higher_out(c)), c & 15)
            if best < 0 or key > best_key:
                best, best_key = c, key
        return best

    def lead_to_lose(self, legal: int) -> int:
        """A lead another seat will most likely beat: the lowest card of a suit with
        many higher cards out (and few lower ones), in a suit others still hold."""
        cc = self.cc
        others = [s for s in range(self.n) if s != self.seat]
        best, best_key = -1, (0.0, 0)
        for s in range(4):
            chunk = legal & SUIT_MASKS[s]
            if not chunk:
                continue
            c = low(chunk)
            higher = count(cc.higher_out(c))
            lower = count(cc.out & below(c))
            key = (higher - 0.5 * lower, -(c & 15))
            if not any(cc.may_hold(o, s) for o in others):
                key = (-99.0, -(c & 15))
            if best < 0 or key > best_key:
                best, best_key = c, key
        return best

    # -- covering a partner's nil ----------------------------------------------------------
    def cover_card(self) -> int:
        """A card that keeps the partner's nil safe, or -1 when the trick needs no
        cover (the contract play decides)."""
        partner = self.partner
        assert partner is not None
        legal, cc = self.legal, self.cc
        if self.pos == 0:
            # a suit the partner lacks is safe to lead low; else lead my best card
            for s in range(3):
                if legal & SUIT_MASKS[s] and cc.is_void(partner, s) and cc.memory:
                    return low(legal & SUIT_MASKS[s])
            best, best_key = -1, (0, 0, 0)
            for s in range(4):
                chunk = legal & SUIT_MASKS[s]
                if chunk:
                    c = high(chunk)
                    key = (-count(cc.higher_out(c)), c & 15, s != SPADES)
                    if best < 0 or key > best_key:
                        best, best_key = c, key
            return best
        w = self.win_card
        if partner not in self.after:  # the partner has played to this trick
            if self.win_seat != partner:
                return -1
            b = beaters(legal, w)
            return self.cheapest(b) if b else -1
        # the partner plays after me: make the card to beat as high as I can
        if cc.is_master(w):
            return -1  # the partner can always play under it
        b = beaters(legal, w)
        if not b:
            return -1
        if self.led >= 0 and b & SUIT_MASKS[self.led]:
            return high(b & SUIT_MASKS[self.led])
        return low(b & SPADE_MASK)  # void: trump, the partner will not overtrump

    # -- playing for the contract -----------------------------------------------------------
    def contract_card(self) -> int:
        need = self.side_need()
        if self.rules.scoring is Scoring.TRICKS:
            # overtricks are free and every trick taken is one the others lack
            need = max(need, 1)
        if not self.plan:
            return self.win_trick() if need > 0 else self.duck_trick()
        # Hard: weigh the other side's contract and nil as well
        left = self.tricks_left
        opp_nils = [s for s in range(self.n) if self.is_opponent(s) and self.nil_alive(s)]
        if need > left:  # my side is set whatever happens: hurt the others for free
            if opp_nils:
                return self.attack_nil(opp_nils, want_win=False)
            return self.win_trick() if self.set_is_on(affordable_only=False) else self.duck_trick()
        if opp_nils and (need <= 0 or left - need >= 2):
            return self.attack_nil(opp_nils, want_win=need > 0)
        if need > 0:
            return self.win_trick()
        if self.set_is_on(affordable_only=True):
            return self.win_trick()
        return self.duck_trick()

    def is_opponent(self, s: int) -> bool:
        return s not in (self.seat, self.partner)

    def set_is_on(self, *, affordable_only: bool) -> bool:
        """Whether to keep taking tricks to set the other side: it still needs some,
        my side can plausibly take enough of the rest to stop it, and the bags
        that costs are affordable (or worth the swing)."""
        r = self.rules
        if not r.partnerships:
            return False  # against several opponents a set is nobody's to plan
        view = self.view
        opp = 1 - r.side_of(self.seat)
        opp_seats = r.seats_of(opp)
        opp_contract = sum(view.bids[s] or 0 for s in opp_seats)
        opp_need = opp_contract - sum(view.tricks_won[s] for s in opp_seats)
        left = self.tricks_left
        if opp_need <= 0 or opp_need > left:
            return False
        deny = left - opp_need + 1
        partner = self.partner
        potential = float(self.cc.sure_tricks())
        if partner is not None and view.bids[partner] != 0:
            potential += max(1, (view.bids[partner] or 0) - view.tricks_won[partner])
        if deny > potential:
            return False  # out of reach
        if not affordable_only or r.bag_rule is BagRule.OFF or r.scoring is Scoring.TRICKS:
            return True  # (trick-count scoring: overtricks are never bags)
        limit, penalty = _BAG_LIMITS[r.bag_rule]
        side = r.side_of(self.seat)
        overtricks = max(0, -self.side_need())
        if view.bags[side] + overtricks + deny < limit:
            return True
        swing = (20 if r.set_penalty is SetPenalty.TEN_PER_BID else 10) * opp_contract
        return swing > penalty

    def attack_nil(self, nils: list[int], *, want_win: bool) -> int:
        """Play to make an opponent's nil take a trick: lead low in suits it still
        holds, never beat its winning card, keep the card to beat low before it."""
        legal, cc = self.legal, self.cc
        if self.pos == 0:
            if want_win and self.tricks_left - self.side_need() < 3:
                return self.win_trick()
            best, best_key = -1, (0, 0)
            for s in range(4):
                chunk = legal & SUIT_MASKS[s]
                if chunk and any(cc.may_hold(x, s) for x in nils):
                    c = low(chunk)
                    key = (-(c & 15), count(cc.out & SUIT_MASKS[s]))
                    if best < 0 or key > best_key:
                        best, best_key = c, key
            return best if best >= 0 else self.win_trick() if want_win else self.duck_trick()
        if self.win_seat in nils:
            return self.lose_cheaply() if not beaters(legal, self.win_card) else self.duck_trick()
        if any(x in self.after for x in nils):
            # keep the card to beat low: play under it, or as low as possible
            safe = legal & ~beaters(legal, self.win_card)
            if safe:
                return self.lose_cheaply()
            return self.cheapest(legal)
        return self.win_trick() if want_win else self.duck_trick()

    # -- winning ----------------------------------------------------------------------------
    def win_trick(self) -> int:
        legal, cc = self.legal, self.cc
        if self.pos == 0:
            return self.lead_to_win()
        w, led = self.win_card, self.led
        opps_after = self.opponents_after()
        if self.partner is not None and self.win_seat == self.partner:
            if not cc.could_beat(w, led, opps_after):
                return self.lose_cheaply()  # the partner's card holds: no overtaking
            # overtake only with a card that is sure where the partner's is not
            sure = self.sure_winners(beaters(legal, w), opps_after)
            return self.cheapest(sure) if sure else self.lose_cheaply()
        b = beaters(legal, w)
        if not b:
            return self.lose_cheaply()
        if not opps_after:
            return self.cheapest(b)  # last to play: win as cheaply as possible
        sure = self.sure_winners(b, opps_after)
        if sure:
            return self.cheapest(sure)
        following = b & SUIT_MASKS[led]
        if self.partner is not None and self.partner in self.after:
            # second hand low; but trump when void, the trick is wanted
            return self.lose_cheaply() if following else self.cheapest(b)
        if following:
            top = self.top_of_sequence(following)
            if len(opps_after) >= 2 and cc.higher_out(top):
                return self.lose_cheaply()  # too many seats left to beat it: keep it
            return top  # third hand high
        return self.cheapest(b)

    def sure_winners(self, mask: int, seats: list[int]) -> int:
        """The cards of ``mask`` none of ``seats`` (playing later) can beat."""
        sure = 0
        m = mask
        while m:
            lb = m & -m
            if not self.cc.could_beat(lb.bit_length() - 1, self.led, seats):
                sure |= lb
            m ^= lb
        return sure

    def top_of_sequence(self, mask: int) -> int:
        """The highest card of ``mask`` played as the lowest of the cards touching it
        (no out card between them): holding K Q, the queen."""
        c = high(mask)
        out = self.cc.out
        while True:
            lower = mask & below(c)
            if not lower:
                return c
            nxt = high(lower)
            if out & below(c) & above(nxt):
                return c
            c = nxt

    def lead_to_win(self) -> int:
        legal, cc = self.legal, self.cc
        others = [s for s in range(self.n) if s != self.seat]
        opps = [s for s in others if s != self.partner]
        # a master in a side suit nobody can trump yet
        best, best_key = -1, (0, 0)
        for s in range(3):
            chunk = legal & SUIT_MASKS[s]
            if not chunk:
                continue
            c = high(chunk)
            if cc.is_master(c) and not cc.could_beat(c, s, opps):
                key = (count(cc.out & SUIT_MASKS[s]), c & 15)
                if best < 0 or key > best_key:
                    best, best_key = c, key
        if best >= 0:
            return best
        spades = legal & SPADE_MASK
        if spades and cc.is_master(high(spades)) and cc.opp_out & SPADE_MASK:
            return high(spades)
        # the partner can trump a suit it has shown void in
        p = self.partner
        if p is not None and cc.memory:
            for s in range(3):
                chunk = legal & SUIT_MASKS[s]
                if chunk and cc.is_void(p, s) and cc.may_hold(p, SPADES):
                    return low(chunk)
        side = legal & NON_SPADE_MASK
        if not side:
            return low(spades)
        # a short suit, to ruff it later with spare spades
        spare = count(self.hand & SPADE_MASK & ~cc.masters(self.hand))
        pick, pick_key = -1, (0, 0, 0)
        for s in range(3):
            chunk = side & SUIT_MASKS[s]
            if not chunk:
                continue
            length = count(chunk)
            top = high(chunk)
            bare_honour = length <= 2 and count(cc.higher_out(top)) <= 2
            shortness = 3 - length if spare and length <= 2 else 0
            key3 = (shortness - 3 * bare_honour, length, -(low(chunk) & 15))
            if pick < 0 or key3 > pick_key:
                pick, pick_key = low(chunk), key3
        return pick

    # -- losing -----------------------------------------------------------------------------
    def cheapest(self, mask: int) -> int:
        """The lowest card of ``mask`` by rank, sparing spades."""
        return lowest_by_rank(mask)

    def lose_cheaply(self) -> int:
        """Give up this trick at the least cost: follow with the lowest card, or
        discard the lowest card of a side suit (never a spade by choice)."""
        legal = self.legal
        if self.led >= 0 and legal & SUIT_MASKS[self.led]:
            return low(legal & SUIT_MASKS[self.led])
        side = legal & NON_SPADE_MASK
        if side:
            return self.discard_low(side)
        return low(legal)

    def discard_low(self, side: int) -> int:
        """The lowest side card, from the shortest suit among equals (towards a void)."""
        best, best_key = -1, (0, 0)
        for s in range(3):
            chunk = side & SUIT_MASKS[s]
            if chunk:
                c = low(chunk)
                key = (c & 15, count(self.hand & SUIT_MASKS[s]))
                if best < 0 or key < best_key:
                    best, best_key = c, key
        return best

    def duck_trick(self) -> int:
        """Avoid taking the trick: play the highest card that still loses, shed
        dangerous cards when void, and when the trick cannot be avoided take it with
        the highest card (or the lowest, if a later seat may still beat it)."""
        legal = self.legal
        if self.pos == 0:
            return self.lead_to_lose(legal)
        safe = legal & ~beaters(legal, self.win_card)
        if safe:
            if self.led >= 0 and safe & SUIT_MASKS[self.led]:
                return high(safe & SUIT_MASKS[self.led])
            return self.most_dangerous(safe)
        if self.after:
            return self.cheapest(legal)
        if self.led >= 0 and legal & SUIT_MASKS[self.led]:
            return high(legal & SUIT_MASKS[self.led])
        return high(legal)
