"""``spades lobby``, ``spades join CODE`` and ``spades quickplay``: a player's
way to a match through the lobby (``LobbyService``, with a player
credential), then the seat played as ``spades play`` plays it (``PlayLoop``).

- ``lobby``: the public tables waiting for players, kept up to date
  (``Client.follow_lobby``): a table's number sits at it, ``open`` opens one
  (``open invite``: invite-only; its code is printed; ``open rated``: a
  rated table, humans only), ``q`` quits;
- ``join CODE``: sits at an invite-only table by its invite code;
- ``quickplay``: asks the matchmaker for a game (``--partner ID``: as that
  player's partner; ``--rated``: a rated one), shows the wait, and ``q``
  withdraws the ticket.

At a table that waits for players its seats are shown as they fill; ``start``
(the host: bots take the open seats now) and ``q`` (stand up) are accepted.
Once it has started the match is played at the terminal, with the seat token
the lobby gave, and quitting prints how to come back (``spades play
--match --token``). Ctrl-C while waiting stands up from the table, or
withdraws the ticket, before the command ends.

The credential: ``--credential`` (or ``SPADES_CREDENTIAL``), the JWT the
game's identity provider gave; or ``--guest``: a development guest credential
from the web table's server that ``make run`` starts (``POST /api/guest`` on
port 8080 of the address's host, or ``--web URL``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import math
import time
import urllib.error
import urllib.request
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar
from urllib.parse import urlsplit

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from .._client import Client
from .._errors import SpadesError
from .._gen.spades.v1 import lobby_pb2 as lpb
from .._gen.spades.v1 import spades_pb2 as pb
from .lines import LineReader
from .model import seat_position
from .parse import Meta, parse_command
from .play import PlayLoop, Rejoin
from .render import Renderer, hint

__all__ = [
    "GUEST_PORT",
    "CredentialError",
    "Identity",
    "LobbyFlow",
    "fetch_guest",
    "guest_url",
    "identity_of",
    "rules_text",
]

T = TypeVar("T")

GUEST_PORT: Final = 8080  # make run's web table (Envoy), which serves /api/guest
GUEST_TIMEOUT_S: Final = 10.0
LEAVE_TIMEOUT_S: Final = 5.0  # standing up (or cancelling) on the way out


class CredentialError(Exception):
    """No player credential could be had; the message says what to do."""


@dataclass(frozen=True)
class Identity:
    """A player credential and what it says (read, not checked: the server checks it)."""

    credential: str
    player_id: str
    name: str


def identity_of(credential: str) -> Identity:
    """The player id (``sub``) and name a JWT carries, for showing them."""
    claims: dict[str, Any] = {}
    parts = credential.split(".")
    if len(parts) == 3:
        payload = parts[1] + "=" * (-len(parts[1]) % 4)
        with contextlib.suppress(ValueError, binascii.Error, UnicodeDecodeError):
            decoded = json.loads(base64.urlsafe_b64decode(payload))
            if isinstance(decoded, dict):
                claims = decoded
    player_id = str(claims.get("sub", "") or "")
    return Identity(credential, player_id, str(claims.get("name", "") or player_id))


def guest_url(address: str, web: str | None) -> str:
    """Where ``--guest`` asks: ``web`` (the web table's base URL) or port
    ``GUEST_PORT`` of the address's host, path ``/api/guest``."""
    if web:
        base = web if "://" in web else f"http://{web}"
        return base.rstrip("/") + "/api/guest"
    host = urlsplit(f"//{address}").hostname or "localhost"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{GUEST_PORT}/api/guest"


def _post_guest(url: str, name: str | None) -> dict[str, Any]:
    body = json.dumps({} if name is None else {"name": name}).encode()
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=GUEST_TIMEOUT_S) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer
    except urllib.error.HTTPError as e:
        try:
            error = json.loads(e.read()).get("error", {})
            why = str(error.get("message") or e.reason)
        except (ValueError, AttributeError):
            why = str(e.reason)
        raise CredentialError(f"{url} refused a guest credential ({e.code}): {why}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise CredentialError(
            f"no guest credential from {url} ({reason}). --guest needs the web table's "
            "server that `make run` starts (or say where it is: --web HOST:PORT); "
            "or give a credential: --credential JWT (or SPADES_CREDENTIAL)"
        ) from None


async def fetch_guest(url: str, name: str | None) -> Identity:
    """A development guest credential from the web table's server."""
    answer = await asyncio.to_thread(_post_guest, url, name)
    credential = answer.get("credential")
    if not isinstance(credential, str) or not credential:
        raise CredentialError(f"{url} answered without a credential")
    return Identity(credential, str(answer.get("playerId", "")), str(answer.get("name", "")))


def rules_text(ruleset: pb.Ruleset) -> str:
    """``classic``, or ``classic, target_score=300, jokers=true``: the preset
    and the options the ruleset changes."""
    parts = [ruleset.preset or "classic"]
    for field, value in ruleset.ListFields():
        if field.name == "preset":
            continue
        if field.enum_type is not None:
            prefix = field.enum_type.values_by_number[0].name.removesuffix("UNSPECIFIED")
            shown = field.enum_type.values_by_number[value].name.removeprefix(prefix).lower()
        elif isinstance(value, bool):
            shown = "true" if value else "false"
        else:
            shown = str(value)
        parts.append(f"{field.name}={shown}")
    return ", ".join(parts)


def _countdown(deadline_ms: int) -> str:
    """How long until ``deadline_ms``: ``7 s``, ``9:58``."""
    left = max(0, math.ceil(deadline_ms / 1000 - time.time()))
    return f"{left} s" if left < 60 else f"{left // 60}:{left % 60:02d}"


@dataclass(frozen=True)
class _Typed:
    """A line typed while waiting (None: the input ended)."""

    text: str | None


class _End:
    """The stream being waited on ended."""


_END: Final = _End()


class _Inputs(Generic[T]):
    """Whichever comes first: the stream's next item, or a line typed."""

    def __init__(self, stream: AsyncGenerator[T, None], reader: LineReader) -> None:
        self.stream = stream
        self.reader = reader
        self._item: asyncio.Future[T] | None = None
        self._line: asyncio.Future[str | None] | None = None
        self._eof = False

    async def next(self) -> T | _Typed | _End:
        if self._item is None:
            self._item = asyncio.ensure_future(anext(self.stream))
        if self._line is None and not self._eof:
            self._line = asyncio.ensure_future(self.reader.readline())
        waiting = {f for f in (self._item, self._line) if f is not None}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if self._item.done():
            item, self._item = self._item, None
            try:
                return item.result()
            except StopAsyncIteration:
                return _END
        assert self._line is not None
        line, self._line = self._line, None
        text = line.result()
        self._eof = text is None
        return _Typed(text)

    async def close(self) -> None:
        pending = [f for f in (self._item, self._line) if f is not None and not f.done()]
        for f in pending:
            f.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        self._item = self._line = None
        with contextlib.suppress(Exception):
            await self.stream.aclose()


_OPEN_WORDS: Final = frozenset({"public", "invite", "invite-only", "rated"})


def _is_open(text: str) -> bool:
    """``open``, and any of ``public``, ``invite`` (``invite-only``), ``rated``."""
    words = text.split()
    return bool(words) and words[0] == "open" and set(words[1:]) <= _OPEN_WORDS


def _is_quit(text: str) -> bool:
    return parse_command(text) == Meta("quit") or text.strip().lower() in ("leave", "cancel")


class LobbyFlow:
    """The lobby's commands at the terminal, for one player (``identity``)."""

    def __init__(
        self,
        console: Console,
        client: Client,
        reader: LineReader,
        identity: Identity,
        *,
        address: str,
        renderer: Renderer | None = None,
        pace_s: float = 0.6,
        pause_between_hands: bool = True,
    ) -> None:
        self.console = console
        self.client = client
        self.reader = reader
        self.me = identity
        self.address = address
        self.render = renderer or Renderer()
        self.pace_s = pace_s
        self.pause_between_hands = pause_between_hands

    def greet(self) -> None:
        who = self.me.name or "a player"
        known = f" (player id `{self.me.player_id}`)" if self.me.player_id else ""
        self.console.print(hint(f"You are {who}{known}."))

    # -- quick play ------------------------------------------------------------------
    async def quickplay(self, ruleset: pb.Ruleset, partner: str, *, rated: bool = False) -> int:
        ticket = await self.client.quick_play(ruleset, partner_player_id=partner, rated=rated)
        with_whom = f" with {partner} as your partner" if partner else ""
        kind = "a rated game" if rated else "a game"
        self.console.print(hint(f"You asked for {kind} of {rules_text(ruleset)}{with_whom}."))
        inputs = _Inputs(self.client.watch_ticket(ticket.ticket_id), self.reader)
        shown = 0
        over = False
        try:
            while True:
                got = await inputs.next()
                if isinstance(got, _Typed):
                    if got.text is not None and _is_quit(got.text):
                        over = True
                        cancelled = await self.client.cancel_ticket(ticket.ticket_id)
                        if cancelled.state == lpb.TICKET_STATE_PLACED:  # placed meanwhile
                            ticket = cancelled
                            break
                        self.console.print(hint("You withdrew your ticket."))
                        return 0
                    if got.text is not None:
                        self.console.print(hint("Waiting for a table; `q` withdraws the ticket."))
                    continue
                if isinstance(got, _End):
                    got = await self.client.get_ticket(ticket.ticket_id)
                    if got.state not in (lpb.TICKET_STATE_PLACED, lpb.TICKET_STATE_CANCELLED):
                        inputs.stream = self.client.watch_ticket(ticket.ticket_id)
                        continue
                ticket = got
                if ticket.version <= shown:
                    continue
                shown = ticket.version
                if ticket.state == lpb.TICKET_STATE_PLACED:
                    over = True
                    break
                if ticket.state == lpb.TICKET_STATE_CANCELLED:
                    over = True
                    why = {"partner_did_not_join": "your partner did not ask in time"}.get(
                        ticket.cancel_reason, ticket.cancel_reason or "cancelled"
                    )
                    self.console.print(hint(f"Your ticket was cancelled: {why}.", "yellow"))
                    return 1
                self.console.print(self._ticket_line(ticket))
        finally:
            await inputs.close()
            if not over:  # interrupted: no ticket is left behind
                with contextlib.suppress(SpadesError, TimeoutError):
                    await self.client.cancel_ticket(ticket.ticket_id, timeout=LEAVE_TIMEOUT_S)
        placement = ticket.placement
        self.console.print(self._placed_text(placement))
        return await self.play(placement.seat_token)

    def _ticket_line(self, ticket: lpb.Ticket) -> Text:
        if ticket.state == lpb.TICKET_STATE_WAITING_FOR_PARTNER:
            partner = ticket.partner_player_id or "your partner"
            mine = self.me.player_id or "YOUR_PLAYER_ID"
            return hint(
                f"Waiting for {partner} to ask too: `spades quickplay --partner {mine}` "
                "with the same rules. (`q` withdraws the ticket.)"
            )
        bots = ""
        if ticket.bots_at_ms:
            bots = f"; bots fill the open seats in {_countdown(ticket.bots_at_ms)}"
        return hint(f"Looking for players{bots}. (`q` withdraws the ticket.)")

    def _placed_text(self, placement: lpb.Placement) -> Text:
        table = placement.table
        players = len(table.seats)
        out = Text(f"Placed at table {placement.match_id}: ", style="bold")
        out.append(f"you are {seat_position(placement.seat, players)}")
        others = []
        for s in table.seats:
            if s.seat == placement.seat:
                continue
            what = "bot" if s.state == lpb.TABLE_SEAT_STATE_BOT else s.name or s.player_id
            others.append(f"{seat_position(s.seat, players)} {what}")
        if others:
            out.append("; " + ", ".join(others))
        out.append(".")
        return out

    # -- tables ----------------------------------------------------------------------
    async def join_code(self, code: str, seat: int | None) -> int:
        joined = await self.client.join_table(invite_code=code, seat=seat)
        return await self.at_table(joined.table, joined.seat, joined.seat_token)

    async def at_table(self, table: lpb.Table, seat: int, token: str) -> int:
        """Wait at a table until it starts (then play it), closes, or the
        person stands up."""
        players = len(table.seats)
        rated = ", rated" if table.rated else ""
        self.console.print(
            hint(
                f"You sit at table {table.table_id} ({rules_text(table.ruleset)}{rated}) as "
                f"{seat_position(seat, players)}."
            )
        )
        if table.invite_code:
            self.console.print(
                hint(
                    f"Invite code: `{table.invite_code}`. Friends join with "
                    f"`spades join {table.invite_code} --address {self.address}`."
                )
            )
        if table.state != lpb.TABLE_STATE_STARTED:
            table = await self._wait_at(table, seat)
            if table.state != lpb.TABLE_STATE_STARTED:
                return 0 if table.state == lpb.TABLE_STATE_WAITING else 1
        self.console.print(hint("The table has started: the cards are dealt."))
        return await self.play(token)

    async def _wait_at(self, table: lpb.Table, seat: int) -> lpb.Table:
        """The table once it has started or closed; still WAITING if the
        person stood up."""
        inputs = _Inputs(self.client.watch_table(table.table_id), self.reader)
        shown = 0
        done = False
        try:
            while True:
                if table.version > shown and table.state == lpb.TABLE_STATE_WAITING:
                    shown = table.version
                    self.console.print(self.table_seats(table, seat))
                    host = table.host_player_id == self.me.player_id and self.me.player_id
                    self.console.print(
                        hint(
                            "Type `start` to start now with bots in the open seats, `q` to "
                            "stand up."
                            if host
                            else "Waiting for players; `q` stands up."
                        )
                    )
                if table.state in (lpb.TABLE_STATE_STARTED, lpb.TABLE_STATE_CLOSED):
                    done = True
                    if table.state == lpb.TABLE_STATE_CLOSED:
                        self.console.print(
                            hint(f"The table closed ({table.close_reason}).", "yellow")
                        )
                    return table
                got = await inputs.next()
                if isinstance(got, _Typed):
                    if got.text is None:
                        continue
                    if _is_quit(got.text):
                        done = True
                        left = await self.client.leave_table(table.table_id)
                        self.console.print(hint("You stood up from the table."))
                        return left if left.state != lpb.TABLE_STATE_CLOSED else table
                    if got.text.strip().lower() == "start":
                        try:
                            table = await self.client.start_table(table.table_id)
                        except SpadesError as e:
                            self.console.print(self.render.refusal(e))
                        continue
                    self.console.print(hint("`start` or `q`, please."))
                    continue
                if isinstance(got, _End):  # the stream ended: the table has started or closed
                    table = await self.client.get_table(table.table_id)
                    if table.state == lpb.TABLE_STATE_WAITING:
                        inputs.stream = self.client.watch_table(table.table_id)
                    continue
                if got.version > table.version:
                    table = got
        finally:
            await inputs.close()
            if not done:  # interrupted: nobody is left holding the seat
                with contextlib.suppress(SpadesError, TimeoutError):
                    await self.client.leave_table(table.table_id, timeout=LEAVE_TIMEOUT_S)

    def table_seats(self, table: lpb.Table, seat: int) -> RenderableType:
        players = len(table.seats)
        head = Text(f"Table {table.table_id} ", style="bold")
        head.append(f"{self.render.dot} waiting for players")
        if table.deadline_ms:
            then = "bots fill the open seats"
            if table.unattended == lpb.UNATTENDED_CLOSE:
                then = "it closes"
            head.append(f" {self.render.dot} {then} in {_countdown(table.deadline_ms)}")
        grid = RichTable(box=None, show_header=False, pad_edge=False)
        grid.add_column("Seat")
        grid.add_column("Who")
        for s in table.seats:
            if s.state == lpb.TABLE_SEAT_STATE_PLAYER:
                who = Text(s.name or s.player_id)
                notes = []
                if s.seat == seat:
                    notes.append("you")
                if s.player_id and s.player_id == table.host_player_id:
                    notes.append("host")
                if notes:
                    who.append(f" ({', '.join(notes)})")
                if s.seat == seat:
                    who.stylize("bold")
            elif s.state == lpb.TABLE_SEAT_STATE_BOT:
                who = Text(f"{s.name or 'Bot'} [bot]", style="dim")
            else:
                who = Text("open", style="green")
            grid.add_row(seat_position(s.seat, players), who)
        return Group(head, grid)

    # -- the lobby -------------------------------------------------------------------
    async def browse(
        self,
        shown: pb.Ruleset | None,
        rules: pb.Ruleset,
    ) -> int:
        """The lobby (tables of ``shown``'s rules, or all), live, until the
        person sits at a table (then as ``at_table``) or quits."""
        inputs = _Inputs(self.client.follow_lobby(shown), self.reader)
        tables: list[lpb.Table] = []
        seated: lpb.OpenTableResponse | lpb.JoinTableResponse | None = None
        try:
            while seated is None:
                got = await inputs.next()
                if isinstance(got, _End):
                    return 0
                if isinstance(got, list):
                    tables = got
                    self.console.print(self.lobby_list(tables, shown))
                    continue
                if got.text is None:
                    continue
                text = " ".join(got.text.strip().lower().split())
                if _is_quit(text):
                    return 0
                try:
                    if text.isdigit() and 1 <= int(text) <= len(tables):
                        seated = await self.client.join_table(tables[int(text) - 1].table_id)
                    elif _is_open(text):
                        seated = await self.client.open_table(
                            ruleset=rules,
                            visibility=lpb.TABLE_VISIBILITY_INVITE_ONLY
                            if "invite" in text
                            else lpb.TABLE_VISIBILITY_PUBLIC,
                            rated="rated" in text.split(),
                        )
                    elif text in ("", "l", "list", "t"):
                        self.console.print(self.lobby_list(tables, shown))
                    else:
                        self.console.print(hint(self._lobby_help(tables), "yellow"))
                except SpadesError as e:
                    self.console.print(self.render.refusal(e))
        finally:
            await inputs.close()
        return await self.at_table(seated.table, seated.seat, seated.seat_token)

    def _lobby_help(self, tables: list[lpb.Table]) -> str:
        pick = f"a table's number (1-{len(tables)}) to sit at it, " if tables else ""
        return (
            f"Type {pick}`open` to open a table (`open invite` for an invite-only one, "
            "`open rated` for a rated one), `q` to quit."
        )

    def lobby_list(self, tables: list[lpb.Table], shown: pb.Ruleset | None) -> RenderableType:
        which = f" of {rules_text(shown)}" if shown is not None else ""
        n = len(tables)
        head = Text(
            f"Lobby {self.render.dot} {n} table{'s' if n != 1 else ''}{which} waiting for players",
            style="bold",
        )
        parts: list[RenderableType] = [Text(""), head]
        if tables:
            grid = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
            for column in ("#", "Table", "Rules", "Players", "Open", "Starts in"):
                grid.add_column(column)
            for i, t in enumerate(tables, 1):
                names = [s.name or s.player_id for s in t.seats if s.player_id]
                open_seats = sum(s.state == lpb.TABLE_SEAT_STATE_OPEN for s in t.seats)
                grid.add_row(
                    str(i),
                    t.table_id[:8],
                    rules_text(t.ruleset) + (", rated" if t.rated else ""),
                    ", ".join(names),
                    f"{open_seats}/{len(t.seats)}",
                    _countdown(t.deadline_ms) if t.deadline_ms else "",
                )
            parts.append(grid)
        else:
            parts.append(Text("No table is waiting for players.", style="dim"))
        parts.append(hint(self._lobby_help(tables)))
        return Group(*parts)

    # -- the match -------------------------------------------------------------------
    async def play(self, token: str) -> int:
        loop = PlayLoop(
            self.console,
            self.client.seat(token),
            self.reader,
            renderer=self.render,
            pace_s=self.pace_s,
            rejoin=Rejoin(self.address, token),
            pause_between_hands=self.pause_between_hands,
        )
        return await loop.run()
