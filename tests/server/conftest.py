"""Fixtures of the end-to-end service tests (see server_harness)."""

from server_harness import make_server, shared_server

__all__ = ["make_server", "shared_server"]
