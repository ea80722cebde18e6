"""Invite codes: short enough to read aloud, too many to guess.

Ten characters of an alphabet without the letters and digits people
confuse (0/O, 1/I/L), shown as two groups of five: ``K7QMW-3XDPQ``, as long
as a meeting id. 31¹⁰ is about 8.2 × 10¹⁴ codes, and redemption attempts are
limited per player (``INVITE_RATE`` below: about 5.3 million a year): a
player guessing at that limit for a whole year, while 10,000 invite-only
tables wait at every moment, finds one with a chance of about 6 in 100,000
(docs/security.md). A code is read case-insensitively, spaces and dashes
ignored.
"""

from __future__ import annotations

import secrets

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
LENGTH = 10
# Attempts per player: a burst of 10, then one every 6 seconds.
INVITE_RATE = 1 / 6
INVITE_BURST = 10
_ALLOWED = frozenset(ALPHABET)


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def shown(code: str) -> str:
    return f"{code[:5]}-{code[5:]}" if code else ""


def normalised(text: str) -> str | None:
    """The code ``text`` spells, or None when it cannot be one."""
    if len(text) > 32:
        return None
    code = text.upper().replace("-", "").replace(" ", "")
    if len(code) != LENGTH or not set(code) <= _ALLOWED:
        return None
    return code
