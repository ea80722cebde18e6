"""What a player is committed to: a ticket being searched for, or a seat at a
table that has not started. A player holds one of them at most, so that the
matchmaker never places a player seated elsewhere, nor seats one it placed.

A player's document is in a partition of its own (``shards``), never in the
commit that seats them or opens their ticket: on a Redis Cluster those are
on other slots. So a change that commits a player is two commits. First the
*claim*: the player's document names the table or ticket and the version of
it that the second commit expects, written only if the document is still at
the version read (two calls of one player cannot both claim). Then the
change itself, expecting that version.

Whether a claim binds is read from what it names:

- that document is past the claim's version: the second commit was written,
  or lost its race and never will be; the document says whether the player
  sits there (at a table that has not started) or holds it (a ticket still
  searching);
- it is still at the claim's version (absent, for a new one): the second
  commit is on its way, or its caller died. A claim younger than
  ``CLAIM_GRACE_MS`` is waited for; an older one is *fenced*: a commit raises
  that document past the claim's version (a new one is written ``VOID``), so
  that the second commit, however late it comes, is refused, and the claim
  binds nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass, replace

import grpc

from ..errors import ServiceError, unavailable
from ..store.lobby import Doc, Tx
from .context import Context, Raced
from .docs import (
    ACTIVE_TICKET,
    PENDING_TABLE,
    VOID,
    PlayerDoc,
    TableDoc,
    TicketDoc,
    live,
    player_key,
    table_key,
    ticket_key,
)

# How long a claim whose commit has not come yet is waited for before it is
# fenced: far longer than the two commits of one call take.
CLAIM_GRACE_MS = 2_000
CLAIM_POLL_S = 0.02
# Reads of a player's document before giving up: the grace's polls, and a
# few more for fences that lost their race.
READ_TRIES = int(CLAIM_GRACE_MS / 1000 / CLAIM_POLL_S) + 20
# A fenced new document (never written by its own commit) stays void this
# long; that commit, were it to come, expects it absent.
VOID_KEEP_MS = 86_400_000


@dataclass(slots=True)
class Presence:
    player_id: str
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


@dataclass(frozen=True, slots=True)
class _Claim:
    ident: str  # the table's or ticket's id
    key: str  # and its key
    version: int  # what its commit expects
    found: Doc | None  # that document as read (void included)

    @property
    def undecided(self) -> bool:
        return (0 if self.found is None else self.found.version) == self.version


async def read(ctx: Context, player_id: str, dead: Collection[str] = ()) -> Presence:
    """The player's document and what it points at, if still binding. A
    claim whose second commit has not come is waited for, then fenced (see
    above); ``dead`` names tables and tickets whose commit this call saw
    refused (their claims bind nothing, without a wait)."""
    players = ctx.players(player_id)
    # Fenced by this time whatever its stamp says (a replica's clock ahead).
    wait_until = ctx.now_ms() + CLAIM_GRACE_MS
    for _ in range(READ_TRIES):
        (pdoc,) = await players.get([player_key(player_id)])
        doc = PlayerDoc.from_bytes(None if pdoc is None else pdoc.data)
        claims = await _claims(ctx, doc)
        open_claims = [c for c in claims if c.undecided and c.key not in dead]
        if not open_claims:
            return _presence(player_id, doc, 0 if pdoc is None else pdoc.version, claims)
        now = ctx.now_ms()
        if now < min(doc.at_ms + CLAIM_GRACE_MS, wait_until):
            await asyncio.sleep(CLAIM_POLL_S)
            continue
        for claim in open_claims:
            await _fence(ctx, claim)
    raise unavailable("CONTENDED", "your lobby document kept changing; retry")


async def _claims(ctx: Context, doc: PlayerDoc) -> list[_Claim]:
    wanted = []
    if doc.ticket:
        wanted.append((doc.ticket, ticket_key(doc.ticket), doc.ticket_v))
    if doc.table:
        wanted.append((doc.table, table_key(doc.table), doc.table_v))
    # Each where its id says (a ticket and a table may be in two places).
    found = await asyncio.gather(*(ctx.at(ident).get([key]) for ident, key, _ in wanted))
    return [_Claim(i, k, v, d) for (i, k, v), (d,) in zip(wanted, found, strict=True)]


async def _fence(ctx: Context, claim: _Claim) -> None:
    """Raise the claimed document past the version its commit expects (that
    commit is then refused whenever it comes); a lost race is fine: then the
    document moved on by itself."""
    key = claim.key
    if claim.found is None:
        tx = Tx(expect={key: 0}, put={key: VOID}, ttl_ms={key: VOID_KEEP_MS})
    else:  # as it was read: an active ticket or a waiting table, which never expire
        tx = Tx(expect={key: claim.found.version}, put={key: claim.found.data})
    await ctx.at(claim.ident).commit(tx)


def _presence(player_id: str, doc: PlayerDoc, version: int, claims: list[_Claim]) -> Presence:
    presence = Presence(player_id, doc, version, None, 0, None, 0, None, 0)
    found = {c.key: live(c.found) for c in claims}
    tdoc = found.get(ticket_key(doc.ticket)) if doc.ticket else None
    if tdoc is not None:
        ticket = TicketDoc.from_bytes(tdoc.data)
        if player_id in ticket.players:
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


async def claim(ctx: Context, here: Presence, doc: PlayerDoc) -> None:
    """Write the player's document as ``doc`` (a new claim, stamped now) if
    it is still as ``here`` read it; ``Raced`` if it is not."""
    doc.at_ms = ctx.now_ms()
    key = player_key(here.player_id)
    tx = Tx(expect={key: here.version}, put={key: doc.to_bytes()}, ttl_ms={key: PLAYER_KEEP_MS})
    if await ctx.players(here.player_id).commit(tx) is None:
        raise Raced()


async def claim_ticket(
    ctx: Context, here: Presence, ticket_id: str, version: int, request_id: str,
    refused: list[str],
) -> None:  # fmt: skip
    """The player's claim on the ticket (at ``version``), made by the
    QuickPlay ``request_id``, before the ticket's commit. ``refused`` is the
    call's: should that commit be refused, its next try reads the claim as
    binding nothing (``read``'s ``dead``)."""
    doc = replace(here.doc, ticket=ticket_id, ticket_v=version, request=request_id)
    await claim(ctx, here, doc)
    refused.append(ticket_key(ticket_id))


async def claim_table(
    ctx: Context, here: Presence, table_id: str, version: int, refused: list[str]
) -> None:
    """The player's claim on a seat at the table (at ``version``), as
    ``claim_ticket``."""
    await claim(ctx, here, replace(here.doc, table=table_id, table_v=version))
    refused.append(table_key(table_id))


def not_found_ticket(ticket_id: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.NOT_FOUND, "TICKET_NOT_FOUND", f"no ticket {ticket_id!r}")
