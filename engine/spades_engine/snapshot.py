"""Snapshots: the full state of a match as compact, versioned bytes.

Layout::

    b"SPDS"          magic, 4 bytes
    version          1 byte (this module writes and reads version 1)
    zlib stream      compact JSON (ASCII) of one object, described below

The JSON object has one key per field of ``MatchState`` plus ``actions``:

- ``rules``: ``Ruleset.to_dict()`` (every option, enums as their string values;
  an option of ``LATER_OPTIONS`` may be absent, and then loads as its default);
- ``seed``, ``first_dealer``, ``action_count``: integers; ``winner``: a side or null;
- ``deals``: explicit deals, hands as integer masks (bit ``c`` = card ``c``);
- ``phase``: the ``Phase`` value (``"bidding"``, ...);
- ``scores``, ``bags``: by side; ``hand_bids``, ``hand_tricks``: by finished hand, by seat;
- ``results``: by finished hand, by side, each ``SideScore`` as a list of its ten
  integer fields in declaration order (side, contract, tricks, contract_points,
  nil_points, bags_taken, bag_penalty, hand_points, score, bags);
- ``hand``: every field of ``HandState``: masks for ``dealt``, ``hands`` and
  ``exchange_chosen``, cards as integers elsewhere, the dicts as
  ``[seat, value]`` pairs in insertion order, finished tricks as
  ``[leader, [cards in play order], winner]``; a key added after version 1,
  named in ``LATER_HAND_KEYS`` (the optional exchange's ``exchange_deciders``
  and ``exchange_decisions``, auction trump's ``trump_namer``, ``trump_named``
  and ``trump``), may be missing and then takes its default;
- ``actions``: the applied actions as ``[seat, "play QS"]`` (the record's text
  form), so the game record survives a snapshot.

``load_snapshot`` checks the header, the version, and the types and ranges of
the fields a match starts from (``rules``, ``seed``, ``deals``,
``first_dealer``, ``actions``); then it replays the actions from the deal
through ``Match.apply`` and refuses the snapshot unless every other field is
exactly what the replay gives.  So a state play cannot reach (a revoke, a
score that is not the sum of its hands, a winner who did not win, actions
that do not lead to the state) is refused, by the rules themselves rather than
by a second description of them.  The later keys an older snapshot lacks are
filled in (``with_later_keys``) before any of this, so it loads as what the
older engine played.  A refusal raises ``SnapshotError`` naming the first bad
field.  Dumping a loaded match gives the same bytes back (for an older
snapshot, with the later keys).

Loading therefore costs a replay: 2.7 ms for a whole classic match of 560
actions, 1.1 ms with the field-by-field checks before (``bench/snapshot_load.py``).
"""

from __future__ import annotations

import dataclasses
import json
import re
import zlib
from typing import TYPE_CHECKING, Any

from .actions import Action, parse_action
from .cards import Card, CardError, card_name, cards_of
from .deck import SEED_BITS, DealError, check_deal
from .errors import IllegalAction, SnapshotError, SpadesError
from .events import Event, SideScore
from .ruleset import OPTION_NAMES, Ruleset, RulesetError
from .state import MatchState

if TYPE_CHECKING:
    from .match import Match

MAGIC = b"SPDS"
VERSION = 1
MAX_PAYLOAD = 32 * 1024 * 1024
"""Refuse snapshots that inflate to more than this many bytes of JSON."""

LATER_OPTIONS: tuple[str, ...] = (
    "scoring",
    "spades_broken",
    "blind_nil_exchange_optional",
    "suicide",
    "auction_trump",
    "deuces_high",
)
"""Ruleset options added after snapshot version 1 was fixed.  A snapshot's
``rules`` without one of them was written before the option existed, so it was
played by the option's default (the rule before the option); loading fills it
in as that default, not as a preset's later value."""
DEFAULTS = Ruleset().to_dict()

LATER_HAND_KEYS: dict[str, Any] = {
    "exchange_deciders": [],
    "exchange_decisions": [],
    "trump_namer": -1,
    "trump_named": False,
    "trump": 3,  # spades
    "stock": [],
    "drawn": 0,
    "discarded": [],
}
"""Keys of ``hand`` added after version 1, with the value they always had in an
older snapshot (which lacks them)."""

_SIDE_SCORE_FIELDS = tuple(f.name for f in dataclasses.fields(SideScore))
_MATCH_KEYS = (*(f.name for f in dataclasses.fields(MatchState)), "actions")


# -- dumping -----------------------------------------------------------------------------


def dump_snapshot(match: Match) -> bytes:
    """The whole match (state and applied actions) as compact, versioned bytes."""
    doc = snapshot_document(match.state, match.actions)
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return MAGIC + bytes((VERSION,)) + zlib.compress(text.encode("ascii"), 9)


def snapshot_document(st: MatchState, actions: list[tuple[int, Action]]) -> dict[str, Any]:
    """The JSON-ready document inside a snapshot (exposed for tests and tools)."""
    h = st.hand
    hand = {
        "number": h.number,
        "dealer": h.dealer,
        "dealt": list(h.dealt),
        "hands": list(h.hands),
        "face_down": list(h.face_down),
        "bids": list(h.bids),
        "blind": list(h.blind),
        "tricks_won": list(h.tricks_won),
        "to_act": h.to_act,
        "trump_namer": h.trump_namer,
        "trump_named": h.trump_named,
        "trump": h.trump,
        "exchange_deciders": list(h.exchange_deciders),
        "exchange_decisions": [[seat, yes] for seat, yes in h.exchange_decisions.items()],
        "exchange_seats": list(h.exchange_seats),
        "exchange_chosen": [[seat, mask] for seat, mask in h.exchange_chosen.items()],
        "received": [[seat, list(cards)] for seat, cards in h.received.items()],
        "leader": h.leader,
        "trick": list(h.trick),
        "led_suit": h.led_suit,
        "spades_broken": h.spades_broken,
        "completed": [[lead, list(cards), win] for lead, cards, win in h.completed],
        "stock": list(h.stock),
        "drawn": h.drawn,
        "discarded": list(h.discarded),
    }
    return {
        "rules": st.rules.to_dict(),
        "seed": st.seed,
        "deals": [list(d) for d in st.deals],
        "first_dealer": st.first_dealer,
        "phase": st.phase.value,
        "hand": hand,
        "scores": list(st.scores),
        "bags": list(st.bags),
        "results": [
            [[getattr(s, f) for f in _SIDE_SCORE_FIELDS] for s in sides] for sides in st.results
        ],
        "hand_bids": [list(b) for b in st.hand_bids],
        "hand_tricks": [list(t) for t in st.hand_tricks],
        "winner": st.winner,
        "action_count": st.action_count,
        "actions": [[seat, str(action)] for seat, action in actions],
    }


# -- loading -----------------------------------------------------------------------------


def load_snapshot(data: object) -> Match:
    """Rebuild a match from ``dump_snapshot`` bytes; raises ``SnapshotError`` if the
    snapshot is malformed or holds a state its deal and actions do not give."""
    match, _ = replay_snapshot(data)
    match.opening_events = []
    return match


def replay_snapshot(data: object) -> tuple[Match, list[Event]]:
    """A snapshot's match rebuilt by replaying its actions from its deal, with every
    event of its history in order (the opening deal's, then each action's).

    What a service needs to import a match with its whole story, so that a
    stream from the start shows everything a match played there would have.
    Raises ``SnapshotError`` if the snapshot is malformed or if replaying its
    actions does not reproduce its state exactly.
    """
    from .match import Match

    doc = with_later_keys(_document(data))
    rules, seed, deals, dealer, actions = _Reader().start(doc)
    try:
        match = Match(rules, seed=seed, deals=deals, dealer=dealer)
    except SpadesError as e:  # the reader checks these fields; this keeps the promise
        raise SnapshotError(f"the snapshot's match cannot start: {e}") from None
    events: list[Event] = list(match.opening_events)
    for i, (seat, action) in enumerate(actions):
        try:
            events += match.apply(seat, action)
        except IllegalAction as e:
            raise _fail(
                f"actions[{i}]",
                f"{action} by seat {seat} does not replay from the deal "
                f"({e.reason.value}: {e.message})",
            ) from None
    _compare(doc, snapshot_document(match.state, match.actions))
    return match, events


def _document(data: object) -> Any:
    """The JSON document inside a snapshot (header and payload checked)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise SnapshotError(f"a snapshot is bytes, not {type(data).__name__}")
    data = bytes(data)
    if len(data) < len(MAGIC) + 1:
        raise SnapshotError(f"snapshot truncated: {len(data)} bytes is shorter than the header")
    if data[: len(MAGIC)] != MAGIC:
        raise SnapshotError(
            f"not a spades snapshot: it starts with {data[: len(MAGIC)]!r}, expected {MAGIC!r}"
        )
    version = data[len(MAGIC)]
    if version != VERSION:
        raise SnapshotError(
            f"unsupported snapshot version {version}; this engine reads version {VERSION}"
        )
    text = _inflate(data[len(MAGIC) + 1 :])
    try:
        return json.loads(text.decode("ascii"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise SnapshotError(f"snapshot payload is not valid JSON: {e}") from None


def _inflate(payload: bytes) -> bytes:
    d = zlib.decompressobj()
    try:
        text = d.decompress(payload, MAX_PAYLOAD)
    except zlib.error as e:
        raise SnapshotError(f"snapshot payload is corrupt (zlib: {e})") from None
    if d.unconsumed_tail:
        raise SnapshotError(f"snapshot payload inflates to more than {MAX_PAYLOAD} bytes")
    if not d.eof:
        raise SnapshotError("snapshot truncated: the compressed payload ends early")
    if d.unused_data:
        raise SnapshotError(
            f"snapshot has {len(d.unused_data)} unexpected byte(s) after its payload"
        )
    return text


def with_later_keys(doc: Any) -> Any:
    """An older snapshot's document with the keys added since filled in as their
    defaults (left alone when not shaped like a document: the reader says why)."""
    if type(doc) is not dict:
        return doc
    rules, hand = doc.get("rules"), doc.get("hand")
    if type(rules) is dict and any(k not in rules for k in LATER_OPTIONS):
        doc = {**doc, "rules": {**{n: DEFAULTS[n] for n in LATER_OPTIONS}, **rules}}
    if type(hand) is dict and any(k not in hand for k in LATER_HAND_KEYS):
        doc = {**doc, "hand": {**LATER_HAND_KEYS, **hand}}
    return doc


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not allowed")


_Start = tuple[Ruleset, int, list[list[list[Card]]], int, list[tuple[int, Action]]]


class _Reader:
    """Checks the fields a replay starts from; errors name the field's path.

    Every other field is checked by ``_compare`` against the replay, so only
    these need their types and ranges checked here.
    """

    rules: Ruleset

    def int_(self, v: Any, path: str, lo: int | None = None, hi: int | None = None) -> int:
        if type(v) is not int:
            raise _fail(path, f"expected an integer, got {_show(v)}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise _fail(path, f"{v} is out of range {_range(lo, hi)}")
        return v

    def list_(self, v: Any, path: str, length: int | None = None) -> list[Any]:
        if type(v) is not list:
            raise _fail(path, f"expected a list, got {_show(v)}")
        if length is not None and len(v) != length:
            raise _fail(path, f"expected {length} items, got {len(v)}")
        return v

    def obj(self, v: Any, path: str, keys: tuple[str, ...]) -> dict[str, Any]:
        if type(v) is not dict:
            raise _fail(path, f"expected an object, got {_show(v)}")
        missing = [k for k in keys if k not in v]
        if missing:
            raise _fail(path, f"missing key(s) {', '.join(missing)}")
        extra = sorted(set(v) - set(keys))
        if extra:
            raise _fail(path, f"unknown key(s) {', '.join(extra)}")
        return v

    def seat(self, v: Any, path: str) -> int:
        return self.int_(v, path, 0, self.rules.players - 1)

    def start(self, doc: Any) -> _Start:
        """The ruleset, seed, explicit deals, first dealer and actions."""
        d = self.obj(doc, "(top level)", _MATCH_KEYS)
        try:
            self.rules = r = Ruleset.from_dict(self.obj(d["rules"], "rules", OPTION_NAMES))
        except RulesetError as e:
            raise _fail("rules", str(e)) from None
        seed = self.int_(d["seed"], "seed", 1 - 2**SEED_BITS, 2**SEED_BITS - 1)
        deals = []
        for i, hands in enumerate(self.list_(d["deals"], "deals")):
            path = f"deals[{i}]"
            masks = [
                self.int_(m, f"{path}[{s}]", 0, r.deck_mask)
                for s, m in enumerate(self.list_(hands, path, r.players))
            ]
            try:
                check_deal(r, masks)
            except DealError as bad_deal:  # not `e`: compiled by mypyc, a name keeps one type
                raise _fail(path, str(bad_deal)) from None
            deals.append([cards_of(m) for m in masks])
        dealer = self.seat(d["first_dealer"], "first_dealer")
        return r, seed, deals, dealer, self.actions(d["actions"])

    def actions(self, v: Any) -> list[tuple[int, Action]]:
        out: list[tuple[int, Action]] = []
        for i, item in enumerate(self.list_(v, "actions")):
            p = f"actions[{i}]"
            seat, text = self.list_(item, p, 2)
            seat = self.seat(seat, f"{p}[0]")
            if type(text) is not str:
                raise _fail(f"{p}[1]", f"expected an action text, got {_show(text)}")
            try:
                action = parse_action(text)
            except ValueError as e:
                raise _fail(f"{p}[1]", str(e)) from None
            out.append((seat, action))
        return out


def _fail(path: str, message: str) -> SnapshotError:
    return SnapshotError(f"bad snapshot field {path}: {message}")


def _compare(doc: Any, replayed: dict[str, Any]) -> None:
    """Refuse a document that differs in any way from the replay's.

    Compared as canonical JSON text, so a true where the replay has 1 (or 1.0
    where it has 1) differs, as it would in the bytes of a dump; the walk that
    names the first difference runs only when there is one.
    """
    try:
        same = _canonical(doc) == _canonical(replayed)
    except (RecursionError, ValueError):  # nested too deeply to encode: not a dump's
        same = False
    if not same:
        raise SnapshotError(_difference(doc, replayed, "") or "the snapshot differs from a dump")


# Fields holding sets of cards as masks: a difference is shown as cards.
_MASK_PATH = re.compile(
    r"deals\[\d+\]\[\d+\]|hand\.(dealt|hands|discarded)\[\d+\]|hand\.exchange_chosen\[\d+\]\[1\]"
)


def _cards_text(mask: int) -> str:
    if not mask:
        return "no card"
    if mask < 0 or mask >> 64:
        return f"bits {mask:#x}"
    names = []
    for c in cards_of(mask):
        try:
            names.append(card_name(c))
        except CardError:
            names.append(f"#{c}")
    return " ".join(names)


def _canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _difference(got: Any, want: Any, path: str) -> str | None:
    """The first place where ``got`` differs from ``want``, as an error message.

    The walk follows ``want`` (a replay's document, a few levels deep), so
    however deep ``got`` is nested, it stops where the two first differ.
    """
    where = path or "(top level)"
    if type(want) is dict:
        if type(got) is not dict:
            return f"bad snapshot field {where}: expected an object, got {_show(got)}"
        missing = [k for k in want if k not in got]
        if missing:
            return f"bad snapshot field {where}: missing key(s) {', '.join(missing)}"
        extra = sorted(set(got) - set(want))
        if extra:
            return f"bad snapshot field {where}: unknown key(s) {', '.join(map(str, extra))}"
        for key, value in want.items():
            found = _difference(got[key], value, f"{path}.{key}" if path else key)
            if found:
                return found
        return None
    if type(want) is list:
        if type(got) is not list:
            return f"bad snapshot field {where}: expected a list, got {_show(got)}"
        if len(got) != len(want):
            return (
                f"bad snapshot field {where}: expected {len(want)} items (as the deal and "
                f"actions give), got {len(got)}"
            )
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            found = _difference(g, w, f"{path}[{i}]")
            if found:
                return found
        return None
    if type(got) is not type(want) or got != want:
        if type(got) is int and _MASK_PATH.match(path):
            return (
                f"bad snapshot field {where}: does not follow from the deal and the actions: "
                f"holds {_cards_text(got & ~want)} and lacks {_cards_text(want & ~got)}"
            )
        return (
            f"bad snapshot field {where}: {_show(got)} does not follow from the deal and "
            f"the actions, which give {_show(want)}"
        )
    return None


def _show(v: Any) -> str:
    text = json.dumps(v) if isinstance(v, str | int | float | bool | None) else type(v).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _range(lo: int | None, hi: int | None) -> str:
    return f"{'' if lo is None else lo}..{'' if hi is None else hi}"
