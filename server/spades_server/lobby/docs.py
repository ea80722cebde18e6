"""The lobby's documents: a table, a ticket, a player; their keys and JSON.

A document's version is the store's (``Doc.version``), not part of its JSON.
Field names are short: every lobby change carries its document on the feed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..store.lobby import Doc

# Table states (TableState) and kinds (TableKind), as stored.
WAITING, STARTING, STARTED, CLOSED = "waiting", "starting", "started", "closed"
OPENED, QUICK_PLAY, REMATCH = "opened", "quick", "rematch"
# Seat states (TableSeatState).
OPEN, PLAYER, BOT = "open", "player", "bot"
# Ticket states (TicketState).
PARTNER, SEARCHING, PLACED, CANCELLED = "partner", "searching", "placed", "cancelled"
ACTIVE_TICKET = (PARTNER, SEARCHING)
# Where a table stands still (waiting or starting): a player seated at one
# sits nowhere else.
PENDING_TABLE = (WAITING, STARTING)


def table_key(table_id: str) -> str:
    return f"t:{table_id}"


def ticket_key(ticket_id: str) -> str:
    return f"k:{ticket_id}"


def player_key(player_id: str) -> str:
    # Player ids are the identity provider's (any characters, up to 128):
    # hashed, so that a key is always short and printable.
    return "p:" + hashlib.sha256(player_id.encode()).hexdigest()


def invite_key(code: str) -> str:
    return f"i:{code}"


def rematch_key(match_id: str) -> str:
    return f"r:{match_id}"


def pair_key(player_id: str, partner_id: str) -> str:
    """Opened with a party's ticket: two players each asking for the other at
    once cannot both open a ticket that waits for the other."""
    first, second = sorted((player_id, partner_id))
    return "pair:" + hashlib.sha256(f"{first}\0{second}".encode()).hexdigest()[:48]


# Sorted sets.
LOBBY = "lobby"  # public waiting tables, by creation time
DUE = "due"  # table and ticket keys, by when they need a server to act
QUEUES = "queues"  # every queue key ever used (scanned at start)


def lobby_set(rules_key: str) -> str:
    return f"lobby:{rules_key}"


RATED_QUEUE = "~rated"  # a rated queue's name: its rules' key and this


def queue_set(queue: str) -> str:
    return f"q:{queue}"


def queue_of(rules_key: str, rated: bool, lane: int) -> str:
    """A queue's name: its rules' key, rated or not, and its lane (past 0)."""
    name = rules_key + RATED_QUEUE if rated else rules_key
    return f"{name}#{lane}" if lane else name


@dataclass(slots=True)
class SeatDoc:
    state: str  # OPEN, PLAYER or BOT
    player: str = ""  # the player's id (PLAYER; a rematch's may be unknown: "")
    name: str = ""
    level: int = 0  # a BotLevel (BOT)
    nonce: str = ""  # the seat token's (PLAYER): a new one each time someone sits
    accepted: bool = False  # a rematch's seat

    def to_json(self) -> dict[str, Any]:
        return {
            "s": self.state,
            "p": self.player,
            "n": self.name,
            "l": self.level,
            "k": self.nonce,
            "a": self.accepted,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SeatDoc:
        return cls(d["s"], d["p"], d["n"], d["l"], d["k"], d["a"])


@dataclass(slots=True)
class TableDoc:
    id: str
    kind: str
    state: str
    ruleset: str  # the request's Ruleset, serialized, base64
    rules_key: str
    seats: list[SeatDoc]
    created_ms: int
    deadline_ms: int  # WAITING: when it falls due; STARTING: the lease's end
    host: str = ""
    public: bool = True
    code: str = ""  # invite code (invite-only)
    timer_ms: int = 0
    spectators: int = 1  # a Spectators value
    unattended: str = "bots"  # or "close"
    bot_level: int = 0
    seed: int = 0  # set when it starts
    close_reason: str = ""
    rematch_of: str = ""
    tickets: list[str] = field(default_factory=list)  # quick play: the placed tickets
    rated: bool = False
    pool: str = ""  # the rating pool (rated)

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "rules": self.ruleset,
            "key": self.rules_key,
            "seats": [s.to_json() for s in self.seats],
            "created": self.created_ms,
            "deadline": self.deadline_ms,
            "host": self.host,
            "public": self.public,
            "code": self.code,
            "timer": self.timer_ms,
            "spect": self.spectators,
            "unattended": self.unattended,
            "level": self.bot_level,
            "seed": self.seed,
            "closed": self.close_reason,
            "rematch_of": self.rematch_of,
            "tickets": self.tickets,
            "rated": self.rated,
            "pool": self.pool,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TableDoc:
        return cls(
            id=d["id"],
            kind=d["kind"],
            state=d["state"],
            ruleset=d["rules"],
            rules_key=d["key"],
            seats=[SeatDoc.from_json(s) for s in d["seats"]],
            created_ms=d["created"],
            deadline_ms=d["deadline"],
            host=d["host"],
            public=d["public"],
            code=d["code"],
            timer_ms=d["timer"],
            spectators=d["spect"],
            unattended=d["unattended"],
            bot_level=d["level"],
            seed=d["seed"],
            close_reason=d["closed"],
            rematch_of=d["rematch_of"],
            tickets=list(d["tickets"]),
            rated=bool(d.get("rated", False)),  # absent from tables stored before rated play
            pool=str(d.get("pool", "")),
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> TableDoc:
        return cls.from_json(json.loads(data))

    def seat_of(self, player_id: str) -> int | None:
        for i, s in enumerate(self.seats):
            if s.state == PLAYER and s.player == player_id:
                return i
        return None

    def open_seats(self) -> list[int]:
        return [i for i, s in enumerate(self.seats) if s.state == OPEN]

    def listed(self) -> bool:
        """Whether the lobby shows it now."""
        return self.public and self.state == WAITING and self.kind == OPENED


@dataclass(slots=True)
class TicketDoc:
    id: str
    state: str
    ruleset: str  # as TableDoc.ruleset
    rules_key: str
    players: list[str]  # in the order they asked
    names: list[str]
    created_ms: int
    partner: str = ""  # named by the first player (a party)
    queued_ms: int = 0  # SEARCHING: its place in the queue
    bots_at_ms: int = 0
    table: str = ""  # PLACED
    reason: str = ""  # CANCELLED
    rated: bool = False
    lane: int = 0  # of its rules' queue (shards.lane)

    @property
    def queue(self) -> str:
        """The queue it waits in: rated tickets apart from unrated ones."""
        return queue_of(self.rules_key, self.rated, self.lane)

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()

    def to_json(self) -> dict[str, Any]:
        d = {
            "id": self.id,
            "state": self.state,
            "rules": self.ruleset,
            "key": self.rules_key,
            "players": self.players,
            "names": self.names,
            "created": self.created_ms,
            "partner": self.partner,
            "queued": self.queued_ms,
            "bots_at": self.bots_at_ms,
            "table": self.table,
            "reason": self.reason,
            "rated": self.rated,
        }
        if self.lane:
            d["lane"] = self.lane
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TicketDoc:
        return cls(
            id=d["id"],
            state=d["state"],
            ruleset=d["rules"],
            rules_key=d["key"],
            players=list(d["players"]),
            names=list(d["names"]),
            created_ms=d["created"],
            partner=d["partner"],
            queued_ms=d["queued"],
            bots_at_ms=d["bots_at"],
            table=d["table"],
            reason=d["reason"],
            rated=bool(d.get("rated", False)),
            lane=int(d.get("lane", 0)),
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> TicketDoc:
        return cls.from_json(json.loads(data))


@dataclass(slots=True)
class PlayerDoc:
    """What a player holds: their latest ticket and the table they last sat
    at, each a claim (``presence``): the version of that document which the
    commit that made it theirs expected, and when the latest claim was made.
    Either may be over already, or never made; whether it still binds the
    player is read from that document (``presence.read``)."""

    ticket: str = ""
    table: str = ""
    request: str = ""  # the QuickPlay request_id that made ``ticket`` theirs
    ticket_v: int = 0  # the ticket's version its commit expected (0: a new one)
    table_v: int = 0
    at_ms: int = 0  # when the latest claim was written

    def to_bytes(self) -> bytes:
        d: dict[str, Any] = {"ticket": self.ticket, "table": self.table}
        if self.request:
            d["request"] = self.request
        if self.ticket_v:
            d["tv"] = self.ticket_v
        if self.table_v:
            d["bv"] = self.table_v
        if self.at_ms:
            d["at"] = self.at_ms
        return json.dumps(d).encode()

    @classmethod
    def from_bytes(cls, data: bytes | None) -> PlayerDoc:
        if data is None:
            return cls()
        d = json.loads(data)
        return cls(
            d["ticket"],
            d["table"],
            d.get("request", ""),
            int(d.get("tv", 0)),
            int(d.get("bv", 0)),
            int(d.get("at", 0)),
        )


# What a claimed table or ticket whose commit never came is made into, so that
# the commit, if it comes late, finds the version it expected gone (presence).
# Read as absent.
VOID = b""


def live(doc: Doc | None) -> Doc | None:
    """``doc`` unless it is absent or void."""
    return None if doc is None or doc.data == VOID else doc


def table_event(doc: TableDoc, version: int) -> bytes:
    """The feed's record of a table's change: the document as committed."""
    return json.dumps(
        {"t": "table", "v": version, "doc": doc.to_json()}, separators=(",", ":")
    ).encode()


def ticket_event(doc: TicketDoc, version: int) -> bytes:
    return json.dumps(
        {"t": "ticket", "v": version, "doc": doc.to_json()}, separators=(",", ":")
    ).encode()
