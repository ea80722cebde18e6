"""From a bot's decision to one of the view's legal actions, and the simple
choices every level shares (looking at one's cards, the blind nil exchange
and, where it is optional, whether to take it).

Whatever a level computes, the action it returns is always taken from
``view.legal_actions``: a wanted bid is moved to the nearest legal bid, a card
is looked up among the legal plays, a set of cards to pass among the legal
passes.
"""

from __future__ import annotations

from ..actions import (
    DRAW_DISCARD,
    DRAW_KEEP,
    Action,
    Bid,
    BlindNil,
    Draw,
    ExchangeDecision,
    Look,
    PassCards,
    Play,
)
from ..cards import SPADES, SUIT_MASKS
from ..view import SeatView
from .cardsets import count
from .hand_eval import nil_risk

DRAW_HONOUR_RANK = 9
"""Two players' draw: the least rank (the jack) the simple rule keeps in a side suit."""


def draws(view: SeatView) -> bool:
    """Whether the view's decision is a turn of the two players' draw."""
    return bool(view.legal_actions) and isinstance(view.legal_actions[0], Draw)


def keeps_top(top: int) -> bool:
    """The simple rule of the draw on a card: keep it when it is a spade (a
    joker included) or an honour (jack or higher)."""
    return top >> 4 == SPADES or top & 15 >= DRAW_HONOUR_RANK


def simple_draw(view: SeatView) -> Action:
    """Two players' draw by the rule of Easy, Normal and Hard (:func:`keeps_top`),
    which Expert's search also draws by when it is unsure: keep the top card
    when it is a spade or an honour, else take the next."""
    top = view.stock_top
    keep = top is not None and keeps_top(top)
    want = DRAW_KEEP if keep else DRAW_DISCARD
    return want if want in view.legal_actions else view.legal_actions[0]


SAFE_NIL_RISK = 0.5
"""A blind nil hand whose ``nil_risk`` is below this declines an optional
exchange (Normal and up): it has no dangerous card to shed, and the partner's
lowest cards could be higher than the ones it would give."""


class Decision:
    """The legal actions of a view sorted by kind, with cheap look-ups."""

    __slots__ = ("bids", "blind_nil", "decisions", "look", "passes", "plays", "view")

    def __init__(self, view: SeatView) -> None:
        if not view.legal_actions:
            raise ValueError(f"seat {view.seat} has no legal action now")
        self.view = view
        self.plays: dict[int, Action] = {}
        self.bids: dict[int, Action] = {}
        self.passes: list[PassCards] = []
        self.look: Action | None = None
        self.blind_nil: Action | None = None
        self.decisions: dict[bool, Action] = {}  # the optional exchange: take it or not
        for a in view.legal_actions:
            if isinstance(a, Play):
                self.plays[a.card] = a
            elif isinstance(a, Bid):
                self.bids[a.tricks] = a
            elif isinstance(a, PassCards):
                self.passes.append(a)
            elif isinstance(a, Look):
                self.look = a
            elif isinstance(a, BlindNil):
                self.blind_nil = a
            elif isinstance(a, ExchangeDecision):
                self.decisions[a.exchange] = a

    @property
    def hand(self) -> int:
        m = 0
        for c in self.view.hand or ():
            m |= 1 << c
        return m

    def play_mask(self) -> int:
        m = 0
        for c in self.plays:
            m |= 1 << c
        return m

    def play(self, card: int) -> Action:
        """The legal play of ``card``, or the first legal action if it is not one."""
        return self.plays.get(card, self.view.legal_actions[0])

    def bid(self, tricks: int) -> Action:
        """The legal bid nearest to ``tricks`` (ties to the higher bid).  A wish
        to take tricks is never moved to nil while a bid of 1 or more is legal:
        under suicide a hand worth 1 to 3 tricks that may not bid them bids 4
        (or nil only when nil is all that is left)."""
        if tricks in self.bids:
            return self.bids[tricks]
        if not self.bids:
            return self.view.legal_actions[0]
        options = [b for b in self.bids if b > 0] if tricks > 0 else []
        best = min(options or self.bids, key=lambda b: (abs(b - tricks), -b))
        return self.bids[best]

    def pass_cards(self, mask: int) -> Action:
        """The legal pass of exactly the cards of ``mask``, else the first legal action."""
        for a in self.passes:
            m = 0
            for c in a.cards:
                m |= 1 << c
            if m == mask:
                return a
        return self.view.legal_actions[0]


def decide_exchange(d: Decision, exchange: bool) -> Action:
    """The legal decision ``exchange``, else the other one."""
    return d.decisions.get(exchange) or next(iter(d.decisions.values()))


def wants_exchange(view: SeatView, hand: int) -> bool:
    """Whether a blind nil bidder takes an optional exchange: yes, unless its hand
    is already a safe nil (``nil_risk`` below :data:`SAFE_NIL_RISK`).  Passing
    its two most dangerous cards to the partner, who can use them, and getting
    low cards back is what makes most blind nils."""
    return nil_risk(hand, view.rules) >= SAFE_NIL_RISK


def exchange_pass(view: SeatView, hand: int, k: int) -> int:
    """The ``k`` cards to pass in a blind nil exchange.

    A nil bidder passes its most dangerous cards — the highest, spades first
    among equals — which are the partner's best winners.  The partner of a
    blind nil passes its lowest cards, sparing spades and taking the shorter
    suit among equals (towards a void it can trump), so the nil gets cards it
    can play under others."""
    seat = view.seat
    is_nil = seat is not None and view.bids[seat] == 0
    cards = []
    m = hand
    while m:
        lb = m & -m
        cards.append(lb.bit_length() - 1)
        m ^= lb
    if is_nil:
        cards.sort(key=lambda c: (c & 15, c >> 4), reverse=True)
    else:
        cards.sort(key=lambda c: (c & 15, c >> 4 == SPADES, _suit_length(hand, c)))
    mask = 0
    for c in cards[:k]:
        mask |= 1 << c
    return mask


def _suit_length(hand: int, c: int) -> int:
    return count(hand & SUIT_MASKS[c >> 4])
