"""spades_engine: the rules of Spades (Piki) as a pure, deterministic library.

Start with ``Match`` and a ``Ruleset`` (or a preset from ``preset``)::

    from spades_engine import Match, preset
    m = Match(preset("classic"), seed=42)

Every exception the engine raises for input it refuses is a ``SpadesError``.

Two builds come from the same sources: compiled by mypyc (installed where a C
compiler exists) and pure Python.  ``COMPILED`` says which one is loaded and
``BUILD`` why; ``SPADES_ENGINE_PURE=1`` in the environment forces the pure one.
"""

from pathlib import Path as _Path

from . import _build

BUILD: str = _build.choose(__name__, _Path(__file__).resolve().parent)

# Every other import comes after the choice of build (ruff: E402 allowed here).
from . import match as _match
from .actions import (
    BLIND_NIL,
    DRAW_DISCARD,
    DRAW_KEEP,
    EXCHANGE,
    LOOK,
    NO_EXCHANGE,
    Action,
    Bid,
    BlindNil,
    Draw,
    ExchangeDecision,
    Look,
    NameTrump,
    PassCards,
    Play,
    parse_action,
)
from .cards import Card, CardError, card_name, parse_card, parse_hand
from .deck import DealError
from .errors import ActionParseError, IllegalAction, Reason, SnapshotError, SpadesError
from .events import Audience, Event, event_to_dict
from .match import Match
from .ruleset import (
    PRESETS,
    BagRule,
    FirstLead,
    Ruleset,
    RulesetError,
    Scoring,
    SetPenalty,
    SpadesBroken,
    preset,
)
from .snapshot import replay_snapshot
from .state import Phase
from .view import SeatView

COMPILED: bool = _build.is_compiled(_match)

__all__ = [
    "BLIND_NIL",
    "BUILD",
    "COMPILED",
    "DRAW_DISCARD",
    "DRAW_KEEP",
    "EXCHANGE",
    "LOOK",
    "NO_EXCHANGE",
    "PRESETS",
    "Action",
    "ActionParseError",
    "Audience",
    "BagRule",
    "Bid",
    "BlindNil",
    "Card",
    "CardError",
    "DealError",
    "Draw",
    "Event",
    "ExchangeDecision",
    "FirstLead",
    "IllegalAction",
    "Look",
    "Match",
    "NameTrump",
    "PassCards",
    "Phase",
    "Play",
    "Reason",
    "Ruleset",
    "RulesetError",
    "Scoring",
    "SeatView",
    "SetPenalty",
    "SnapshotError",
    "SpadesBroken",
    "SpadesError",
    "card_name",
    "event_to_dict",
    "parse_action",
    "parse_card",
    "parse_hand",
    "preset",
    "replay_snapshot",
]
