"""Tampered snapshots: every edit of a real snapshot's fields is refused with
SnapshotError, or loads to exactly the state it describes, which a replay of
its actions gives.

The first tests are the states the issue found loading: each is a snapshot
edited so that every field agrees with every other (cards held or played
once, scores the sum of the hand points, the winner ahead), yet play could
not have reached it. The last test mutates each field of real snapshots of
every preset at several points of play.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rules_helpers import CONFIGS

from spades_engine import BLIND_NIL, LOOK, Bid, Match, Phase, SnapshotError, preset
from spades_engine.cards import SUIT_MASKS, card_name, cards_of
from spades_engine.record import record_of, replay
from spades_engine.snapshot import (
    MAGIC,
    VERSION,
    load_snapshot,
    replay_snapshot,
    with_later_keys,
)

SCORE = 8  # position of ``score`` in a SideScore list
HAND_POINTS = 7


def doc_of(m: Match) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(zlib.decompress(m.to_snapshot()[len(MAGIC) + 1 :]))
    return doc


def encode(doc: Any) -> bytes:
    text = json.dumps(doc, separators=(",", ":"))
    return MAGIC + bytes((VERSION,)) + zlib.compress(text.encode())


def assert_refused(doc: dict[str, Any], match: str) -> None:
    for load in (load_snapshot, replay_snapshot):
        with pytest.raises(SnapshotError, match=match):
            load(encode(doc))


def random_until(m: Match, seed: int, stop: Any) -> Match:
    rng = random.Random(seed)
    while not m.is_over and not stop(m):
        seat = rng.choice(m.seats_to_act())
        m.apply(seat, rng.choice(m.legal_actions(seat)))
    return m


# -- states play cannot reach, each internally consistent -------------------------------


def _revoke_point(m: Match) -> bool:
    """A trick with one card led, the next seat holding both that suit and another."""
    h = m.state.hand
    if m.phase is not Phase.PLAYING or len(h.trick) != 1:
        return False
    held = h.hands[h.to_act]
    led = SUIT_MASKS[h.led_suit]
    return bool(held & led) and bool(held & ~led & ~SUIT_MASKS[3])


def test_a_revoke_is_refused() -> None:
    m = random_until(Match(preset("classic"), seed=3), 3, _revoke_point)
    assert _revoke_point(m)
    doc = doc_of(m)
    h = doc["hand"]
    seat = h["to_act"]
    off_suit = cards_of(h["hands"][seat] & ~SUIT_MASKS[h["led_suit"]] & ~SUIT_MASKS[3])[0]
    # The seat plays a card of another suit while holding the led suit: every
    # card is still held or played once, and the turn passes on as it would.
    h["hands"][seat] &= ~(1 << off_suit)
    h["trick"].append(off_suit)
    h["to_act"] = (seat + 1) % 4
    doc["actions"].append([seat, f"play {card_name(off_suit)}"])
    doc["action_count"] += 1
    assert_refused(doc, rf"actions\[{len(m.actions)}\]: play .*MUST_FOLLOW_SUIT")


def test_hand_points_that_the_hand_did_not_score_are_refused() -> None:
    m = Match(preset("classic", mercy_score=None), seed=5)
    random_until(m, 5, lambda m: len(m.state.results) >= 2)
    doc = doc_of(m)
    # Ten points more for side 0 in the first hand, carried through every total.
    doc["results"][0][0][HAND_POINTS] += 10
    for hand in doc["results"]:
        hand[0][SCORE] += 10
    doc["scores"][0] += 10
    assert_refused(doc, r"scores\[0\]: -?\d+ does not follow")


def test_a_winner_who_did_not_win_is_refused() -> None:
    m = random_until(Match(preset("classic"), seed=9), 9, lambda m: False)
    assert m.is_over and m.winner is not None
    doc = doc_of(m)
    loser = 1 - m.winner
    # The loser's last hand made enough to finish far ahead: totals and the
    # winner agree with each other, but not with the cards played.
    gain = abs(doc["scores"][m.winner]) + abs(doc["scores"][loser]) + 500
    doc["results"][-1][loser][HAND_POINTS] += gain
    doc["results"][-1][loser][SCORE] += gain
    doc["scores"][loser] += gain
    doc["winner"] = loser
    assert_refused(doc, r"does not follow from the deal and the actions")


def test_actions_that_do_not_lead_to_the_state_are_refused() -> None:
    m = Match(preset("classic"), seed=12)
    for seat_bid in (3, 4, 3, 2):
        m.apply(m.to_act, Bid(seat_bid))
    doc = doc_of(m)
    first_seat = doc["actions"][0][0]
    doc["actions"][0] = [first_seat, "bid 5"]  # the state still shows the bid of 3
    assert_refused(doc, r"hand\.bids\[\d\]: 3 does not follow .* give 5")


def test_a_swapped_pair_of_plays_is_refused() -> None:
    m = random_until(Match(preset("classic"), seed=4), 4, lambda m: len(m.state.hand.completed) > 3)
    doc = doc_of(m)
    plays = [i for i, (_, text) in enumerate(doc["actions"]) if text.startswith("play")]
    a, b = plays[1], plays[5]  # two plays of different tricks, by different seats
    doc["actions"][a], doc["actions"][b] = doc["actions"][b], doc["actions"][a]
    assert_refused(doc, r"actions\[\d+\]: play .* does not replay from the deal")


# -- every field of real snapshots, mutated --------------------------------------------


def _drive_to_exchange(m: Match) -> Match:
    while m.phase is Phase.BIDDING:
        seat = m.to_act
        legal = m.legal_actions(seat)
        m.apply(seat, BLIND_NIL if BLIND_NIL in legal else LOOK if LOOK in legal else Bid(3))
    seat = m.seats_to_act()[0]  # a pass, or with the optional exchange a decision
    m.apply(seat, m.legal_actions(seat)[0])
    return m


def _mid_trick_of_hand_two(name: str, seed: int) -> Match:
    return random_until(
        Match(CONFIGS[name], seed=seed),
        seed,
        lambda m: len(m.state.results) >= 1 and len(m.state.hand.trick) == 1,
    )


SNAPSHOTS: dict[str, Callable[[], Match]] = {
    "classic, new": lambda: Match(preset("classic"), seed=1),
    "polish, mid-exchange decisions": lambda: _drive_to_exchange(
        Match(CONFIGS["polish-deficit0"], seed=2)
    ),
    "polish compulsory, mid-exchange": lambda: _drive_to_exchange(
        Match(preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False), seed=2)
    ),
    **{
        f"{name}, mid-trick of hand 2": functools.partial(_mid_trick_of_hand_two, name, 20 + i)
        for i, name in enumerate(sorted(CONFIGS))
    },
    "classic, over": lambda: random_until(Match(preset("classic"), seed=30), 30, lambda m: False),
}


def leaves(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every field of the document, inner ones before the containers holding them;
    of the actions every seventh (the rest are alike)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from leaves(value, (*path, key))
    elif isinstance(doc, list):
        step = 7 if path == ("actions",) else 1
        for i in range(0, len(doc), step):
            yield from leaves(doc[i], (*path, i))
    yield path, doc


def mutations(value: Any) -> list[Any]:
    if type(value) is bool:
        return [not value, int(value), None]
    if type(value) is int:
        return [value + 1, value - 1, float(value), value == 1, str(value), None]
    if type(value) is str:
        return ["", value + "x", None, 0]
    if value is None:
        return [0, False, ""]
    if type(value) is list:
        out: list[Any] = [value[:-1], [*value, value[-1] if value else 0], None, {}]
        if len(value) > 1 and value != value[::-1]:
            out.append(value[::-1])
        return out
    return [None, [], {"x": 1}]  # an object


def _edited(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(doc)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def key_edits(doc: dict[str, Any]) -> Iterator[Any]:
    """The document without each key of each object, and with an extra key."""
    for path, value in leaves(doc):
        if isinstance(value, dict):
            for key in value:
                yield _edited(doc, path, {k: v for k, v in value.items() if k != key})
            yield _edited(doc, path, {**value, "extra": 1})


def refused_or_a_replay(doc: Any) -> bool:
    """True if the edited document is refused. If it loads, the match loaded must
    be exactly what it says (its own dump holds the same document, once keys
    added since older snapshots are filled in as their defaults) and what
    replaying its actions from its deal gives."""
    try:
        loaded = load_snapshot(encode(doc))
    except SnapshotError:
        return True
    assert canonical(doc_of(loaded)) == canonical(with_later_keys(doc))
    assert replay(record_of(loaded)).to_snapshot() == loaded.to_snapshot()
    return False


def canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True)


@pytest.mark.parametrize("label", sorted(SNAPSHOTS))
def test_every_mutation_of_a_field_is_refused_or_a_replay(label: str) -> None:
    doc = doc_of(SNAPSHOTS[label]())
    edits = [_edited(doc, path, new) for path, value in leaves(doc) for new in mutations(value)]
    edits += key_edits(doc)
    refused = sum(refused_or_a_replay(edited) for edited in edits)
    # What loads is another table's rules, played the same (a match to 501
    # points), an edit that changes nothing (the last item of an empty list),
    # or a key added since older snapshots removed (read as its default).
    assert refused > 0.9 * len(edits), f"{label}: {refused} of {len(edits)} edits refused"
