"""``spades play``: one seat of a match, played at the terminal.

The seat's ``Play`` session (``spades_client.Session``, which resumes by
itself after a dropped connection) brings the events; each is shown as a
line, the other seats' actions one at a time at ``pace_s``. When the events
go quiet the seat's view is read: if it has legal actions, the table and the
hand are shown and the prompt waits for the person. What they type is read
by ``parse``, mapped onto those legal actions and sent on the session with
``expected_seq`` (the last event the decision was made on): a refusal is
shown with its reason and rule and the prompt comes back; a table that moved
on meanwhile (a turn timer, a seat change) is shown again first.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass
from typing import Final

from rich.console import Console

from .._client import Seat
from .._errors import SpadesError
from .._gen.spades.v1 import spades_pb2 as pb
from .._session import Session
from .cards import card_text, sort_hand, typed_card
from .lines import LineReader
from .model import Table
from .parse import HELP, Act, Invalid, Meta, accepted_now, parse_command, resolve
from .render import Renderer, hint

__all__ = ["PlayLoop", "Rejoin"]

QUIET_S: Final = 0.05  # no event for this long: the table has settled, read the view
IDLE_S: Final = 5.0  # waiting for others: read the view again this often anyway
CATCH_UP_S: Final = 0.3  # how long to wait for events a view is ahead of
ACT_TIMEOUT_S: Final = 30.0
OTHERS_ACTIONS: Final = frozenset(
    {
        "bid_made",
        "card_played",
        "looked_at_cards",
        "exchange_decided",
        "trump_named",
        "draw_taken",
        "cards_chosen",
    }
)
_PROMPTS: Final[dict[str, str]] = {
    "bid": "Your bid",
    "blind_nil": "Your bid",
    "look": "Your bid",
    "play_card": "Your card",
    "pass_cards": "Cards to pass",
    "exchange_decision": "Exchange?",
    "name_trump": "Trump suit",
    "draw": "Keep or discard",
}
_SEAT_OF: Final[dict[str, str]] = {
    "bid_made": "seat",
    "card_played": "seat",
    "looked_at_cards": "seat",
    "exchange_decided": "seat",
    "trump_named": "seat",
    "draw_taken": "seat",
    "cards_chosen": "seat",
}


class Turn(enum.Enum):
    ACTED = "acted"
    AGAIN = "again"  # the table moved on: look again
    QUIT = "quit"


@dataclass(frozen=True)
class Rejoin:
    """How to come back to the seat, shown when the person quits a live match."""

    address: str
    token: str

    def command(self) -> str:
        match_id = self.token.partition(".")[0]
        return f"spades play --address {self.address} --match {match_id} --token {self.token}"


class PlayLoop:
    """Plays one seat until the match ends or the person quits."""

    def __init__(
        self,
        console: Console,
        seat: Seat,
        reader: LineReader,
        *,
        renderer: Renderer | None = None,
        pace_s: float = 0.6,
        rejoin: Rejoin | None = None,
        pause_between_hands: bool = True,
    ) -> None:
        self.console = console
        self.seat = seat
        self.reader = reader
        self.render = renderer or Renderer()
        self.pace_s = max(0.0, pace_s)
        self.rejoin = rejoin
        self.pause_between_hands = pause_between_hands
        self.table = Table()
        self.results: list[pb.HandScored] = []
        self.seen_seq = 0
        self.hands_started = 0
        self._interrupting: pb.MatchEvent | None = None

    # -- the whole match ---------------------------------------------------------------
    async def run(self) -> int:
        try:
            view = (await self.seat.claim()).view
        except SpadesError as e:
            if e.reason != "MATCH_OVER":
                raise
            view = await self.seat.view()
            self._take_view(view)
            self.console.print(self.render.table(self.table))
            self.console.print(self.render.final(self.table))
            return 0
        self._take_view(view)
        self.hands_started = 1
        self.console.print(
            hint(
                f"You are {self.render.seat_label(self.table, self.table.viewer)}. "
                "Type `?` for help, `q` to quit."
            )
        )
        if view.phase != pb.PHASE_MATCH_OVER and not view.legal_actions:
            self.console.print(self.render.table(self.table))
            self.console.print(self.render.hand(self.table))
        async with self.seat.session(after_seq=view.as_of_seq) as session:
            return await self._loop(session)

    async def _loop(self, session: Session) -> int:
        stale = True
        while True:
            try:
                event = await session.next_event(timeout=QUIET_S if stale else IDLE_S)
            except TimeoutError:
                event = None
            if event is not None:
                stale = True
                outcome = await self._show(event)
                if outcome is not None:
                    return outcome
                continue
            view = await self.seat.view()
            if view.as_of_seq > session.last_seq and stale:
                try:  # the view may be ahead of the stream: show those events first
                    event = await session.next_event(timeout=CATCH_UP_S)
                except TimeoutError:
                    event = None  # hidden events (another seat's cards): go on
                if event is not None:
                    outcome = await self._show(event)
                    if outcome is not None:
                        return outcome
                    continue
            stale = False
            self._take_view(view)
            if view.phase == pb.PHASE_MATCH_OVER:
                self.console.print(self.render.final(self.table))
                return 0
            if not view.legal_actions:
                continue
            turn = await self._turn(session, view)
            if turn is Turn.QUIT:
                return await self._quit()
            stale = True
            if self._interrupting is not None:  # it came while the prompt waited
                event, self._interrupting = self._interrupting, None
                outcome = await self._show(event)
                if outcome is not None:
                    return outcome

    def _take_view(self, view: pb.SeatView) -> None:
        self.table = Table.from_view(view)
        self.table.results = self.results
        self.seen_seq = max(self.seen_seq, view.as_of_seq)

    async def _show(self, event: pb.MatchEvent) -> int | None:
        """Show one event and bring the table up to date; an exit status once the
        match is over (or the person quits between hands)."""
        kind = event.WhichOneof("kind") or ""
        if kind == "hand_started":
            self.hands_started += 1
            if self.pause_between_hands and self.hands_started > 1 and self.results:
                self.console.print(
                    hint(
                        f"Press Enter for hand {event.hand_started.hand_number + 1} (`q` to quit)."
                    )
                )
                line = await self.reader.readline()
                if line is None or parse_command(line) == Meta("quit"):
                    return await self._quit()
        line_ = self.render.event_line(self.table, event)
        if line_ is not None:
            self.console.print(line_)
        self.table.apply(event)
        self.seen_seq = max(self.seen_seq, event.seq)
        if kind == "hand_scored":
            self.results.append(event.hand_scored)
            self.table.results = self.results
            self.console.print(self.render.hand_result(self.table, event.hand_scored))
        if kind == "match_ended":
            return 0
        seat_field = _SEAT_OF.get(kind)
        by_other = (
            seat_field is not None
            and getattr(getattr(event, kind), seat_field) != self.table.viewer
        )
        if (by_other and kind in OTHERS_ACTIONS) or kind == "trick_won":
            await asyncio.sleep(self.pace_s)
        return None

    # -- the seat's turn ---------------------------------------------------------------
    def _show_turn(self, view: pb.SeatView) -> None:
        t = self.table
        if t.phase == "draw":  # a turn of the draw: the stock and the hand are what matter
            self.console.print(self.render.header(t))
        else:
            self.console.print(self.render.table(t))
        self.console.print(self.render.hand(t))
        kinds = t.legal_kinds()
        if "look" in kinds and t.face_down[t.viewer]:
            self.console.print(
                hint("Your cards are face down: bid `blind nil`, or `look` at them.")
            )
        if "draw" in kinds and t.stock_top is not None:
            top = card_text(t.stock_top, ascii_only=self.render.ascii_only)
            self.console.print(
                hint(
                    f"The top card of the stock is {top}: `keep` it (and discard the next), "
                    "or `discard` it (and keep the next, unseen)."
                )
            )
        if "exchange_decision" in kinds:
            self.console.print(
                hint("You bid blind nil: `exchange` cards with your partner, or `no exchange`?")
            )
        if "pass_cards" in kinds:
            n = len(next(a for a in t.legal if a.HasField("pass_cards")).pass_cards.cards)
            self.console.print(hint(f"Choose {n} card(s) to pass to your partner: `pass AS KH`."))
        if "name_trump" in kinds:
            self.console.print(hint("You are the highest bidder: name the trump suit, `trump H`."))
        if "play_card" in kinds:
            groups = sort_hand(t.playable_cards(), trump=t.trump, deuces_high=t.deuces_high)
            cards = " ".join(typed_card(c) for g in groups for c in g)
            self.console.print(hint(f"You may play (in [ ] above): `{cards}`"))
        elif "bid" in kinds or "blind_nil" in kinds:
            self.console.print(hint(accepted_now(view.legal_actions)))

    async def _turn(self, session: Session, view: pb.SeatView) -> Turn:
        self._show_turn(view)
        kinds = self.table.legal_kinds()
        prompt = _PROMPTS.get(kinds[0], "Your move") if kinds else "Your move"
        expected = max(self.seen_seq, view.as_of_seq)
        while True:
            self.console.print(f"{prompt} (? for help) > ", end="", markup=False, highlight=False)
            got = await self._line_or_event(session)
            if isinstance(got, pb.MatchEvent):
                # The table moved while the prompt waited (a turn timer's bot, a
                # seat change, a chat line): show it, and ask again on the new view.
                self.console.print()
                self._interrupting = got
                return Turn.AGAIN
            line = got
            if line is None:
                self.console.print()
                return Turn.QUIT
            command = parse_command(line)
            if isinstance(command, Meta):
                if command.name == "quit":
                    return Turn.QUIT
                self._meta(command.name, view)
                continue
            if isinstance(command, Invalid):
                self.console.print(hint(command.message, "yellow"))
                continue
            chosen = resolve(command, view.legal_actions)
            if isinstance(chosen, Invalid):
                self.console.print(hint(chosen.message, "yellow"))
                continue
            outcome = await self._send(session, chosen, expected)
            if outcome is not None:
                return outcome

    async def _line_or_event(self, session: Session) -> str | pb.MatchEvent | None:
        """The next typed line (None at the end of the input), or an event if
        one comes first."""
        reading = asyncio.ensure_future(self.reader.readline())
        listening = asyncio.ensure_future(session.next_event())
        try:
            await asyncio.wait({reading, listening}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reading, listening):
                if not task.done():
                    task.cancel()
            await asyncio.gather(reading, listening, return_exceptions=True)
        if listening.done() and not listening.cancelled():
            error = listening.exception()
            if error is not None:
                raise error  # the session failed
            if reading.done() and not reading.cancelled():
                self.reader.unread(reading.result())  # typed at the same moment: kept
            return listening.result()
        return reading.result()

    async def _send(self, session: Session, chosen: Act, expected: int) -> Turn | None:
        """Send the action; None when it was refused (the prompt repeats)."""
        try:
            await session.act(chosen.action, expected_seq=expected, timeout=ACT_TIMEOUT_S)
        except TimeoutError:
            self.console.print(
                hint("The server has not answered yet; the action is still on its way.", "yellow")
            )
            return Turn.AGAIN
        except SpadesError as e:
            if e.reason == "STALE_SEQUENCE":
                self.console.print(
                    hint("The table has moved on meanwhile: here it is again.", "yellow")
                )
                return Turn.AGAIN
            self.console.print(self.render.refusal(e))
            return None
        return Turn.ACTED

    def _meta(self, name: str, view: pb.SeatView) -> None:
        if name == "help":
            self.console.print(HELP, markup=False, highlight=False)
            self.console.print(hint(accepted_now(view.legal_actions)))
        elif name == "table":
            self._show_turn(view)
        elif name == "last":
            self.console.print(self.render.last_trick(self.table))
        elif name == "scores":
            self.console.print(self.render.score_history(self.table))

    async def _quit(self) -> int:
        if self.rejoin is None:
            self.console.print(hint("You left the game."))
            return 0
        try:
            await self.seat.leave()
            self.console.print(
                hint("You left the table: a bot plays your seat until you come back.")
            )
        except SpadesError as e:
            if e.reason != "MATCH_OVER":
                self.console.print(self.render.refusal(e))
        self.console.print("To come back:")
        self.console.print(self.rejoin.command(), style="bold cyan", soft_wrap=True)
        return 0
