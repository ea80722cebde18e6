"""Hand evaluation for bidding: how many tricks a hand should take, and how
safe it is as a nil.

Both work for every deck a ruleset can deal (jokers, 3 to 5 players, cards
removed): a card is judged by how many cards of its suit above it are in the
deck but not in the hand (``h``), never by its printed rank, so the ace of
spades under two jokers is treated like a queen.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb

from ..cards import ACE, SPADE_MASK, SPADES, SUIT_MASKS
from ..deck import deal
from ..ruleset import Ruleset
from .cardsets import above, count

# Trick value of an honour with ``h`` higher cards out, when it has at least
# ``h`` lower cards to guard it (index h), or fewer (a bare honour).
_TRUMP_GUARDED = (1.0, 0.8, 0.55, 0.3)
_TRUMP_BARE = (1.0, 0.4, 0.2, 0.0)
_SIDE_GUARDED = (1.0, 0.6, 0.3)
_SIDE_BARE = (1.0, 0.15, 0.05)
_RUFF_VALUE = 0.75
_LONG_TRUMP_MARGIN = 0.7


def count_aces_kings(hand: int) -> int:
    """Aces and kings of every suit, jokers counted with them (Easy's bid);
    in the deuces-high virtual deck (bots/deuces.py) the spade "ace and king"
    are the 2S and the AS, and the 2D rides with the jokers (ranks 13 to 15)."""
    n = 0
    for s in range(4):
        chunk = hand >> (16 * s) & 0x7FFF
        n += (chunk >> ACE & 1) + (chunk >> (ACE - 1) & 1)
    return n + (hand >> (16 * SPADES + 13) & 0b111).bit_count()


@lru_cache(maxsize=4096)
def round_survives(others: int, hand_size: int, suit_out: int, rounds: int) -> float:
    """Probability that each of ``others`` hands of ``hand_size`` unseen cards
    holds at least ``rounds`` of the ``suit_out`` cards of a suit the viewer does
    not hold: that nobody can trump the ``rounds``-th round of the suit."""
    if rounds <= 0:
        return 1.0
    total = comb(others * hand_size, suit_out)
    if total == 0 or suit_out < others * rounds:
        return 0.0
    # ways[k]: ways to place k suit cards among the hands seen so far, each >= rounds
    ways = [1] + [0] * suit_out
    for _ in range(others):
        nxt = [0] * (suit_out + 1)
        for k, w in enumerate(ways):
            if w:
                for j in range(rounds, min(hand_size, suit_out - k) + 1):
                    nxt[k + j] += w * comb(hand_size, j)
        ways = nxt
    return ways[suit_out] / total


def estimate_tricks(hand: int, rules: Ruleset) -> float:
    """Expected tricks: honours (discounted by how many higher cards are out and
    whether they are guarded), side-suit winners discounted by the chance their
    round gets trumped, long spades, and ruffs of short suits with spare spades."""
    deck = rules.deck_mask
    n, hs = rules.players, rules.hand_size
    total = 0.0
    spare = 0
    # spades: honours or length, whichever is worth more, card by card
    spades = hand & SPADE_MASK
    ns = count(spades)
    others_avg = (count(deck & SPADE_MASK) - ns) / (n - 1)
    i = 0
    m = spades
    while m:
        c = m.bit_length() - 1
        m ^= 1 << c
        h = count(deck & above(c) & ~hand)
        guards = ns - 1 - i
        honour = 0.0
        if h < len(_TRUMP_GUARDED):
            honour = _TRUMP_GUARDED[h] if guards >= h else _TRUMP_BARE[h]
        length = min(1.0, max(0.0, i + 1 - (others_avg + _LONG_TRUMP_MARGIN)))
        v = max(honour, length)
        total += v
        if v < 0.5:
            spare += 1
        i += 1
    # side suits: honours, discounted by the chance of being trumped
    ruff_slots = 0.0
    for s in range(3):
        suit = hand & SUIT_MASKS[s]
        length_in_hand = count(suit)
        if length_in_hand == 0:
            ruff_slots += 2.0
        elif length_in_hand == 1:
            ruff_slots += 1.0
        elif length_in_hand == 2:
            ruff_slots += 0.5
        suit_out = count(deck & SUIT_MASKS[s]) - length_in_hand
        i = 0
        m = suit
        while m and i < 3:
            c = m.bit_length() - 1
            m ^= 1 << c
            h = count(deck & above(c) & ~hand)
            if h < len(_SIDE_GUARDED):
                guards = length_in_hand - 1 - i
                v = _SIDE_GUARDED[h] if guards >= h else _SIDE_BARE[h]
                total += v * round_survives(n - 1, hs, suit_out, i + 1)
            i += 1
    total += min(float(spare), ruff_slots) * _RUFF_VALUE
    return total


def expected_tricks(hand: int, rules: Ruleset) -> float:
    """``estimate_tricks`` scaled to the table: the heuristic values are tuned for
    four players and thirteen tricks, and a table of three (eighteen tricks each)
    or five (ten) shares its tricks differently."""
    key = (rules.players, rules.jokers)
    scale = TABLE_SCALE.get(key)
    if scale is None:
        scale = table_scale(*key)
    return estimate_tricks(hand, rules) * scale


TABLE_SCALE: dict[tuple[int, bool], float] = {
    (4, False): 1.0,
    (4, True): 0.963,
    (3, True): 1.264,
    (5, True): 0.717,
}
"""``table_scale`` by (players, jokers), computed once (a test keeps it current)."""

_SAMPLE_DEALS = 64


@lru_cache(maxsize=16)
def _mean_estimate(players: int, jokers: bool) -> float:
    """The mean estimate of a dealt hand at this table (fixed sample deals)."""
    rules = Ruleset(players=players, jokers=jokers, partnerships=players == 4)
    total, hands = 0.0, 0
    for i in range(_SAMPLE_DEALS):
        for h in deal(rules, 0x5EED + i, 0):
            total += estimate_tricks(h, rules)
            hands += 1
    return total / hands


@lru_cache(maxsize=16)
def table_scale(players: int, jokers: bool) -> float:
    """How many more (or fewer) tricks a hand takes at this table than its
    four-player estimate says — the fair share of tricks over the mean estimate
    of a dealt hand — relative to the classic table the estimate was tuned on."""
    here = Ruleset(players=players, jokers=jokers, partnerships=players == 4).hand_size
    ratio_here = here / players / _mean_estimate(players, jokers)
    ratio_classic = 13 / 4 / _mean_estimate(4, False)
    return ratio_here / ratio_classic


# Nil risk of a side-suit card with h higher cards out, before its guards.
_NIL_SIDE = (99.0, 1.0, 0.7, 0.45, 0.25, 0.12)
_NIL_SIDE_LOW = 0.04
# Nil risk of a spade with h higher cards out (h <= 1 is never a nil).
_NIL_SPADE = (99.0, 99.0, 1.0, 0.6, 0.35, 0.2)
_NIL_SPADE_LOW = 0.1


def nil_risk(hand: int, rules: Ruleset) -> float:
    """How likely the hand is to be forced to take a trick, as a score: 99 or more
    for a hand that must not bid nil (a spade king or better, a sure winner, more
    spades than a fair share); otherwise the sum of each card's danger (fewer
    higher cards out: more danger; lower cards beside it in the suit: less).
    Measured in Hard self-play (classic), nils scoring under 1 are made about 19
    times in 20, around 1.5 five in six, around 2 three in four."""
    deck = rules.deck_mask
    n = rules.players
    spades = hand & SPADE_MASK
    ns = count(spades)
    spade_size = count(deck & SPADE_MASK)
    if ns > max(2, round(spade_size / n)):
        return 99.0
    risk = 0.0
    m = spades
    while m:
        c = m.bit_length() - 1
        m ^= 1 << c
        if c & 15 >= ACE - 1:  # king, ace or a joker of spades
            return 99.0
        h = count(deck & above(c) & ~hand)
        risk += _NIL_SPADE[h] if h < len(_NIL_SPADE) else _NIL_SPADE_LOW
    for s in range(3):
        suit = hand & SUIT_MASKS[s]
        length = count(suit)
        if length == 0:
            risk -= 0.15  # a void lets the nil shed its dangerous cards
            continue
        lower = 0
        m = suit
        while m:
            lb = m & -m
            c = lb.bit_length() - 1
            m ^= lb
            h = count(deck & above(c) & ~hand)
            base = _NIL_SIDE[h] if h < len(_NIL_SIDE) else _NIL_SIDE_LOW
            risk += base / (1 + lower)
            lower += 1
        if length >= 5:  # the last rounds of a long suit find the others void
            risk += 0.15 * (length - 4)
    return max(risk, 0.0)
