"""Two players' draw (RULES.md 3.1, seed 002's two-player game).

There is no deal: the stock (the whole deck, shuffled from the hand's seed)
lies face down and the players take turns, the non-dealer first.  At a turn
the player sees the top card and keeps it and discards the next, or discards
it and keeps the next; it sees both, the opponent neither.  After 26 turns
each holds 13 cards, the 26 discards are out of play, and bidding opens.
"""

from __future__ import annotations

from typing import Any

from .actions import DRAW_DISCARD, DRAW_KEEP, Action, Draw
from .cards import Card, cards_of
from .deck import deck_cards, shuffled
from .errors import IllegalAction, Reason, show
from .events import EVERYONE, CardsDrawn, DrawTaken, Event, HandShown, to_seat
from .state import MatchState, Phase

_DRAW_ACTIONS: list[Action] = [DRAW_KEEP, DRAW_DISCARD]


def stock_order(deck_mask: int, seed: int) -> tuple[Card, ...]:
    """The stock, top card first: the deck shuffled as a deal would be."""
    return tuple(shuffled(deck_cards(deck_mask), seed))


def stock_top(st: MatchState) -> Card | None:
    """The card the seat to draw is looking at (None outside the draw)."""
    h = st.hand
    if st.phase is not Phase.DRAW or h.drawn >= len(h.stock):
        return None
    return h.stock[h.drawn]


def legal_draw_actions(st: MatchState, seat: int) -> list[Action]:
    return list(_DRAW_ACTIONS) if seat == st.hand.to_act else []


def apply_draw(st: MatchState, seat: int, action: Draw) -> list[Event]:
    """One turn of the draw; when the stock is gone, the bidding opens."""
    h = st.hand
    if seat != h.to_act:
        raise IllegalAction(Reason.NOT_YOUR_TURN, f"seat {h.to_act} draws now, not {seat}", seat)
    given: Any = action  # its field as built: any value (see actions._python_class)
    keep: object = given.keep
    if type(keep) is not bool:
        raise IllegalAction(
            Reason.UNKNOWN_ACTION, f"Draw(keep={show(keep)}): keep is true or false", seat
        )
    top, nxt = h.stock[h.drawn], h.stock[h.drawn + 1]
    kept, discarded = (top, nxt) if keep else (nxt, top)
    h.hands[seat] |= 1 << kept
    h.discarded[seat] |= 1 << discarded
    h.drawn += 2
    events: list[Event] = [
        CardsDrawn(to_seat(seat), seat, kept, discarded),
        DrawTaken(EVERYONE, seat),
    ]
    n = st.rules.players
    if h.drawn < len(h.stock):
        h.to_act = (seat + 1) % n
        return events
    h.dealt = tuple(h.hands)
    h.to_act = (h.dealer + 1) % n
    st.phase = Phase.BIDDING
    for s in range(n):
        events.append(HandShown(to_seat(s), s, tuple(cards_of(h.hands[s]))))
    return events
