"""The conformance runner: one scenario of clients/conformance/scenarios,
executed with spades_client against a real server, as clients/conformance/README.md
says; ``run_scenario`` returns the transcript's text. A scenario either creates
its match (``create``, the operator's) or reaches it through the lobby
(``lobby``: a player credential from serve.py, quick play as a party with
serve.py's friend, then an invite-only table the friend joins by its code)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from harness import Harness

import spades_client as sc
from spades_client import lobby_pb as lpb
from spades_client import pb

WAIT_S = 30.0  # any one wait for the server or the stream
LONG_POLL_MS = 5000  # each GetTicket/GetTable long poll of the lobby scenario
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


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def proto_json(message: Any) -> dict[str, Any]:
    out: dict[str, Any] = json_format.MessageToDict(message)
    return out


def kind(event: pb.MatchEvent) -> str:
    """The oneof name in lowerCamelCase, as the scenarios count them."""
    head, *rest = sc.event_kind(event).split("_")
    return head + "".join(w.title() for w in rest)


def card_key(card: pb.Card) -> tuple[int, int]:
    return (int(card.suit), int(card.rank))


class Runner:
    def __init__(self, harness: Harness, scenario: dict[str, Any]) -> None:
        self.harness = harness
        self.scenario = scenario
        self.events: list[pb.MatchEvent] = []
        self.outcomes: list[dict[str, Any]] = []
        self.cutoff: int | None = None  # the event that ended the last play step
        self._changed = asyncio.Event()
        self._session: sc.Session | None = None
        self._reader: asyncio.Task[None] | None = None
        self.text = ""  # the transcript, once run
        self.stale = 0  # actions refused STALE_SEQUENCE (the stream was behind)
        self.reconnects = 0  # the session's, at the end
        self.seat: sc.Seat | None = None  # the seat the steps play
        self.wrong: sc.Seat | None = None  # its match with a wrong secret
        # The lobby scenario's: the two players, the rules, what came back.
        self.me = self.friend = ""
        self.ruleset = pb.Ruleset()
        self.ticket: lpb.Ticket | None = None
        self.opened: lpb.OpenTableResponse | None = None

    # -- the event stream -----------------------------------------------------------------
    @property
    def session(self) -> sc.Session:
        assert self._session is not None, "the scenario acts before `open`"
        return self._session

    @property
    def last_seq(self) -> int:
        """The last event the runner has received (and counted)."""
        return self.events[-1].seq if self.events else 0

    def count(self, event_kind: str) -> list[pb.MatchEvent]:
        return [e for e in self.events if kind(e) == event_kind]

    async def _read(self, session: sc.Session) -> None:
        async for event in session:
            assert event.seq > self.last_seq, f"seq {event.seq} after {self.last_seq}"
            self.events.append(event)
            self._changed.set()

    async def wait_for(self, done: Callable[[], bool], what: str) -> None:
        async with asyncio.timeout(WAIT_S):
            while not done():
                if self._reader is not None and self._reader.done():
                    self._reader.result()  # the session failed: raise why
                    raise AssertionError(f"the session ended before {what}")
                self._changed.clear()
                await self._changed.wait()

    async def wait_events(self, seen: int) -> None:
        """Wait for an event after the first ``seen``."""
        await self.wait_for(lambda: len(self.events) > seen, f"event {seen + 1}")

    async def wait_seq(self, seq: int) -> None:
        """Wait until the event ``seq`` (or a later one) has come."""
        await self.wait_for(lambda: self.last_seq >= seq, f"seq {seq}")

    async def turn(self, seat: sc.Seat) -> pb.SeatView:
        """The seat's view once it may act (GetView again after each event)."""
        async with asyncio.timeout(WAIT_S):
            while True:
                seen = len(self.events)
                view = await seat.view()
                if view.legal_actions:
                    return view
                await self.wait_events(seen)

    def acted(self, step: str, action: pb.Action, result: pb.ActionResult) -> None:
        self.outcomes.append(
            {
                "step": step,
                "action": proto_json(action),
                "firstSeq": str(result.first_seq),
                "lastSeq": str(result.last_seq),
            }
        )

    # -- the steps ----------------------------------------------------------------------
    async def run(self) -> str:
        if "lobby" in self.scenario:
            return await self.run_lobby()
        create = json_format.ParseDict(self.scenario["create"], pb.CreateMatchRequest())
        me = int(self.scenario["seat"])
        async with sc.connect(
            self.harness.address, operator_token=self.harness.operator_token
        ) as client:
            created = await client.create_match(create)
            self.seat = client.seat(sc.seat_token(created, me))
            self.wrong = client.seat(f"{created.match.match_id}.wrong-secret")
            for step in self.scenario["steps"]:
                await self.step(client, step)
            await self.close()
        return self.transcript()

    async def run_lobby(self) -> str:
        """A scenario through the lobby: the client's own credential from
        serve.py, then its steps (the seat is the placement's from
        ``await_placement`` on)."""
        lobby = self.scenario["lobby"]
        self.me, self.friend = str(lobby["me"]), str(lobby["friend"])
        self.ruleset = json_format.ParseDict(lobby["ruleset"], pb.Ruleset())
        credential = await self.harness.credential_async(self.me)
        async with sc.connect(self.harness.address, credential=credential) as client:
            for step in self.scenario["steps"]:
                await self.step(client, step)
            await self.close()
        return self.transcript()

    @property
    def my_seat(self) -> sc.Seat:
        assert self.seat is not None, "the scenario acts before it has a seat"
        return self.seat

    async def step(self, client: sc.Client, step: dict[str, Any]) -> None:
        do = step["do"]
        if do in LOBBY_STEPS:
            await self.lobby_step(client, do)
        elif do == "claim_wrong_token":
            assert self.wrong is not None
            try:
                await self.wrong.claim()
            except sc.SpadesError as e:
                self.outcomes.append({"step": do, "code": e.code.name, "reason": e.reason})
            else:
                raise AssertionError("a wrong seat token was accepted")
        elif do == "claim":
            claimed = await self.my_seat.claim()
            self.outcomes.append({"step": do, "seat": claimed.seat})
        elif do == "open":
            self._session = await self.my_seat.session(after_seq=0).open()
            self._reader = asyncio.create_task(self._read(self._session))
        elif do == "play":
            ((event_kind, k),) = step["until"].items()
            await self.play(self.my_seat, event_kind, int(k))
        elif do == "cut":
            await self.harness.cut_async()
        elif do == "send_then_cut":
            view = await self.turn(self.my_seat)
            pending = self.session.send(view.legal_actions[0])
            await self.harness.cut_async()
            self.acted(do, pending.action, await pending.result(WAIT_S))
        elif do == "retry":
            view = await self.turn(self.my_seat)
            action, action_id = view.legal_actions[0], sc.new_action_id()
            first = await self.session.act(action, action_id=action_id, timeout=WAIT_S)
            again = await self.session.act(action, action_id=action_id, timeout=WAIT_S)
            self.acted("retry", action, first)
            self.acted("retry_again", action, again)
        elif do == "illegal_card":
            await self.illegal_card(self.my_seat)
        elif do == "close":
            await self.close()
        else:
            raise AssertionError(f"unknown step {do!r}")

    async def lobby_step(self, client: sc.Client, do: str) -> None:
        """The lobby scenario's own steps (clients/conformance/README.md)."""
        if do == "friend_quickplay":
            answer = await self.harness.friend_async(
                {
                    "do": "quickplay",
                    "playerId": self.friend,
                    "partner": self.me,
                    "ruleset": self.scenario["lobby"]["ruleset"],
                }
            )
            self.outcomes.append({"step": do, "state": answer["state"]})
        elif do == "quickplay":
            self.ticket = await client.quick_play(self.ruleset, partner_player_id=self.friend)
            self.outcomes.append(
                {
                    "step": do,
                    "state": lpb.TicketState.Name(self.ticket.state),
                    "playerIds": list(self.ticket.player_ids),
                }
            )
        elif do == "await_placement":
            assert self.ticket is not None, "await_placement before quickplay"
            placement = await client.wait_for_placement(
                self.ticket, wait_ms=LONG_POLL_MS, timeout=WAIT_S
            )
            self.seat = client.seat(placement)
            assert self.seat.match_id == placement.match_id
            seats = placement.table.seats
            self.outcomes.append(
                {
                    "step": do,
                    "state": "TICKET_STATE_PLACED",
                    "seat": placement.seat,
                    "partnerSeat": next(s.seat for s in seats if s.player_id == self.friend),
                    "kind": lpb.TableKind.Name(placement.table.kind),
                    "seats": [lpb.TableSeatState.Name(s.state) for s in seats],
                }
            )
        elif do == "open_invite_table":
            self.opened = await client.open_table(
                ruleset=self.ruleset,
                bot_seats=[1, 3],
                visibility=lpb.TABLE_VISIBILITY_INVITE_ONLY,
            )
            table = self.opened.table
            self.outcomes.append(
                {
                    "step": do,
                    "seat": self.opened.seat,
                    "state": lpb.TableState.Name(table.state),
                    "visibility": lpb.TableVisibility.Name(table.visibility),
                    "inviteCodeLength": len(table.invite_code),
                }
            )
        elif do == "friend_join_by_code":
            assert self.opened is not None, "friend_join_by_code before open_invite_table"
            answer = await self.harness.friend_async(
                {
                    "do": "join",
                    "playerId": self.friend,
                    "code": self.opened.table.invite_code,
                    "seat": 2,
                }
            )
            self.outcomes.append({"step": do, "seat": answer["seat"], "state": answer["state"]})
        elif do == "await_start":
            assert self.opened is not None, "await_start before open_invite_table"
            table = self.opened.table
            while table.state != lpb.TABLE_STATE_STARTED:
                assert table.state != lpb.TABLE_STATE_CLOSED, f"the table closed: {table}"
                table = await client.get_table(
                    table.table_id, after_version=table.version, wait_ms=LONG_POLL_MS
                )
            view = await client.seat(self.opened.seat_token).view()
            assert view.seat == self.opened.seat and table.match_id == table.table_id
            self.outcomes.append(
                {
                    "step": do,
                    "state": lpb.TableState.Name(table.state),
                    "seats": [lpb.TableSeatState.Name(s.state) for s in table.seats],
                    "viewSeat": view.seat,
                }
            )

    async def play(self, seat: sc.Seat, event_kind: str, k: int) -> None:
        """Act by the policy until K events of the kind have come. Each action
        carries expected_seq, the last event received: a STALE_SEQUENCE refusal
        means the seat may see events still on their way, which may end the step."""
        async with asyncio.timeout(10 * WAIT_S):
            while len(self.count(event_kind)) < k:
                seen = len(self.events)
                view = await seat.view()
                if not view.legal_actions:
                    await self.wait_events(seen)
                    continue
                if len(self.count(event_kind)) >= k:
                    break  # events came during GetView: the same ones expected_seq says
                action = view.legal_actions[0]
                try:
                    result = await self.session.act(
                        action, expected_seq=self.last_seq, timeout=WAIT_S
                    )
                except sc.SpadesError as e:
                    if e.reason != "STALE_SEQUENCE":
                        raise
                    self.stale += 1
                    await self.wait_seq(int(e.metadata["current_seq"]))
                    continue
                self.acted("play", action, result)
        self.cutoff = self.count(event_kind)[k - 1].seq

    async def illegal_card(self, seat: sc.Seat) -> None:
        while True:
            view = await self.turn(seat)
            legal = {
                card_key(a.play_card.card) for a in view.legal_actions if a.HasField("play_card")
            }
            wrong = [c for c in view.hand if card_key(c) not in legal]
            if view.phase != pb.PHASE_PLAYING or not wrong:
                action = view.legal_actions[0]
                self.acted("play", action, await self.session.act(action, timeout=WAIT_S))
                continue
            action = sc.play_card(wrong[0])
            try:
                await self.session.act(action, timeout=WAIT_S)
            except sc.SpadesError as e:
                self.outcomes.append(
                    {
                        "step": "illegal_card",
                        "action": proto_json(action),
                        "code": e.code.name,
                        "reason": e.reason,
                        "rule": e.rule,
                    }
                )
                return
            raise AssertionError(f"{proto_json(action)} was accepted")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self.reconnects = self._session.reconnects
        if self._reader is not None:
            await asyncio.wait_for(self._reader, WAIT_S)

    # -- the transcript ----------------------------------------------------------------
    def transcript(self) -> str:
        lines = []
        for event in self.events:
            if self.cutoff is not None and event.seq > self.cutoff:
                break
            doc = proto_json(event)
            doc.pop("timeMs", None)
            lines.append(canonical({"event": doc}))
        lines += [canonical({"outcome": o}) for o in self.outcomes]
        return "".join(line + "\n" for line in lines)


async def run_scenario(harness: Harness, scenario: dict[str, Any]) -> Runner:
    runner = Runner(harness, scenario)
    runner.text = await runner.run()
    return runner
