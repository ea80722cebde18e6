"""Rulesets: every table rule of RULES.md as a value, with named presets.

A ruleset is immutable and validated when it is made, so a match never runs
with a combination of options that has no defined meaning.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .cards import DIAMONDS, TWO, TWO_OF_CLUBS, card


class BagRule(StrEnum):
    TEN_FOR_100 = "10_for_100"  # every 10 bags: -100 (seed 001, "1-10-100")
    FIVE_FOR_50 = "5_for_50"  # every 5 bags: -50 (seed 000, "1:5:50")
    OFF = "off"  # overtricks still score +1 but never cost points


class FirstLead(StrEnum):
    LEFT_OF_DEALER = "left_of_dealer"  # seed 001
    DEALER = "dealer"  # seed 000
    TWO_OF_CLUBS = "two_of_clubs"  # seed 003: the holder of the 2 of clubs


class SetPenalty(StrEnum):
    TEN_PER_BID = "ten_per_bid"  # seed 001: -10 x contract
    ZERO = "zero"  # seed 002: a broken contract scores 0


class RulesetError(ValueError):
    """An option value or a combination of options that cannot be played.

    ``options`` names every option involved, so a caller can point at them.
    """

    def __init__(self, message: str, options: tuple[str, ...]) -> None:
        super().__init__(message)
        self.options = options


@dataclass(frozen=True, slots=True)
class Ruleset:
    """The table rules of one match.  Defaults are the ``classic`` table (seed 001)."""

    target_score: int = 500
    mercy_score: int | None = -200
    bag_rule: BagRule = BagRule.TEN_FOR_100
    blind_nil: bool = False
    blind_nil_deficit: int = 100
    blind_nil_exchange: int = 2
    first_lead: FirstLead = FirstLead.LEFT_OF_DEALER
    nil_allowed: bool = True
    set_penalty: SetPenalty = SetPenalty.TEN_PER_BID
    partnerships: bool = True
    jokers: bool = False
    players: int = 4
    thirteen_bid: bool = False
    # Derived once, so hot paths read a field instead of recomputing.
    deck_mask: int = field(init=False, repr=False, compare=False)
    hand_size: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Store enum options as enums even when given as their string values:
        # the rules compare them by identity (``is FirstLead.DEALER``).
        for name in _ENUMS:
            object.__setattr__(self, name, _coerce(name, getattr(self, name)))
        _validate(self)
        deck = _deck_mask(self.players, self.jokers)
        object.__setattr__(self, "deck_mask", deck)
        object.__setattr__(self, "hand_size", deck.bit_count() // self.players)

    # -- derived facts -------------------------------------------------------
    @property
    def tricks_per_hand(self) -> int:
        return self.hand_size

    @property
    def sides(self) -> int:
        """Number of scoring sides: two teams, or one per player in cutthroat."""
        return 2 if self.partnerships else self.players

    def side_of(self, seat: int) -> int:
        return seat & 1 if self.partnerships else seat

    def seats_of(self, side: int) -> tuple[int, ...]:
        if self.partnerships:
            return (side, side + 2)
        return (side,)

    def partner_of(self, seat: int) -> int | None:
        return (seat + 2) % 4 if self.partnerships else None

    @property
    def min_bid(self) -> int:
        return 0 if self.nil_allowed else 1

    # -- (de)serialisation ---------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.init:
                v = getattr(self, f.name)
                out[f.name] = str(v) if isinstance(v, StrEnum) else v
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ruleset:
        """Build a ruleset from option names and values (unknown names are refused)."""
        return _build(cls(), data)

    def replace(self, **changes: Any) -> Ruleset:
        return _build(self, changes)


OPTION_NAMES = tuple(f.name for f in dataclasses.fields(Ruleset) if f.init)

_ENUMS: dict[str, type[StrEnum]] = {
    "bag_rule": BagRule,
    "first_lead": FirstLead,
    "set_penalty": SetPenalty,
}


_BOOLS = frozenset({"blind_nil", "nil_allowed", "partnerships", "jokers", "thirteen_bid"})


def _build(base: Ruleset, changes: dict[str, Any]) -> Ruleset:
    unknown = sorted(set(changes) - set(OPTION_NAMES))
    if unknown:
        raise RulesetError(
            f"unknown ruleset option(s) {', '.join(unknown)}; known: {', '.join(OPTION_NAMES)}",
            tuple(unknown),
        )
    values = {name: getattr(base, name) for name in OPTION_NAMES}
    for name, raw in changes.items():
        values[name] = _coerce(name, raw)
    return Ruleset(**values)


def _coerce(name: str, raw: Any) -> Any:
    if name in _ENUMS:
        enum = _ENUMS[name]
        try:
            return enum(raw)
        except ValueError:
            allowed = ", ".join(e.value for e in enum)
            raise RulesetError(f"{name}={raw!r} is not one of: {allowed}", (name,)) from None
    if name == "mercy_score" and raw is None:
        return None
    expected = bool if name in _BOOLS else int
    if type(raw) is not expected:
        raise RulesetError(f"{name}={raw!r} must be a {expected.__name__}", (name,))
    return raw


def _deck_mask(players: int, jokers: bool) -> int:
    deck = sum(0x1FFF << (16 * s) for s in range(4))
    if jokers:
        deck |= 0b11 << (3 * 16 + 13)
        if players in (4, 2):
            deck &= ~(1 << TWO_OF_CLUBS) & ~(1 << card(DIAMONDS, TWO))
        elif players == 5:
            for s in range(4):
                deck &= ~(1 << card(s, TWO))
    return deck


def _validate(r: Ruleset) -> None:
    def fail(msg: str, *options: str) -> None:
        raise RulesetError(msg, options)

    for name in OPTION_NAMES:
        _coerce(name, getattr(r, name))  # type check every value, enums included
    if r.target_score <= 0:
        fail(f"target_score={r.target_score} must be a positive number of points", "target_score")
    if r.mercy_score is not None and r.mercy_score >= 0:
        fail(f"mercy_score={r.mercy_score} must be negative, or none", "mercy_score")
    if r.players not in (3, 4, 5):
        fail(f"players={r.players}: a table has 3, 4 or 5 players", "players")
    if r.players != 4 and r.partnerships:
        fail(
            f"players={r.players} is played only without partnerships (cutthroat); "
            "set partnerships=false",
            "players",
            "partnerships",
        )
    if r.players != 4 and not r.jokers:
        fail(
            f"players={r.players} needs jokers=true: the jokers make the deck divide evenly",
            "players",
            "jokers",
        )
    if r.first_lead is FirstLead.TWO_OF_CLUBS and r.jokers and r.players != 3:
        fail(
            f"first_lead=two_of_clubs cannot be played with jokers=true and players={r.players}: "
            "the 2 of clubs is removed from that deck",
            "first_lead",
            "jokers",
            "players",
        )
    if r.blind_nil_deficit < 0:
        fail("blind_nil_deficit must be 0 or more points", "blind_nil_deficit")
    if not 0 <= r.blind_nil_exchange <= 3:
        fail("blind_nil_exchange must be between 0 and 3 cards", "blind_nil_exchange")
    if r.blind_nil and not r.nil_allowed:
        fail(
            "blind_nil=true needs nil_allowed=true: a blind nil is a nil bid",
            "blind_nil",
            "nil_allowed",
        )
    if r.blind_nil and r.blind_nil_exchange and not r.partnerships:
        fail(
            "blind_nil_exchange passes cards to a partner, so it needs partnerships=true "
            "(or set blind_nil_exchange=0)",
            "blind_nil_exchange",
            "partnerships",
        )


PRESETS: dict[str, Ruleset] = {
    # seed 001 "Piki ... Wersja 1.0.0": the default table.
    "classic": Ruleset(),
    # seed 000 (Polish club rules): partners talk bids over, dealer leads,
    # blind nil when trailing by 100 with a 2-card exchange.
    "polish": Ruleset(
        first_lead=FirstLead.DEALER,
        blind_nil=True,
        blind_nil_deficit=100,
        blind_nil_exchange=2,
    ),
    # seed 002 (German): four individual players with both jokers, minimum bid
    # one, a broken contract scores zero, no mercy rule.
    "german": Ruleset(
        partnerships=False,
        jokers=True,
        nil_allowed=False,
        set_penalty=SetPenalty.ZERO,
        mercy_score=None,
    ),
    # seed 003 (Bulgarian): 2 of clubs leads, blind nil at any score without an
    # exchange, the thirteen bid doubles, first side to 500 wins.
    "bulgarian": Ruleset(
        first_lead=FirstLead.TWO_OF_CLUBS,
        blind_nil=True,
        blind_nil_deficit=0,
        blind_nil_exchange=0,
        thirteen_bid=True,
        mercy_score=None,
    ),
}

PRESET_SEEDS = {"classic": "001", "polish": "000", "german": "002", "bulgarian": "003"}


def parse_option(text: str) -> tuple[str, Any]:
    """Parse a command line's ``OPTION=VALUE`` (the value as JSON, else a string)."""
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--set {text!r}: expected OPTION=VALUE")
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return name.strip(), value


def preset(name: str, **overrides: Any) -> Ruleset:
    """A named preset, optionally with some options changed."""
    try:
        base = PRESETS[name]
    except KeyError:
        raise RulesetError(
            f"unknown preset {name!r}; presets: {', '.join(PRESETS)}", ("preset",)
        ) from None
    return base.replace(**overrides) if overrides else base
