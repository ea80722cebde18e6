"""Fixtures of the client's tests (see harness.py, and rated.py for rated play)."""

from harness import harness, rated_harness, replicated_harness, tls_harness
from rated import rated_match

__all__ = ["harness", "rated_harness", "rated_match", "replicated_harness", "tls_harness"]
