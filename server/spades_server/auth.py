"""Credentials: the operator credential and per-seat tokens.

A seat token is ``<match_id>.<secret>``: the match id routes it without a
global index (any replica can check it), and only a hash of the secret is
stored, so a leaked database does not leak seats.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable

from .errors import denied, unauthenticated


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def bearer(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    """The bearer credential of a call's metadata, if any."""
    for key, value in metadata or ():
        if key.lower() == "authorization" and isinstance(value, str):
            scheme, _, cred = value.partition(" ")
            if scheme.lower() == "bearer" and cred.strip():
                return cred.strip()
    return None


MAX_SEAT_TOKEN = 256  # tokens this server makes are 49 characters


def split_seat_token(token: str) -> tuple[str, str]:
    if len(token) > MAX_SEAT_TOKEN:
        raise unauthenticated(f"malformed seat token: longer than {MAX_SEAT_TOKEN} characters")
    match_id, dot, secret = token.partition(".")
    if not dot or not match_id or not secret:
        raise unauthenticated("malformed seat token: expected <match_id>.<secret>")
    return match_id, secret


def require_operator(token: str | None, operator_token: str) -> None:
    if token is None:
        raise unauthenticated("this call needs the operator credential (authorization: Bearer …)")
    if not same(token, operator_token):
        raise denied("NOT_OPERATOR", "this call needs the operator credential")
