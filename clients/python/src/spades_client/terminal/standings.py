"""``spades me`` and ``spades top``: rated play's standings at the terminal.

- ``me``: a player's profile (``Client.profile``; the caller's own unless
  ``--player ID``): the rating in each pool with its rank, games, wins and
  losses; the record in matches with humans only and in matches with bots
  (contracts made, mean bid and tricks, bags per hand, nils and blind nils
  bid and made, sets);
- ``top``: a page of a pool's leaderboard (``Client.leaderboard``): the top,
  the page holding a player (``--around me`` or an id), or a page token. At
  a terminal, ``n`` and ``p`` go to the next and the previous page and ``q``
  quits; otherwise (a pipe) the command for the next page is printed.

Both need the player credential, as the lobby's commands do. A player who
has finished no match, a pool that does not exist, a player not on the
leaderboard: each says so in words, and the command exits 1.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Final

import grpc
from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from .._client import Client
from .._errors import SpadesError
from .._gen.spades.v1 import lobby_pb2 as lpb
from .lines import LineReader
from .render import Renderer, hint

__all__ = ["StandingsView", "around_id", "leaderboard_page", "profile_card"]

DEFAULT_POOL: Final = "classic"  # the server's default pool (its presets' pools)
_NONE: Final = "-"


def _percent(share: float) -> str:
    return f"{round(share * 100)}%"


def _when(ms: int) -> str:
    """A moment as the local date and time: ``2025-06-01 18:42``."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def _rank(rank: int) -> str:
    return f"#{rank}" if rank > 0 else "unranked"


def _greek(renderer: Renderer) -> tuple[str, str]:
    return ("mu", "sigma") if renderer.ascii_only else ("μ", "σ")


def _titled(title: str) -> RichTable:
    return RichTable(
        title=title,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )


def ratings_table(profile: lpb.PlayerProfile, renderer: Renderer) -> RenderableType:
    """One row per pool: rank, rating (mu - 3 sigma), mu, sigma, games, W/L."""
    if not profile.ratings:
        return hint(
            "No rated match yet (`spades quickplay --rated`, or `open rated` in `spades lobby`).",
            "dim",
        )
    grid = _titled("Ratings")
    grid.add_column("Pool")
    grid.add_column("Rank", justify="right")
    grid.add_column("Rating", justify="right")
    mu, sigma = _greek(renderer)
    grid.add_column(mu, justify="right")
    grid.add_column(sigma, justify="right")
    grid.add_column("Games", justify="right")
    grid.add_column("W/L", justify="right")
    for r in profile.ratings:
        grid.add_row(
            r.pool,
            _rank(r.rank),
            f"{r.conservative:.2f}",
            f"{r.mu:.2f}",
            f"{r.sigma:.2f}",
            str(r.games),
            f"{r.wins}/{r.losses}",
        )
    return grid


_RECORD_ROWS: Final[tuple[tuple[str, Callable[[lpb.PlayerStats], str]], ...]] = (
    ("Matches (won)", lambda s: f"{s.matches} ({s.wins})"),
    ("Hands", lambda s: str(s.hands)),
    (
        "Contracts made",
        lambda s: (
            f"{s.contracts_made}/{s.contracts} ({_percent(s.contracts_made_share)})"
            if s.contracts
            else "0/0"
        ),
    ),
    ("Sets", lambda s: str(s.sets)),
    ("Mean bid", lambda s: f"{s.mean_bid:.2f}"),
    ("Mean tricks", lambda s: f"{s.mean_tricks:.2f}"),
    ("Bags per hand", lambda s: f"{s.bags_per_hand:.2f} ({s.bags} in all)"),
    ("Nils made/bid", lambda s: f"{s.nils_made}/{s.nils_bid}"),
    ("Blind nils made/bid", lambda s: f"{s.blind_nils_made}/{s.blind_nils_bid}"),
)


def record_table(profile: lpb.PlayerProfile) -> RenderableType:
    """The record from finished lobby matches: with humans only, and with bots."""
    grid = _titled("Record")
    grid.add_column("")
    grid.add_column("With humans", justify="right")
    grid.add_column("With bots", justify="right")
    columns = (profile.with_humans, profile.with_bots)
    for label, cell in _RECORD_ROWS:
        grid.add_row(
            label,
            *(cell(s) if s.matches or label.startswith("Matches") else _NONE for s in columns),
        )
    return grid


def profile_card(profile: lpb.PlayerProfile, renderer: Renderer, *, mine: bool) -> RenderableType:
    """A profile as ``spades me`` shows it."""
    head = Text(profile.name or profile.player_id, style="bold")
    head.append(f" (player id {profile.player_id}{', you' if mine else ''})", style="")
    if profile.last_played_ms:
        head.append(f" {renderer.dot} last played {_when(profile.last_played_ms)}", style="")
    gap = Text("")
    return Group(gap, head, gap, ratings_table(profile, renderer), gap, record_table(profile))


def leaderboard_page(
    page: lpb.GetLeaderboardResponse, renderer: Renderer, *, me: str = ""
) -> RenderableType:
    """A leaderboard page: rank, player, rating, mu, sigma, games, W/L; the
    player ``me`` (an id) in bold, marked ``(you)``."""
    n = page.total_players
    head = Text(f"Leaderboard {renderer.dot} {page.pool}", style="bold")
    if page.entries:
        first, last = page.entries[0].rank, page.entries[-1].rank
        head.append(f" {renderer.dot} {first}-{last} of {n} player{'s' if n != 1 else ''}")
    else:
        head.append(f" {renderer.dot} {n} player{'s' if n != 1 else ''}")
    games = page.min_games
    head.append(
        f" ({games} rated game{'s' if games != 1 else ''} or more to be listed)", style="dim"
    )
    parts: list[RenderableType] = [Text(""), head]
    if not page.entries:
        parts.append(Text(f"Nobody is on the {page.pool} leaderboard yet.", style="dim"))
        return Group(*parts)
    grid = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    grid.add_column("Rank", justify="right")
    grid.add_column("Player")
    grid.add_column("Rating", justify="right")
    mu, sigma = _greek(renderer)
    grid.add_column(mu, justify="right")
    grid.add_column(sigma, justify="right")
    grid.add_column("Games", justify="right")
    grid.add_column("W/L", justify="right")
    for e in page.entries:
        r = e.rating
        who = e.name or e.player_id
        if me and e.player_id == me:
            who += " (you)"
        grid.add_row(
            str(e.rank),
            who,
            f"{r.conservative:.2f}",
            f"{r.mu:.2f}",
            f"{r.sigma:.2f}",
            str(r.games),
            f"{r.wins}/{r.losses}",
            style="bold" if me and e.player_id == me else None,
        )
    parts.append(grid)
    return Group(*parts)


def around_id(around: str | None, me: str) -> str:
    """``--around``: ``me`` is the caller's own id."""
    if around is None:
        return ""
    return me if around.strip().lower() == "me" else around.strip()


class StandingsView:
    """``spades me`` and ``spades top`` for one player (``me``: their id)."""

    def __init__(
        self,
        console: Console,
        client: Client,
        me: str,
        *,
        renderer: Renderer | None = None,
        command: str = "spades",
    ) -> None:
        self.console = console
        self.client = client
        self.me = me
        self.render = renderer or Renderer()
        self.command = command

    # -- spades me -------------------------------------------------------------------
    async def profile(self, player_id: str = "") -> int:
        mine = not player_id or player_id == self.me
        try:
            profile = await self.client.profile(player_id)
        except SpadesError as e:
            if e.code != grpc.StatusCode.NOT_FOUND:
                raise
            who = "You have" if mine else f"{player_id} has"
            self.console.print(
                hint(f"{who} not finished a match yet: a profile starts with the first one.")
            )
            if mine:
                self.console.print(
                    hint("Play one with `spades quickplay` or `spades lobby`.", "dim")
                )
            return 1
        self.console.print(profile_card(profile, self.render, mine=mine))
        return 0

    # -- spades top ------------------------------------------------------------------
    async def leaderboard(
        self,
        pool: str,
        *,
        page_size: int = 0,
        around: str = "",
        page_token: str = "",
        reader: LineReader | None = None,
        rerun: str = "",
    ) -> int:
        """Show a page; with ``reader`` (a terminal), ``n``/``p``/``q`` move
        between pages, else the next page's command is printed (``rerun``:
        the options to repeat in it)."""
        try:
            page = await self.client.leaderboard(
                pool, page_size=page_size, page_token=page_token, around_player_id=around
            )
        except SpadesError as e:
            return await self._refused(e, pool, around)
        while True:
            self.console.print(leaderboard_page(page, self.render, me=self.me))
            moves = {"n": page.next_page_token, "p": page.previous_page_token}
            if not any(moves.values()):
                return 0
            if reader is None:
                for key, label in (("p", "Previous page"), ("n", "Next page")):
                    if moves[key]:
                        self.console.print(
                            hint(f"{label}: `{self.command} top{rerun} --page-token {moves[key]}`"),
                            soft_wrap=True,
                        )
                return 0
            offer = [
                f"`{key}` {label}"
                for key, label in (("n", "next page"), ("p", "previous page"))
                if moves[key]
            ]
            while True:
                self.console.print(hint(", ".join([*offer, "`q` quit"]) + " > "), end="")
                line = await reader.readline()
                text = (line or "q").strip().lower()
                if text in ("q", "quit", "exit"):
                    return 0
                key = {"next": "n", "previous": "p", "prev": "p", "": "n"}.get(text, text)
                if moves.get(key):
                    break
                self.console.print(hint("Nothing that way." if key in moves else "n, p or q."))
            try:
                page = await self.client.leaderboard(
                    page.pool, page_size=page_size, page_token=moves[key]
                )
            except SpadesError as e:
                return await self._refused(e, page.pool, "")

    async def _refused(self, e: SpadesError, pool: str, around: str) -> int:
        shown = pool or DEFAULT_POOL
        if e.reason == "POOL_NOT_FOUND":
            why = e.message.rstrip(".") or f"no rating pool {shown!r}"
            self.console.print(hint(f"{why[:1].upper()}{why[1:]}.", "yellow"))
            return 1
        if e.reason == "PLAYER_NOT_RATED":
            minimum = 0
            with contextlib.suppress(SpadesError):
                minimum = (await self.client.leaderboard(pool, page_size=1)).min_games
            who = "You are" if around == self.me else f"{around} is"
            games = f"{minimum} rated game{'s' if minimum != 1 else ''}"
            needs = f" (it lists players with {games} or more)" if minimum else ""
            self.console.print(hint(f"{who} not on the {shown} leaderboard yet{needs}.", "yellow"))
            return 1
        raise e
