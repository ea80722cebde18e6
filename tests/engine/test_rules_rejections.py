"""RULES.md §4: an illegal bid or card, an action out of turn or for the wrong
phase is rejected with a reason, and the match does not change.

One scenario per rejection reason; a new reason without one fails here."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rules_helpers import act, bid_all, controlled_deal, controlled_match, play_hand, reject

from spades_engine import (
    BLIND_NIL,
    EXCHANGE,
    LOOK,
    NO_EXCHANGE,
    Bid,
    ExchangeDecision,
    Match,
    NameTrump,
    PassCards,
    Play,
    Reason,
    parse_card,
    preset,
)
from spades_engine.cards import cards_of


def classic_bidding() -> Match:
    d, _ = controlled_deal([4, 3, 3, 3])
    return Match(preset("classic"), deals=[d], dealer=0)


def classic_playing() -> Match:
    m = classic_bidding()
    bid_all(m, [3, 3, 3, 3])
    return m


def exchange() -> Match:
    m = Match(
        preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False), seed=8, dealer=0
    )
    bid_all(m, [3, "blind_nil", 3, 3])
    return m


def decisions() -> Match:
    """As ``exchange`` but with the optional exchange: seat 1 is to decide."""
    m = Match(preset("polish", blind_nil_deficit=0), seed=8, dealer=0)
    bid_all(m, [3, "blind_nil", 3, 3])
    return m


def held(m: Match, seat: int, k: int) -> tuple[int, ...]:
    return tuple(cards_of(m.state.hand.hands[seat])[:k])


def invalid_seat() -> None:
    m = classic_bidding()
    for seat in (4, -1, None, "1", True):
        reject(m, seat, Bid(3), Reason.INVALID_SEAT)
    with pytest.raises(Exception) as info:
        m.view(4)
    assert getattr(info.value, "reason", None) is Reason.INVALID_SEAT
    assert m.legal_actions(4) == []


def match_over() -> None:
    m, [script] = controlled_match(preset("classic", target_score=100), [[0, 1, 10, 2]])
    play_hand(m, [0, 1, 10, 2], script)
    assert m.is_over
    for action in (Bid(3), Play(parse_card("AS")), LOOK, BLIND_NIL, PassCards(()), EXCHANGE):
        reject(m, 1, action, Reason.MATCH_OVER)


def wrong_phase() -> None:
    m = classic_bidding()
    reject(m, 1, Play(held(m, 1, 1)[0]), Reason.WRONG_PHASE)
    reject(m, 1, PassCards(held(m, 1, 2)), Reason.WRONG_PHASE)
    m = classic_playing()
    reject(m, m.to_act, Bid(3), Reason.WRONG_PHASE)
    reject(m, m.to_act, LOOK, Reason.WRONG_PHASE)
    reject(m, m.to_act, BLIND_NIL, Reason.WRONG_PHASE)
    reject(m, m.to_act, PassCards(held(m, m.to_act, 2)), Reason.WRONG_PHASE)
    m = exchange()
    reject(m, 1, Bid(3), Reason.WRONG_PHASE)
    reject(m, 1, Play(held(m, 1, 1)[0]), Reason.WRONG_PHASE)
    m = classic_bidding()
    reject(m, 1, EXCHANGE, Reason.WRONG_PHASE)
    m = Match(preset("polish"), seed=1, dealer=0)  # nobody may bid blind nil
    reject(m, 1, NO_EXCHANGE, Reason.WRONG_PHASE)
    m = decisions()
    m.apply(1, NO_EXCHANGE)  # declined: play begins
    reject(m, 1, EXCHANGE, Reason.WRONG_PHASE)
    reject(m, 1, NO_EXCHANGE, Reason.WRONG_PHASE)


def not_your_turn() -> None:
    m = classic_bidding()
    reject(m, 2, Bid(3), Reason.NOT_YOUR_TURN)
    m = Match(preset("bulgarian"), seed=3, dealer=0)
    reject(m, 2, BLIND_NIL, Reason.NOT_YOUR_TURN)
    m = classic_playing()
    other = (m.to_act + 1) % 4
    reject(m, other, Play(held(m, other, 1)[0]), Reason.NOT_YOUR_TURN)


def unknown_action() -> None:
    m = classic_bidding()
    for action in ("bid 3", None, 3, object()):
        reject(m, 1, action, Reason.UNKNOWN_ACTION)
    m = decisions()
    for junk in ("yes", 1, None):
        reject(m, 1, ExchangeDecision(junk), Reason.UNKNOWN_ACTION)  # type: ignore[arg-type]


def bid_out_of_range() -> None:
    m = classic_bidding()
    for n in (-1, 14, 52, 2.0, "3"):
        reject(m, 1, Bid(n), Reason.BID_OUT_OF_RANGE)  # type: ignore[arg-type]


def nil_not_allowed() -> None:
    m = Match(preset("german"), seed=1, dealer=0)
    reject(m, 1, Bid(0), Reason.NIL_NOT_ALLOWED)


def blind_nil_not_allowed() -> None:
    reject(classic_bidding(), 1, BLIND_NIL, Reason.BLIND_NIL_NOT_ALLOWED)  # not played
    m = Match(preset("polish"), seed=1, dealer=0)
    reject(m, 1, BLIND_NIL, Reason.BLIND_NIL_NOT_ALLOWED)  # nobody trails by 100
    m = Match(preset("bulgarian"), seed=1, dealer=0)
    act(m, "1: look")
    reject(m, 1, BLIND_NIL, Reason.BLIND_NIL_NOT_ALLOWED)  # seen the cards


def look_at_cards_first() -> None:
    m = Match(preset("bulgarian"), seed=1, dealer=0)
    reject(m, 1, Bid(3), Reason.LOOK_AT_CARDS_FIRST)


def already_looked() -> None:
    reject(classic_bidding(), 2, LOOK, Reason.ALREADY_LOOKED)
    m = Match(preset("bulgarian"), seed=1, dealer=0)
    act(m, "2: look")
    reject(m, 2, LOOK, Reason.ALREADY_LOOKED)
    act(m, "1: blind_nil")
    reject(m, 1, LOOK, Reason.ALREADY_LOOKED)  # a blind nil bidder waits for the close


def not_in_exchange() -> None:
    m = exchange()
    reject(m, 0, PassCards(held(m, 0, 2)), Reason.NOT_IN_EXCHANGE)


def already_passed() -> None:
    m = exchange()
    m.apply(3, PassCards(held(m, 3, 2)))
    reject(m, 3, PassCards(held(m, 3, 2)), Reason.ALREADY_PASSED)


def wrong_pass_count() -> None:
    m = exchange()
    reject(m, 1, PassCards(held(m, 1, 1)), Reason.WRONG_PASS_COUNT)
    reject(m, 1, PassCards(held(m, 1, 3)), Reason.WRONG_PASS_COUNT)
    reject(m, 1, PassCards(()), Reason.WRONG_PASS_COUNT)
    c = held(m, 1, 1)[0]
    reject(m, 1, PassCards((c, c)), Reason.WRONG_PASS_COUNT)


def exchange_not_optional() -> None:
    m = exchange()  # the compulsory exchange
    reject(m, 1, EXCHANGE, Reason.EXCHANGE_NOT_OPTIONAL)
    reject(m, 1, NO_EXCHANGE, Reason.EXCHANGE_NOT_OPTIONAL)
    reject(m, 0, NO_EXCHANGE, Reason.EXCHANGE_NOT_OPTIONAL)


def not_exchange_decider() -> None:
    m = decisions()
    reject(m, 3, EXCHANGE, Reason.NOT_EXCHANGE_DECIDER)  # the partner does not decide
    reject(m, 0, NO_EXCHANGE, Reason.NOT_EXCHANGE_DECIDER)  # nor does an opponent


def already_decided() -> None:
    m = decisions()
    m.apply(1, EXCHANGE)
    reject(m, 1, EXCHANGE, Reason.ALREADY_DECIDED)
    reject(m, 1, NO_EXCHANGE, Reason.ALREADY_DECIDED)


def exchange_not_decided() -> None:
    m = decisions()
    reject(m, 1, PassCards(held(m, 1, 2)), Reason.EXCHANGE_NOT_DECIDED)
    reject(m, 3, PassCards(held(m, 3, 2)), Reason.EXCHANGE_NOT_DECIDED)
    reject(m, 0, PassCards(held(m, 0, 2)), Reason.NOT_IN_EXCHANGE)  # no exchange for them


def card_not_in_hand() -> None:
    m = exchange()
    reject(m, 1, PassCards((held(m, 1, 1)[0], held(m, 0, 1)[0])), Reason.CARD_NOT_IN_HAND)
    reject(m, 1, PassCards((held(m, 1, 1)[0], 77)), Reason.CARD_NOT_IN_HAND)  # type: ignore[arg-type]
    m = classic_playing()
    seat = m.to_act
    reject(m, seat, Play(held(m, (seat + 1) % 4, 1)[0]), Reason.CARD_NOT_IN_HAND)
    for bad in (64, -1, "AS", None):
        reject(m, seat, Play(bad), Reason.CARD_NOT_IN_HAND)  # type: ignore[arg-type]


def must_follow_suit() -> None:
    m = classic_playing()
    leader = m.to_act
    club = next(c for c in cards_of(m.state.hand.hands[leader]) if c >> 4 == 0)
    m.apply(leader, Play(club))
    seat = m.to_act  # holds clubs and diamonds
    diamond = next(c for c in cards_of(m.state.hand.hands[seat]) if c >> 4 == 1)
    reject(m, seat, Play(diamond), Reason.MUST_FOLLOW_SUIT)


def spades_not_broken() -> None:
    m = classic_playing()
    seat = m.to_act
    spade = next(c for c in cards_of(m.state.hand.hands[seat]) if c >> 4 == 3)
    reject(m, seat, Play(spade), Reason.SPADES_NOT_BROKEN)


def suicide_bid() -> None:
    d, _ = controlled_deal([4, 3, 3, 3])
    m = Match(preset("classic", suicide=True), deals=[d], dealer=0)
    reject(m, 1, Bid(3), Reason.SUICIDE_BID)  # the first partner: nil or 4+
    m.apply(1, Bid(0))
    m.apply(2, Bid(5))
    reject(m, 3, Bid(0), Reason.SUICIDE_BID)  # seat 1 bid nil: at least 4
    reject(m, 3, Bid(2), Reason.SUICIDE_BID)
    m.apply(3, Bid(4))
    reject(m, 0, Bid(4), Reason.SUICIDE_BID)  # seat 2 bid 5: nil


def naming() -> Match:
    """Auction trump: bidding has closed and seat 2, the highest bidder, names trump."""
    d, _ = controlled_deal([4, 3, 3, 3])
    m = Match(preset("classic", auction_trump=True), deals=[d], dealer=0)
    bid_all(m, [3, 3, 5, 3])
    return m


def auction_trump_off() -> None:
    reject(classic_bidding(), 1, NameTrump(2), Reason.AUCTION_TRUMP_OFF)
    reject(classic_playing(), 1, NameTrump(2), Reason.AUCTION_TRUMP_OFF)


def not_trump_namer() -> None:
    m = naming()
    reject(m, 1, NameTrump(2), Reason.NOT_TRUMP_NAMER)
    reject(m, 0, NameTrump(2), Reason.NOT_TRUMP_NAMER)  # the partner neither


def trump_already_named() -> None:
    m = naming()
    m.apply(2, NameTrump(2))
    reject(m, 2, NameTrump(1), Reason.TRUMP_ALREADY_NAMED)


def not_a_suit() -> None:
    m = naming()
    for bad in (4, -1, "H", None, True):
        reject(m, 2, NameTrump(bad), Reason.NOT_A_SUIT)  # type: ignore[arg-type]


def bidding_closed() -> None:
    m = naming()
    reject(m, 2, Bid(6), Reason.BIDDING_CLOSED)
    reject(m, 3, Bid(6), Reason.BIDDING_CLOSED)


SCENARIOS: dict[Reason, Callable[[], None]] = {
    Reason.INVALID_SEAT: invalid_seat,
    Reason.MATCH_OVER: match_over,
    Reason.WRONG_PHASE: wrong_phase,
    Reason.NOT_YOUR_TURN: not_your_turn,
    Reason.UNKNOWN_ACTION: unknown_action,
    Reason.BID_OUT_OF_RANGE: bid_out_of_range,
    Reason.NIL_NOT_ALLOWED: nil_not_allowed,
    Reason.BLIND_NIL_NOT_ALLOWED: blind_nil_not_allowed,
    Reason.LOOK_AT_CARDS_FIRST: look_at_cards_first,
    Reason.ALREADY_LOOKED: already_looked,
    Reason.NOT_IN_EXCHANGE: not_in_exchange,
    Reason.ALREADY_PASSED: already_passed,
    Reason.WRONG_PASS_COUNT: wrong_pass_count,
    Reason.CARD_NOT_IN_HAND: card_not_in_hand,
    Reason.MUST_FOLLOW_SUIT: must_follow_suit,
    Reason.SPADES_NOT_BROKEN: spades_not_broken,
    Reason.EXCHANGE_NOT_OPTIONAL: exchange_not_optional,
    Reason.NOT_EXCHANGE_DECIDER: not_exchange_decider,
    Reason.ALREADY_DECIDED: already_decided,
    Reason.EXCHANGE_NOT_DECIDED: exchange_not_decided,
    Reason.SUICIDE_BID: suicide_bid,
    Reason.AUCTION_TRUMP_OFF: auction_trump_off,
    Reason.NOT_TRUMP_NAMER: not_trump_namer,
    Reason.TRUMP_ALREADY_NAMED: trump_already_named,
    Reason.NOT_A_SUIT: not_a_suit,
    Reason.BIDDING_CLOSED: bidding_closed,
}


@pytest.mark.parametrize("reason", list(Reason), ids=str)
def test_every_rejection_reason_leaves_the_match_unchanged(reason: Reason) -> None:
    SCENARIOS[reason]()


def test_a_rejection_carries_its_seat_and_a_message() -> None:
    m = classic_bidding()
    err = reject(m, 2, Bid(3), Reason.NOT_YOUR_TURN)
    assert err.seat == 2
    assert "seat 1" in err.message
    # and the match carries on as if nothing had been tried
    m.apply(1, Bid(3))
    assert m.state.hand.bids == [None, 3, None, None]
    assert len(m.actions) == 1
