"""Fixtures of the client's tests (see harness.py)."""

from harness import harness, replicated_harness, tls_harness

__all__ = ["harness", "replicated_harness", "tls_harness"]
