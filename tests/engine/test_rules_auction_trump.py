"""RULES.md §3.1 "Auction trump" (seed 003 "Пика за търг"): the highest bidder
names the hand's trump suit, which then takes the role of spades."""

from __future__ import annotations

import json
import zlib

import pytest
from rules_helpers import act, bid_all, deal, of_type, reject, visible

from spades_engine import (
    IllegalAction,
    Match,
    NameTrump,
    Phase,
    Reason,
    RulesetError,
    SnapshotError,
    parse_action,
    preset,
)
from spades_engine.cards import CLUBS, HEARTS, SPADES, card_name, cards_of, parse_card
from spades_engine.snapshot import MAGIC, VERSION, snapshot_document
from spades_engine.trick import legal_play_mask, trick_winner_index

AUCTION = preset("classic", auction_trump=True)

# Each seat holds one whole suit: seat 0 diamonds, 1 clubs, 2 hearts, 3 spades.
VOIDS = deal(
    "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
    "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
)

# Seat 1 (left of dealer 0) leads holding clubs, three top hearts and four top
# spades; seat 2 clubs and low spades; seat 3 low hearts and middle spades.
MIXED = deal(
    "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    "2C 3C 4C 5C 6C 7C AH KH QH AS KS QS JS",
    "8C 9C TC JC QC KC AC 2S 3S 4S 5S 6S 7S",
    "2H 3H 4H 5H 6H 7H 8H 9H TH JH 8S 9S TS",
)


def started(hands=MIXED, rules=AUCTION, dealer: int = 0) -> Match:
    return Match(rules, deals=[hands], dealer=dealer)


def test_the_option_defaults_off_and_is_refused_with_jokers() -> None:
    assert preset("classic").auction_trump is False
    with pytest.raises(RulesetError) as info:
        preset("german", auction_trump=True)
    assert set(info.value.options) == {"auction_trump", "jokers"}


def test_text_form_of_name_trump() -> None:
    assert parse_action("trump H") == NameTrump(HEARTS)
    assert parse_action("trump c") == NameTrump(CLUBS)
    assert str(NameTrump(SPADES)) == "trump S"
    for bad in ("trump", "trump X", "trump HS", "trump 2"):
        with pytest.raises(ValueError):
            parse_action(bad)


@pytest.mark.parametrize(
    ("dealer", "bids", "namer"),
    [
        (0, [4, 3, 4, 2], 2),  # order 1 2 3 0: seats 2 and 0 tie on 4, seat 2 bid first
        (0, [5, 3, 4, 2], 0),  # the last bidder, alone the highest
        (3, [4, 3, 4, 2], 0),  # order 0 1 2 3: seat 0 bid first of the tied
        (0, [0, 0, 0, 0], 1),  # every bid nil: the first bidder
        (2, [0, 0, 0, 0], 3),
    ],
)
def test_the_highest_bidder_earliest_on_a_tie_names_trump(
    dealer: int, bids: list[int], namer: int
) -> None:
    m = started(dealer=dealer)
    bid_all(m, bids)
    assert m.phase is Phase.BIDDING
    assert m.to_act == namer
    assert m.seats_to_act() == [namer]
    assert [str(a) for a in m.legal_actions(namer)] == ["trump C", "trump D", "trump H", "trump S"]
    assert m.view(None).trump_namer == namer
    assert not m.view(None).trump_named


def test_every_nil_with_blind_nil_the_first_bidder_names() -> None:
    m = started(rules=preset("classic", auction_trump=True, blind_nil=True, blind_nil_deficit=0))
    bid_all(m, ["blind_nil", 0, 0, 0])  # seat 1 bids first, blind
    assert m.to_act == 1


def test_the_named_suit_is_public_to_everyone() -> None:
    m = started()
    bid_all(m, [2, 5, 3, 3])
    events = act(m, "1: trump H")
    (named,) = of_type(events, "TrumpNamed")
    assert (named.seat, named.suit) == (1, HEARTS)
    for seat in (0, 1, 2, 3, None):
        team = None if seat is None else seat & 1
        assert named in visible(events, seat, team)
        v = m.view(seat)
        assert (v.trump, v.trump_namer, v.trump_named) == (HEARTS, 1, True)
    assert m.phase is Phase.PLAYING
    assert m.to_act == 1  # the first lead is unaffected: left of the dealer


def test_hearts_as_trump_win_over_spades() -> None:
    m = started(VOIDS)
    bid_all(m, [1, 1, 6, 1])  # seat 2, holding the hearts, names them
    act(m, "2: trump H")
    events = act(m, "play 2C", "play 2H", "play AS", "play AD")
    (won,) = of_type(events, "TrickWon")
    assert won.winner == 2  # the 2 of hearts trumps; the ace of spades is a plain card


def test_the_same_trick_without_auction_trump_goes_to_the_spade() -> None:
    m = started(VOIDS, rules=preset("classic"))
    bid_all(m, [1, 1, 6, 1])
    (won,) = of_type(act(m, "play 2C", "play 2H", "play AS", "play AD"), "TrickWon")
    assert won.winner == 3


def test_trump_must_be_broken_before_it_is_led_and_spades_are_plain() -> None:
    m = started()
    bid_all(m, [2, 5, 3, 3])
    act(m, "1: trump H")
    legal = {str(a) for a in m.legal_actions(1)}
    assert "play AH" not in legal and "play AS" in legal and "play 2C" in legal
    error = reject(m, 1, parse_action("play AH"), Reason.SPADES_NOT_BROKEN)
    assert "trump (hearts)" in error.message
    # spades lead freely and win as a plain suit; they break nothing
    (won,) = of_type(act(m, "play AS", "play 2S", "play 8S", "play 2D"), "TrickWon")
    assert won.winner == 1
    assert not m.view(1).spades_broken
    reject(m, 1, parse_action("play KH"), Reason.SPADES_NOT_BROKEN)
    # a club lead that seat 3, void, trumps with the 2 of hearts: trump broken
    (won,) = of_type(act(m, "play 2C", "play 8C", "play 2H", "play AD"), "TrickWon")
    assert won.winner == 3
    assert m.view(None).spades_broken
    act(m, "3: play 3H", "0: play 3D", "1: play AH")  # seat 3 leads trump now
    assert m.view(None).trick == (parse_card("3H"), parse_card("3D"), parse_card("AH"))


def test_naming_spades_plays_the_classic_hand() -> None:
    m = started(VOIDS)
    bid_all(m, [1, 1, 6, 1])
    act(m, "2: trump S")
    (won,) = of_type(act(m, "play 2C", "play 2H", "play AS", "play AD"), "TrickWon")
    assert won.winner == 3


def test_refusals_leave_the_match_unchanged() -> None:
    m = started()
    reject(m, 1, NameTrump(HEARTS), Reason.WRONG_PHASE)  # bidding still open
    bid_all(m, [2, 5, 3, 3])
    reject(m, 0, NameTrump(HEARTS), Reason.NOT_TRUMP_NAMER)
    reject(m, 2, NameTrump(HEARTS), Reason.NOT_TRUMP_NAMER)
    reject(m, 1, NameTrump(4), Reason.NOT_A_SUIT)
    reject(m, 1, NameTrump(-1), Reason.NOT_A_SUIT)
    reject(m, 1, NameTrump("H"), Reason.NOT_A_SUIT)  # type: ignore[arg-type]
    reject(m, 1, NameTrump(True), Reason.NOT_A_SUIT)
    reject(m, 1, parse_action("bid 6"), Reason.BIDDING_CLOSED)
    reject(m, 1, parse_action("look"), Reason.ALREADY_LOOKED)
    reject(m, 1, parse_action("play 2C"), Reason.WRONG_PHASE)
    act(m, "1: trump H")
    reject(m, 1, NameTrump(CLUBS), Reason.TRUMP_ALREADY_NAMED)
    reject(m, 0, NameTrump(CLUBS), Reason.TRUMP_ALREADY_NAMED)


def test_name_trump_at_a_table_without_the_option() -> None:
    m = started(rules=preset("classic"))
    reject(m, 1, NameTrump(HEARTS), Reason.AUCTION_TRUMP_OFF)
    bid_all(m, [2, 5, 3, 3])
    reject(m, 1, NameTrump(HEARTS), Reason.AUCTION_TRUMP_OFF)


def test_trump_is_named_before_the_exchange() -> None:
    rules = preset("polish", blind_nil_deficit=0, auction_trump=True)
    m = started(rules=rules, dealer=0)  # the dealer bids last
    bid_all(m, [5, "blind_nil", 3, 3])  # order 1 2 3 0
    assert m.phase is Phase.BIDDING and m.to_act == 0
    events = act(m, "0: trump D")
    assert of_type(events, "TrumpNamed")
    assert m.phase is Phase.EXCHANGE
    assert m.view(None).trump == 1


def test_the_next_hand_starts_with_spades_and_no_namer() -> None:
    m = started(VOIDS)
    bid_all(m, [1, 1, 6, 1])
    act(m, "2: trump H")
    while m.hand_number == 0:
        m.apply(m.to_act, m.legal_actions(m.to_act)[0])
    v = m.view(None)
    assert (v.trump, v.trump_namer, v.trump_named) == (SPADES, -1, False)


def test_snapshot_carries_the_trump_and_older_documents_load_as_spades() -> None:
    m = started()
    bid_all(m, [2, 5, 3, 3])
    mid = Match.from_snapshot(m.to_snapshot())
    assert mid.to_act == 1 and mid.state.hand.trump_namer == 1
    act(m, "1: trump H", "play AS")
    doc = snapshot_document(m.state, m.actions)
    assert (doc["hand"]["trump"], doc["hand"]["trump_namer"], doc["hand"]["trump_named"]) == (
        HEARTS,
        1,
        True,
    )
    again = Match.from_snapshot(m.to_snapshot())
    assert again.state.hand.trump == HEARTS
    assert again.to_snapshot() == m.to_snapshot()


def test_trick_rules_take_the_trump_suit() -> None:
    h, s, c = parse_card("2H"), parse_card("AS"), parse_card("KC")
    assert trick_winner_index([c, s, h]) == 1
    assert trick_winner_index([c, s, h], HEARTS) == 2
    hand = 1 << h | 1 << s
    assert legal_play_mask(hand, -1, False, HEARTS) == 1 << s
    assert legal_play_mask(hand, -1, False) == 1 << h
    with pytest.raises(IllegalAction):
        started().apply(1, NameTrump(HEARTS))


def _encode(doc: object) -> bytes:
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=True)
    return MAGIC + bytes((VERSION,)) + zlib.compress(text.encode("ascii"), 9)


def test_an_older_snapshot_without_the_auction_keys_loads_with_spades() -> None:
    """A snapshot written before auction trump existed has no auction_trump
    option and no hand trump keys: it loads as spades, off (LATER_* defaults)."""
    m = Match(preset("classic"), seed=4)
    bid_all(m, [3, 3, 3, 3])
    act(m, f"play {card_name(next(iter(cards_of(m.state.hand.hands[m.to_act]))))}")
    doc = json.loads(json.dumps(snapshot_document(m.state, m.actions)))
    del doc["rules"]["auction_trump"]
    for key in ("trump", "trump_namer", "trump_named"):
        del doc["hand"][key]
    loaded = Match.from_snapshot(_encode(doc))
    assert not loaded.rules.auction_trump
    assert (loaded.state.hand.trump, loaded.state.hand.trump_namer) == (SPADES, -1)
    assert loaded.to_snapshot() == m.to_snapshot()  # dumped again with the new keys
    doc["hand"]["trump"] = HEARTS  # a trump the actions do not give is refused
    with pytest.raises(SnapshotError, match=r"hand\.trump"):
        Match.from_snapshot(_encode(doc))
