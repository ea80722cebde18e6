"""Fixtures of the client's tests (see harness.py)."""

from harness import harness

__all__ = ["harness"]
