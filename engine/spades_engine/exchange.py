"""The blind nil exchange: the blind nil bidder and the partner each pass cards
face down to the other.  Choices are simultaneous, so neither sees what it
will receive before choosing what to give.

With the optional form (``blind_nil_exchange_optional``) the exchange phase
opens with the decisions: every blind nil bidder says, publicly and in any
order, whether its side exchanges.  A side exchanges when each of its blind
nil bidders (one, or both partners) said yes.  Once every decision is in, the
sides that exchange pass as in the compulsory form; when none does, play
begins."""

from __future__ import annotations

from itertools import combinations
from typing import Any

from .actions import EXCHANGE, NO_EXCHANGE, Action, ExchangeDecision, PassCards
from .cards import Card, card_name, cards_of
from .errors import IllegalAction, Reason, show
from .events import (
    EVERYONE,
    CardsChosen,
    CardsPassed,
    Event,
    ExchangeDecided,
    ExchangeStarted,
    to_team,
)
from .state import MatchState


def exchange_seats(st: MatchState) -> tuple[int, ...]:
    """Both partners of every team with a blind nil bid, when the table exchanges."""
    r, h = st.rules, st.hand
    if not (r.blind_nil and r.blind_nil_exchange and r.partnerships):
        return ()
    seats: set[int] = set()
    for seat in range(r.players):
        if h.blind[seat]:
            seats.update((seat, (seat + 2) % 4))
    return tuple(sorted(seats))


def open_exchange(st: MatchState, seats: tuple[int, ...]) -> list[Event]:
    """Bidding has closed with ``seats`` to exchange: the passing starts, or with
    the optional form the blind nil bidders' decisions."""
    st.hand.to_act = -1
    if st.rules.blind_nil_exchange_optional:
        st.hand.exchange_deciders = tuple(s for s in seats if st.hand.blind[s])
        return []
    return begin_exchange(st, seats)


def begin_exchange(st: MatchState, seats: tuple[int, ...]) -> list[Event]:
    st.hand.exchange_seats = seats
    st.hand.to_act = -1
    return [ExchangeStarted(EVERYONE, seats, st.rules.blind_nil_exchange)]


def exchange_done(st: MatchState) -> bool:
    """Every decision is in and every seat that passes has chosen its cards."""
    h = st.hand
    return len(h.exchange_decisions) == len(h.exchange_deciders) and len(h.exchange_chosen) == len(
        h.exchange_seats
    )


def _deciding(st: MatchState) -> bool:
    h = st.hand
    return len(h.exchange_decisions) < len(h.exchange_deciders)


def legal_exchange_actions(st: MatchState, seat: int) -> list[Action]:
    h = st.hand
    if _deciding(st):
        if seat in h.exchange_deciders and seat not in h.exchange_decisions:
            return [EXCHANGE, NO_EXCHANGE]
        return []
    if seat not in h.exchange_seats or seat in h.exchange_chosen:
        return []
    cards = cards_of(h.hands[seat])
    return [PassCards(combo) for combo in combinations(cards, st.rules.blind_nil_exchange)]


def apply_decision(st: MatchState, seat: int, action: ExchangeDecision) -> list[Event]:
    h = st.hand
    if not st.rules.blind_nil_exchange_optional:
        raise IllegalAction(
            Reason.EXCHANGE_NOT_OPTIONAL,
            "the blind nil exchange is compulsory at this table: pass your cards",
            seat,
        )
    given: Any = action  # its field as built (see actions._python_class)
    exchange: object = given.exchange  # anything: a caller may build ExchangeDecision(1)
    if type(exchange) is not bool:
        raise IllegalAction(
            Reason.UNKNOWN_ACTION,
            f"an exchange decision is true or false, not {show(exchange)}",
            seat,
        )
    if seat not in h.exchange_deciders:
        raise IllegalAction(
            Reason.NOT_EXCHANGE_DECIDER,
            "only a blind nil bidder decides whether its side exchanges",
            seat,
        )
    if seat in h.exchange_decisions:
        raise IllegalAction(
            Reason.ALREADY_DECIDED, "you have already decided whether to exchange", seat
        )
    h.exchange_decisions[seat] = exchange
    events: list[Event] = [ExchangeDecided(EVERYONE, seat, exchange)]
    if not _deciding(st):
        # a side exchanges when each of its blind nil bidders said yes
        side_of = st.rules.side_of
        declined = {side_of(s) for s, yes in h.exchange_decisions.items() if not yes}
        seats: set[int] = set()
        for s in h.exchange_deciders:
            if side_of(s) not in declined:
                seats.update((s, (s + 2) % 4))
        if seats:
            events.extend(begin_exchange(st, tuple(sorted(seats))))
    return events


def apply_pass(st: MatchState, seat: int, action: PassCards) -> list[Event]:
    h, k = st.hand, st.rules.blind_nil_exchange
    if _deciding(st) and (seat in h.exchange_deciders or (seat + 2) % 4 in h.exchange_deciders):
        raise IllegalAction(
            Reason.EXCHANGE_NOT_DECIDED,
            "the blind nil bidders have not all decided whether to exchange",
            seat,
        )
    if seat not in h.exchange_seats:
        raise IllegalAction(Reason.NOT_IN_EXCHANGE, "you are not part of this exchange", seat)
    if seat in h.exchange_chosen:
        raise IllegalAction(Reason.ALREADY_PASSED, "you have already chosen cards to pass", seat)
    given: Any = action  # its field as built (see actions._python_class)
    cards: object = given.cards  # anything: a caller may build PassCards(None)
    if not isinstance(cards, tuple | list):
        raise IllegalAction(
            Reason.WRONG_PASS_COUNT, f"pass a tuple of {k} cards, not {type(cards).__name__}", seat
        )
    mask = 0
    for c in cards:
        if type(c) is not int or not 0 <= c < 64:
            raise IllegalAction(Reason.CARD_NOT_IN_HAND, f"{show(c)} is not a card", seat)
        mask |= 1 << c
    if len(cards) != k or mask.bit_count() != k:
        raise IllegalAction(Reason.WRONG_PASS_COUNT, f"pass exactly {k} different cards", seat)
    missing = mask & ~h.hands[seat]
    if missing:
        names = ", ".join(card_name(c) for c in cards_of(missing))
        raise IllegalAction(Reason.CARD_NOT_IN_HAND, f"you do not hold {names}", seat)
    h.exchange_chosen[seat] = mask
    events: list[Event] = [CardsChosen(EVERYONE, seat)]
    if len(h.exchange_chosen) == len(h.exchange_seats):
        events.extend(_swap(st))
    return events


def _swap(st: MatchState) -> list[Event]:
    h = st.hand
    events: list[Event] = []
    for giver in h.exchange_seats:
        taker = (giver + 2) % 4
        given = h.exchange_chosen[giver]
        h.hands[giver] &= ~given
        cards: tuple[Card, ...] = tuple(cards_of(given))
        h.received[taker] = cards
        events.append(CardsPassed(to_team(giver & 1), giver, taker, cards))
    for taker, cards in h.received.items():
        for c in cards:
            h.hands[taker] |= 1 << c
    return events
