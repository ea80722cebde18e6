"""A Session on an in-memory store, for what the wire cannot reach: bots that
fail, and limits too high to reach at the speed a test can wait for.

Like test_store.py, each test is a plain function running a coroutine with
``asyncio.run``; the session, registry and store are the real components."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Awaitable, Callable

import pytest
import structlog
from prometheus_client import REGISTRY
from spades_server import access
from spades_server.allowance import SessionLimits
from spades_server.errors import ServiceError
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.matches import Registry, SeatSpec
from spades_server.seats import CONTROL_HUMAN, CONTROL_STAND_IN
from spades_server.session import Session
from spades_server.store.memory import MemoryStore

from spades_engine import Action, IllegalAction, Match, Phase, preset
from spades_engine.actions import bid
from spades_engine.bots import BOTS
from spades_engine.view import SeatView


def failures(level: int) -> float:
    value = REGISTRY.get_sample_value("spades_bot_failures_total", {"level": str(level)})
    return value or 0.0


async def wait_for(pred: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    async def loop() -> None:
        while not pred():
            await asyncio.sleep(0.001)

    try:
        await asyncio.wait_for(loop(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout}s waiting for {what}") from None


def run(
    body: Callable[[Registry], Awaitable[None]],
    limits: SessionLimits | None = None,
    unload_after_s: float = 300.0,
) -> None:
    async def main() -> None:
        registry = Registry(MemoryStore(), limits or SessionLimits(), 10, unload_after_s)
        try:
            await body(registry)
        finally:
            await registry.close()

    asyncio.run(main())


async def bots_match(registry: Registry, level: int) -> Session:
    rules = preset("classic").replace(target_score=100)
    specs = [SeatSpec(f"b{i}", True, level) for i in range(4)]
    session, _, _ = await registry.create(Match(rules, seed=3), specs, 0)
    return session


def raising_bot(view: SeatView, seed: int, budget_ms: int) -> Action:
    raise RuntimeError("the bot broke")


def illegal_bot(view: SeatView, seed: int, budget_ms: int) -> Action:
    return bid(99)  # never legal


@pytest.mark.parametrize("bot", [raising_bot, illegal_bot])
def test_a_failing_bot_is_replaced_by_a_legal_action_and_counted(
    monkeypatch: pytest.MonkeyPatch, bot: Callable[[SeatView, int, int], Action]
) -> None:
    monkeypatch.setitem(BOTS, "easy", bot)
    before = failures(pb.BOT_LEVEL_EASY)

    async def body(registry: Registry) -> None:
        session = await bots_match(registry, pb.BOT_LEVEL_EASY)
        await wait_for(lambda: session.match.is_over, "the failing bots' match to end")
        actions = len(session.match.actions)
        assert failures(pb.BOT_LEVEL_EASY) - before == actions
        # Every fallback action is in the store: the match reloads whole.
        loaded = await registry.store.load_match(session.match_id)
        assert len(loaded.actions) == actions
        said = [e["event"] for e in logged if e.get("match_id") == session.match_id]
        assert said.count(expected_line[bot]) == actions, "each failure logged once"

    expected_line = {raising_bot: "bot failed", illegal_bot: "bot action refused"}
    # Captured, not rendered: a rendered traceback per action (rich's, on a
    # developer's machine) made the match take seconds.
    with structlog.testing.capture_logs() as logged:
        run(body)


def test_a_seat_left_to_a_failing_stand_in_still_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BOTS, "random", raising_bot)  # what stands in for a human

    async def body(registry: Registry) -> None:
        specs = [SeatSpec(f"h{i}", False, 0) for i in range(4)]
        session, _, _ = await registry.create(Match(preset("classic"), seed=8), specs, 0)
        seat = session.match.to_act
        await session.set_control(seat, CONTROL_STAND_IN, "left")
        await wait_for(lambda: session.match.to_act != seat, "the stand-in to act")
        assert session.match.actions[-1][0] == seat

    run(body)


def test_chat_and_seat_changes_are_bounded_per_hand_and_reset_with_it() -> None:
    limits = SessionLimits(chat_per_minute=1000, chat_per_hand=5, seat_changes_per_hand=4)

    async def body(registry: Registry) -> None:
        specs = [SeatSpec(f"h{i}", False, 0) for i in range(4)]
        rules = preset("classic").replace(mercy_score=None)  # four nils do not end it
        session, _, _ = await registry.create(Match(rules, seed=8), specs, 0)
        seat = (session.match.to_act + 1) % 4  # not to act: its stand-in waits
        for i in range(5):
            await session.chat(seat, f"line {i}")
        last = session.last_seq
        with pytest.raises(ServiceError) as refused:
            await session.chat(seat, "one more")
        assert refused.value.reason == "CHAT_QUOTA_EXHAUSTED"
        for i in range(4):
            await session.set_control(seat, CONTROL_HUMAN if i % 2 == 0 else CONTROL_STAND_IN, "t")
        with pytest.raises(ServiceError) as refused:
            await session.set_control(seat, CONTROL_HUMAN, "claimed")
        assert refused.value.reason == "SEAT_CHANGES_EXHAUSTED"
        assert session.last_seq == last + 4
        # Another seat has its own allowance.
        await session.chat((seat + 1) % 4, "hello")
        await session.set_control((seat + 1) % 4, CONTROL_HUMAN, "claimed")
        # A new hand, a new allowance.
        n = 0
        while session.match.hand_number == 0:
            actor = session.match.to_act
            try:
                await session.submit(actor, f"x{n}", session.match.legal_actions(actor)[0], None)
            except IllegalAction:
                await asyncio.sleep(0.001)  # the stand-in acted first
            n += 1
        assert session.match.phase is Phase.BIDDING
        await session.chat(seat, "new hand")
        await session.set_control(seat, CONTROL_STAND_IN, "left")

    run(body, limits)


def test_chat_is_bounded_per_minute_and_a_refused_line_appends_nothing() -> None:
    limits = SessionLimits(chat_per_minute=3, chat_per_hand=40)

    async def body(registry: Registry) -> None:
        specs = [SeatSpec(f"h{i}", False, 0) for i in range(4)]
        session, _, _ = await registry.create(Match(preset("classic"), seed=8), specs, 0)
        for i in range(3):
            await session.chat(1, f"line {i}")
        last = session.last_seq
        with pytest.raises(ServiceError) as refused:
            await session.chat(1, "too soon")
        assert refused.value.reason == "CHAT_RATE_LIMITED"
        assert session.last_seq == last
        await session.chat(3, "another seat's minute is its own")

    run(body, limits)


def test_an_action_authenticated_before_a_reissue_is_refused_after_it() -> None:
    """The window a stream cannot show: a call checked its token, then the
    operator reissued it before the action reached the match's lock."""

    async def body(registry: Registry) -> None:
        specs = [SeatSpec(f"h{i}", False, 0) for i in range(4)]
        session, tokens, _ = await registry.create(Match(preset("classic"), seed=8), specs, 0)
        seat = session.match.to_act
        token = dict(tokens)[seat]
        found, found_seat, digest = await registry.seat_of(token, session.match_id)
        assert (found, found_seat) == (session, seat)
        check = access.seat_check(lambda: session.seats, seat, digest)
        await session.reissue(seat)
        last = session.last_seq
        action = session.match.legal_actions(seat)[0]
        for attempt in (
            session.submit(seat, "a1", action, None, check),
            session.chat(seat, "hello", check),
            session.set_control(seat, CONTROL_STAND_IN, "left", check),
        ):
            with pytest.raises(ServiceError) as refused:
                await attempt
            assert refused.value.reason == "TOKEN_REVOKED"
        assert session.last_seq == last

    run(body)


def test_an_unloaded_match_is_freed_without_waiting_for_the_garbage_collector() -> None:
    """A finished match leaves memory when it is unloaded: nothing it holds (its
    bots, its timer, its log) points back at it, so reference counting frees it
    at once; the server collects cycles rarely (main.tune_gc)."""

    async def body(registry: Registry) -> None:
        gc.disable()
        try:
            session = await bots_match(registry, pb.BOT_LEVEL_EASY)
            match = session.match
            await wait_for(lambda: match.is_over, "the bots to finish")
            freed = weakref.ref(session)
            match_id = session.match_id
            del session
            await wait_for(lambda: match_id not in registry.sessions, "the match to unload")
            await asyncio.sleep(0)
            assert freed() is None, gc.get_referrers(freed())
        finally:
            gc.enable()

    run(body, unload_after_s=0.0)
