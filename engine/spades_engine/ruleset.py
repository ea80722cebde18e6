"""Rulesets: every table rule of RULES.md as a value, with named presets.

A ruleset is immutable and validated when it is made, so a match never runs
with a combination of options that has no defined meaning.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .cards import DIAMONDS, HEARTS, TWO, TWO_OF_CLUBS, card
from .errors import SpadesError, show


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


class Scoring(StrEnum):
    CLASSIC = "classic"  # seed 001: 10 per bid, overtricks are bags (RULES.md §1)
    TRICKS = "tricks"  # seed 003's own table: points = contract, bags = shortfall (§3.1)


class SpadesBroken(StrEnum):
    ANY_SPADE = "any_spade"  # seed 001: any spade played to a trick breaks spades
    TRUMPING = "trumping"  # seed 000: only a spade played by a seat that cannot follow suit


class RulesetError(SpadesError, ValueError):
    """Option values or combinations of options that cannot be played.

    One error reports every problem of a ruleset at once: ``problems`` lists
    each as (message, the options involved), the message joins them, and
    ``options`` names every option involved, so a caller can point at them.
    """

    def __init__(
        self,
        message: str,
        options: tuple[str, ...],
        problems: tuple[tuple[str, tuple[str, ...]], ...] | None = None,
    ) -> None:
        super().__init__(message)
        self.options = options
        self.problems = problems if problems is not None else ((message, options),)


@dataclass(frozen=True, slots=True, init=False)
class Ruleset:
    """The table rules of one match.  Defaults are the ``classic`` table (seed 001)."""

    target_score: int = 500
    mercy_score: int | None = -200
    bag_rule: BagRule = BagRule.TEN_FOR_100
    blind_nil: bool = False
    blind_nil_deficit: int = 100
    blind_nil_exchange: int = 2
    blind_nil_exchange_optional: bool = False  # seed 000: the blind nil player "may" exchange
    first_lead: FirstLead = FirstLead.LEFT_OF_DEALER
    nil_allowed: bool = True
    set_penalty: SetPenalty = SetPenalty.TEN_PER_BID
    partnerships: bool = True
    jokers: bool = False
    players: int = 4
    thirteen_bid: bool = False
    scoring: Scoring = Scoring.CLASSIC
    spades_broken: SpadesBroken = SpadesBroken.ANY_SPADE
    suicide: bool = False  # seed 001 (off there): one partner of each side bids nil, the other 4+
    auction_trump: bool = False  # seed 003 "Пика за търг": the highest bidder names trump
    deuces_high: bool = False  # seed 001 (off there): 2D and 2S are the top spades below the jokers
    # Derived once, so hot paths read a field instead of recomputing.
    deck_mask: int = field(init=False, repr=False, compare=False)
    hand_size: int = field(init=False, repr=False, compare=False)

    # The constructor is written out rather than made by @dataclass: it takes
    # any value (an enum option as its string value, a wrong type to refuse)
    # and stores the checked ones, so compiled by mypyc a field never holds a
    # value of another type than its own.  Its defaults are the fields' above.
    def __init__(
        self,
        target_score: object = 500,
        mercy_score: object = -200,
        bag_rule: object = BagRule.TEN_FOR_100,
        blind_nil: object = False,
        blind_nil_deficit: object = 100,
        blind_nil_exchange: object = 2,
        blind_nil_exchange_optional: object = False,
        first_lead: object = FirstLead.LEFT_OF_DEALER,
        nil_allowed: object = True,
        set_penalty: object = SetPenalty.TEN_PER_BID,
        partnerships: object = True,
        jokers: object = False,
        players: object = 4,
        thirteen_bid: object = False,
        scoring: object = Scoring.CLASSIC,
        spades_broken: object = SpadesBroken.ANY_SPADE,
        suicide: object = False,
        auction_trump: object = False,
        deuces_high: object = False,
    ) -> None:
        """Raises ``RulesetError`` naming every bad value and every conflict."""
        values, problems = _check(
            {
                "target_score": target_score,
                "mercy_score": mercy_score,
                "bag_rule": bag_rule,
                "blind_nil": blind_nil,
                "blind_nil_deficit": blind_nil_deficit,
                "blind_nil_exchange": blind_nil_exchange,
                "blind_nil_exchange_optional": blind_nil_exchange_optional,
                "first_lead": first_lead,
                "nil_allowed": nil_allowed,
                "set_penalty": set_penalty,
                "partnerships": partnerships,
                "jokers": jokers,
                "players": players,
                "thirteen_bid": thirteen_bid,
                "scoring": scoring,
                "spades_broken": spades_broken,
                "suicide": suicide,
                "auction_trump": auction_trump,
                "deuces_high": deuces_high,
            }
        )
        if problems:
            raise _error(problems)
        # Enum options are stored as enums even when given as their string
        # values: the rules compare them by identity (``is FirstLead.DEALER``).
        for name in OPTION_NAMES:
            object.__setattr__(self, name, values[name])
        deck = _deck_mask(self.players, self.jokers)
        if self.deuces_high:  # the 2 of diamonds stays (a spade), the 2 of hearts leaves
            deck = deck & ~(1 << card(HEARTS, TWO)) | 1 << card(DIAMONDS, TWO)
        object.__setattr__(self, "deck_mask", deck)
        # two players draw the whole deck and keep half of it
        held_by = 2 * self.players if self.players == 2 else self.players
        object.__setattr__(self, "hand_size", deck.bit_count() // held_by)

    # Copies and pickles set the fields back with object.__setattr__, as
    # @dataclass's own methods for a frozen class do (compiled by mypyc, the
    # class would otherwise get defaults that set them as attributes, which a
    # frozen class refuses).
    def __getstate__(self) -> list[object]:
        return [getattr(self, f.name) for f in dataclasses.fields(self)]

    def __setstate__(self, state: list[object]) -> None:
        for f, value in zip(dataclasses.fields(self), state, strict=True):
            object.__setattr__(self, f.name, value)

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
    def from_dict(cls, data: Mapping[str, Any]) -> Ruleset:
        """Build a ruleset from option names and values (unknown names are refused);
        options not named keep their default."""
        if not isinstance(data, Mapping):
            raise RulesetError(f"a ruleset is a dict of options, not {type(data).__name__}", ())
        return _build(cls(), data)

    def replace(self, **changes: Any) -> Ruleset:
        return _build(self, changes)


OPTION_NAMES = tuple(f.name for f in dataclasses.fields(Ruleset) if f.init)
_OPTION_SET = frozenset(OPTION_NAMES)

_ENUMS: dict[str, type[StrEnum]] = {
    "bag_rule": BagRule,
    "first_lead": FirstLead,
    "set_penalty": SetPenalty,
    "scoring": Scoring,
    "spades_broken": SpadesBroken,
}


_BOOLS = frozenset(
    {
        "blind_nil",
        "blind_nil_exchange_optional",
        "nil_allowed",
        "partnerships",
        "jokers",
        "thirteen_bid",
        "suicide",
        "auction_trump",
        "deuces_high",
    }
)
_KIND_NAMES = {bool: "true or false", int: "an integer"}


_MAX_POINTS = 2**31 - 1
"""Bound of the options counted in points: the API carries them as int32."""

Problem = tuple[str, tuple[str, ...]]


def _build(base: Ruleset, changes: Mapping[Any, Any]) -> Ruleset:
    problems: list[Problem] = []
    unknown = sorted(k if type(k) is str else show(k) for k in changes if k not in _OPTION_SET)
    if unknown:
        problems.append(
            (
                f"unknown ruleset option(s) {', '.join(unknown)}; known: {', '.join(OPTION_NAMES)}",
                tuple(unknown),
            )
        )
    values = {name: getattr(base, name) for name in OPTION_NAMES}
    for name, raw in changes.items():
        if name in _OPTION_SET:
            values[name] = raw
    coerced, more = _check(values)
    problems += more
    if problems:
        raise _error(problems)
    return Ruleset(**coerced)


def _error(problems: list[Problem]) -> RulesetError:
    options = tuple(dict.fromkeys(o for _, opts in problems for o in opts))
    message = "; ".join(msg for msg, _ in problems)
    return RulesetError(message, options, tuple(problems))


def _enum_value(enum: type[StrEnum], raw: Any) -> StrEnum | None:
    """The member ``raw`` names, or None. Only a str can name one: enum() of
    anything else builds its refusal from the value's repr, which a deeply
    nested list overflows."""
    if isinstance(raw, str):
        with contextlib.suppress(ValueError):
            return enum(raw)
    return None


def _coerce_types(values: dict[str, Any], out: dict[str, Any]) -> list[tuple[str, str]]:
    """Enum options into ``out`` as members; each value of the wrong type as
    (option, message)."""
    wrong: list[tuple[str, str]] = []
    for name in OPTION_NAMES:
        raw = values[name]
        if name in _ENUMS:
            enum = _ENUMS[name]
            value = _enum_value(enum, raw)
            if value is None:
                allowed = ", ".join(e.value for e in enum)
                wrong.append((name, f"{name}={show(raw)} is not one of: {allowed}"))
            else:
                out[name] = value
        elif not (name == "mercy_score" and raw is None):
            expected = bool if name in _BOOLS else int
            if type(raw) is not expected:
                wrong.append((name, f"{name}={show(raw)} must be {_KIND_NAMES[expected]}"))
    return wrong


def _check(values: dict[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """Every option's value coerced (enums from their string values), and every
    problem: each bad value, then each conflict between values that are fine
    alone (a conflict with a bad value would only repeat it)."""
    problems: list[Problem] = []
    bad: set[str] = set()
    out = dict(values)

    def fail(msg: str, *options: str) -> None:
        problems.append((msg, options))

    def invalid(name: str, msg: str) -> None:
        fail(msg, name)
        bad.add(name)

    for name, msg in _coerce_types(values, out):
        invalid(name, msg)

    def fine(*names: str) -> bool:
        return bad.isdisjoint(names)

    v = out
    if fine("target_score") and not 0 < v["target_score"] <= _MAX_POINTS:
        invalid(
            "target_score",
            f"target_score={show(v['target_score'])} must be a positive number of points "
            f"(at most {_MAX_POINTS})",
        )
    mercy = v["mercy_score"]
    if fine("mercy_score") and mercy is not None and not -_MAX_POINTS <= mercy < 0:
        invalid(
            "mercy_score",
            f"mercy_score={show(mercy)} must be negative (at least {-_MAX_POINTS}), or none",
        )
    players = v["players"]
    if fine("players") and players not in PLAYABLE_PLAYERS:
        counts = ", ".join(map(str, PLAYABLE_PLAYERS[:-1])) + f" or {PLAYABLE_PLAYERS[-1]}"
        invalid("players", f"players={show(players)}: a table has {counts} players")
    if fine("blind_nil_deficit") and not 0 <= v["blind_nil_deficit"] <= _MAX_POINTS:
        invalid(
            "blind_nil_deficit",
            f"blind_nil_deficit must be 0 or more points (at most {_MAX_POINTS})",
        )
    if fine("blind_nil_exchange") and not 0 <= v["blind_nil_exchange"] <= 3:
        invalid("blind_nil_exchange", "blind_nil_exchange must be between 0 and 3 cards")

    if fine("players", "partnerships") and players != 4 and v["partnerships"]:
        fail(
            f"players={players} is played only without partnerships (cutthroat); "
            "set partnerships=false",
            "players",
            "partnerships",
        )
    if fine("players", "jokers") and players != 4 and not v["jokers"]:
        fail(
            f"players={players} needs jokers=true: the jokers make the deck divide evenly",
            "players",
            "jokers",
        )
    if (
        fine("first_lead", "jokers", "players")
        and v["first_lead"] is FirstLead.TWO_OF_CLUBS
        and v["jokers"]
        and players != 3
    ):
        fail(
            f"first_lead=two_of_clubs cannot be played with jokers=true and players={players}: "
            "the 2 of clubs is removed from that deck",
            "first_lead",
            "jokers",
            "players",
        )
    if fine("auction_trump", "jokers") and v["auction_trump"] and v["jokers"]:
        fail(
            "auction_trump=true cannot be played with jokers=true: the jokers are spades, "
            "and under auction trump spades may not be trump",
            "auction_trump",
            "jokers",
        )
    if fine("blind_nil", "nil_allowed") and v["blind_nil"] and not v["nil_allowed"]:
        fail(
            "blind_nil=true needs nil_allowed=true: a blind nil is a nil bid",
            "blind_nil",
            "nil_allowed",
        )
    if (
        fine("blind_nil", "blind_nil_exchange", "partnerships")
        and v["blind_nil"]
        and v["blind_nil_exchange"]
        and not v["partnerships"]
    ):
        fail(
            "blind_nil_exchange passes cards to a partner, so it needs partnerships=true "
            "(or set blind_nil_exchange=0)",
            "blind_nil_exchange",
            "partnerships",
        )
    if fine("blind_nil_exchange_optional", "blind_nil_exchange", "partnerships"):
        problems += _optional_exchange_problems(v)
    problems += _scoring_problems(v, bad)
    problems += _suicide_problems(v, bad)
    problems += _deuces_problems(v, bad)
    problems += _two_player_problems(v, bad)
    return out, problems


PLAYABLE_PLAYERS: tuple[int, ...] = (2, 3, 4, 5)
"""Table sizes a ruleset accepts (2: the draw of RULES.md 3.1, ``draw.py``)."""


def _two_player_problems(v: dict[str, Any], bad: set[str]) -> list[Problem]:
    """Two players draw their hands, so nobody bids blind, and the non-dealer leads."""
    if "players" in bad or v["players"] != 2:
        return []
    problems: list[Problem] = []
    if "blind_nil" not in bad and v["blind_nil"]:
        problems.append(
            (
                "blind_nil=true cannot be played with players=2: each player sees every "
                "card it draws before bidding",
                ("blind_nil", "players"),
            )
        )
    lead = v["first_lead"]
    if "first_lead" not in bad and (
        lead is FirstLead.DEALER or (lead is FirstLead.TWO_OF_CLUBS and not v["jokers"])
    ):
        # with jokers, two_of_clubs is already refused: the 2 of clubs is not in the deck
        problems.append(
            (
                f"first_lead={v['first_lead']} cannot be played with players=2: the "
                "non-dealer leads (first_lead=left_of_dealer)",
                ("first_lead", "players"),
            )
        )
    return problems


def _deuces_problems(v: dict[str, Any], bad: set[str]) -> list[Problem]:
    """Deuces high needs the jokers above the deuces, the four-player deck of
    52 (2C and 2H out), and spades as the only trump."""
    if "deuces_high" in bad or not v["deuces_high"]:
        return []
    problems: list[Problem] = []
    if "jokers" not in bad and not v["jokers"]:
        problems.append(
            (
                "deuces_high=true needs jokers=true: the jokers rank above the 2 of diamonds "
                "and the 2 of spades",
                ("deuces_high", "jokers"),
            )
        )
    if "players" not in bad and v["players"] != 4:
        problems.append(
            (
                f"deuces_high=true is played with players=4 only (not {v['players']}): its deck "
                "is 52 cards, 13 each, the 2 of clubs and 2 of hearts out",
                ("deuces_high", "players"),
            )
        )
    if "auction_trump" not in bad and v["auction_trump"]:
        problems.append(
            (
                "deuces_high=true cannot be played with auction_trump=true: the 2 of diamonds "
                "is a spade, and under auction trump spades may not be trump",
                ("deuces_high", "auction_trump"),
            )
        )
    return problems


SUICIDE_MIN_BID = 4
"""Under suicide, the least bid of the partner who does not bid nil."""


def _suicide_problems(v: dict[str, Any], bad: set[str]) -> list[Problem]:
    """Suicide pairs the partners' bids, so it needs partners, and the nil."""
    if "suicide" in bad or not v["suicide"]:
        return []
    problems: list[Problem] = []
    if "partnerships" not in bad and not v["partnerships"]:
        problems.append(
            (
                "suicide=true pairs the bids of partners (one nil, the other at least "
                f"{SUICIDE_MIN_BID}), so it needs partnerships=true",
                ("suicide", "partnerships"),
            )
        )
    if "nil_allowed" not in bad and not v["nil_allowed"]:
        problems.append(
            (
                "suicide=true needs nil_allowed=true: one partner of each side must bid nil",
                ("suicide", "nil_allowed"),
            )
        )
    return problems


def _optional_exchange_problems(v: dict[str, Any]) -> list[Problem]:
    """An optional exchange needs an exchange, and partners to exchange with."""
    if not v["blind_nil_exchange_optional"]:
        return []
    problems: list[Problem] = []
    if not v["blind_nil_exchange"]:
        problems.append(
            (
                "blind_nil_exchange_optional=true needs an exchange to choose: set "
                "blind_nil_exchange to 1 or more cards",
                ("blind_nil_exchange_optional", "blind_nil_exchange"),
            )
        )
    if not v["partnerships"]:
        problems.append(
            (
                "blind_nil_exchange_optional=true passes cards to a partner, so it needs "
                "partnerships=true",
                ("blind_nil_exchange_optional", "partnerships"),
            )
        )
    return problems


_TRICKS_IGNORES: dict[str, tuple[StrEnum, str]] = {
    "bag_rule": (BagRule.TEN_FOR_100, "it counts its own bags, the tricks short of a set"),
    "set_penalty": (SetPenalty.TEN_PER_BID, "a set contract scores 0 and takes bags"),
}
"""Options trick-count scoring does not use: only their default is accepted."""


def _scoring_problems(v: dict[str, Any], bad: set[str]) -> list[Problem]:
    """scoring=tricks with a bag rule or set penalty other than the default."""
    if "scoring" in bad or v["scoring"] is not Scoring.TRICKS:
        return []
    return [
        (
            f"{name}={v[name]} has no meaning with scoring=tricks ({why}); "
            f"leave {name} at its default, {default}",
            ("scoring", name),
        )
        for name, (default, why) in _TRICKS_IGNORES.items()
        if name not in bad and v[name] is not default
    ]


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


PRESETS: dict[str, Ruleset] = {
    # seed 001 "Piki ... Wersja 1.0.0": the default table.
    "classic": Ruleset(),
    # seed 000 (Polish club rules): partners talk bids over, dealer leads,
    # blind nil when trailing by 100 with a 2-card exchange that the blind nil
    # player may take or decline ("może wymienić"), spades broken only by
    # trumping.
    "polish": Ruleset(
        first_lead=FirstLead.DEALER,
        blind_nil=True,
        blind_nil_deficit=100,
        blind_nil_exchange=2,
        spades_broken=SpadesBroken.TRUMPING,
        blind_nil_exchange_optional=True,
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


def parse_option(text: object) -> tuple[str, Any]:
    """Parse a command line's ``OPTION=VALUE`` (the value as JSON, else a string)."""
    given: Any = text  # any value, as uncompiled: its own partition() or AttributeError
    name, sep, raw = given.partition("=")
    if not sep or not name:
        raise RulesetError(f"--set {show(text)}: expected OPTION=VALUE", ())
    try:
        value: Any = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON (or nested past the parser's depth)
        value = raw
    return name.strip(), value


def preset(name: object, **overrides: Any) -> Ruleset:
    """A named preset, optionally with some options changed."""
    base = PRESETS.get(name) if type(name) is str else None
    if base is None:
        raise RulesetError(
            f"unknown preset {show(name)}; presets: {', '.join(PRESETS)}", ("preset",)
        )
    return base.replace(**overrides) if overrides else base
