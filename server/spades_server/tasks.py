"""Stopping a background task for good.

On Python 3.11 a task cancelled while a timeout inside it (``asyncio.timeout``,
redis-py's socket timeouts) expires may see its cancellation turned into a
``TimeoutError``; a loop that survives errors then goes on, and whoever awaits
it waits forever (a replica that never exits on SIGTERM). So the loops check a
flag of their own as well, and ``stop`` cancels again until the task ends,
within a bound.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

log = structlog.get_logger("spades.tasks")


async def stop(task: asyncio.Task[None] | None, timeout_s: float = 3.0) -> None:
    """Cancel ``task`` (again every few tenths of a second) until it has ended,
    for at most ``timeout_s``; it is left behind, logged, past that."""
    if task is None or task.done():
        return
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while not task.done() and loop.time() < end:
        task.cancel()
        await asyncio.wait({task}, timeout=min(0.2, max(0.0, end - loop.time())))
    if not task.done():
        log.warning("a background task did not stop", task=task.get_name())
        return
    with contextlib.suppress(asyncio.CancelledError, Exception):
        task.result()
