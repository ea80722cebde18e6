"""Who may watch a match, and whether a caller's credential still holds.

A credential is checked when a call starts and again while it runs: a stream
or a Play call checks before each message it sends, and an action is checked
inside the match's lock, after any catching up with other replicas. So a seat
token the operator reissued, or a spectator setting the operator changed, ends
what the old credential had open as soon as the change reaches this replica
(at once on the replica that made it; on the others when they read the
change's event, as they read every other). docs/security.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import auth
from .errors import ServiceError, denied, invalid, unauthenticated
from .gen.spades.v1 import spades_pb2 as pb
from .seats import Seat

PUBLIC = pb.SPECTATORS_PUBLIC
NONE = pb.SPECTATORS_NONE
TOKEN = pb.SPECTATORS_TOKEN
_MODES = frozenset((PUBLIC, NONE, TOKEN))

# Raises the refusal when the credential a call was opened with no longer holds.
Check = Callable[[], None]


def spectators_from_pb(value: int, field: str = "spectators") -> int:
    """The setting a request asks for (unset: public); unknown numbers refused."""
    if value == pb.SPECTATORS_UNSPECIFIED:
        return PUBLIC
    if value not in _MODES:
        raise invalid("BAD_SPECTATORS", f"{field} {value} is not a Spectators value", field)
    return value


@dataclass(slots=True)
class Spectating:
    """A match's spectator setting; the hash of its spectator token with TOKEN."""

    mode: int = PUBLIC
    token_hash: str = ""

    def check(self, digest: str | None) -> None:
        """Refuse a spectator holding ``digest`` (a token's hash; None: no
        usable token) unless the setting lets it watch."""
        if self.mode == PUBLIC:
            return
        if self.mode == NONE:
            raise denied("NOT_SPECTATABLE", "this match is private: it cannot be watched")
        if digest is None:
            raise unauthenticated(
                "this match is watched with its spectator token (authorization: Bearer …)",
                "SPECTATOR_TOKEN_REQUIRED",
            )
        if not auth.same(digest, self.token_hash):
            raise unauthenticated(
                "not this match's spectator token (it may have been replaced)",
                "BAD_SPECTATOR_TOKEN",
            )

    def to_doc(self) -> dict[str, object]:
        return {"mode": self.mode, "token_hash": self.token_hash}

    @classmethod
    def from_doc(cls, doc: dict[str, object] | None) -> Spectating:
        """As stored; a match stored before the setting existed is public."""
        if not doc:
            return cls()
        return cls(int(str(doc["mode"])), str(doc["token_hash"]))


def spectator_digest(token: str | None, match_id: str) -> str | None:
    """The hash of ``token`` if it could be this match's spectator token (of
    the form ``<match_id>.<secret>``); None otherwise."""
    if token is None or len(token) > auth.MAX_SEAT_TOKEN:
        return None
    token_match, dot, secret = token.partition(".")
    if not dot or not secret or token_match != match_id:
        return None
    return auth.hash_secret(secret)


def seat_check(seats: Callable[[], list[Seat]], seat: int, digest: str) -> Check:
    """The check of a seat token whose hash is ``digest``: it holds while the
    seat's token is the same (``seats`` is read each time: a replica catching
    up replaces the list)."""

    verified = ""  # the seat's hash as last found equal to ``digest``

    def check() -> None:
        # Runs before every message of the seat's streams: a hash that is the
        # very object found equal last time is still equal (strings do not
        # change), so the constant-time comparison runs only when the seat's
        # token was reissued or its seats reloaded.
        nonlocal verified
        current = seats()[seat].token_hash
        if current is verified:
            return
        if not auth.same(current, digest):
            raise revoked()
        verified = current

    return check


def revoked() -> ServiceError:
    return unauthenticated(
        "this seat token was replaced by the operator (ReissueSeatToken)", "TOKEN_REVOKED"
    )
