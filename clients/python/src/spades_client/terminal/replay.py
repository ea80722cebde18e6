"""``spades replay FILE``: step through a game record, one action at a time.

A record (JSON, format ``spades-record``: what ``ExportMatch`` returns as
``record_json`` and the engine's ``spades-record play`` writes) holds a
match's rules, seed and actions, not its positions: those are recomputed by
the rules engine, ``spades_engine``, which must be installed (it comes with
the project's server). Every seat's cards are shown: a record is the whole
game, after the fact.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from google.protobuf import json_format
from rich.console import Console, Group, RenderableType
from rich.text import Text

from .._gen.spades.v1 import spades_pb2 as pb
from .cards import parse_card
from .model import EVERYONE, Table
from .render import Renderer, hint

__all__ = ["EngineMissing", "Frame", "Replay", "ReplayError", "load_replay"]

ENGINE_MISSING: Final = (
    "spades replay recomputes the positions with the rules engine (spades_engine), "
    "which is not installed in this Python. Install the project (`make install` at the "
    "root of its repository, or `pip install -e .` there) into this environment."
)
_CAMEL: Final = re.compile(r"(?<!^)(?=[A-Z])")


class ReplayError(Exception):
    """The record cannot be replayed; the message says why."""


class EngineMissing(ReplayError):
    def __init__(self) -> None:
        super().__init__(ENGINE_MISSING)


@dataclass
class Frame:
    """One step of the replay: an action (or the deal) and the events it caused."""

    label: str
    seat: int
    events: list[pb.MatchEvent] = field(default_factory=list)


def _card(name: str) -> dict[str, int]:
    c = parse_card(name)
    if c is None:
        raise ReplayError(f"the engine named a card {name!r} this client cannot read")
    return {"suit": int(c.suit), "rank": int(c.rank)}


def engine_event_to_pb(event: dict[str, Any], seq: int) -> pb.MatchEvent:
    """An engine event (``event_to_dict``'s form) as the service's ``MatchEvent``."""
    kind = _CAMEL.sub("_", str(event["type"])).lower()
    fields: dict[str, Any] = {}
    for key, value in event.items():
        if key in ("type", "audience"):
            continue
        if key in ("card", "kept", "discarded"):
            fields[key] = _card(value)
        elif key == "cards":
            fields[key] = [_card(v) for v in value]
        elif key == "suit":
            fields[key] = int(value) + 1  # the engine's 0..3 (clubs..spades) -> Suit
        else:
            fields[key] = value
    out = pb.MatchEvent(seq=seq)
    json_format.ParseDict({kind: fields}, out, ignore_unknown_fields=True)
    return out


@dataclass
class Replay:
    """The frames of a record and the table after each."""

    frames: list[Frame]
    tables: list[Table]

    def __len__(self) -> int:
        return len(self.frames)


def load_replay(path: str) -> Replay:
    """Replay a record file through the engine. ``EngineMissing`` without the
    engine, ``ReplayError`` for a record that does not replay."""
    try:
        from spades_engine import event_to_dict, parse_action
        from spades_engine.errors import SpadesError as EngineError
        from spades_engine.record import read_record, start_match
    except ImportError:
        raise EngineMissing() from None
    try:
        record = read_record(path)
        match = start_match(record)
    except EngineError as e:
        raise ReplayError(f"{path}: {e}") from None
    rules = match.rules
    table = Table(
        players=rules.players,
        partnerships=rules.partnerships,
        hand_size=rules.hand_size,
        viewer=EVERYONE,
    )
    table.bid_order_known = True
    table.deuces_high = rules.deuces_high
    table.jokers = rules.jokers
    table.target_score = rules.target_score
    for seat in range(rules.players):
        table.controls[seat] = pb.SEAT_CONTROL_UNSPECIFIED
    seq = 0

    def convert(events: list[Any]) -> list[pb.MatchEvent]:
        nonlocal seq
        out = []
        for e in events:
            seq += 1
            out.append(engine_event_to_pb(event_to_dict(e), seq))
        return out

    frames = [Frame("the deal", -1, convert(list(match.opening_events)))]
    tables: list[Table] = []
    _advance(table, frames[0], match.to_act, tables)
    for i, entry in enumerate(record["actions"]):
        try:
            seat, text = entry
            events = match.apply(seat, parse_action(text))
        except (EngineError, TypeError, ValueError) as e:
            raise ReplayError(f"{path}: action {i} ({entry!r}) does not replay: {e}") from None
        frames.append(Frame(str(text), int(seat), convert(list(events))))
        _advance(table, frames[-1], match.to_act, tables)
    return Replay(frames, tables)


def _advance(table: Table, frame: Frame, to_act: int, tables: list[Table]) -> None:
    for event in frame.events:
        table.apply(event)
    table.to_act = to_act  # the engine knows whose turn it is
    tables.append(copy.deepcopy(table))


class ReplayViewer:
    """Shows one frame at a time; Enter for the next, ``b`` back, ``q`` quit."""

    def __init__(
        self,
        console: Console,
        replay: Replay,
        name: str,
        read_line: Callable[[str], str | None],
        *,
        renderer: Renderer | None = None,
        clear: bool = True,
    ) -> None:
        self.console = console
        self.replay = replay
        self.name = name
        self.read_line = read_line
        self.render = renderer or Renderer()
        self.clear = clear

    def screen(self, k: int) -> RenderableType:
        frame = self.replay.frames[k]
        before = (
            self.replay.tables[k - 1]
            if k
            else Table(
                players=self.replay.tables[0].players,
                partnerships=self.replay.tables[0].partnerships,
                viewer=EVERYONE,
            )
        )
        before = copy.deepcopy(before)
        after = self.replay.tables[k]
        parts: list[RenderableType] = [
            Text(f"Replay of {self.name}: step {k} of {len(self.replay) - 1}", style="bold")
        ]
        if k == 0:
            parts.append(Text("The deal.", style="italic"))
        else:
            who = before.names[frame.seat]
            parts.append(Text(f"Action {k}: {who}: {frame.label}", style="italic"))
        for event in frame.events:
            kind = event.WhichOneof("kind")
            if kind == "hand_shown":
                before.apply(event)
                continue  # every hand is shown below
            line = self.render.event_line(before, event)
            if line is not None:
                parts.append(line)
            before.apply(event)
        for event in frame.events:
            if event.WhichOneof("kind") == "hand_scored":
                parts.append(self.render.hand_result(after, event.hand_scored))
        parts.append(self.render.table(after))
        parts.append(Text(""))
        for seat in range(after.players):
            parts.append(self.render.hand(after, seat))
        return Group(*parts)

    def run(self) -> int:
        k = 0
        last = len(self.replay) - 1
        note = ""
        while True:
            if self.clear:
                self.console.clear()
            self.console.print(self.screen(k))
            if note:
                self.console.print(hint(note, "yellow"))
                note = ""
            line = self.read_line("Enter: next, b: back, a number: go to that step, q: quit > ")
            if line is None:
                return 0
            t = line.strip().lower()
            if t in ("q", "quit", "exit"):
                return 0
            if t in ("", "n", "next", " "):
                if k < last:
                    k += 1
                else:
                    note = "That was the last action of the record (`b` goes back, `q` quits)."
            elif t in ("b", "back", "p", "prev"):
                if k > 0:
                    k -= 1
                else:
                    note = "This is the start of the record."
            elif t.isdigit():
                if int(t) <= last:
                    k = int(t)
                else:
                    note = f"The record has steps 0 to {last}."
            elif t in ("?", "h", "help"):
                note = "Enter: next action; `b`: back one; a number: go to that step; `q`: quit."
            else:
                note = f"{line.strip()!r}: type Enter, `b`, a step number or `q`."
