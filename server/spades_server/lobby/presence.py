"""What a player is committed to: a ticket being searched for, or a seat at a
table that has not started. A player holds one of them at most, so that the
matchmaker never places a player seated elsewhere, nor seats one it placed."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from ..errors import ServiceError
from ..store.lobby import Tx
from .context import Context
from .docs import (
    ACTIVE_TICKET,
    PENDING_TABLE,
    PlayerDoc,
    TableDoc,
    TicketDoc,
    player_key,
    table_key,
    ticket_key,
)


@dataclass(slots=True)
class Presence:
    doc: PlayerDoc
    version: int  # the player document's (0: never stored)
    ticket: TicketDoc | None  # the latest ticket, if it is still active
    ticket_version: int
    latest: TicketDoc | None  # the latest ticket, in any state (None: none kept)
    latest_version: int
    table: TableDoc | None  # the table sat at, if it has not started and they still sit
    table_version: int

    def refuse_if_busy(self, except_table: str = "") -> None:
        """ALREADY_QUEUED or ALREADY_SEATED if the player is committed
        elsewhere (a seat at ``except_table`` is not elsewhere)."""
        if self.ticket is not None:
            raise already_queued(self.ticket.id)
        if self.table is not None and self.table.id != except_table:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION,
                "ALREADY_SEATED",
                f"you sit at table {self.table.id}, which has not started: leave it first",
                metadata={"table_id": self.table.id},
            )


def already_queued(ticket_id: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.ALREADY_EXISTS,
        "ALREADY_QUEUED",
        f"you hold ticket {ticket_id}: cancel it first (or follow it with GetTicket)",
        metadata={"ticket_id": ticket_id},
    )


async def read(ctx: Context, player_id: str) -> Presence:
    """The player's document and what it points at, if still binding."""
    (pdoc,) = await ctx.store.get([player_key(player_id)])
    doc = PlayerDoc.from_bytes(None if pdoc is None else pdoc.data)
    keys = []
    if doc.ticket:
        keys.append(ticket_key(doc.ticket))
    if doc.table:
        keys.append(table_key(doc.table))
    found = dict(zip(keys, await ctx.store.get(keys), strict=True)) if keys else {}
    presence = Presence(doc, 0 if pdoc is None else pdoc.version, None, 0, None, 0, None, 0)
    tdoc = found.get(ticket_key(doc.ticket)) if doc.ticket else None
    if tdoc is not None:
        ticket = TicketDoc.from_bytes(tdoc.data)
        presence.latest, presence.latest_version = ticket, tdoc.version
        if ticket.state in ACTIVE_TICKET:
            presence.ticket, presence.ticket_version = ticket, tdoc.version
    bdoc = found.get(table_key(doc.table)) if doc.table else None
    if bdoc is not None:
        table = TableDoc.from_bytes(bdoc.data)
        if table.state in PENDING_TABLE and table.seat_of(player_id) is not None:
            presence.table, presence.table_version = table, bdoc.version
    return presence


# A player's document outlives what it points at by a week: then it reads as
# absent, which is what it would say anyway (nothing pending), and the store
# does not keep every player who ever came.
PLAYER_KEEP_MS = 7 * 86_400_000


def put(tx: Tx, player_id: str, doc: PlayerDoc) -> None:
    key = player_key(player_id)
    tx.put[key] = doc.to_bytes()
    tx.ttl_ms[key] = PLAYER_KEEP_MS


def not_found_ticket(ticket_id: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.NOT_FOUND, "TICKET_NOT_FOUND", f"no ticket {ticket_id!r}")
