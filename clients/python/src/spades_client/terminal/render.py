"""What the terminal shows, as rich renderables: the table, a hand, one line per
event, the result of a hand.

Every function takes the :class:`~.model.Table` and returns something a
``rich.console.Console`` prints; nothing here prints by itself, so the tests
render into ``Console(record=True)`` and read ``export_text()``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from rich import box
from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.table import Table as RichTable
from rich.text import Text

from .._errors import SpadesError
from .._gen.spades.v1 import spades_pb2 as pb
from .cards import RED_SUITS, SUIT_NAMES, card_key, card_text, sort_hand, suit_text
from .model import EVERYONE, SPECTATOR, Table

__all__ = ["Renderer", "hint"]

_LineMaker = Callable[[Table, Any], RenderableType | None]

_CONTROL: Final[dict[int, str]] = {
    pb.SEAT_CONTROL_OPEN: "open seat",
    pb.SEAT_CONTROL_HUMAN: "",
    pb.SEAT_CONTROL_BOT: "bot",
    pb.SEAT_CONTROL_BOT_STANDING_IN: "bot standing in",
}
_PHASE_TEXT: Final[dict[str, str]] = {
    "draw": "the draw",
    "bidding": "bidding",
    "exchange": "blind nil exchange",
    "playing": "playing",
    "over": "match over",
}


def hint(text: str, style: str = "") -> Text:
    """A line for people: words in backticks (what to type) come out bold."""
    out = Text(style=style)
    for i, part in enumerate(text.split("`")):
        out.append(part, style="bold cyan" if i % 2 else "")
    return out


class Renderer:
    """Renders a table; ``ascii_only`` writes suits as letters (``QS``, not ``Q♠``)."""

    def __init__(self, *, ascii_only: bool = False) -> None:
        self.ascii_only = ascii_only
        self.arrow = ">" if ascii_only else "▶"
        self.dot = "-" if ascii_only else "·"

    # -- cards -------------------------------------------------------------------------
    def card(self, card: pb.Card, style: str = "") -> Text:
        colour = "red" if card.suit in RED_SUITS and card.rank < pb.RANK_LITTLE_JOKER else ""
        if card.rank >= pb.RANK_LITTLE_JOKER:
            colour = "magenta"
        return Text(card_text(card, ascii_only=self.ascii_only), style=f"{colour} {style}".strip())

    def cards(self, cards: Sequence[pb.Card]) -> Text:
        return Text(" ").join(self.card(c) for c in cards)

    def suit(self, suit: int) -> str:
        return f"{SUIT_NAMES.get(suit, '?')} {suit_text(suit, ascii_only=self.ascii_only)}"

    # -- people ------------------------------------------------------------------------
    def who(self, table: Table, seat: int) -> str:
        if seat == table.viewer:
            return "You"
        if 0 <= seat < table.players:
            return table.names[seat]
        return f"Seat {seat}"

    def seat_label(self, table: Table, seat: int) -> str:
        pos, name = table.position(seat), table.names[seat]
        you = seat == table.viewer and name.lower() != "you"
        if name == pos:
            return f"{name} (you)" if you else name
        return f"{name} ({pos}, you)" if you else f"{name} ({pos})"

    def side_name(self, table: Table, side: int) -> str:
        if not table.partnerships:
            return self.who(table, side)
        seats = table.side_seats(side)
        if table.players == 4:
            letters = "/".join(table.position(s)[0] for s in seats)
        else:
            letters = "+".join(str(s) for s in seats)
        mine = table.viewer >= 0 and table.side_of(table.viewer) == side
        return f"{letters}{' (you)' if mine else ''}"

    def bid_text(self, table: Table, seat: int) -> str:
        b = table.bids[seat]
        if b is None:
            return "face down" if table.face_down[seat] and table.phase == "bidding" else ""
        if b == 0:
            return "blind nil" if table.blind[seat] else "nil"
        return str(b)

    # -- the table ---------------------------------------------------------------------
    def header(self, table: Table) -> Text:
        parts = [f"Hand {table.hand_number + 1}", _PHASE_TEXT.get(table.phase, table.phase)]
        if 0 <= table.dealer < table.players:
            parts.append(f"dealer {table.names[table.dealer]}")
        trump = f"trump {self.suit(table.trump)}"
        if table.phase == "playing" or table.spades_broken:
            trump += " (broken)" if table.spades_broken else " (not broken)"
        parts.append(trump)
        if table.phase == "playing":
            parts.append(f"trick {min(table.tricks_done + 1, table.hand_size)}/{table.hand_size}")
        if table.phase == "draw" and table.stock_size:
            parts.append(f"stock {table.stock_size}")
        return Text(f" {self.dot} ".join(parts), style="bold")

    def seats(self, table: Table) -> RichTable:
        grid = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)
        grid.add_column("")
        grid.add_column("Seat")
        grid.add_column("Bid", justify="right")
        grid.add_column("Won", justify="right")
        grid.add_column("Cards", justify="right")
        grid.add_column("This trick")
        in_trick = {seat: card for seat, card in table.trick}
        for seat in range(table.players):
            mark = self.arrow if seat == table.to_act and table.phase != "over" else ""
            label = Text(self.seat_label(table, seat))
            control = _CONTROL.get(table.controls[seat], "")
            if control:
                label.append(f" [{control}]", style="dim")
            if seat == table.viewer:
                label.stylize("bold")
            played = Text()
            if seat in in_trick:
                played = self.card(in_trick[seat])
                if seat == table.leader:
                    played.append(" (led)", style="dim")
            grid.add_row(
                mark,
                label,
                self.bid_text(table, seat),
                str(table.tricks_won[seat]),
                str(table.hand_sizes[seat]),
                played,
            )
        return grid

    def scores(self, table: Table) -> Text:
        out = Text("Score: ", style="bold")
        for side in range(table.sides):
            if side:
                out.append("   ")
            out.append(f"{self.side_name(table, side)} {table.scores[side]}")
            bags = table.bags[side]
            out.append(f" ({bags} bag{'s' if bags != 1 else ''})", style="dim")
        if table.target_score:
            out.append(f"   to {table.target_score}", style="dim")
        return out

    def table(self, table: Table) -> RenderableType:
        parts: list[RenderableType] = [
            Text(""),
            self.header(table),
            self.seats(table),
            self.scores(table),
        ]
        if table.last_trick is not None and not table.trick and table.phase == "playing":
            parts.append(self.last_trick(table))
        return Group(*parts)

    def last_trick(self, table: Table) -> Text:
        last = table.last_trick
        if last is None:
            return Text("No trick has been played yet this hand.")
        out = Text(f"Last trick ({last.number}): ")
        for i, (seat, card) in enumerate(last.plays):
            if i:
                out.append(", ")
            out.append(f"{self.who(table, seat)} ")
            out.append_text(self.card(card))
        out.append(f" {self.dot} won by {self.who(table, last.winner)}")
        return out

    def hand(self, table: Table, seat: int | None = None) -> Text:
        """A seat's cards by suit (trump first, high to low); the cards the viewer
        may play now are in brackets."""
        seat = table.viewer if seat is None else seat
        owner = "Your hand" if seat == table.viewer else f"{self.who(table, seat)}'s hand"
        cards = table.known_hand(seat)
        out = Text(f"{owner}: ", style="bold")
        if cards is None:
            if 0 <= seat < table.players and table.face_down[seat]:
                out.append("face down (you have not looked at your cards)", style="italic")
            else:
                out.append("not known", style="italic")
            return out
        if not cards:
            out.append("(no cards)", style="dim")
            return out
        playable = {card_key(c) for c in table.playable_cards()} if seat == table.viewer else set()
        groups = sort_hand(cards, trump=table.trump, deuces_high=table.deuces_high)
        for gi, group in enumerate(groups):
            if gi:
                out.append("  ")
            for ci, card in enumerate(group):
                if ci:
                    out.append(" ")
                if card_key(card) in playable:
                    out.append("[", style="bold green")
                    out.append_text(self.card(card, "bold"))
                    out.append("]", style="bold green")
                else:
                    out.append_text(self.card(card, "dim" if playable else ""))
        return out

    # -- events ------------------------------------------------------------------------
    def event_line(self, table: Table, event: pb.MatchEvent) -> RenderableType | None:
        """One line for an event, read against the table as it was before it
        (None for events the log does not show, and for HandScored: see
        :meth:`hand_result`)."""
        kind = event.WhichOneof("kind") or ""
        line: _LineMaker | None = getattr(self, f"_line_{kind}", None)
        return None if line is None else line(table, getattr(event, kind))

    def _line_hand_started(self, table: Table, e: pb.HandStarted) -> RenderableType:
        dealer = self.who(table, e.dealer)
        verb = "deal" if dealer == "You" else "deals"
        return Rule(f"Hand {e.hand_number + 1} {self.dot} {dealer} {verb}", style="cyan")

    def _line_hand_shown(self, table: Table, e: pb.HandShown) -> RenderableType | None:
        if table.viewer == SPECTATOR:
            return None
        owner = "Your cards" if e.seat == table.viewer else f"{self.who(table, e.seat)}'s cards"
        line = Text(f"{owner}: ")
        for group in sort_hand(e.cards, trump=table.trump, deuces_high=table.deuces_high):
            line.append_text(self.cards(group))
            line.append("  ")
        return line

    def _line_looked_at_cards(self, table: Table, e: pb.LookedAtCards) -> RenderableType:
        return Text(f"{self._subject(table, e.seat, 'look', 'looks')} at the cards.")

    def _line_bid_made(self, table: Table, e: pb.BidMade) -> RenderableType:
        what = "blind nil" if e.blind else ("nil" if e.tricks == 0 else str(e.tricks))
        return Text(f"{self._subject(table, e.seat, 'bid', 'bids')} {what}.")

    def _line_bidding_closed(self, table: Table, e: pb.BiddingClosed) -> RenderableType:
        if table.partnerships and len(e.contracts) == 2 and len(e.bids) == 4:
            parts = [f"{self.side_name(table, side)} {c}" for side, c in enumerate(e.contracts)]
            return Text("Bidding closed: contracts " + ", ".join(parts) + ".", style="bold")
        return Text("Bidding closed.", style="bold")

    def _line_exchange_decided(self, table: Table, e: pb.ExchangeDecided) -> RenderableType:
        verb = ("take", "takes") if e.exchange else ("decline", "declines")
        return Text(f"{self._subject(table, e.seat, *verb)} the exchange.")

    def _line_exchange_started(self, table: Table, e: pb.ExchangeStarted) -> RenderableType:
        who = " and ".join(self.who(table, s) for s in e.seats)
        return Text(f"Exchange: {who} pass {e.cards_each} card(s) each, face down.")

    def _line_cards_chosen(self, table: Table, e: pb.CardsChosen) -> RenderableType:
        return Text(f"{self._subject(table, e.seat, 'have', 'has')} chosen the cards to pass.")

    def _line_cards_passed(self, table: Table, e: pb.CardsPassed) -> RenderableType:
        line = Text(f"{self.who(table, e.from_seat)} passed ")
        line.append_text(self.cards(e.cards))
        to = "you" if e.to_seat == table.viewer else self.who(table, e.to_seat)
        line.append(f" to {to}.")
        return line

    def _line_trump_named(self, table: Table, e: pb.TrumpNamed) -> RenderableType:
        verb = self._subject(table, e.seat, "name", "names")
        return Text(f"{verb} {self.suit(e.suit)} trump for this hand.", style="bold")

    def _line_cards_drawn(self, table: Table, e: pb.CardsDrawn) -> RenderableType:
        line = Text(f"{self._subject(table, e.seat, 'keep', 'keeps')} ")
        line.append_text(self.card(e.kept))
        line.append(" and discard" + ("" if e.seat == table.viewer else "s") + " ")
        line.append_text(self.card(e.discarded))
        line.append(".")
        return line

    def _line_draw_taken(self, table: Table, e: pb.DrawTaken) -> RenderableType | None:
        if table.viewer in (EVERYONE, e.seat):
            return None  # the cards_drawn line said it
        return Text(f"{self.who(table, e.seat)} draws (cards unseen).", style="dim")

    def _line_card_played(self, table: Table, e: pb.CardPlayed) -> RenderableType:
        verb = ("lead", "leads") if not table.trick else ("play", "plays")
        line = Text(f"{self._subject(table, e.seat, *verb)} ")
        line.append_text(self.card(e.card, "bold"))
        line.append(".")
        return line

    def _line_trick_won(self, table: Table, e: pb.TrickWon) -> RenderableType:
        plays = [((e.leader + i) % table.players, c) for i, c in enumerate(e.cards)]
        winning = next((c for s, c in plays if s == e.winner), None)
        who = self._subject(table, e.winner, "win", "wins")
        line = Text(f"{self.arrow} {who} trick {e.trick_number}", style="bold")
        if winning is not None:
            line.append(" with ")
            line.append_text(self.card(winning, "bold"))
        won = table.tricks_won[e.winner] + 1 if 0 <= e.winner < table.players else 0
        line.append(f" ({won} trick{'s' if won != 1 else ''} this hand).")
        return line

    def _line_match_ended(self, table: Table, e: pb.MatchEnded) -> RenderableType:
        return self.match_over(table, e)

    def _line_seat_control_changed(
        self, table: Table, e: pb.SeatControlChanged
    ) -> RenderableType | None:
        name = self.who(table, e.seat)
        if e.control == pb.SEAT_CONTROL_HUMAN:
            return Text(f"{name} {'take' if name == 'You' else 'takes'} the seat.", style="dim")
        if e.control == pb.SEAT_CONTROL_BOT_STANDING_IN:
            why = {"turn_timer": "out of time", "left": "left"}.get(e.reason, e.reason)
            if e.seat == table.viewer:
                return Text(
                    f"A bot plays for you ({why}): act at your turn to take the seat back.",
                    style="yellow",
                )
            return Text(f"A bot plays for {name} ({why}).", style="dim")
        return None

    def _line_chat_message(self, table: Table, e: pb.ChatMessage) -> RenderableType:
        return Text(f"{self.who(table, e.seat)} (to partner): {e.text}", style="italic")

    def _subject(self, table: Table, seat: int, you_verb: str, verb: str) -> str:
        return f"You {you_verb}" if seat == table.viewer else f"{self.who(table, seat)} {verb}"

    def hand_result(self, table: Table, e: pb.HandScored) -> RenderableType:
        """The result of a hand: per side each seat's bid (and tricks won), the
        side's tricks against its contract, its points and bags. The Nil and
        Penalty columns show only when some side has such points."""
        grid = RichTable(
            title=f"Hand {e.hand_number + 1} result",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            title_style="bold",
            show_edge=False,
            pad_edge=False,
            padding=(0, 0, 0, 1),
        )
        nil = any(s.nil_points for s in e.sides)
        penalty = any(s.bag_penalty for s in e.sides)
        grid.add_column("Side", no_wrap=True)
        grid.add_column("Bid (won)", no_wrap=True)
        grid.add_column("Tricks", justify="right")
        grid.add_column("Contract", justify="right")
        if nil:
            grid.add_column("Nil", justify="right")
        grid.add_column("Bags", justify="right")
        if penalty:
            grid.add_column("Penalty", justify="right")
        grid.add_column("Hand", justify="right")
        grid.add_column("Score", justify="right", style="bold")
        grid.add_column("Bags total", justify="right")
        for s in e.sides:
            seats = table.side_seats(s.side) if table.partnerships else [s.side]
            bids = []
            for seat in seats:
                if seat < len(e.bids):
                    b = e.bids[seat]
                    blind = seat < len(e.blind) and e.blind[seat]
                    b_text = "blind nil" if blind else ("nil" if b == 0 else str(b))
                    taken = e.tricks[seat] if seat < len(e.tricks) else 0
                    bids.append(f"{self.who(table, seat)} {b_text} ({taken})")
            cells = [
                self.side_name(table, s.side),
                "\n".join(bids),
                f"{s.tricks}/{s.contract}",
                _signed(s.contract_points),
            ]
            if nil:
                cells.append(_signed(s.nil_points))
            cells.append(str(s.bags_taken))
            if penalty:
                cells.append(_signed(s.bag_penalty))
            cells += [_signed(s.hand_points), str(s.score), str(s.bags)]
            grid.add_row(*cells)
        return Group(Text(""), grid)

    def score_history(self, table: Table) -> RenderableType:
        if not table.results:
            return Text("No hand has been scored yet.")
        grid = RichTable(title="Scores by hand", box=box.SIMPLE_HEAD, show_edge=False)
        grid.add_column("Hand", justify="right")
        for side in range(table.sides):
            grid.add_column(self.side_name(table, side), justify="right")
        for r in table.results:
            cells = ["" for _ in range(table.sides)]
            for s in r.sides:
                if 0 <= s.side < table.sides:
                    cells[s.side] = f"{_signed(s.hand_points)} = {s.score}"
            grid.add_row(str(r.hand_number + 1), *cells)
        return grid

    def match_over(self, table: Table, e: pb.MatchEnded) -> Text:
        scores = ", ".join(
            f"{self.side_name(table, side)} {score}" for side, score in enumerate(e.scores)
        )
        winner = self.side_name(table, e.winner) if e.winner >= 0 else "nobody"
        mine = table.viewer >= 0 and e.winner == table.side_of(table.viewer)
        verdict = "You win!" if mine else f"{winner} win{'s' if not table.partnerships else ''}."
        played = f"{e.hands_played} hand{'s' if e.hands_played != 1 else ''}"
        return Text(f"Match over after {played}: {verdict} Final score: {scores}.", style="bold")

    def final(self, table: Table) -> Text:
        """The end of a match as a view tells it (no MatchEnded event at hand)."""
        scores = ", ".join(
            f"{self.side_name(table, side)} {score}" for side, score in enumerate(table.scores)
        )
        if table.winner < 0:
            return Text(f"The match is over. Score: {scores}.", style="bold")
        mine = table.viewer >= 0 and table.winner == table.side_of(table.viewer)
        winner = "You win!" if mine else f"{self.side_name(table, table.winner)} won."
        return Text(f"The match is over: {winner} Final score: {scores}.", style="bold")

    def refusal(self, err: SpadesError) -> Text:
        """A refusal from the server as one readable line: what, the rule, the reason."""
        out = Text("Refused: ", style="bold red")
        out.append(err.message.rstrip(".") + ".")
        if err.rule:
            out.append(f" Rule: {err.rule.rstrip('.')}.", style="italic")
        if err.reason:
            out.append(f" [{err.reason}]", style="dim")
        return out


def _signed(n: int) -> str:
    return f"{n:+d}" if n else "0"
