"""Two players' draw (RULES.md 3.1): the stock drawn in turns before bidding."""

from __future__ import annotations

import random

import pytest

from spades_engine.actions import DRAW_DISCARD, DRAW_KEEP, Draw, parse_action
from spades_engine.cards import cards_of
from spades_engine.deck import DealError
from spades_engine.errors import IllegalAction, Reason
from spades_engine.events import CardsDrawn, DrawTaken, HandShown, event_to_dict
from spades_engine.match import Match
from spades_engine.ruleset import Ruleset, RulesetError, preset
from spades_engine.snapshot import snapshot_document
from spades_engine.state import Phase

TWO = {"players": 2, "partnerships": False, "jokers": True}


@pytest.fixture
def two() -> Ruleset:
    return Ruleset(**TWO)


def test_players_2_is_offered_with_the_german_preset() -> None:
    assert preset("german", players=2) == Ruleset(**TWO).replace(
        nil_allowed=False, set_penalty="zero", mercy_score=None
    )


def test_the_two_player_ruleset(two: Ruleset) -> None:
    assert two.hand_size == two.tricks_per_hand == 13
    assert two.deck_mask.bit_count() == 52
    assert two.sides == 2


@pytest.mark.parametrize(
    ("changes", "options"),
    [
        ({"partnerships": True}, {"players", "partnerships"}),
        ({"jokers": False}, {"players", "jokers"}),
        ({"blind_nil": True}, {"players", "blind_nil"}),
        ({"first_lead": "dealer"}, {"players", "first_lead"}),
        ({"first_lead": "two_of_clubs"}, {"players", "first_lead"}),
    ],
)
def test_refused_combinations_name_both_options(
    two: Ruleset, changes: dict[str, object], options: set[str]
) -> None:
    with pytest.raises(RulesetError) as e:
        two.replace(**changes)
    assert options <= set(e.value.options)


def test_explicit_deals_are_refused(two: Ruleset) -> None:
    with pytest.raises(DealError, match="players=2"):
        Match(two, seed=1, deals=[[[0], [1]]])


def _draw_all(m: Match, rng: random.Random) -> list:
    events = list(m.opening_events)
    while m.phase is Phase.DRAW:
        seat = m.to_act
        events += m.apply(seat, rng.choice(m.legal_actions(seat)))
    return events


def test_a_whole_hand_keeps_the_draw_hidden(two: Ruleset) -> None:
    m = Match(two, seed=11)
    h = m.state.hand
    dealer = h.dealer
    assert m.phase is Phase.DRAW and m.to_act == 1 - dealer
    stock = h.stock
    assert len(stock) == 52 and sum(1 << c for c in stock) == two.deck_mask
    rng = random.Random(3)
    events = list(m.opening_events)
    seen_by = {0: set(), 1: set()}  # cards each seat was shown by the draw
    turn = 0
    while m.phase is Phase.DRAW:
        seat = m.to_act
        assert seat == (1 - dealer if turn % 2 == 0 else dealer)
        top = stock[2 * turn]
        v = m.view(seat)
        assert v.stock_top == top and v.stock_size == 52 - 2 * turn
        other, spectator = m.view(1 - seat), m.view(None)
        assert other.stock_top is None and spectator.stock_top is None
        assert other.hand is not None and top not in other.hand and top not in other.discards
        assert spectator.hand is None and spectator.discards == ()
        assert m.legal_actions(1 - seat) == []
        action = rng.choice(m.legal_actions(seat))
        new = m.apply(seat, action)
        drawn = [e for e in new if isinstance(e, CardsDrawn)]
        assert len(drawn) == 1 and drawn[0].audience.visible_to(seat, None)
        assert not drawn[0].audience.visible_to(1 - seat, None)
        assert not drawn[0].audience.visible_to(None, None)
        kept, gone = (stock[2 * turn], stock[2 * turn + 1])[:: 1 if action.keep else -1]
        assert (drawn[0].kept, drawn[0].discarded) == (kept, gone)
        taken = [e for e in new if isinstance(e, DrawTaken)]
        assert len(taken) == 1 and taken[0].audience.kind == "everyone"
        assert "kept" not in event_to_dict(taken[0])
        seen_by[seat] |= {kept, gone}
        events += new
        turn += 1
    assert turn == 26
    # conservation: kept + discarded = the stock
    h = m.state.hand
    assert h.hands[0] & h.hands[1] == 0 and h.discarded[0] & h.discarded[1] == 0
    assert h.hands[0] | h.hands[1] | h.discarded[0] | h.discarded[1] == two.deck_mask
    assert [x.bit_count() for x in h.hands] == [13, 13] == [x.bit_count() for x in h.discarded]
    assert h.dealt == tuple(h.hands)
    # nothing a seat may see names a card it was not shown
    for seat in (0, 1):
        for e in events:
            if e.audience.visible_to(seat, None):
                for c in _cards(e):
                    assert c in seen_by[seat], (seat, e)
        v = m.view(seat)
        assert set(v.hand or ()) | set(v.discards) == seen_by[seat]
    for e in events:
        if e.audience.visible_to(None, None):
            assert not _cards(e), e
    shown = [e for e in events if isinstance(e, HandShown)]
    assert {e.seat: e.cards for e in shown} == {s: tuple(cards_of(h.hands[s])) for s in (0, 1)}
    # bidding, then 13 tricks with the non-dealer leading
    assert m.phase is Phase.BIDDING and m.to_act == 1 - dealer
    while m.phase is Phase.BIDDING:
        m.apply(m.to_act, m.legal_actions(m.to_act)[0])
    assert m.phase is Phase.PLAYING and m.to_act == 1 - dealer
    hand = m.hand_number
    while m.hand_number == hand and not m.is_over:
        m.apply(m.to_act, m.legal_actions(m.to_act)[0])
    assert len(m.state.results) == 1
    assert sum(m.state.hand_tricks[0]) == 13
    if not m.is_over:
        assert m.phase is Phase.DRAW and m.state.hand.dealer == 1 - dealer
        assert m.to_act == dealer


def _cards(event: object) -> set[int]:
    out: set[int] = set()
    for name in ("card", "kept", "discarded"):
        if hasattr(event, name):
            out.add(getattr(event, name))
    out |= set(getattr(event, "cards", ()))
    return out


def test_refusals_change_nothing(two: Ruleset) -> None:
    m = Match(two, seed=5)
    seat = m.to_act
    before = m.to_snapshot()
    for who, action, reason in [
        (1 - seat, DRAW_KEEP, Reason.NOT_YOUR_TURN),
        (seat, parse_action("bid 3"), Reason.WRONG_PHASE),
        (seat, parse_action("play AS"), Reason.WRONG_PHASE),
        (seat, Draw(1), Reason.UNKNOWN_ACTION),  # type: ignore[arg-type]
        (seat, "draw keep", Reason.UNKNOWN_ACTION),
        (2, DRAW_KEEP, Reason.INVALID_SEAT),
    ]:
        with pytest.raises(IllegalAction) as e:
            m.apply(who, action)  # type: ignore[arg-type]
        assert e.value.reason is reason
        assert m.to_snapshot() == before
    _draw_all(m, random.Random(1))
    with pytest.raises(IllegalAction) as e:
        m.apply(m.to_act, DRAW_DISCARD)
    assert e.value.reason is Reason.WRONG_PHASE


def test_text_forms() -> None:
    assert str(DRAW_KEEP) == "draw keep" and str(DRAW_DISCARD) == "draw discard"
    assert parse_action("draw keep") is DRAW_KEEP
    assert parse_action("DRAW Discard") is DRAW_DISCARD


def test_replay_and_snapshot_mid_draw(two: Ruleset) -> None:
    m = Match(two, seed=9)
    rng = random.Random(2)
    for _ in range(7):
        m.apply(m.to_act, rng.choice(m.legal_actions(m.to_act)))
    data = m.to_snapshot()
    back = Match.from_snapshot(data)
    assert back.phase is Phase.DRAW
    assert snapshot_document(back.state, back.actions) == snapshot_document(m.state, m.actions)
    assert back.view(back.to_act).stock_top == m.view(m.to_act).stock_top
    # a record: the actions' text replayed from the seed gives the same match
    again = Match(two, seed=9)
    for seat, action in m.actions:
        again.apply(seat, parse_action(str(action)))
    assert again.to_snapshot() == data
    # and play on to the end of the hand through both
    for x in (m, back):
        _draw_all(x, random.Random(4))
    assert m.to_snapshot() == back.to_snapshot()


def test_same_seed_same_stock(two: Ruleset) -> None:
    assert Match(two, seed=4).state.hand.stock == Match(two, seed=4).state.hand.stock
    assert Match(two, seed=4).state.hand.stock != Match(two, seed=5).state.hand.stock


def test_a_game_record_replays_a_two_player_match(two: Ruleset) -> None:
    from spades_engine.record import dumps_record, loads_record, record_of, replay

    m = Match(two, seed=21)
    rng = random.Random(5)
    for _ in range(40):  # through the draw, into the bidding
        m.apply(m.to_act, rng.choice(m.legal_actions(m.to_act)))
    rec = record_of(m)
    assert "deals" not in rec
    assert {text for _, text in rec["actions"][:26]} == {"draw keep", "draw discard"}
    assert replay(loads_record(dumps_record(rec))).to_snapshot() == m.to_snapshot()
