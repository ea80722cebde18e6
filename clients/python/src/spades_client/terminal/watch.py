"""``spades watch``: a match as a spectator sees it (the ``Spectate`` stream).

Only public events reach a spectator: bids, cards played, tricks, scores —
never a card in anyone's hand. Each is shown as a line; the table is drawn
again after bidding and after every trick, and each hand's result when it is
scored. Events from before the watch started are shown at once, live ones at
``pace_s``. It ends when the match does, or on ``q`` + Enter.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Final

from rich.console import Console

from .._client import Client
from .._errors import SpadesError
from .._gen.spades.v1 import spades_pb2 as pb
from .lines import LineReader
from .model import SPECTATOR, Table
from .parse import Meta, parse_command
from .render import Renderer, hint

__all__ = ["WatchLoop"]

LIVE_SLACK_MS: Final = 2000  # events this close to the start count as live (paced)
_PACED: Final = frozenset(
    {"bid_made", "card_played", "trick_won", "trump_named", "exchange_decided", "draw_taken"}
)


class WatchLoop:
    def __init__(
        self,
        console: Console,
        client: Client,
        match_id: str,
        reader: LineReader | None,
        *,
        renderer: Renderer | None = None,
        pace_s: float = 0.6,
        summary: pb.MatchSummary | None = None,
    ) -> None:
        self.console = console
        self.client = client
        self.match_id = match_id
        self.reader = reader
        self.render = renderer or Renderer()
        self.pace_s = max(0.0, pace_s)
        self.table = Table(viewer=SPECTATOR)
        if summary is not None:
            self._take_summary(summary)
        self.started_ms = int(time.time() * 1000)

    def _take_summary(self, summary: pb.MatchSummary) -> None:
        rules = summary.ruleset
        t = Table(
            players=rules.players or len(summary.seats) or 4,
            partnerships=rules.partnerships,
            hand_size=rules.hand_size or 13,
            viewer=SPECTATOR,
        )
        t.bid_order_known = True
        t.deuces_high = rules.deuces_high
        t.jokers = rules.jokers
        t.target_score = rules.target_score
        for info in summary.seats:
            if 0 <= info.seat < t.players:
                t.names[info.seat] = info.name or t.position(info.seat)
                t.controls[info.seat] = info.control
        self.table = t

    async def run(self) -> int:
        self.console.print(
            hint(
                f"Watching match {self.match_id}: public events only, nobody's cards. "
                "`q` + Enter stops."
            )
        )
        watcher = asyncio.ensure_future(self._events())
        tasks: set[asyncio.Future[int]] = {watcher}
        quitter: asyncio.Future[int] | None = None
        if self.reader is not None:
            quitter = asyncio.ensure_future(self._keys())
            tasks.add(quitter)
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            return next(iter(done)).result()
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t

    async def _keys(self) -> int:
        assert self.reader is not None
        while True:
            line = await self.reader.readline()
            if line is None:
                # No keyboard (input closed): watch until the match ends.
                await asyncio.Event().wait()
            if line is not None and parse_command(line) == Meta("quit"):
                self.console.print(hint("Stopped watching."))
                return 0

    async def _events(self) -> int:
        try:
            async for event in self.client.spectate(self.match_id):
                if await self._show(event):
                    return 0
        except SpadesError as e:
            self.console.print(self.render.refusal(e))
            return 1
        return 0

    async def _show(self, event: pb.MatchEvent) -> bool:
        """Show one event; True once the match is over."""
        kind = event.WhichOneof("kind") or ""
        line = self.render.event_line(self.table, event)
        if line is not None:
            self.console.print(line)
        self.table.apply(event)
        if kind in ("bidding_closed", "trick_won"):
            self.console.print(self.render.table(self.table))
        if kind == "hand_scored":
            self.console.print(self.render.hand_result(self.table, event.hand_scored))
        if kind == "match_ended":
            return True
        if kind in _PACED and event.time_ms >= self.started_ms - LIVE_SLACK_MS:
            await asyncio.sleep(self.pace_s)
        return False
