#!/usr/bin/env python3
"""The expected transcript of each conformance scenario, from the engine alone.

    python clients/conformance/reference.py            # (re)write expected/*.jsonl
    python clients/conformance/reference.py --check    # exit 1 if one differs

No server runs: the match is built from the scenario's ``create`` with the
server's own conversions (``spades_server.convert``) and replayed the way a
session replays it (session.py, seat_bots.py, event_log.py): the deal, the
``seat_control_changed`` event of the claim, the bots' actions with the seed a
session gives them, the client seat's actions by the policy of README.md, one
sequence number per event across the whole match, and the events filtered to
what the client's seat may see. The refusals come from the server's code too:
``Registry.seat_of`` for the wrong token (run in memory), ``service_error`` for
the illegal card. ``tests/clients/test_conformance_expected.py`` regenerates
every transcript and compares it with the committed file.

The replay also checks that a scenario is deterministic on a real server:
that the match waits for the client's seat alone whenever that seat may act
(no bot plays at the same time, so the order of events cannot depend on
timing), and that no bot level with a time budget (a search) takes part.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message
from spades_server import convert
from spades_server.allowance import SessionLimits
from spades_server.errors import ServiceError
from spades_server.event_log import Payload, engine_payloads
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.lobby import matchmaker
from spades_server.lobby.tables import bot_name
from spades_server.matches import Registry, SeatSpec
from spades_server.seat_bots import fallback_action
from spades_server.service import service_error
from spades_server.store import MemoryStore

from spades_engine import IllegalAction, Match, Phase
from spades_engine.bots import BOTS

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "scenarios"
EXPECTED = HERE / "expected"

_BUDGET_MS = SessionLimits().bot_budget_ms
_SEARCH_LEVELS = frozenset({pb.BOT_LEVEL_EXPERT})  # they think against the clock
_SEED_MASK = (1 << 63) - 1
M = TypeVar("M", bound=Message)


def canonical(value: Any) -> str:
    """The README's canonical JSON of one transcript line."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def proto_json(message: Any) -> dict[str, Any]:
    """The proto3 JSON mapping of a message, default options."""
    out: dict[str, Any] = json_format.MessageToDict(message)
    return out


def _wire(message: M) -> M:
    """``message`` as a client receives it: serialized and parsed again."""
    return type(message).FromString(message.SerializeToString())


@dataclass
class _Seat:
    name: str
    bot: bool
    level: pb.BotLevel.ValueType  # for a bot seat
    control: pb.SeatControl.ValueType
    # Another player the harness plays by the policy (a lobby scenario's friend).
    friend: bool = False


@dataclass
class Replay:
    """One match as the server would run it, seen from the client's seat."""

    match: Match
    seats: list[_Seat]
    me: int
    log: list[tuple[int, pb.MatchEvent]] = field(default_factory=list)  # (mask, event)
    outcomes: list[dict[str, Any]] = field(default_factory=list)

    # -- the log ---------------------------------------------------------------------
    def append(self, payloads: list[Payload]) -> tuple[int, int]:
        """Number events as ``EventLog.stage`` does; their first and last seq."""
        rules = self.match.rules
        first = len(self.log) + 1
        for audience, event in payloads:
            event.seq = len(self.log) + 1
            mask = convert.audience_mask(audience, rules.players, rules.partnerships)
            self.log.append((mask, _wire(event)))
        return first, len(self.log)

    def visible(self) -> list[pb.MatchEvent]:
        bit = convert.viewer_bit(self.me)
        return [e for mask, e in self.log if mask & bit]

    def count(self, kind: str) -> list[pb.MatchEvent]:
        """The seat's visible events of a MatchEvent oneof ``kind`` (lowerCamelCase)."""
        return [e for e in self.visible() if _kind(e) == kind]

    # -- seats -------------------------------------------------------------------------
    def seat_infos(self) -> list[pb.SeatInfo]:
        return [
            pb.SeatInfo(seat=i, name=s.name, control=s.control, bot_level=s.level)
            for i, s in enumerate(self.seats)
        ]

    def claim(self) -> None:
        """``Session.set_control(seat, HUMAN, "claimed")``: an event if it changes."""
        seat = self.seats[self.me]
        if seat.control == pb.SEAT_CONTROL_HUMAN:
            return
        seat.control = pb.SEAT_CONTROL_HUMAN
        ev = pb.MatchEvent()
        ev.seat_control_changed.CopyFrom(
            pb.SeatControlChanged(seat=self.me, control=pb.SEAT_CONTROL_HUMAN, reason="claimed")
        )
        self.append([("everyone", ev)])

    # -- who acts ----------------------------------------------------------------------
    def pending(self) -> list[int]:
        """``Session.pending_seats``: the seats the match waits for."""
        m = self.match
        if m.phase is Phase.EXCHANGE:
            h = m.state.hand
            if len(h.exchange_decisions) < len(h.exchange_deciders):
                return [s for s in h.exchange_deciders if s not in h.exchange_decisions]
            return [s for s in h.exchange_seats if s not in h.exchange_chosen]
        if m.is_over:
            return []
        return [m.to_act]

    def bot_to_act(self) -> int | None:
        """``SeatBots._seat``: the first pending seat a bot (or the friend) plays."""
        for s in self.pending():
            if self.seats[s].bot or self.seats[s].friend:
                return s
        return None

    def run_bots(self) -> None:
        """Every bot action until the match waits for the client's seat (or ends)."""
        while (seat := self.bot_to_act()) is not None:
            if self.match.legal_actions(self.me):
                raise ScenarioError(
                    f"seat {self.me} may act while bot seat {seat} is to act: "
                    "the order of their actions would depend on timing"
                )
            self._bot_turn(seat)

    def _bot_turn(self, seat: int) -> None:
        """``SeatBots._turn`` and ``_decide``: the bot's action, or the fallback;
        the friend's: the policy's."""
        match, level = self.match, self.seats[seat].level
        if self.seats[seat].friend:
            view = convert.view_to_pb(match.view(seat), as_of_seq=0, seats=())
            action = convert.action_from_pb(_wire(view).legal_actions[0])
            self.append(engine_payloads(match.apply(seat, action)))
            return
        name = pb.BotLevel.Name(level).removeprefix("BOT_LEVEL_").lower()
        bot = BOTS.get(name, BOTS["random"])
        seed = (match.seed * 1_000_003 + len(match.actions)) & _SEED_MASK
        try:
            action = bot(match.view(seat), seed, _BUDGET_MS)
        except Exception:
            action = fallback_action(match, seat, level)
        try:
            events = match.apply(seat, action)
        except IllegalAction:
            events = match.apply(seat, fallback_action(match, seat, level))
        self.append(engine_payloads(events))

    # -- the client's seat ---------------------------------------------------------------
    def view(self) -> pb.SeatView:
        """GetView for the client's seat, as received."""
        view = convert.view_to_pb(
            self.match.view(self.me), as_of_seq=len(self.log), seats=self.seat_infos()
        )
        return _wire(view)

    def my_turn(self) -> pb.SeatView:
        view = self.view()
        if not view.legal_actions:
            raise ScenarioError(
                f"the match waits for seat {self.me}, but it has no legal action "
                f"(phase {pb.Phase.Name(view.phase)})"
            )
        return view

    def act(self, step: str, action: pb.Action) -> tuple[int, int]:
        """Apply an accepted action of the client's seat; the bots answer."""
        events = self.match.apply(self.me, convert.action_from_pb(action))
        first, last = self.append(engine_payloads(events))
        self.run_bots()
        line = {"step": step, "action": proto_json(action)}
        self.outcomes.append(line | {"firstSeq": str(first), "lastSeq": str(last)})
        return first, last

    def refuse(self, action: pb.Action) -> ServiceError:
        """The refusal of an action the rules do not allow (the match unchanged)."""
        before = self.match.to_snapshot()
        try:
            self.match.apply(self.me, convert.action_from_pb(action))
        except IllegalAction as e:
            if self.match.to_snapshot() != before:
                raise AssertionError("a refused action changed the match") from e
            return service_error(e)
        raise ScenarioError(f"{proto_json(action)} was accepted; the step expects a refusal")


class ScenarioError(Exception):
    """A scenario whose transcript a real server would not make deterministic."""


def _kind(event: pb.MatchEvent) -> str:
    name = event.WhichOneof("kind") or ""
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def _card_key(card: pb.Card) -> tuple[int, int]:
    return (int(card.suit), int(card.rank))


def _create_request(scenario: dict[str, Any]) -> pb.CreateMatchRequest:
    req = json_format.ParseDict(scenario["create"], pb.CreateMatchRequest())
    if not req.has_seed:
        raise ScenarioError("create needs a seed (hasSeed): the deal would be random")
    return req


def _seat_specs(req: pb.CreateMatchRequest, players: int) -> list[SeatSpec]:
    """``SpadesService._seat_specs`` for the configs a scenario gives."""
    if len(req.seats) != players:
        raise ScenarioError(f"the ruleset seats {players} players, create has {len(req.seats)}")
    return [
        SeatSpec(c.name or f"Seat {i}", c.bot, int(c.bot_level)) for i, c in enumerate(req.seats)
    ]


async def _wrong_token_refusal(req: pb.CreateMatchRequest, specs: list[SeatSpec]) -> ServiceError:
    """What the server answers ClaimSeat with ``<match_id>.wrong-secret``: the
    server's registry, in memory, checks the token."""
    registry = Registry(MemoryStore(), SessionLimits(), max_matches=1, unload_after_s=-1)
    rules = convert.ruleset_from_pb(req.ruleset)
    session, _, _ = await registry.create(Match(rules, seed=req.seed), specs, 0)
    try:
        await registry.seat_of(f"{session.match_id}.wrong-secret", session.match_id)
    except ServiceError as e:
        return e
    finally:
        await registry.close()
    raise ScenarioError("the server accepted a wrong seat token")


def _seats(specs: list[SeatSpec], me: int) -> list[_Seat]:
    """The seats as ``Registry.create`` sets them up; the client's is open."""
    seats = []
    for i, spec in enumerate(specs):
        if spec.bot:
            level = pb.BotLevel.ValueType(spec.bot_level or pb.BOT_LEVEL_RANDOM)
            if level in _SEARCH_LEVELS:
                raise ScenarioError(f"seat {i}: {pb.BotLevel.Name(level)} depends on time")
            seats.append(_Seat(spec.name, True, level, pb.SEAT_CONTROL_BOT))
        elif i == me:
            seats.append(_Seat(spec.name, False, pb.BOT_LEVEL_UNSPECIFIED, pb.SEAT_CONTROL_OPEN))
        else:
            raise ScenarioError(f"seat {i} is human; every seat but the client's is a bot")
    if not 0 <= me < len(seats):
        raise ScenarioError(f"no seat {me} at this table")
    return seats


def _play(r: Replay, kind: str, k: int) -> int:
    """A ``play`` step; the sequence number of the event that ends it."""
    while len(r.count(kind)) < k:
        if r.match.is_over:
            raise ScenarioError(f"the match ended before {k} {kind} events")
        r.act("play", r.my_turn().legal_actions[0])
    return r.count(kind)[k - 1].seq


def _illegal_card(r: Replay) -> None:
    """An ``illegal_card`` step: the policy until a card in hand is not legal."""
    while True:
        view = r.my_turn()
        legal = {_card_key(a.play_card.card) for a in view.legal_actions if a.HasField("play_card")}
        wrong = [c for c in view.hand if _card_key(c) not in legal]
        if view.phase == pb.PHASE_PLAYING and wrong:
            break
        r.act("play", view.legal_actions[0])
    action = pb.Action(play_card=pb.PlayCardAction(card=wrong[0]))
    err = r.refuse(action)
    r.outcomes.append(
        {
            "step": "illegal_card",
            "action": proto_json(action),
            "code": err.code.name,
            "reason": err.reason,
            "rule": err.metadata["rule"],
        }
    )


def _lobby_replay(lobby: dict[str, Any]) -> Replay:
    """The party's match as quick play seats it (``matchmaker.decide``: the
    friend asked first, the client joined the friend's ticket) and the
    server deals it (``--table-seed``)."""
    ruleset = json_format.ParseDict(lobby["ruleset"], pb.Ruleset())
    rules = convert.ruleset_from_pb(ruleset)
    level = pb.BotLevel.Value(lobby["botLevel"])
    entry = matchmaker.Entry("ticket", (lobby["friend"], lobby["me"]), 0)
    (plan,) = matchmaker.decide([entry], rules.players, rules.partnerships, 10**9, 0)
    seats, me = [], -1
    for i, s in enumerate(plan.seats):
        if s is None:
            seats.append(_Seat(bot_name(i), True, level, pb.SEAT_CONTROL_BOT))
        else:
            seats.append(
                _Seat(
                    s[1], False, pb.BOT_LEVEL_UNSPECIFIED, pb.SEAT_CONTROL_OPEN, s[1] != lobby["me"]
                )
            )
            me = i if s[1] == lobby["me"] else me
    r = Replay(Match(rules, seed=int(lobby["seed"])), seats, me)
    r.append(engine_payloads(r.match.opening_events))
    r.run_bots()  # the friend may be first to bid: it acts at once
    return r


def _lobby_step(r: Replay, do: str, lobby: dict[str, Any]) -> None:
    """The outcome of a lobby step (README.md: "The lobby scenario")."""
    friend = next(i for i, s in enumerate(r.seats) if s.friend)
    kinds = [
        lpb.TableSeatState.Name(lpb.TABLE_SEAT_STATE_BOT if s.bot else lpb.TABLE_SEAT_STATE_PLAYER)
        for s in r.seats
    ]
    if do == "friend_quickplay":
        r.outcomes.append({"step": do, "state": "TICKET_STATE_WAITING_FOR_PARTNER"})
    elif do == "quickplay":
        ids = [lobby["friend"], lobby["me"]]
        r.outcomes.append({"step": do, "state": "TICKET_STATE_SEARCHING", "playerIds": ids})
    elif do == "await_placement":
        r.outcomes.append(
            {
                "step": do,
                "state": "TICKET_STATE_PLACED",
                "seat": r.me,
                "partnerSeat": friend,
                "kind": "TABLE_KIND_QUICK_PLAY",
                "seats": kinds,
            }
        )
    elif do == "open_invite_table":
        r.outcomes.append(
            {
                "step": do,
                "seat": 0,
                "state": "TABLE_STATE_WAITING",
                "visibility": "TABLE_VISIBILITY_INVITE_ONLY",
                "inviteCodeLength": 11,
            }
        )
    elif do == "friend_join_by_code":
        r.outcomes.append({"step": do, "seat": 2, "state": "TABLE_STATE_STARTED"})
    elif do == "await_start":
        r.outcomes.append(
            {"step": do, "state": "TABLE_STATE_STARTED", "seats": kinds, "viewSeat": 0}
        )
    else:
        raise ScenarioError(f"unknown step {do!r}")


LOBBY_STEPS = frozenset(
    {
        "friend_quickplay",
        "quickplay",
        "await_placement",
        "open_invite_table",
        "friend_join_by_code",
        "await_start",
    }
)


def transcript(scenario: dict[str, Any]) -> str:
    """The expected transcript of one scenario, as the file's text."""
    lobby = scenario.get("lobby")
    if lobby is not None:
        r = _lobby_replay(lobby)
        req, specs, me = None, [], r.me
    else:
        req = _create_request(scenario)
        rules = convert.ruleset_from_pb(req.ruleset)
        specs = _seat_specs(req, rules.players)
        me = int(scenario["seat"])
        r = Replay(Match(rules, seed=req.seed), _seats(specs, me), me)
        r.append(engine_payloads(r.match.opening_events))
        if r.bot_to_act() is not None:
            raise ScenarioError("a bot acts first: its moves would race with the claim")

    cutoff: int | None = None  # the event that ended the last play step
    for step in scenario["steps"]:
        do = step["do"]
        if do in LOBBY_STEPS and lobby is not None:
            _lobby_step(r, do, lobby)
        elif do == "claim_wrong_token":
            assert req is not None, "claim_wrong_token needs a created match"
            err = asyncio.run(_wrong_token_refusal(req, specs))
            r.outcomes.append({"step": do, "code": err.code.name, "reason": err.reason})
        elif do == "claim":
            r.claim()
            r.run_bots()
            r.outcomes.append({"step": do, "seat": me})
        elif do in ("open", "cut", "close"):
            pass  # no outcome; a resume neither repeats nor skips an event
        elif do == "play":
            ((kind, k),) = step["until"].items()
            cutoff = _play(r, kind, int(k))
        elif do in ("send_then_cut", "retry"):
            r.act(do, r.my_turn().legal_actions[0])
            if do == "retry":  # the same id again: the first result
                r.outcomes.append(r.outcomes[-1] | {"step": "retry_again"})
        elif do == "illegal_card":
            _illegal_card(r)
        else:
            raise ScenarioError(f"unknown step {do!r}")

    lines = []
    for event in r.visible():
        if cutoff is not None and event.seq > cutoff:
            break
        doc = proto_json(event)
        doc.pop("timeMs", None)
        lines.append(canonical({"event": doc}))
    lines += [canonical({"outcome": o}) for o in r.outcomes]
    return "".join(line + "\n" for line in lines)


def scenarios() -> list[dict[str, Any]]:
    out = []
    for path in sorted(SCENARIOS.glob("*.json")):
        scenario = json.loads(path.read_text(encoding="utf-8"))
        if scenario.get("name") != path.stem:
            raise ScenarioError(f"{path.name}: its name is {scenario.get('name')!r}")
        out.append(scenario)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare with expected/, write nothing")
    args = p.parse_args(argv)
    EXPECTED.mkdir(exist_ok=True)
    stale = []
    for scenario in scenarios():
        path = EXPECTED / f"{scenario['name']}.jsonl"
        text = transcript(scenario)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if args.check:
            if current != text:
                stale.append(path.name)
        elif current != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(HERE.parent.parent)}")
    if stale:
        print(f"out of date: {', '.join(stale)} (run {Path(__file__).name})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
