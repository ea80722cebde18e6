"""Page tokens: opaque to clients (urlsafe base64 of a short text), and read
strictly: ASCII, at most ``MAX_PAGE_TOKEN`` characters, a body of the given
pattern, and the very spelling this server gives (decoding and encoding
again must give the same token), so a token is only ever one the server
made. ``ListMatches`` and ``ListTables`` use them."""

from __future__ import annotations

import base64
import re

from .errors import ServiceError, invalid

MAX_PAGE_TOKEN = 128


def encode(body: str) -> str:
    return base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")


def bad_token() -> ServiceError:
    return invalid("BAD_PAGE_TOKEN", "page_token is not one this server gave", "page_token")


def decode(token: str, body: re.Pattern[str]) -> re.Match[str]:
    """The match of ``body`` on the token's text; BAD_PAGE_TOKEN otherwise."""
    if len(token) > MAX_PAGE_TOKEN or not token.isascii():
        raise bad_token()
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        raise bad_token() from None
    m = body.fullmatch(text)
    if m is None or encode(text) != token:
        raise bad_token()
    return m
