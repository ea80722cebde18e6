"""The matchmaker's decision (a pure function): who sits where, and when.

Examples first, then the invariants over any queue (hypothesis): nobody
placed twice, partners opposite, tables placed only when full or when their
oldest ticket waited for bots, first come first served.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from spades_server.lobby.matchmaker import Band, Entry, Plan, decide, next_deadline

WAIT = 20_000


def solo(n: int, at: int = 0) -> Entry:
    return Entry(f"t{n}", (f"p{n}",), at)


def party(n: int, at: int = 0) -> Entry:
    return Entry(f"t{n}", (f"p{n}a", f"p{n}b"), at)


def players(plan: Plan) -> list[str | None]:
    return [None if s is None else s[1] for s in plan.seats]


def test_four_lone_players_make_a_table_at_once() -> None:
    plans = decide([solo(i) for i in range(4)], 4, True, now_ms=0, bot_wait_ms=WAIT)
    assert len(plans) == 1
    # Seats 0, 2, 1, 3 in queue order: the first two are partners.
    assert players(plans[0]) == ["p0", "p2", "p1", "p3"]


def test_three_wait_for_a_fourth_until_the_bots_are_due() -> None:
    queue = [solo(i, at=1000 * i) for i in range(3)]
    assert decide(queue, 4, True, now_ms=WAIT - 1, bot_wait_ms=WAIT) == []
    (plan,) = decide(queue, 4, True, now_ms=WAIT, bot_wait_ms=WAIT)
    assert players(plan) == ["p0", "p2", "p1", None]
    assert next_deadline(queue, WAIT) == WAIT


def test_a_party_sits_opposite_and_lone_players_fill_the_other_pair() -> None:
    (plan,) = decide([solo(0), party(1), solo(2)], 4, True, now_ms=0, bot_wait_ms=WAIT)
    assert players(plan) == ["p0", "p1a", "p2", "p1b"]


def test_two_parties_are_the_two_sides() -> None:
    (plan,) = decide([party(0), party(1)], 4, True, now_ms=0, bot_wait_ms=WAIT)
    assert players(plan) == ["p0a", "p1a", "p0b", "p1b"]


def test_a_party_that_does_not_fit_waits_for_the_next_table() -> None:
    # Three lone players take 0, 2 and 1: no opposite pair is left for the
    # party, which opens the next table; the fourth lone player completes the first.
    queue = [solo(0), solo(1), solo(2), party(3), solo(4)]
    plans = decide(queue, 4, True, now_ms=0, bot_wait_ms=WAIT)
    assert [players(p) for p in plans] == [["p0", "p2", "p1", "p4"]]


def test_cutthroat_seats_in_order_and_takes_no_party_pair() -> None:
    (plan,) = decide([solo(i) for i in range(3)], 3, False, now_ms=0, bot_wait_ms=WAIT)
    assert players(plan) == ["p0", "p1", "p2"]


def test_a_lone_ticket_gets_three_bots_after_the_wait() -> None:
    (plan,) = decide([solo(0, at=5)], 4, True, now_ms=5 + WAIT, bot_wait_ms=WAIT)
    assert players(plan) == ["p0", None, None, None]


entry_kinds = st.lists(st.tuples(st.booleans(), st.integers(0, 60_000)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(entry_kinds, st.integers(0, 90_000), st.sampled_from([(4, True), (4, False), (3, False)]))
def test_invariants(kinds: list[tuple[bool, int]], now: int, shape: tuple[int, bool]) -> None:
    seats, partnerships = shape
    queue = sorted(
        (
            party(i, at) if is_party and partnerships else solo(i, at)
            for i, (is_party, at) in enumerate(kinds)
        ),
        key=lambda e: e.queued_ms,
    )
    plans = decide(queue, seats, partnerships, now, WAIT)
    placed = [p for plan in plans for p in players(plan) if p is not None]
    assert len(placed) == len(set(placed)), "a player placed twice"
    by_ticket = {e.ticket_id: e for e in queue}
    for plan in plans:
        assert len(plan.seats) == seats
        tickets = plan.tickets
        assert tickets, "a table of bots only"
        # Whole tickets only, and partners opposite each other.
        for t in tickets:
            at = [i for i, s in enumerate(plan.seats) if s is not None and s[0] == t]
            assert len(at) == len(by_ticket[t].players)
            if len(at) == 2:
                assert at[1] - at[0] == 2
        full = all(s is not None for s in plan.seats)
        oldest = min(by_ticket[t].queued_ms for t in tickets)
        assert full or now - oldest >= WAIT, "bots before the wait ran out"
    # No bot takes a seat a queued player could take: a ticket left in the
    # queue fits no placed table's bot seats.
    placed_tickets = {t for plan in plans for t in plan.tickets}
    for e in queue:
        if e.ticket_id in placed_tickets:
            continue
        for plan in plans:
            bots = {i for i, s in enumerate(plan.seats) if s is None}
            if len(e.players) == 1:
                assert not bots, f"{e.ticket_id} waits while a bot sits"
            else:
                assert not ({0, 2} <= bots or {1, 3} <= bots), f"party {e.ticket_id} waits"


# -- rated queues: the rating band ---------------------------------------------------


def rated(n: int, rating: float, at: int = 0) -> Entry:
    return Entry(f"t{n}", (f"p{n}",), at, rating)


def test_a_rated_queue_seats_close_ratings_together() -> None:
    band = Band(base=5.0, widen_per_s=0.25)
    queue = [rated(i, r) for i, r in enumerate([10, 30, 11, 31, 12, 32, 13, 33])]
    plans = decide(queue, 4, True, now_ms=0, bot_wait_ms=WAIT, band=band)
    seated = sorted(sorted(p for p in players(plan) if p) for plan in plans)
    assert seated == [["p0", "p2", "p4", "p6"], ["p1", "p3", "p5", "p7"]]
    # Without a band, first come first served mixes them.
    (first, _) = decide(queue, 4, True, now_ms=0, bot_wait_ms=WAIT)
    assert sorted(p for p in players(first) if p) == ["p0", "p1", "p2", "p3"]


def test_the_band_widens_as_tickets_wait_until_anyone_meets_anyone() -> None:
    band = Band(base=5.0, widen_per_s=0.25)
    queue = [rated(i, r) for i, r in enumerate([10, 10, 30, 30])]
    assert decide(queue, 4, True, now_ms=0, bot_wait_ms=10 * WAIT, band=band) == []
    # 20 apart: a band of 5 + 0.25/s is that wide after 60 s.
    assert decide(queue, 4, True, now_ms=59_000, bot_wait_ms=10 * WAIT, band=band) == []
    (plan,) = decide(queue, 4, True, now_ms=60_000, bot_wait_ms=10 * WAIT, band=band)
    assert None not in players(plan)
    # Meanwhile the queue is looked at again every second, not only when bots are due.
    assert next_deadline(queue, 10 * WAIT, now_ms=1_000, band=band) == 2_000
    assert next_deadline(queue, 10 * WAIT) == 10 * WAIT


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(min_value=0, max_value=50), min_size=1, max_size=24),
    st.integers(min_value=0, max_value=120_000),
)
def test_no_rated_table_spreads_wider_than_its_band(ratings: list[float], now: int) -> None:
    band = Band(base=5.0, widen_per_s=0.25)
    queue = [rated(i, r, at=0) for i, r in enumerate(ratings)]
    by_player = {f"p{i}": r for i, r in enumerate(ratings)}
    for plan in decide(queue, 4, True, now_ms=now, bot_wait_ms=10 * WAIT, band=band):
        seated = [by_player[p] for p in players(plan) if p]
        assert max(seated) - min(seated) <= band.width(now) + 1e-9
