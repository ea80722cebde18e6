"""Game records: a match as its starting point plus every action, as JSON.

A record (format ``spades-record``, version 1) is a JSON object::

    {
      "format": "spades-record",
      "version": 1,
      "ruleset": {"target_score": 500, ...},    # options; omitted ones take their default
      "seed": 42,                                # drives the deals and the first dealer
      "dealer": 3,                               # first dealer; omitted: drawn from the seed
      "deals": [[["AS", "KS", ...], ...], ...],  # optional: explicit hands for the first hands
      "actions": [[1, "bid 3"], [2, "look"], [0, "pass AS KH"], [1, "play QS"], ...]
    }

``deals`` holds, for each of the first hands, the cards of every seat (seat 0
first); later hands are dealt from ``seed``.  ``actions`` are ``[seat, text]``
in the order they were applied, with the text forms of ``parse_action``.

``replay`` rebuilds the match by applying every action through ``Match.apply``,
so a record is checked by the same rules as live play: a replayed record
reaches exactly the state of the original match (its snapshot bytes are equal).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from .actions import parse_action
from .cards import Card, CardError, card_name, cards_of, mask_of, parse_card
from .deck import DealError, check_deal, check_seed
from .errors import ActionParseError, IllegalAction, Reason, SnapshotError
from .events import Event, HandScored, HandStarted, MatchEnded
from .match import Match
from .ruleset import Ruleset, RulesetError

FORMAT = "spades-record"
VERSION = 1
_KEYS = ("format", "version", "ruleset", "seed", "dealer", "deals", "actions")
_REQUIRED = ("format", "version", "ruleset", "seed", "actions")


class RecordError(SnapshotError):
    """A game record that is malformed, or whose actions do not replay."""


class RecordActionError(RecordError):
    """An action of a record that the engine refuses (or cannot read).

    ``index`` is its position in ``actions`` (0-based), ``seat`` and ``action``
    the entry as written, ``reason`` the engine's ``Reason`` (None when the
    text is not an action at all).
    """

    def __init__(
        self, index: int, seat: int, action: str, reason: Reason | None, message: str
    ) -> None:
        why = f"{reason.value}: {message}" if reason is not None else message
        super().__init__(f"action {index} (seat {seat}, {action!r}) is illegal: {why}")
        self.index = index
        self.seat = seat
        self.action = action
        self.reason = reason
        self.detail = message


# -- writing -----------------------------------------------------------------------------


def record_of(match: object) -> dict[str, Any]:
    """The game record of a match: its rules, seed, first dealer, explicit deals
    (only if it had any) and every action applied so far."""
    if not isinstance(match, Match):
        raise RecordError(f"record_of takes a Match, not {type(match).__name__}")
    st = match.state
    rec: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "ruleset": st.rules.to_dict(),
        "seed": st.seed,
        "dealer": st.first_dealer,
    }
    if st.deals:
        rec["deals"] = [[[card_name(c) for c in cards_of(m)] for m in d] for d in st.deals]
    rec["actions"] = [[seat, str(action)] for seat, action in match.actions]
    return rec


def dumps_record(record: Mapping[str, Any]) -> str:
    """JSON text of a record: one line per key, per explicit hand and per action."""
    lines = []
    for key, value in record.items():
        k = json.dumps(key)
        if key in ("actions", "deals") and isinstance(value, list) and value:
            items = ",\n".join("    " + _compact(v) for v in value)
            lines.append(f"  {k}: [\n{items}\n  ]")
        else:
            lines.append(f"  {k}: {_compact(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False, allow_nan=False)


def write_record(path: str | PathLike[str], record: Mapping[str, Any]) -> None:
    Path(path).write_text(dumps_record(record), encoding="utf-8")


# -- reading -----------------------------------------------------------------------------


def loads_record(text: object) -> dict[str, Any]:
    """Parse record JSON (a str, bytes or bytearray, as ``json.loads`` takes);
    the content is checked by ``replay``."""
    try:
        given: Any = text  # anything else: json's own TypeError, as uncompiled
        doc = json.loads(given)
    except (ValueError, RecursionError) as e:
        raise RecordError(f"not valid JSON: {e}") from None
    if type(doc) is not dict:
        raise RecordError(f"a record is a JSON object, not {type(doc).__name__}")
    return doc


def read_record(path: str | PathLike[str]) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise RecordError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as bad:  # not `e`: compiled by mypyc, a name keeps one type
        raise RecordError(f"{path} is not UTF-8 text: {bad}") from None
    return loads_record(text)


def replay(record: object) -> Match:
    """The match a record describes, every action applied through ``Match.apply``.

    Raises ``RecordError`` for a malformed record and ``RecordActionError``
    (naming the action's index, seat and the engine's reason) for the first
    action the rules refuse.
    """
    return replay_events(record)[0]


def replay_events(record: object) -> tuple[Match, list[Event]]:
    """Like ``replay``, also returning every event in order (the opening deal's first)."""
    match = start_match(record)
    events: list[Event] = list(match.opening_events)
    checked: Any = record  # start_match checked it is a dict
    actions = checked["actions"]
    for i, entry in enumerate(_list(actions, "actions")):
        if type(entry) is not list or len(entry) != 2:
            raise RecordError(f"actions[{i}] must be [seat, action], got {_show(entry)}")
        seat, text = entry
        if type(seat) is not int:
            raise RecordError(f"actions[{i}]: the seat must be an integer, got {_show(seat)}")
        if type(text) is not str:
            raise RecordError(f"actions[{i}]: the action must be a string, got {_show(text)}")
        try:
            action = parse_action(text)
        except ActionParseError as e:
            raise RecordActionError(i, seat, text, None, str(e)) from None
        try:
            events.extend(match.apply(seat, action))
        except IllegalAction as refused:  # not `e`: compiled by mypyc, a name keeps one type
            raise RecordActionError(i, seat, text, refused.reason, refused.message) from None
    return match, events


def start_match(record: object) -> Match:
    """The match at the start of a record, before any action (header fields checked)."""
    if type(record) is not dict:
        raise RecordError(f"a record is a JSON object, not {type(record).__name__}")
    if record.get("format") != FORMAT:
        raise RecordError(f'not a game record: "format" must be "{FORMAT}"')
    version = record.get("version")
    if version != VERSION or type(version) is not int:
        raise RecordError(
            f"unsupported record version {_show(version)}; this engine reads version {VERSION}"
        )
    missing = [k for k in _REQUIRED if k not in record]
    if missing:
        raise RecordError(f"record is missing {', '.join(missing)}")
    unknown = sorted(set(record) - set(_KEYS))
    if unknown:
        raise RecordError(f"unknown record key(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}")
    options = record["ruleset"]
    if type(options) is not dict:
        raise RecordError(f'"ruleset" must be an object of options, got {_show(options)}')
    try:
        rules = Ruleset.from_dict(options)
    except RulesetError as e:
        raise RecordError(f"bad ruleset: {e}") from None
    seed = record["seed"]
    if type(seed) is not int:
        raise RecordError(f'"seed" must be an integer, got {_show(seed)}')
    try:
        check_seed(seed)
    except DealError as bad_seed:  # not `e`: compiled by mypyc, a name keeps one type
        raise RecordError(f'bad "seed": {bad_seed}') from None
    dealer = record.get("dealer")
    if dealer is not None and (type(dealer) is not int or not 0 <= dealer < rules.players):
        raise RecordError(
            f'"dealer" must be a seat from 0 to {rules.players - 1}, got {_show(dealer)}'
        )
    deals = _deals(record.get("deals", []))
    for i, d in enumerate(deals):
        try:
            check_deal(rules, [mask_of(cs) for cs in d])
        except DealError as bad_deal:
            raise RecordError(f"bad deals[{i}]: {bad_deal}") from None
    _list(record["actions"], "actions")
    try:
        return Match(rules, seed=seed, deals=deals, dealer=dealer)
    except DealError as bad_deal:
        raise RecordError(f"bad deals: {bad_deal}") from None


def _deals(value: Any) -> list[list[list[Card]]]:
    out: list[list[list[Card]]] = []
    for i, hand in enumerate(_list(value, "deals")):
        seats: list[list[Card]] = []
        for s, cards in enumerate(_list(hand, f"deals[{i}]")):
            path = f"deals[{i}][{s}]"
            cs: list[Card] = []
            for c in _list(cards, path):
                if type(c) is not str:
                    raise RecordError(f'{path}: a card is a name like "QS", got {_show(c)}')
                try:
                    cs.append(parse_card(c))
                except CardError as e:
                    raise RecordError(f"{path}: {e}") from None
            if len(set(cs)) != len(cs):
                raise RecordError(f"{path}: a card appears twice")
            seats.append(cs)
        out.append(seats)
    return out


def _list(value: Any, path: str) -> list[Any]:
    if type(value) is not list:
        raise RecordError(f'"{path}" must be a list, got {_show(value)}')
    return value


def _show(v: Any) -> str:
    try:
        text = json.dumps(v)
    except (TypeError, ValueError, RecursionError):
        text = type(v).__name__
    return text if len(text) <= 40 else text[:37] + "..."


# -- results -----------------------------------------------------------------------------


def results_of(match: Match, events: Sequence[Event]) -> dict[str, Any]:
    """Hand-by-hand results from a replay's events, JSON-ready.

    ``hands`` lists every scored hand (``hand`` counts from 1; ``dealer``,
    ``bids``, ``blind``, ``tricks`` by seat; ``sides`` with each side's seats,
    contract, tricks, points scored this hand, bags taken, bag penalty, running
    bags and score).  ``result`` is the match result once it is over, else
    null; ``in_progress`` describes an unfinished hand the record stops in.
    """
    rules = match.rules
    dealers: dict[int, int] = {}
    hands: list[dict[str, Any]] = []
    result: dict[str, Any] | None = None
    for e in events:
        if isinstance(e, HandStarted):
            dealers[e.hand_number] = e.dealer
        elif isinstance(e, HandScored):
            hands.append(
                {
                    "hand": e.hand_number + 1,
                    "dealer": dealers.get(e.hand_number),
                    "bids": list(e.bids),
                    "blind": list(e.blind),
                    "tricks": list(e.tricks),
                    "sides": [
                        {
                            "side": s.side,
                            "seats": list(rules.seats_of(s.side)),
                            "contract": s.contract,
                            "tricks": s.tricks,
                            "contract_points": s.contract_points,
                            "nil_points": s.nil_points,
                            "bag_penalty": s.bag_penalty,
                            "points": s.hand_points,
                            "bags_taken": s.bags_taken,
                            "bags": s.bags,
                            "score": s.score,
                        }
                        for s in e.sides
                    ],
                }
            )
        elif isinstance(e, MatchEnded):
            result = {
                "winner": e.winner,
                "winner_seats": list(rules.seats_of(e.winner)),
                "scores": list(e.scores),
                "hands_played": e.hands_played,
            }
    in_progress = None
    if not match.is_over:
        h = match.state.hand
        in_progress = {
            "hand": h.number + 1,
            "dealer": h.dealer,
            "phase": match.phase.value,
            "bids": list(h.bids),
            "tricks": list(h.tricks_won),
        }
    return {
        "actions": len(match.actions),
        "result": result,
        "scores": list(match.scores),
        "bags": list(match.bags),
        "in_progress": in_progress,
        "hands": hands,
        "ruleset": rules.to_dict(),
    }
