"""The lobby: pages of the public tables waiting for players, and its changes.

A page is read from the board this replica keeps from the feed
(``board.Board``), or while it loads from the store's lobby sets
(``lobby``, or ``lobby:<key>`` for one ruleset), oldest table first; a page
token is the position after the page's last table (its creation time and
id), so tables that start or close between two pages never make the next
one skip a table. The version a listing returns is the feed's number from
before the read: following the feed from it, no change is missed (one
already in the page comes again; replacing a table with itself changes
nothing).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable

from .. import page_tokens
from ..errors import invalid
from ..gen.spades.v1 import lobby_pb2 as lpb
from ..store import StoreError
from .board import Board, Position
from .context import Context
from .docs import LOBBY, OPENED, WAITING, TableDoc, lobby_set, table_key
from .feed import LOBBY_CHANGES, Change, parse
from .tables import table_pb

DEFAULT_PAGE = 50
MAX_PAGE = 500
CATCH_UP_S = 1.0  # how long a page waits for the feed to bring what is committed
_TOKEN = re.compile(r"c1\.(\d{1,16})\.([0-9a-f]{1,64})")


def _page_token(score: int, member: str) -> str:
    return page_tokens.encode(f"c1.{score}.{member}")


def _position(token: str) -> tuple[int, str]:
    m = page_tokens.decode(token, _TOKEN)
    return int(m[1]), m[2]


def in_lobby(change: Change, rules_key: str | None) -> bool:
    """Whether the change is one of a table the lobby (with this filter) shows
    or showed: a public table opened by a player, of those rules."""
    table = change.table
    return (
        table is not None
        and table.public
        and table.kind == OPENED
        and (rules_key is None or table.rules_key == rules_key)
    )


class Listing:
    def __init__(self, ctx: Context, board: Board | None = None) -> None:
        self.ctx = ctx
        self.board = board

    async def page(
        self, rules_key: str | None, size: int, token: str
    ) -> tuple[list[lpb.Table], str, int]:
        """A page of tables, the next page's token, the lobby's version."""
        if size < 0:
            raise invalid(
                "BAD_PAGE_SIZE", "page_size must be 0 (the default, 50) or more", "page_size"
            )
        size = DEFAULT_PAGE if size == 0 else min(size, MAX_PAGE)
        after = _position(token) if token else None
        board = self.board if await self._board_ready() else None
        version = self.ctx.feed.last
        if board is not None:
            tables, last = board.page(rules_key, size, after)
        else:
            tables, last = await self._read(rules_key, size, after)
        nxt = _page_token(*last) if last is not None else ""
        return tables, nxt, version

    async def _board_ready(self) -> bool:
        """Whether the board is loaded and has every change committed before
        this call, by any replica: the feed brings them a moment after their
        commits, so it is waited for up to the store's number now (one small
        read, where a page from the store reads every table shown)."""
        board = self.board
        if board is None or not board.ready:
            return False
        try:
            latest = (await self.ctx.store.feed_after(1 << 62, 0)).last
        except StoreError:
            return board.ready  # the store is away: the board as of its version
        return await self.ctx.feed.reach(latest, CATCH_UP_S) and board.ready

    async def _read(
        self, rules_key: str | None, size: int, after: Position | None
    ) -> tuple[list[lpb.Table], Position | None]:
        """A page read from the store (the board is loading)."""
        name = LOBBY if rules_key is None else lobby_set(rules_key)
        after_score, after_id = after if after is not None else (-1, "")
        store = self.ctx.store
        # Ties at after_score: skip those at or before the last one shown.
        members: list[tuple[str, float]] = []
        offset = 0
        while len(members) <= size:
            batch = await store.zrange(
                name, float(max(after_score, 0)), float("inf"), offset, size + 1
            )
            offset += len(batch)
            members += [(m, s) for m, s in batch if not (int(s) == after_score and m <= after_id)]
            if len(batch) < size + 1:
                break
        shown = members[:size]
        docs = await store.get([table_key(m) for m, _ in shown])
        tables = []
        for d in docs:
            if d is not None and (doc := TableDoc.from_bytes(d.data)).state == WAITING:
                tables.append(table_pb(doc, d.version))
        more = len(members) > size
        return tables, ((int(shown[-1][1]), shown[-1][0]) if more and shown else None)

    async def changes(self, rules_key: str | None, after: int) -> lpb.WatchLobbyResponse:
        """The lobby's changes after ``after`` (none: an empty batch with the
        latest version), or a reset when they are no longer kept."""
        feed = self.ctx.feed
        changes = feed.since(after)
        if changes is None:
            page = await self.ctx.store.feed_after(after, 10_000)
            if page.first > after + 1:
                return lpb.WatchLobbyResponse(version=page.last, reset=True)
            changes = [c for c in (parse(seq, data) for seq, data in page.entries) if c]
            last = page.entries[-1][0] if page.entries else after
        else:
            last = feed.last
        latest: dict[str, Change] = {}
        for change in changes:
            if in_lobby(change, rules_key):
                assert change.table is not None
                latest[change.table.id] = change
        out = lpb.WatchLobbyResponse(version=max(last, after))
        for table_id, change in latest.items():
            assert change.table is not None
            if change.table.state == WAITING:
                out.tables.append(table_pb(change.table, change.version))
            else:
                out.removed_table_ids.append(table_id)
        return out

    async def follow(
        self,
        rules_key: str | None,
        after: int,
        send: Callable[[lpb.WatchLobbyResponse], Awaitable[None]],
        wait_s: float | None = None,
    ) -> None:
        """Send every batch of changes after ``after`` as it comes; with
        ``wait_s``, return after the first batch, or an empty one once the
        wait runs out (a long poll)."""
        feed = self.ctx.feed
        position = feed.last if after == 0 else after
        loop = asyncio.get_running_loop()
        deadline = None if wait_s is None else loop.time() + wait_s
        with feed.watching(LOBBY_CHANGES) as waiter:
            while True:
                batch = await self.changes(rules_key, position)
                position = batch.version
                if batch.tables or batch.removed_table_ids or batch.reset:
                    await send(batch)
                    if wait_s is not None:
                        return
                    if batch.reset:
                        position = feed.last
                # Changes of tables outside the filter wake it too: the wait
                # goes on for what is left of it, not again from the start.
                left = None if deadline is None else max(0.0, deadline - loop.time())
                woke = await waiter.wait(left)
                waiter.take()
                if not woke:
                    await send(lpb.WatchLobbyResponse(version=max(position, feed.last)))
                    return
