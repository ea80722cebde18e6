"""A hand's life: the deal, and the scoring that closes it."""

from __future__ import annotations

from .cards import cards_of
from .deck import deal, hand_seed
from .draw import stock_order
from .events import EVERYONE, Event, HandScored, HandShown, HandStarted, MatchEnded, to_seat
from .scoring import blind_nil_eligible, match_winner, score_hand
from .state import HandState, MatchState, Phase


def deal_hand(st: MatchState, number: int, dealer: int) -> list[Event]:
    """Deal hand ``number`` and open its bidding; the explicit deals come first."""
    r = st.rules
    n = r.players
    if n == 2:
        return _open_draw(st, number, dealer)
    hands = (
        st.deals[number] if number < len(st.deals) else deal(r, hand_seed(st.seed, number), dealer)
    )
    face_down = [blind_nil_eligible(r, r.side_of(s), st.scores) for s in range(n)]
    st.hand = HandState(
        number=number,
        dealer=dealer,
        dealt=tuple(hands),
        hands=list(hands),
        face_down=face_down,
        bids=[None] * n,
        blind=[False] * n,
        tricks_won=[0] * n,
        to_act=(dealer + 1) % n,
    )
    st.phase = Phase.BIDDING
    events: list[Event] = [
        HandStarted(
            EVERYONE, number, dealer, r.hand_size, tuple(s for s in range(n) if face_down[s])
        )
    ]
    for seat in range(n):
        if not face_down[seat]:
            events.append(HandShown(to_seat(seat), seat, tuple(cards_of(hands[seat]))))
    return events


def _open_draw(st: MatchState, number: int, dealer: int) -> list[Event]:
    """Two players: no deal, the stock is drawn first (explicit deals are refused)."""
    r = st.rules
    st.hand = HandState(
        number=number,
        dealer=dealer,
        dealt=(0, 0),
        hands=[0, 0],
        face_down=[False, False],
        bids=[None, None],
        blind=[False, False],
        tricks_won=[0, 0],
        to_act=(dealer + 1) % 2,
        stock=stock_order(r.deck_mask, hand_seed(st.seed, number)),
        discarded=[0, 0],
    )
    st.phase = Phase.DRAW
    return [HandStarted(EVERYONE, number, dealer, r.hand_size, ())]


def finish_hand(st: MatchState) -> list[Event]:
    """Score the hand, then end the match or deal the next hand."""
    h, r = st.hand, st.rules
    bids = tuple(b if b is not None else 0 for b in h.bids)
    tricks = tuple(h.tricks_won)
    sides = score_hand(r, bids, h.blind, tricks, st.scores, st.bags)
    st.scores = [s.score for s in sides]
    st.bags = [s.bags for s in sides]
    st.results.append(sides)
    st.hand_bids.append(bids)
    st.hand_tricks.append(tricks)
    events: list[Event] = [HandScored(EVERYONE, h.number, bids, tuple(h.blind), tricks, sides)]
    winner = match_winner(r, st.scores)
    if winner is not None:
        st.winner = winner
        st.phase = Phase.MATCH_OVER
        h.to_act = -1
        events.append(MatchEnded(EVERYONE, winner, tuple(st.scores), h.number + 1))
        return events
    events.extend(deal_hand(st, h.number + 1, (h.dealer + 1) % r.players))
    return events
