"""The bidding round: bids, the blind nil choice, and looking at one's cards."""

from __future__ import annotations

from typing import Any

from .actions import BIDS, BLIND_NIL, LOOK, Action, Bid, BlindNil, Look
from .cards import cards_of
from .errors import IllegalAction, Reason
from .events import EVERYONE, BiddingClosed, BidMade, Event, HandShown, LookedAtCards, to_seat
from .ruleset import SUICIDE_MIN_BID
from .state import MatchState


def legal_bidding_actions(st: MatchState, seat: int) -> list[Action]:
    h = st.hand
    if h.face_down[seat] and h.bids[seat] is None:
        if seat != h.to_act:
            return [LOOK]
        return [BLIND_NIL, LOOK] if _suicide_problem(st, seat, 0) is None else [LOOK]
    if seat != h.to_act:
        return []
    top = st.rules.tricks_per_hand
    if st.rules.suicide:
        return [BIDS[n] for n in range(top + 1) if _suicide_problem(st, seat, n) is None]
    return list(BIDS[st.rules.min_bid : top + 1])


def _suicide_problem(st: MatchState, seat: int, n: int) -> str | None:
    """Why a bid of ``n`` tricks (0: nil or blind nil) breaks the suicide rule
    for ``seat``, or None when it does not (or the table does not play it).

    In each side one partner bids nil and the other at least 4: the first of
    the two to bid chooses, the second takes the other role."""
    rules = st.rules
    if not rules.suicide:
        return None
    partner = rules.partner_of(seat)
    assert partner is not None  # suicide needs partnerships
    other = st.hand.bids[partner]
    if other is None:
        if 0 < n < SUICIDE_MIN_BID:
            return (
                "suicide: one partner of each side bids nil and the other at least "
                f"{SUICIDE_MIN_BID}; you bid first of your side, so bid nil or "
                f"{SUICIDE_MIN_BID} or more"
            )
    elif other == 0:
        if n < SUICIDE_MIN_BID:
            what = "blind nil" if st.hand.blind[partner] else "nil"
            return (
                f"suicide: your partner bid {what}, so you must bid at least "
                f"{SUICIDE_MIN_BID} (no nil, no blind nil)"
            )
    elif n != 0:
        return f"suicide: your partner bid {other}, so you must bid nil"
    return None


def apply_look(st: MatchState, seat: int, _action: Look) -> list[Event]:
    h = st.hand
    if not h.face_down[seat]:
        raise IllegalAction(Reason.ALREADY_LOOKED, "you can already see your cards", seat)
    if h.bids[seat] is not None:
        raise IllegalAction(
            Reason.ALREADY_LOOKED,
            "you bid blind nil: your cards stay face down until bidding closes",
            seat,
        )
    h.face_down[seat] = False
    return [
        LookedAtCards(EVERYONE, seat),
        HandShown(to_seat(seat), seat, tuple(cards_of(h.hands[seat]))),
    ]


def apply_blind_nil(st: MatchState, seat: int, _action: BlindNil) -> list[Event]:
    h = st.hand
    _check_turn(st, seat)
    if not st.rules.blind_nil:
        raise IllegalAction(
            Reason.BLIND_NIL_NOT_ALLOWED, "blind nil is not played at this table", seat
        )
    if not h.face_down[seat]:
        raise IllegalAction(
            Reason.BLIND_NIL_NOT_ALLOWED,
            "blind nil must be bid before looking at your cards, and only when your side "
            f"trails by at least {st.rules.blind_nil_deficit} points",
            seat,
        )
    problem = _suicide_problem(st, seat, 0)
    if problem is not None:
        raise IllegalAction(Reason.SUICIDE_BID, problem, seat)
    h.bids[seat] = 0
    h.blind[seat] = True
    return [BidMade(EVERYONE, seat, 0, True), *_advance(st)]


def apply_bid(st: MatchState, seat: int, action: Bid) -> list[Event]:
    h = st.hand
    _check_turn(st, seat)
    if h.face_down[seat]:
        raise IllegalAction(
            Reason.LOOK_AT_CARDS_FIRST,
            "your cards are face down: look at them first, or bid blind nil",
            seat,
        )
    given: Any = action  # its field as built: any value (see actions._python_class)
    n, top = given.tricks, st.rules.tricks_per_hand
    if type(n) is not int or not 0 <= n <= top:
        raise IllegalAction(
            Reason.BID_OUT_OF_RANGE,
            f"a bid is a whole number from {st.rules.min_bid} to {top}",
            seat,
        )
    if n == 0 and not st.rules.nil_allowed:
        raise IllegalAction(
            Reason.NIL_NOT_ALLOWED, "nil is not allowed: the minimum bid is 1", seat
        )
    problem = _suicide_problem(st, seat, n)
    if problem is not None:
        raise IllegalAction(Reason.SUICIDE_BID, problem, seat)
    h.bids[seat] = n
    return [BidMade(EVERYONE, seat, n, False), *_advance(st)]


def _check_turn(st: MatchState, seat: int) -> None:
    h = st.hand
    if h.trump_namer >= 0:  # auction trump: bids are locked, the namer is to act
        raise IllegalAction(
            Reason.BIDDING_CLOSED, "bidding has closed: the highest bidder names trump", seat
        )
    if seat != h.to_act:
        raise IllegalAction(
            Reason.NOT_YOUR_TURN, f"it is seat {h.to_act}'s turn to bid, not seat {seat}'s", seat
        )


def _advance(st: MatchState) -> list[Event]:
    """Pass the turn on, or close the bidding once every seat has bid."""
    h = st.hand
    n = st.rules.players
    h.to_act = (h.to_act + 1) % n
    if h.bids[h.to_act] is None:
        return []
    bids = tuple(b if b is not None else 0 for b in h.bids)
    contracts = tuple(
        sum(bids[s] for s in st.rules.seats_of(side)) for side in range(st.rules.sides)
    )
    events: list[Event] = [BiddingClosed(EVERYONE, bids, contracts)]
    for seat in range(n):
        if h.face_down[seat]:  # a blind nil bidder sees its cards once bids are locked
            h.face_down[seat] = False
            events.append(HandShown(to_seat(seat), seat, tuple(cards_of(h.hands[seat]))))
    return events
