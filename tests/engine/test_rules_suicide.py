"""RULES.md §3.1 Suicide (seed 001, off there): in each side one partner bids
Nil and the other at least 4; the first of the two to bid chooses, the second
takes the other role; a blind nil counts as the Nil."""

from __future__ import annotations

import json

import pytest
from rules_helpers import bid_all, controlled_deal, of_type, reject

from spades_engine import (
    BLIND_NIL,
    LOOK,
    PRESETS,
    Bid,
    Match,
    Phase,
    Reason,
    Ruleset,
    RulesetError,
    preset,
)

FIRST = [Bid(0), *(Bid(n) for n in range(4, 14))]
TAKE = [Bid(n) for n in range(4, 14)]
NIL = [Bid(0)]


def suicide(dealer: int = 0, name: str = "classic", **overrides: object) -> Match:
    d, _ = controlled_deal([4, 3, 3, 3])
    return Match(preset(name, suicide=True, **overrides), deals=[d], dealer=dealer)


def test_the_first_partner_of_each_side_bids_nil_or_four_or_more() -> None:
    m = suicide(dealer=0)  # bidding order 1, 2, 3, 0
    assert m.legal_actions(1) == FIRST
    m.apply(1, Bid(0))
    assert m.legal_actions(2) == FIRST  # side 0's first bidder, whatever side 1 did
    m.apply(2, Bid(4))


def test_after_a_nil_the_partner_must_bid_at_least_four() -> None:
    m = suicide(dealer=0)
    m.apply(1, Bid(0))
    m.apply(2, Bid(0))  # both sides start with a nil
    assert m.legal_actions(3) == TAKE
    m.apply(3, Bid(4))
    assert m.legal_actions(0) == TAKE
    events = m.apply(0, Bid(13))
    (closed,) = of_type(events, "BiddingClosed")
    assert closed.bids == (13, 0, 0, 4)
    assert closed.contracts == (13, 4)
    assert m.phase is Phase.PLAYING


def test_after_four_or_more_the_partner_must_bid_nil() -> None:
    m = suicide(dealer=1)  # bidding order 2, 3, 0, 1
    m.apply(2, Bid(6))
    m.apply(3, Bid(5))
    assert m.legal_actions(0) == NIL
    m.apply(0, Bid(0))
    assert m.legal_actions(1) == NIL
    events = m.apply(1, Bid(0))
    (closed,) = of_type(events, "BiddingClosed")
    assert closed.bids == (0, 0, 6, 5)
    assert closed.contracts == (6, 5)


def test_mixed_roles_in_both_orders() -> None:
    for dealer in range(4):
        m = suicide(dealer=dealer)
        order = [(dealer + k) % 4 for k in (1, 2, 3, 4)]
        first_bids = {order[0]: 0, order[1]: 7}  # one side opens nil, the other 7
        for seat in order[:2]:
            m.apply(seat, Bid(first_bids[seat]))
        assert m.legal_actions(order[2]) == TAKE  # partner of the nil
        m.apply(order[2], Bid(4))
        assert m.legal_actions(order[3]) == NIL  # partner of the 7
        m.apply(order[3], Bid(0))
        assert m.phase is Phase.PLAYING
        bids = m.state.hand.bids
        for side in (0, 1):
            assert sorted(bids[s] for s in (side, side + 2)) in ([0, 4], [0, 7])


def test_refused_suicide_bids_name_the_rule_and_change_nothing() -> None:
    m = suicide(dealer=0)
    for n in (1, 2, 3):
        err = reject(m, 1, Bid(n), Reason.SUICIDE_BID)
        assert "suicide" in err.message and "nil or 4 or more" in err.message
    reject(m, 1, Bid(14), Reason.BID_OUT_OF_RANGE)  # out of range stays its own reason
    m.apply(1, Bid(0))
    m.apply(2, Bid(9))
    for n in (0, 1, 2, 3):
        err = reject(m, 3, Bid(n), Reason.SUICIDE_BID)
        assert "partner bid nil" in err.message and "at least 4" in err.message
    m.apply(3, Bid(4))
    for n in (1, 4, 13):
        err = reject(m, 0, Bid(n), Reason.SUICIDE_BID)
        assert "partner bid 9" in err.message and "must bid nil" in err.message
    m.apply(0, Bid(0))
    assert m.phase is Phase.PLAYING


def blind_table(dealer: int = 0) -> Match:
    d, _ = controlled_deal([4, 3, 3, 3])
    rules = preset("polish", blind_nil_deficit=0, suicide=True)  # every seat face down
    return Match(rules, deals=[d], dealer=dealer)


def test_blind_nil_counts_as_the_nil_of_the_side() -> None:
    m = blind_table(dealer=0)  # order 1, 2, 3, 0
    assert m.legal_actions(1) == [BLIND_NIL, LOOK]
    assert m.legal_actions(3) == [LOOK]  # not its turn
    m.apply(1, BLIND_NIL)
    assert m.legal_actions(2) == [BLIND_NIL, LOOK]
    m.apply(2, LOOK)
    m.apply(2, Bid(5))
    # seat 3's partner bid blind nil: no blind nil, no nil, only 4 or more
    assert m.legal_actions(3) == [LOOK]
    err = reject(m, 3, BLIND_NIL, Reason.SUICIDE_BID)
    assert "partner bid blind nil" in err.message
    reject(m, 3, Bid(5), Reason.LOOK_AT_CARDS_FIRST)
    m.apply(3, LOOK)
    assert m.legal_actions(3) == TAKE
    reject(m, 3, Bid(0), Reason.SUICIDE_BID)
    m.apply(3, Bid(4))
    # seat 0's partner bid 5: nil, blind or after looking
    assert m.legal_actions(0) == [BLIND_NIL, LOOK]
    events = m.apply(0, BLIND_NIL)
    (closed,) = of_type(events, "BiddingClosed")
    assert closed.bids == (0, 0, 5, 4)
    assert closed.contracts == (5, 4)
    assert m.state.hand.blind == [True, True, False, False]


def test_a_face_down_second_partner_that_looks_must_bid_nil() -> None:
    m = blind_table(dealer=0)
    m.apply(1, LOOK)
    m.apply(1, Bid(6))
    m.apply(2, LOOK)
    m.apply(2, Bid(0))
    m.apply(3, LOOK)
    assert m.legal_actions(3) == NIL
    reject(m, 3, BLIND_NIL, Reason.BLIND_NIL_NOT_ALLOWED)  # it has looked
    m.apply(3, Bid(0))
    assert m.legal_actions(0) == [LOOK]  # partner of a nil, face down
    reject(m, 0, BLIND_NIL, Reason.SUICIDE_BID)
    m.apply(0, LOOK)
    assert m.legal_actions(0) == TAKE
    bid_done = m.apply(0, Bid(4))
    assert of_type(bid_done, "BiddingClosed")


def test_a_first_partner_may_open_with_blind_nil() -> None:
    m = blind_table(dealer=3)  # order 0, 1, 2, 3
    bid_all(m, ["blind_nil", 4, 5, 0])
    assert m.state.hand.bids == [0, 4, 5, 0]
    assert m.state.hand.blind == [True, False, False, False]


def test_the_thirteen_bid_combines_with_suicide() -> None:
    m = suicide(dealer=0, thirteen_bid=True)
    bid_all(m, [0, 13, 13, 0])
    assert m.state.hand.bids == [0, 13, 13, 0]


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"partnerships": False}, {"suicide", "partnerships"}),
        ({"nil_allowed": False}, {"suicide", "nil_allowed"}),
        (
            {"partnerships": False, "players": 3, "jokers": True},
            {"suicide", "partnerships"},
        ),
    ],
)
def test_suicide_is_refused_without_partners_or_without_nil(
    overrides: dict[str, object], named: set[str]
) -> None:
    with pytest.raises(RulesetError) as info:
        Ruleset(suicide=True, **overrides)  # type: ignore[arg-type]
    assert named <= set(info.value.options)
    assert all(name in str(info.value) for name in named)


def test_the_german_table_refuses_suicide_for_both_reasons() -> None:
    with pytest.raises(RulesetError) as info:
        preset("german", suicide=True)
    problems = {opts for _, opts in info.value.problems}
    assert problems == {("suicide", "partnerships"), ("suicide", "nil_allowed")}


def test_suicide_must_be_true_or_false() -> None:
    with pytest.raises(RulesetError, match="suicide"):
        Ruleset.from_dict({"suicide": 1})


def test_the_option_round_trips_and_defaults_to_off() -> None:
    assert not Ruleset().suicide
    assert not any(r.suicide for r in PRESETS.values())
    rules = preset("polish", suicide=True)
    assert Ruleset.from_dict(json.loads(json.dumps(rules.to_dict()))) == rules


def test_a_suicide_match_survives_a_snapshot_mid_bidding() -> None:
    m = suicide(dealer=0)
    m.apply(1, Bid(0))
    m.apply(2, Bid(5))
    loaded = Match.from_snapshot(m.to_snapshot())
    assert loaded.rules.suicide
    assert loaded.legal_actions(3) == TAKE
    reject(loaded, 0, Bid(0), Reason.NOT_YOUR_TURN)
