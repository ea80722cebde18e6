"""Snapshots: the full state of a match as compact, versioned bytes.

Layout::

    b"SPDS"          magic, 4 bytes
    version          1 byte (this module writes and reads version 1)
    zlib stream      compact JSON (ASCII) of one object, described below

The JSON object has one key per field of ``MatchState`` plus ``actions``:

- ``rules``: ``Ruleset.to_dict()`` (every option, enums as their string values);
- ``seed``, ``first_dealer``, ``action_count``: integers; ``winner``: a side or null;
- ``deals``: explicit deals, hands as integer masks (bit ``c`` = card ``c``);
- ``phase``: the ``Phase`` value (``"bidding"``, ...);
- ``scores``, ``bags``: by side; ``hand_bids``, ``hand_tricks``: by finished hand, by seat;
- ``results``: by finished hand, by side, each ``SideScore`` as a list of its ten
  integer fields in declaration order (side, contract, tricks, contract_points,
  nil_points, bags_taken, bag_penalty, hand_points, score, bags);
- ``hand``: every field of ``HandState``: masks for ``dealt``, ``hands`` and
  ``exchange_chosen``, cards as integers elsewhere, the two dicts as
  ``[seat, value]`` pairs in insertion order, finished tricks as
  ``[leader, [cards in play order], winner]``;
- ``actions``: the applied actions as ``[seat, "play QS"]`` (the record's text
  form), so the game record survives a snapshot.

``load_snapshot`` checks the header, the version, every field's type and range,
and that the state is one play can reach: every card held or played exactly
once, bids made in turn, the right seat to act, the exchange and each trick's
leader and winner as the rules make them, each hand's cards as dealt, passed
and played, and the scores as the sum of the hands.  Anything else raises
``SnapshotError`` naming the first bad field.  Dumping a loaded match gives the
same bytes back.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from typing import TYPE_CHECKING, Any

from .actions import Action, parse_action
from .cards import SPADE_MASK, TWO_OF_CLUBS, Card, card_name, cards_of
from .deck import SEED_BITS, DealError, check_deal
from .errors import IllegalAction, SnapshotError
from .events import Event, SideScore
from .exchange import exchange_seats
from .ruleset import OPTION_NAMES, FirstLead, Ruleset, RulesetError
from .scoring import blind_nil_eligible, match_winner
from .state import HandState, MatchState, Phase
from .trick import trick_winner_index

if TYPE_CHECKING:
    from .match import Match

MAGIC = b"SPDS"
VERSION = 1
MAX_PAYLOAD = 32 * 1024 * 1024
"""Refuse snapshots that inflate to more than this many bytes of JSON."""

_SIDE_SCORE_FIELDS = tuple(f.name for f in dataclasses.fields(SideScore))
_MATCH_KEYS = (*(f.name for f in dataclasses.fields(MatchState)), "actions")
_HAND_KEYS = tuple(f.name for f in dataclasses.fields(HandState))


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
        "exchange_seats": list(h.exchange_seats),
        "exchange_chosen": [[seat, mask] for seat, mask in h.exchange_chosen.items()],
        "received": [[seat, list(cards)] for seat, cards in h.received.items()],
        "leader": h.leader,
        "trick": list(h.trick),
        "led_suit": h.led_suit,
        "spades_broken": h.spades_broken,
        "completed": [[lead, list(cards), win] for lead, cards, win in h.completed],
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


def load_snapshot(data: bytes) -> Match:
    """Rebuild a match from ``dump_snapshot`` bytes; raises ``SnapshotError`` if malformed."""
    from .match import Match

    st, actions = parse_snapshot(data)
    return Match._restore(st, actions)


def replay_snapshot(data: bytes) -> tuple[Match, list[Event]]:
    """A snapshot's match rebuilt by replaying its actions from its deal, with every
    event of its history in order (the opening deal's, then each action's).

    What a service needs to import a match with its whole story, so that a
    stream from the start shows everything a match played there would have.
    Raises ``SnapshotError`` if the snapshot is malformed or if replaying its
    actions does not reproduce its state exactly.
    """
    from .match import Match

    st, actions = parse_snapshot(data)
    deals = [[cards_of(mask) for mask in deal] for deal in st.deals]
    match = Match(st.rules, seed=st.seed, deals=deals, dealer=st.first_dealer)
    events: list[Event] = list(match.opening_events)
    for i, (seat, action) in enumerate(actions):
        try:
            events += match.apply(seat, action)
        except IllegalAction as e:
            raise SnapshotError(
                f"snapshot action {i} ({action} by seat {seat}) does not replay: {e}"
            ) from None
    if snapshot_document(match.state, match.actions) != snapshot_document(st, actions):
        raise SnapshotError("the snapshot's state does not follow from its deal and actions")
    return match, events


def parse_snapshot(data: bytes) -> tuple[MatchState, list[tuple[int, Action]]]:
    """The state and the applied actions in a snapshot, fully checked."""
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
        doc = json.loads(text.decode("ascii"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise SnapshotError(f"snapshot payload is not valid JSON: {e}") from None
    return _Reader().match(doc)


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


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not allowed")


class _Reader:
    """Checks one snapshot document field by field; errors name the field's path."""

    rules: Ruleset

    # -- primitives --------------------------------------------------------------------
    @staticmethod
    def fail(path: str, message: str) -> SnapshotError:
        return SnapshotError(f"bad snapshot field {path}: {message}")

    def int_(self, v: Any, path: str, lo: int | None = None, hi: int | None = None) -> int:
        if type(v) is not int:
            raise self.fail(path, f"expected an integer, got {_show(v)}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise self.fail(path, f"{v} is out of range {_range(lo, hi)}")
        return v

    def bool_(self, v: Any, path: str) -> bool:
        if type(v) is not bool:
            raise self.fail(path, f"expected true or false, got {_show(v)}")
        return v

    def list_(self, v: Any, path: str, length: int | None = None) -> list[Any]:
        if type(v) is not list:
            raise self.fail(path, f"expected a list, got {_show(v)}")
        if length is not None and len(v) != length:
            raise self.fail(path, f"expected {length} items, got {len(v)}")
        return v

    def obj(self, v: Any, path: str, keys: tuple[str, ...]) -> dict[str, Any]:
        if type(v) is not dict:
            raise self.fail(path, f"expected an object, got {_show(v)}")
        missing = [k for k in keys if k not in v]
        if missing:
            raise self.fail(path, f"missing key(s) {', '.join(missing)}")
        extra = sorted(set(v) - set(keys))
        if extra:
            raise self.fail(path, f"unknown key(s) {', '.join(extra)}")
        return v

    def ints(
        self, v: Any, path: str, length: int | None, lo: int | None = None, hi: int | None = None
    ) -> list[int]:
        return [
            self.int_(x, f"{path}[{i}]", lo, hi) for i, x in enumerate(self.list_(v, path, length))
        ]

    def seat(self, v: Any, path: str, allow_none: bool = False) -> int:
        return self.int_(v, path, -1 if allow_none else 0, self.rules.players - 1)

    def mask(self, v: Any, path: str) -> int:
        m = self.int_(v, path, 0)
        extra = m & ~self.rules.deck_mask
        if extra:
            raise self.fail(path, f"mask holds bits that are not cards of this deck ({extra:#x})")
        return m

    def card(self, v: Any, path: str) -> Card:
        c = self.int_(v, path, 0, 63)
        if not self.rules.deck_mask >> c & 1:
            raise self.fail(path, f"{c} is not a card of this ruleset's deck")
        return Card(c)

    def cards(self, v: Any, path: str, length: int | None = None) -> tuple[Card, ...]:
        out = tuple(self.card(x, f"{path}[{i}]") for i, x in enumerate(self.list_(v, path, length)))
        if len(set(out)) != len(out):
            raise self.fail(path, "a card appears twice")
        return out

    def pairs(self, v: Any, path: str) -> list[tuple[int, Any]]:
        out: list[tuple[int, Any]] = []
        for i, item in enumerate(self.list_(v, path)):
            p = f"{path}[{i}]"
            seat, value = self.list_(item, p, 2)
            seat = self.seat(seat, f"{p}[0]")
            if any(seat == s for s, _ in out):
                raise self.fail(p, f"seat {seat} appears twice")
            out.append((seat, value))
        return out

    # -- the document ------------------------------------------------------------------
    def match(self, doc: Any) -> tuple[MatchState, list[tuple[int, Action]]]:
        d = self.obj(doc, "(top level)", _MATCH_KEYS)
        rules_doc = self.obj(d["rules"], "rules", OPTION_NAMES)
        try:
            self.rules = r = Ruleset.from_dict(rules_doc)
        except RulesetError as e:
            raise self.fail("rules", str(e)) from None
        n, sides = r.players, r.sides
        seed = self.int_(d["seed"], "seed", 1 - 2**SEED_BITS, 2**SEED_BITS - 1)
        deals = tuple(
            tuple(
                self.mask(m, f"deals[{i}][{s}]")
                for s, m in enumerate(self.list_(hd, f"deals[{i}]", n))
            )
            for i, hd in enumerate(self.list_(d["deals"], "deals"))
        )
        for i, dl in enumerate(deals):
            self.deal(dl, f"deals[{i}]")
        first_dealer = self.seat(d["first_dealer"], "first_dealer")
        phase_text = d["phase"]
        try:
            phase = Phase(phase_text)
        except ValueError:
            raise self.fail(
                "phase", f"{_show(phase_text)} is not one of {', '.join(p.value for p in Phase)}"
            ) from None
        scores = self.ints(d["scores"], "scores", sides)
        bags = self.ints(d["bags"], "bags", sides, 0)
        results = [
            tuple(
                self.side_score(s, f"results[{i}][{j}]", j)
                for j, s in enumerate(self.list_(hs, f"results[{i}]", sides))
            )
            for i, hs in enumerate(self.list_(d["results"], "results"))
        ]
        top = r.tricks_per_hand
        hand_bids = [
            tuple(self.ints(b, f"hand_bids[{i}]", n, 0, top))
            for i, b in enumerate(self.list_(d["hand_bids"], "hand_bids"))
        ]
        hand_tricks = [
            tuple(self.ints(t, f"hand_tricks[{i}]", n, 0, top))
            for i, t in enumerate(self.list_(d["hand_tricks"], "hand_tricks"))
        ]
        winner = None if d["winner"] is None else self.int_(d["winner"], "winner", 0, sides - 1)
        action_count = self.int_(d["action_count"], "action_count", 0)
        hand = self.hand(d["hand"], first_dealer, phase is Phase.EXCHANGE)
        actions = self.actions(d["actions"])

        finished = hand.number + (1 if phase is Phase.MATCH_OVER else 0)
        for name, seq in (
            ("results", results),
            ("hand_bids", hand_bids),
            ("hand_tricks", hand_tricks),
        ):
            if len(seq) != finished:
                raise self.fail(
                    name, f"expected one entry per finished hand ({finished}), got {len(seq)}"
                )
        if (winner is None) != (phase is not Phase.MATCH_OVER):
            raise self.fail("winner", f"winner {winner} does not fit phase {phase.value}")
        if action_count != len(actions):
            raise self.fail("action_count", f"{action_count} but {len(actions)} actions are listed")
        if not results and (any(scores) or any(bags)):
            raise self.fail("scores", "scores and bags must be 0 before the first hand is scored")
        if results and (list(scores), list(bags)) != (
            [s.score for s in results[-1]],
            [s.bags for s in results[-1]],
        ):
            raise self.fail("scores", "scores and bags differ from the last hand's result")
        if phase is not Phase.BIDDING and any(b is None for b in hand.bids):
            raise self.fail("hand.bids", f"every seat has bid once the phase is {phase.value}")
        st = MatchState(
            rules=r,
            seed=seed,
            deals=deals,
            first_dealer=first_dealer,
            phase=phase,
            hand=hand,
            scores=scores,
            bags=bags,
            results=results,
            hand_bids=hand_bids,
            hand_tricks=hand_tricks,
            winner=winner,
            action_count=action_count,
        )
        _check_consistency(st)
        return st, actions

    def deal(self, hands: tuple[int, ...], path: str) -> None:
        try:
            check_deal(self.rules, hands)
        except DealError as e:
            raise self.fail(path, str(e)) from None

    def side_score(self, v: Any, path: str, side: int) -> SideScore:
        values = self.ints(v, path, len(_SIDE_SCORE_FIELDS))
        s = SideScore(*values)
        if s.side != side:
            raise self.fail(path, f"side {s.side} listed in position {side}")
        return s

    def hand(self, v: Any, first_dealer: int, exchanging: bool) -> HandState:
        r = self.rules
        n, top = r.players, r.tricks_per_hand
        d = self.obj(v, "hand", _HAND_KEYS)
        number = self.int_(d["number"], "hand.number", 0)
        dealer = self.seat(d["dealer"], "hand.dealer")
        if dealer != (first_dealer + number) % n:
            raise self.fail(
                "hand.dealer",
                f"seat {dealer} does not fit first_dealer {first_dealer}: "
                f"hand {number} is dealt by seat {(first_dealer + number) % n}",
            )
        dealt = tuple(
            self.mask(m, f"hand.dealt[{i}]")
            for i, m in enumerate(self.list_(d["dealt"], "hand.dealt", n))
        )
        self.deal(dealt, "hand.dealt")
        hands = [
            self.mask(m, f"hand.hands[{i}]")
            for i, m in enumerate(self.list_(d["hands"], "hand.hands", n))
        ]
        face_down = [
            self.bool_(x, f"hand.face_down[{i}]")
            for i, x in enumerate(self.list_(d["face_down"], "hand.face_down", n))
        ]
        bids: list[int | None] = [
            None if b is None else self.int_(b, f"hand.bids[{i}]", 0, top)
            for i, b in enumerate(self.list_(d["bids"], "hand.bids", n))
        ]
        blind = [
            self.bool_(x, f"hand.blind[{i}]")
            for i, x in enumerate(self.list_(d["blind"], "hand.blind", n))
        ]
        tricks_won = self.ints(d["tricks_won"], "hand.tricks_won", n, 0, top)
        to_act = self.seat(d["to_act"], "hand.to_act", allow_none=True)
        exchange_seats = tuple(
            self.seat(s, f"hand.exchange_seats[{i}]")
            for i, s in enumerate(self.list_(d["exchange_seats"], "hand.exchange_seats"))
        )
        if list(exchange_seats) != sorted(set(exchange_seats)):
            raise self.fail("hand.exchange_seats", "seats must be distinct and in order")
        exchange_chosen: dict[int, int] = {}
        for seat, m in self.pairs(d["exchange_chosen"], "hand.exchange_chosen"):
            path = f"hand.exchange_chosen[seat {seat}]"
            if seat not in exchange_seats:
                raise self.fail(path, f"seat {seat} is not in the exchange")
            mask = self.mask(m, path)
            if exchanging and mask & ~hands[seat]:
                raise self.fail(path, f"seat {seat} does not hold the cards it chose to pass")
            if mask.bit_count() != r.blind_nil_exchange:
                raise self.fail(
                    path,
                    f"{mask.bit_count()} cards chosen, the table passes {r.blind_nil_exchange}",
                )
            exchange_chosen[seat] = mask
        received: dict[int, tuple[Card, ...]] = {}
        for seat, cs in self.pairs(d["received"], "hand.received"):
            received[seat] = self.cards(cs, f"hand.received[seat {seat}]", r.blind_nil_exchange)
        leader = self.seat(d["leader"], "hand.leader", allow_none=True)
        trick = list(self.cards(d["trick"], "hand.trick"))
        if len(trick) >= n:
            raise self.fail("hand.trick", f"{len(trick)} cards in a trick of {n}")
        led_suit = self.int_(d["led_suit"], "hand.led_suit", -1, 3)
        if (led_suit >= 0) != bool(trick) or (trick and trick[0] >> 4 != led_suit):
            raise self.fail("hand.led_suit", "does not match the first card of the trick")
        spades_broken = self.bool_(d["spades_broken"], "hand.spades_broken")
        completed: list[tuple[int, tuple[Card, ...], int]] = []
        for i, t in enumerate(self.list_(d["completed"], "hand.completed")):
            p = f"hand.completed[{i}]"
            lead, cs, win = self.list_(t, p, 3)
            completed.append(
                (
                    self.seat(lead, f"{p}[0]"),
                    self.cards(cs, f"{p}[1]", n),
                    self.seat(win, f"{p}[2]"),
                )
            )
        if len(completed) > top:
            raise self.fail("hand.completed", f"{len(completed)} tricks in a hand of {top}")
        if sum(tricks_won) != len(completed):
            raise self.fail("hand.tricks_won", "does not add up to the finished tricks")
        self.conservation(hands, leader, trick, completed)
        return HandState(
            number=number,
            dealer=dealer,
            dealt=dealt,
            hands=hands,
            face_down=face_down,
            bids=bids,
            blind=blind,
            tricks_won=tricks_won,
            to_act=to_act,
            exchange_seats=exchange_seats,
            exchange_chosen=exchange_chosen,
            received=received,
            leader=leader,
            trick=trick,
            led_suit=led_suit,
            spades_broken=spades_broken,
            completed=completed,
        )

    def conservation(
        self,
        hands: list[int],
        leader: int,
        trick: list[Card],
        completed: list[tuple[int, tuple[Card, ...], int]],
    ) -> None:
        """Every card of the deck is held or played exactly once, and each seat holds
        the cards it was dealt minus those it played (an exchange swaps equal numbers)."""
        r = self.rules
        n = r.players
        if trick and leader < 0:
            raise self.fail("hand.leader", "a trick is in progress but no seat led it")
        seen = 0
        for c in [*trick, *(c for _, cs, _ in completed for c in cs)]:
            seen |= 1 << c
        held = 0
        for i, m in enumerate(hands):
            if m & (held | seen):
                names = " ".join(card_name(c) for c in cards_of(m & (held | seen)))
                raise self.fail(
                    f"hand.hands[{i}]", f"card(s) {names} are also held or played elsewhere"
                )
            held |= m
        if seen.bit_count() != len(trick) + n * len(completed):
            raise self.fail("hand.completed", "a card is played twice")
        if held | seen != r.deck_mask:
            names = " ".join(card_name(c) for c in cards_of(r.deck_mask & ~(held | seen)))
            raise self.fail("hand.hands", f"card(s) {names} are neither held nor played")
        played = [0] * n
        for lead, cs, _ in [*completed, (leader, tuple(trick), -1)]:
            for i in range(len(cs)):
                played[(lead + i) % n] += 1
        for seat in range(n):
            if hands[seat].bit_count() != r.hand_size - played[seat]:
                raise self.fail(
                    f"hand.hands[{seat}]",
                    f"holds {hands[seat].bit_count()} cards after playing {played[seat]} "
                    f"of {r.hand_size}",
                )

    def actions(self, v: Any) -> list[tuple[int, Action]]:
        out: list[tuple[int, Action]] = []
        for i, item in enumerate(self.list_(v, "actions")):
            p = f"actions[{i}]"
            seat, text = self.list_(item, p, 2)
            seat = self.seat(seat, f"{p}[0]")
            if type(text) is not str:
                raise self.fail(f"{p}[1]", f"expected an action text, got {_show(text)}")
            try:
                action = parse_action(text)
            except ValueError as e:
                raise self.fail(f"{p}[1]", str(e)) from None
            out.append((seat, action))
        return out


def _fail(path: str, message: str) -> SnapshotError:
    return SnapshotError(f"bad snapshot field {path}: {message}")


def _check_consistency(st: MatchState) -> None:
    """The state is one that play can reach: the bids were made in turn, the turn
    is the right seat's, the exchange and the tricks follow from the rules, and
    each hand holds exactly its cards as dealt, exchanged and played."""
    if match_winner(st.rules, st.scores) != st.winner:
        raise _fail("winner", f"{st.winner} does not follow from the scores {st.scores}")
    _check_history(st)
    _check_bidding(st)
    base = _check_exchange(st)
    if st.phase in (Phase.PLAYING, Phase.MATCH_OVER):
        _check_play(st, base)
    else:
        h = st.hand
        if h.trick or h.completed or h.leader != -1 or h.spades_broken:
            raise _fail("hand.completed", f"no card is played during {st.phase.value}")
        if h.hands != list(h.dealt):
            raise _fail("hand.hands", f"no card leaves a hand during {st.phase.value}")


def _check_history(st: MatchState) -> None:
    """Each finished hand's result follows from its bids and tricks and the totals before it."""
    r = st.rules
    score = [0] * r.sides
    for i, sides in enumerate(st.results):
        bids, tricks = st.hand_bids[i], st.hand_tricks[i]
        if sum(tricks) != r.tricks_per_hand:
            raise _fail(f"hand_tricks[{i}]", f"the tricks add up to {sum(tricks)}")
        for side in sides:
            seats = r.seats_of(side.side)
            if (side.contract, side.tricks) != (
                sum(bids[s] for s in seats),
                sum(tricks[s] for s in seats),
            ):
                raise _fail(f"results[{i}][{side.side}]", "contract or tricks differ from the bids")
            if side.score != score[side.side] + side.hand_points or side.bags < 0:
                raise _fail(f"results[{i}][{side.side}]", "score does not follow the hand points")
            score[side.side] = side.score
    h = st.hand
    if st.phase is Phase.MATCH_OVER and (
        list(st.hand_bids[-1]) != h.bids or list(st.hand_tricks[-1]) != h.tricks_won
    ):
        raise _fail("hand_bids", "the last hand's bids and tricks differ from the hand's")


def _check_bidding(st: MatchState) -> None:
    r, h, n = st.rules, st.hand, st.rules.players
    order = [(h.dealer + 1 + i) % n for i in range(n)]
    made = sum(b is not None for b in h.bids)
    if any(h.bids[s] is None for s in order[:made]):
        raise _fail("hand.bids", "bids are made in turn from the dealer's left")
    if st.phase is Phase.BIDDING and (made == n or h.to_act != order[made]):
        raise _fail("hand.to_act", f"seat {order[made % n]} is to bid")
    before = [s.score for s in st.results[h.number - 1]] if h.number else [0] * r.sides
    for s in range(n):
        bid = h.bids[s]
        if (h.face_down[s] or h.blind[s]) and not blind_nil_eligible(r, r.side_of(s), before):
            raise _fail(f"hand.face_down[{s}]", f"seat {s} could not bid blind nil this hand")
        if h.blind[s] and bid != 0:
            raise _fail(f"hand.blind[{s}]", "a blind bid is a nil bid")
        if bid is not None and not h.blind[s] and (bid < r.min_bid or h.face_down[s]):
            raise _fail(f"hand.bids[{s}]", f"seat {s} cannot have bid {bid}")
        if h.face_down[s] and st.phase is not Phase.BIDDING:
            raise _fail(f"hand.face_down[{s}]", "every seat sees its cards once bidding closes")


def _check_exchange(st: MatchState) -> list[int]:
    """Checks the exchange; returns each seat's cards once it is over (before play)."""
    h, phase = st.hand, st.phase
    seats = exchange_seats(st) if phase is not Phase.BIDDING else ()
    if h.exchange_seats != seats:
        raise _fail("hand.exchange_seats", f"expected {list(seats)} for these bids")
    chosen = h.exchange_chosen
    if phase is Phase.EXCHANGE and (h.to_act != -1 or len(chosen) == len(seats)):
        raise _fail("hand.exchange_chosen", "the exchange is complete, or to_act is not -1")
    base = list(h.dealt)
    if phase not in (Phase.PLAYING, Phase.MATCH_OVER):
        if h.received:
            raise _fail("hand.received", "cards are received only when the exchange completes")
        return base
    if set(chosen) != set(seats):
        raise _fail("hand.exchange_chosen", "play began before every seat chose its cards")
    for s in seats:
        base[s] = (h.dealt[s] & ~chosen[s]) | chosen[(s + 2) % 4]
    if dict(h.received) != {(s + 2) % 4: tuple(cards_of(chosen[s])) for s in seats}:
        raise _fail("hand.received", "does not match the cards chosen")
    return base


def _check_play(st: MatchState, base: list[int]) -> None:
    r, h, n = st.rules, st.hand, st.rules.players
    if r.first_lead is FirstLead.DEALER:
        leader = h.dealer
    elif r.first_lead is FirstLead.TWO_OF_CLUBS:
        leader = next(s for s in range(n) if base[s] >> TWO_OF_CLUBS & 1)
    else:
        leader = (h.dealer + 1) % n
    won = [0] * n
    played = [0] * n
    for i, (lead, cards, winner) in enumerate([*h.completed, (h.leader, tuple(h.trick), -1)]):
        if lead != leader:
            raise _fail(f"hand.completed[{i}]", f"seat {leader} leads this trick")
        for j, c in enumerate(cards):
            played[(lead + j) % n] |= 1 << c
        if winner >= 0:
            leader = (lead + trick_winner_index(cards)) % n
            if winner != leader:
                raise _fail(f"hand.completed[{i}]", f"seat {leader} wins this trick")
            won[winner] += 1
    if won != h.tricks_won:
        raise _fail("hand.tricks_won", "does not match the winners of the tricks")
    if h.spades_broken != any(m & SPADE_MASK for m in played):
        raise _fail("hand.spades_broken", "does not match the cards played")
    for s in range(n):
        if played[s] & ~base[s] or h.hands[s] != base[s] & ~played[s]:
            raise _fail(f"hand.hands[{s}]", "differs from the cards dealt, passed and played")
    over = st.phase is Phase.MATCH_OVER
    if (len(h.completed) == r.tricks_per_hand) != over:
        raise _fail("hand.completed", f"{len(h.completed)} tricks in phase {st.phase.value}")
    to_act = -1 if over else (h.leader + len(h.trick)) % n
    if h.to_act != to_act:
        raise _fail("hand.to_act", f"seat {to_act} is to play")


def _show(v: Any) -> str:
    text = json.dumps(v) if isinstance(v, str | int | float | bool | None) else type(v).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _range(lo: int | None, hi: int | None) -> str:
    return f"{'' if lo is None else lo}..{'' if hi is None else hi}"
