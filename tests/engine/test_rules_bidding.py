"""RULES.md §1 Bidding: one round from the dealer's left, 0..13, public, locked."""

from __future__ import annotations

from rules_helpers import bid_all, controlled_deal, of_type, reject

from spades_engine import LOOK, Bid, Match, Phase, Play, Reason, preset
from spades_engine.actions import BLIND_NIL


def classic(dealer: int = 0, **overrides: object) -> Match:
    d, _ = controlled_deal([4, 3, 3, 3])
    return Match(preset("classic", **overrides), deals=[d], dealer=dealer)


def test_bidding_starts_left_of_dealer_and_goes_clockwise() -> None:
    for dealer in range(4):
        m = classic(dealer)
        order = []
        for _ in range(4):
            order.append(m.to_act)
            m.apply(m.to_act, Bid(3))
        assert order == [(dealer + k) % 4 for k in (1, 2, 3, 4)]  # the dealer bids last


def test_every_whole_number_from_0_to_13_is_a_legal_bid_and_nothing_else() -> None:
    m = classic()
    assert m.legal_actions(1) == [Bid(n) for n in range(14)]
    assert m.legal_actions(0) == []  # not seat 0's turn
    reject(m, 1, Bid(14), Reason.BID_OUT_OF_RANGE)
    reject(m, 1, Bid(-1), Reason.BID_OUT_OF_RANGE)
    reject(m, 1, Bid("3"), Reason.BID_OUT_OF_RANGE)  # type: ignore[arg-type]
    m.apply(1, Bid(13))  # the top bid is accepted
    m.apply(2, Bid(0))  # so is nil
    assert m.state.hand.bids[1:3] == [13, 0]


def test_a_bid_out_of_turn_is_refused() -> None:
    m = classic()
    reject(m, 0, Bid(3), Reason.NOT_YOUR_TURN)
    reject(m, 2, Bid(3), Reason.NOT_YOUR_TURN)
    m.apply(1, Bid(3))
    reject(m, 1, Bid(4), Reason.NOT_YOUR_TURN)  # nobody bids twice


def test_bids_are_public_and_the_contract_is_the_partners_sum_with_nil_as_zero() -> None:
    m = classic()
    events = bid_all(m, [0, 5, 4, 2])
    made = of_type(events, "BidMade")
    assert [(e.seat, e.tricks, e.blind) for e in made] == [
        (1, 5, False),
        (2, 4, False),
        (3, 2, False),
        (0, 0, False),
    ]
    assert all(str(e.audience) == "everyone" for e in made)
    (closed,) = of_type(events, "BiddingClosed")
    assert closed.bids == (0, 5, 4, 2)
    assert closed.contracts == (4, 7)
    for seat in (None, 0, 1, 2, 3):
        assert m.view(seat).bids == (0, 5, 4, 2)


def test_bids_are_visible_to_everyone_while_bidding_is_open() -> None:
    m = classic()
    m.apply(1, Bid(6))
    for seat in (None, 0, 1, 2, 3):
        assert m.view(seat).bids == (None, 6, None, None)


def test_bids_are_locked_once_the_fourth_bid_is_made() -> None:
    m = classic()
    bid_all(m, [3, 3, 3, 3])
    assert m.phase is Phase.PLAYING
    for seat in range(4):
        assert not any(isinstance(a, Bid) for a in m.legal_actions(seat))
    reject(m, 1, Bid(5), Reason.WRONG_PHASE)
    reject(m, m.to_act, Bid(5), Reason.WRONG_PHASE)
    assert m.state.hand.bids == [3, 3, 3, 3]


def test_cards_cannot_be_played_during_bidding() -> None:
    m = classic()
    card = m.state.hand.dealt[1].bit_length() - 1
    reject(m, 1, Play(card), Reason.WRONG_PHASE)  # type: ignore[arg-type]


def test_nil_is_refused_when_the_table_plays_without_nil() -> None:
    m = classic(nil_allowed=False)
    assert m.legal_actions(1) == [Bid(n) for n in range(1, 14)]
    reject(m, 1, Bid(0), Reason.NIL_NOT_ALLOWED)
    m.apply(1, Bid(1))


def test_blind_nil_and_look_are_refused_where_blind_nil_is_not_played() -> None:
    m = classic()
    assert m.view(1).face_down == (False, False, False, False)
    reject(m, 1, BLIND_NIL, Reason.BLIND_NIL_NOT_ALLOWED)
    reject(m, 1, LOOK, Reason.ALREADY_LOOKED)
