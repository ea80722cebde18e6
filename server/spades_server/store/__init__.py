"""Stores behind one interface: in-memory (tests) and SQLite (the embedded default)."""

from .base import (
    LoadedMatch,
    MatchExists,
    MatchNotFound,
    SeqConflict,
    Store,
    StoredAction,
    StoredEvent,
    StoreError,
)

__all__ = [
    "LoadedMatch",
    "MatchExists",
    "MatchNotFound",
    "SeqConflict",
    "Store",
    "StoreError",
    "StoredAction",
    "StoredEvent",
]
