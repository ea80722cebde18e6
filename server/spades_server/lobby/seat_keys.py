"""Seat tokens of tables: derived, so that nothing secret is stored.

A player who sat at a table (or was placed by the matchmaker, or accepted a
rematch) may ask for their seat's token again: a lost response, another
device, another replica. The token is ``<table_id>.<secret>`` like every seat
token, its secret an HMAC of the table, the seat and a nonce (new each time
someone sits) under the server's seat-token key. The store keeps the nonce
and, in the match, the secret's hash, as for every seat: a copy of the
database alone plays no seat.

The key is ``--seat-token-key`` or, when that is empty, derived from the
operator token, which every replica already shares. Changing it (or the
operator token it comes from) makes the tokens handed out before
unrecoverable: their holders keep playing, but asking again gives a token the
match refuses. docs/security.md.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from .. import auth

_CONTEXT = b"spades seat tokens v1"


class SeatKeys:
    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def from_settings(cls, seat_token_key: str, operator_token: str) -> SeatKeys:
        base = (seat_token_key or operator_token).encode()
        return cls(hmac.new(base, _CONTEXT, hashlib.sha256).digest())

    @staticmethod
    def new_nonce() -> str:
        return secrets.token_hex(8)

    def secret(self, table_id: str, seat: int, nonce: str) -> str:
        message = f"{table_id}\x00{seat}\x00{nonce}".encode()
        digest = hmac.new(self._key, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def token(self, table_id: str, seat: int, nonce: str) -> str:
        return f"{table_id}.{self.secret(table_id, seat, nonce)}"

    def mac(self, text: str) -> str:
        """A short signature of ``text`` under this key (page tokens: one the
        server gave, not one a client made up)."""
        digest = hmac.new(self._key, b"page tokens\x00" + text.encode(), hashlib.sha256)
        return digest.hexdigest()[:16]

    def token_hash(self, table_id: str, seat: int, nonce: str) -> str:
        return auth.hash_secret(self.secret(table_id, seat, nonce))
