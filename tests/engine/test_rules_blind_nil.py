"""RULES.md §3 blind nil, its deficit and its exchange.

A seat whose side trails the best other side by at least the deficit is dealt
face down: it may look at any time or, on its turn, bid blind nil (+200 / -200).
With an exchange, both partners of a blind nil team pass cards to each other,
seen by that team only."""

from __future__ import annotations

import pytest
from rules_helpers import (
    act,
    bid_all,
    controlled_deal,
    controlled_match,
    names,
    of_type,
    play_hand,
    reject,
    visible,
)

from spades_engine import (
    BLIND_NIL,
    EXCHANGE,
    LOOK,
    NO_EXCHANGE,
    Bid,
    ExchangeDecision,
    Match,
    PassCards,
    Phase,
    Play,
    Reason,
    Ruleset,
    preset,
)
from spades_engine.cards import cards_of
from spades_engine.events import Event

POLISH = preset("polish", bag_rule="off")  # bags off keeps the set-up hand's totals simple
COMPULSORY = POLISH.replace(blind_nil_exchange_optional=False)  # the exchange without a choice


def after_first_hand(
    tricks: list[int], bids: list[int], rules: Ruleset = COMPULSORY
) -> tuple[Match, list[Event]]:
    """A polish match where hand 1 is played from a controlled deal; returns it
    at the start of hand 2 with the events that ended hand 1."""
    d1, script = controlled_deal(tricks)
    d2, _ = controlled_deal([4, 3, 3, 3])
    m = Match(rules, deals=[d1, d2], dealer=0)
    events = play_hand(m, bids, script)
    return m, events


def trailing_by_100(rules: Ruleset = COMPULSORY) -> tuple[Match, list[Event]]:
    m, events = after_first_hand([6, 1, 6, 0], [1, 4, 1, 3], rules)  # A 12 of 2: 30; B 1 of 7: -70
    assert m.scores == (30, -70)
    return m, events


def test_no_blind_nil_while_no_side_trails_by_the_deficit() -> None:
    m = Match(POLISH, seed=3, dealer=0)
    (started,) = of_type(m.opening_events, "HandStarted")
    assert started.face_down == ()
    assert len(of_type(m.opening_events, "HandShown")) == 4
    assert BLIND_NIL not in m.legal_actions(1)
    reject(m, 1, BLIND_NIL, Reason.BLIND_NIL_NOT_ALLOWED)
    reject(m, 2, LOOK, Reason.ALREADY_LOOKED)


def test_trailing_by_99_is_not_enough() -> None:
    m, events = after_first_hand([5, 2, 6, 0], [1, 4, 1, 3])  # 29 against -70
    assert m.scores == (29, -70)
    assert of_type(events, "HandStarted")[0].face_down == ()
    assert {e.seat for e in of_type(events, "HandShown")} == {0, 1, 2, 3}


def test_the_trailing_team_is_dealt_face_down_and_sees_nothing_of_its_cards() -> None:
    m, events = trailing_by_100()
    (started,) = of_type(events, "HandStarted")
    events = events[events.index(started) :]  # hand 2's deal
    assert started.face_down == (1, 3)
    assert {e.seat for e in of_type(events, "HandShown")} == {0, 2}
    for seat in (1, 3):
        assert m.view(seat).hand is None
        own = names(cards_of(m.state.hand.dealt[seat]))
        for e in visible(events, seat, seat & 1):
            assert not own & names(getattr(e, "cards", ()))
    assert m.view(None).face_down == (False, True, False, True)
    assert m.view(0).hand is not None


def test_a_face_down_seat_may_look_at_any_time_or_bid_blind_nil_on_its_turn() -> None:
    m, _ = trailing_by_100()
    assert m.to_act == 2  # dealer 1
    assert m.legal_actions(1) == [LOOK]
    assert m.legal_actions(3) == [LOOK]
    reject(m, 3, BLIND_NIL, Reason.NOT_YOUR_TURN)
    m.apply(2, Bid(3))
    assert m.legal_actions(3) == [BLIND_NIL, LOOK]
    reject(m, 3, Bid(3), Reason.LOOK_AT_CARDS_FIRST)
    reject(m, 3, Bid(0), Reason.LOOK_AT_CARDS_FIRST)

    events = m.apply(1, LOOK)  # out of turn
    looked, shown = events
    assert (type(looked).__name__, looked.seat, str(looked.audience)) == (
        "LookedAtCards",
        1,
        "everyone",
    )
    assert (type(shown).__name__, str(shown.audience)) == ("HandShown", "seat:1")
    assert shown.cards == tuple(cards_of(m.state.hand.dealt[1]))
    assert m.view(1).hand == shown.cards
    assert m.to_act == 3  # looking does not take a turn
    reject(m, 1, LOOK, Reason.ALREADY_LOOKED)

    events = m.apply(3, BLIND_NIL)
    (made,) = of_type(events, "BidMade")
    assert (made.seat, made.tricks, made.blind, str(made.audience)) == (3, 0, True, "everyone")
    assert m.view(3).hand is None  # still face down until bidding closes
    assert m.view(0).blind == (False, False, False, True)

    m.apply(0, Bid(4))
    reject(m, 1, BLIND_NIL, Reason.BLIND_NIL_NOT_ALLOWED)  # seat 1 has looked
    assert m.legal_actions(1) == [Bid(n) for n in range(14)]
    events = m.apply(1, Bid(4))
    (closed,) = of_type(events, "BiddingClosed")
    assert closed.bids == (4, 4, 3, 0)
    (shown3,) = of_type(events, "HandShown")
    assert (shown3.seat, str(shown3.audience)) == (3, "seat:3")
    assert m.view(3).hand == tuple(cards_of(m.state.hand.dealt[3]))
    (ex,) = of_type(events, "ExchangeStarted")
    assert (ex.seats, ex.cards_each) == ((1, 3), 2)
    assert m.phase is Phase.EXCHANGE
    assert m.to_act == -1


def at_exchange() -> Match:
    m, _ = trailing_by_100()
    m.apply(2, Bid(3))
    m.apply(1, LOOK)
    m.apply(3, BLIND_NIL)
    m.apply(0, Bid(4))
    m.apply(1, Bid(4))
    assert m.phase is Phase.EXCHANGE
    return m


def lowest(m: Match, seat: int, k: int = 2) -> tuple[int, ...]:
    return tuple(cards_of(m.state.hand.hands[seat])[:k])


def test_the_exchange_refuses_what_the_rules_do_not_allow() -> None:
    m = at_exchange()
    assert m.legal_actions(0) == []
    assert m.legal_actions(2) == []
    assert len(m.legal_actions(1)) == 78  # any 2 of 13 cards
    reject(m, 0, PassCards(lowest(m, 0)), Reason.NOT_IN_EXCHANGE)
    reject(m, 1, PassCards(lowest(m, 1, 3)), Reason.WRONG_PASS_COUNT)
    reject(m, 1, PassCards(lowest(m, 1, 1)), Reason.WRONG_PASS_COUNT)
    c = lowest(m, 1, 1)[0]
    reject(m, 1, PassCards((c, c)), Reason.WRONG_PASS_COUNT)
    reject(m, 1, PassCards((c, lowest(m, 0, 1)[0])), Reason.CARD_NOT_IN_HAND)
    reject(m, 1, Bid(3), Reason.WRONG_PHASE)
    reject(m, 1, LOOK, Reason.WRONG_PHASE)
    reject(m, 1, Play(c), Reason.WRONG_PHASE)
    m.apply(1, PassCards(lowest(m, 1)))
    reject(m, 1, PassCards(lowest(m, 1)), Reason.ALREADY_PASSED)


def test_the_exchange_is_seen_by_the_blind_nil_team_only() -> None:
    m = at_exchange()
    dealt = m.state.hand.dealt
    give1, give3 = lowest(m, 1), lowest(m, 3)
    events = m.apply(1, PassCards(give1))
    assert [(type(e).__name__, str(e.audience)) for e in events] == [("CardsChosen", "everyone")]
    assert m.view(1).passed == give1
    assert m.view(3).received == ()  # nothing moves until both have chosen
    assert m.view(3).hand == tuple(cards_of(dealt[3]))
    events += m.apply(3, PassCards(give3))
    passed = of_type(events, "CardsPassed")
    assert sorted((e.from_seat, e.to_seat, e.cards) for e in passed) == [
        (1, 3, give1),
        (3, 1, give3),
    ]
    assert all(str(e.audience) == "team:1" for e in passed)

    moved = names(give1 + give3)
    for seat in (0, 2, None):
        team = None if seat is None else seat & 1
        for e in visible(events, seat, team):
            assert not moved & names(getattr(e, "cards", ()))
        v = m.view(seat)
        assert (v.passed, v.received) == ((), ())
        assert not moved & names(v.hand or ())
    for seat in (1, 3):
        assert len(visible(events, seat, 1)) == 4
    assert names(m.view(1).hand or ()) == names(cards_of(dealt[1])) - names(give1) | names(give3)
    assert names(m.view(3).hand or ()) == names(cards_of(dealt[3])) - names(give3) | names(give1)
    assert (m.view(1).passed, m.view(1).received) == (give1, give3)
    assert (m.view(3).passed, m.view(3).received) == (give3, give1)
    assert m.phase is Phase.PLAYING
    assert m.to_act == 1  # polish: the dealer leads


def test_without_an_exchange_play_starts_after_the_blind_nil() -> None:
    rules = COMPULSORY.replace(blind_nil_exchange=0)
    d1, script = controlled_deal([6, 1, 6, 0])
    d2, _ = controlled_deal([4, 3, 3, 3])
    m = Match(rules, deals=[d1, d2], dealer=0)
    play_hand(m, [1, 4, 1, 3], script)
    events = bid_all(m, [4, 4, 3, "blind_nil"])
    assert of_type(events, "ExchangeStarted") == []
    assert m.phase is Phase.PLAYING


def test_both_teams_blind_nil_exchange_within_each_team() -> None:
    rules = preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False)
    m = Match(rules, seed=11, dealer=0)
    assert of_type(m.opening_events, "HandStarted")[0].face_down == (0, 1, 2, 3)
    assert of_type(m.opening_events, "HandShown") == []
    events = bid_all(m, ["blind_nil", "blind_nil", 5, 4])
    (ex,) = of_type(events, "ExchangeStarted")
    assert ex.seats == (0, 1, 2, 3)
    gives = {s: lowest(m, s) for s in range(4)}
    for s in (2, 0, 3, 1):
        events += m.apply(s, PassCards(gives[s]))
    for seat in range(4):
        team = seat & 1
        seen = {e.from_seat for e in of_type(visible(events, seat, team), "CardsPassed")}
        assert seen == {team, team + 2}
        other = names(gives[1 - team] + gives[3 - team])
        assert not other & names(m.view(seat).hand or ())
        assert m.view(seat).received == gives[(seat + 2) % 4]


def test_both_partners_may_bid_blind_nil() -> None:
    m, _ = trailing_by_100()
    events = bid_all(m, [4, "blind_nil", 4, "blind_nil"])
    (closed,) = of_type(events, "BiddingClosed")
    assert closed.contracts == (8, 0)
    assert m.view(None).blind == (False, True, False, True)
    assert {e.seat for e in of_type(events, "HandShown")} == {1, 3}
    assert of_type(events, "ExchangeStarted")[0].seats == (1, 3)


@pytest.mark.parametrize(
    ("tricks", "scores"),
    [
        ([5, 0, 4, 4], (90, 240)),  # blind nil made: +200 on top of seat 3's 4
        ([5, 1, 4, 3], (90, 31 - 200)),  # failed: -200; its trick still counts
    ],
)
def test_blind_nil_scores_200(tricks: list[int], scores: tuple[int, int]) -> None:
    rules = preset("bulgarian")  # any score, no exchange
    m, [script] = controlled_match(rules, [tricks])
    assert of_type(m.opening_events, "HandStarted")[0].face_down == (0, 1, 2, 3)
    events = play_hand(m, [5, "blind_nil", 4, tricks[3]], script)
    (hs,) = of_type(events, "HandScored")
    assert hs.blind == (False, True, False, False)
    assert hs.sides[1].nil_points == (200 if tricks[1] == 0 else -200)
    assert m.scores == scores


def test_a_nil_after_looking_is_an_ordinary_nil() -> None:
    m, [script] = controlled_match(preset("bulgarian"), [[5, 0, 4, 4]])
    act(m, "1: look")
    events = play_hand(m, [5, 0, 4, 4], script)
    (hs,) = of_type(events, "HandScored")
    assert hs.blind == (False, False, False, False)
    assert m.scores == (90, 140)


def test_blind_nil_eligibility_in_cutthroat_is_against_the_best_other_player() -> None:
    rules = preset("classic", partnerships=False, blind_nil=True, blind_nil_exchange=0)
    d1, script = controlled_deal([4, 3, 3, 3])
    d2, _ = controlled_deal([4, 3, 3, 3])
    m = Match(rules, deals=[d1, d2], dealer=0)
    events = play_hand(m, [4, 3, 3, 10], script)
    assert m.scores == (40, 30, 30, -100)
    assert of_type(events, "HandStarted")[0].face_down == (3,)
    assert m.legal_actions(3) == [LOOK]


# -- the optional exchange (polish: "Gracz w ciemno może wymienić 2 karty") ------------


def at_decision() -> Match:
    """Hand 2 of a polish match, bidding just closed with seat 3's blind nil."""
    m, _ = trailing_by_100(POLISH)
    m.apply(2, Bid(3))
    m.apply(1, LOOK)
    m.apply(3, BLIND_NIL)
    m.apply(0, Bid(4))
    events = m.apply(1, Bid(4))
    assert of_type(events, "BiddingClosed")
    assert of_type(events, "ExchangeStarted") == []  # the decision comes first
    return m


def test_the_optional_exchange_opens_with_the_blind_nil_bidders_decision() -> None:
    m = at_decision()
    assert m.phase is Phase.EXCHANGE
    assert m.to_act == -1
    assert m.seats_to_act() == [3]
    assert m.legal_actions(3) == [EXCHANGE, NO_EXCHANGE]
    for seat in (0, 1, 2):
        assert m.legal_actions(seat) == []
    for viewer in (0, 1, 2, 3, None):
        v = m.view(viewer)
        assert (v.exchange_deciders, v.exchange_decisions, v.exchange_seats) == ((3,), (), ())
    assert m.view(3).hand == tuple(cards_of(m.state.hand.dealt[3]))  # it decides seeing them
    assert [str(a) for a in m.legal_actions(3)] == ["exchange", "no_exchange"]


def test_the_optional_exchange_taken_is_public_and_its_cards_are_the_teams() -> None:
    m = at_decision()
    dealt = m.state.hand.dealt
    events = m.apply(3, EXCHANGE)
    decided, started = events
    assert (type(decided).__name__, decided.seat, decided.exchange, str(decided.audience)) == (
        "ExchangeDecided",
        3,
        True,
        "everyone",
    )
    assert (type(started).__name__, started.seats, started.cards_each) == (
        "ExchangeStarted",
        (1, 3),
        2,
    )
    assert m.phase is Phase.EXCHANGE
    assert m.seats_to_act() == [1, 3]
    assert len(m.legal_actions(3)) == 78
    give1, give3 = lowest(m, 1), lowest(m, 3)
    events += m.apply(3, PassCards(give3))
    events += m.apply(1, PassCards(give1))
    assert m.phase is Phase.PLAYING
    assert m.to_act == 1  # polish: the dealer leads
    passed = of_type(events, "CardsPassed")
    assert sorted((e.from_seat, e.to_seat, e.cards) for e in passed) == [
        (1, 3, give1),
        (3, 1, give3),
    ]
    assert all(str(e.audience) == "team:1" for e in passed)
    moved = names(give1 + give3)
    for viewer in (0, 2, None):  # the opponents and a spectator: the decision, no card
        team = None if viewer is None else viewer & 1
        seen = visible(events, viewer, team)
        assert of_type(seen, "ExchangeDecided") == [decided]
        assert of_type(seen, "CardsPassed") == []
        for e in seen:
            assert not moved & names(getattr(e, "cards", ()))
        v = m.view(viewer)
        assert v.exchange_decisions == ((3, True),)
        assert (v.passed, v.received) == ((), ())
        assert not moved & names(v.hand or ())
    for seat in (1, 3):
        assert len(of_type(visible(events, seat, 1), "CardsPassed")) == 2
        assert m.view(seat).exchange_decisions == ((3, True),)
    assert names(m.view(3).hand or ()) == names(cards_of(dealt[3])) - names(give3) | names(give1)


def test_the_optional_exchange_declined_moves_no_card_and_play_begins() -> None:
    m = at_decision()
    dealt = m.state.hand.dealt
    events = m.apply(3, NO_EXCHANGE)
    assert [(type(e).__name__, str(e.audience)) for e in events] == [
        ("ExchangeDecided", "everyone")
    ]
    assert (events[0].seat, events[0].exchange) == (3, False)
    assert m.phase is Phase.PLAYING
    assert m.to_act == 1
    assert m.state.hand.hands == list(dealt)
    for viewer in (0, 1, 2, 3, None):
        v = m.view(viewer)
        assert v.exchange_decisions == ((3, False),)
        assert (v.exchange_seats, v.passed, v.received) == ((), (), ())
    reject(m, 3, PassCards(lowest(m, 3)), Reason.WRONG_PHASE)
    reject(m, 3, EXCHANGE, Reason.WRONG_PHASE)


def test_illegal_exchange_decisions_are_refused_and_change_nothing() -> None:
    m, _ = trailing_by_100(POLISH)
    reject(m, 2, EXCHANGE, Reason.WRONG_PHASE)  # bidding is still open
    m = at_decision()
    reject(m, 1, EXCHANGE, Reason.NOT_EXCHANGE_DECIDER)  # the partner
    reject(m, 0, NO_EXCHANGE, Reason.NOT_EXCHANGE_DECIDER)  # an opponent
    reject(m, 3, ExchangeDecision("no"), Reason.UNKNOWN_ACTION)  # type: ignore[arg-type]
    reject(m, 3, PassCards(lowest(m, 3)), Reason.EXCHANGE_NOT_DECIDED)
    reject(m, 1, PassCards(lowest(m, 1)), Reason.EXCHANGE_NOT_DECIDED)
    reject(m, 3, Play(lowest(m, 3, 1)[0]), Reason.WRONG_PHASE)
    m.apply(3, EXCHANGE)
    reject(m, 3, EXCHANGE, Reason.ALREADY_DECIDED)  # twice
    reject(m, 3, NO_EXCHANGE, Reason.ALREADY_DECIDED)  # nor may it change its mind
    compulsory = at_exchange()
    reject(compulsory, 3, EXCHANGE, Reason.EXCHANGE_NOT_OPTIONAL)
    reject(compulsory, 3, NO_EXCHANGE, Reason.EXCHANGE_NOT_OPTIONAL)


def test_both_sides_decide_for_themselves() -> None:
    m = Match(preset("polish", blind_nil_deficit=0), seed=11, dealer=0)
    events = bid_all(m, ["blind_nil", "blind_nil", 5, 4])
    assert of_type(events, "ExchangeStarted") == []
    assert m.seats_to_act() == [0, 1]
    assert m.view(None).exchange_deciders == (0, 1)
    dealt = m.state.hand.dealt
    events = m.apply(1, NO_EXCHANGE)  # either may decide first
    assert m.legal_actions(1) == [] and m.legal_actions(0) == [EXCHANGE, NO_EXCHANGE]
    reject(m, 0, PassCards(lowest(m, 0)), Reason.EXCHANGE_NOT_DECIDED)
    events += m.apply(0, EXCHANGE)
    (started,) = of_type(events, "ExchangeStarted")
    assert started.seats == (0, 2)  # only the side that took it
    assert m.seats_to_act() == [0, 2]
    reject(m, 1, PassCards(lowest(m, 1)), Reason.NOT_IN_EXCHANGE)
    reject(m, 3, PassCards(lowest(m, 3)), Reason.NOT_IN_EXCHANGE)
    gives = {s: lowest(m, s) for s in (0, 2)}
    for s in (2, 0):
        events += m.apply(s, PassCards(gives[s]))
    assert m.phase is Phase.PLAYING
    assert [m.state.hand.hands[s] for s in (1, 3)] == [dealt[1], dealt[3]]
    moved = names(gives[0] + gives[2])
    for seat in (1, 3):
        assert of_type(visible(events, seat, 1), "CardsPassed") == []
        assert not moved & names(m.view(seat).hand or ())
    assert m.view(None).exchange_decisions == ((1, False), (0, True))
    assert [e.exchange for e in of_type(visible(events, None, None), "ExchangeDecided")] == [
        False,
        True,
    ]


@pytest.mark.parametrize(
    ("first", "second", "exchanges"), [(True, True, True), (True, False, False)]
)
def test_two_blind_nils_of_one_side_exchange_only_if_both_agree(
    first: bool, second: bool, exchanges: bool
) -> None:
    m, _ = trailing_by_100(POLISH)
    bid_all(m, [4, "blind_nil", 4, "blind_nil"])
    assert m.seats_to_act() == [1, 3]
    events = m.apply(3, ExchangeDecision(first)) + m.apply(1, ExchangeDecision(second))
    if exchanges:
        assert of_type(events, "ExchangeStarted")[0].seats == (1, 3)
        assert m.phase is Phase.EXCHANGE
    else:
        assert of_type(events, "ExchangeStarted") == []
        assert m.phase is Phase.PLAYING
