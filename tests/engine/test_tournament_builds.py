"""The tournament across builds (``NAME@pure``, ``NAME@compiled``), with
tournament-only bots and a budget per line-up.

A ``@pure`` seat plays on a mirror match of the engine's sources loaded a
second time; Hard is deterministic, so Hard of either build against Hard of the
other ties exactly on every deal, which also shows the mirror is faithful.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

import spades_engine
from spades_engine import Match, preset
from spades_engine._build import load_pure
from spades_engine.actions import Action
from spades_engine.bots import BOTS
from spades_engine.kernel import SimState
from spades_engine.tournament import (
    Config,
    TournamentError,
    _package,
    _Seats,
    _Start,
    check_config,
    format_report,
    run,
    split_name,
    summarize,
)
from spades_engine.tournament_cli import main
from spades_engine.view import SeatView

CLASSIC = preset("classic")
BUDGETS: list[tuple[str, int]] = []


def _budget_spy(name: str) -> object:
    def bot(view: SeatView, seed: int, budget_ms: int) -> Action:
        BUDGETS.append((name, budget_ms))
        return view.legal_actions[0]

    return bot


@pytest.fixture(autouse=True)
def _test_bots() -> Iterator[None]:
    added = {"spy_a": _budget_spy("spy_a"), "spy_b": _budget_spy("spy_b")}
    BOTS.update(added)  # type: ignore[arg-type]
    BUDGETS.clear()
    yield
    for name in added:
        BOTS.pop(name, None)


def test_names_split_into_bot_and_build() -> None:
    assert split_name("expert@pure") == ("expert", "pure")
    assert split_name("hard") == ("hard", None)
    with pytest.raises(TournamentError, match="unknown build 'fast'"):
        check_config(Config(CLASSIC, ("hard@fast",), ("hard",)))
    with pytest.raises(TournamentError, match="unknown bot 'nobody'"):
        check_config(Config(CLASSIC, ("nobody@pure",), ("hard",)))
    with pytest.raises(TournamentError, match="not registered in the pure build"):
        check_config(Config(CLASSIC, ("spy_a@pure",), ("hard",)))


@pytest.mark.parametrize(
    ("bot", "rules", "mode", "count"),
    [
        ("hard", CLASSIC, "deals", 4),
        ("hard", preset("polish"), "games", 1),
        ("random", preset("polish"), "games", 2),  # random blind nils: exchanges, passes
        ("random", preset("classic", blind_nil=True, blind_nil_deficit=0), "games", 2),
        ("hard", preset("german", players=3), "deals", 2),
        ("hard", preset("german", players=2), "games", 1),
        ("hard", preset("classic", auction_trump=True), "deals", 3),
        ("hard", preset("classic", deuces_high=True, jokers=True), "deals", 3),
    ],
)
def test_the_pure_mirror_ties_the_loaded_build_exactly(
    bot: str, rules: Any, mode: Any, count: int
) -> None:
    cfg = Config(rules, (f"{bot}@pure",), (bot,), mode, count, seed=2, max_hands=8)
    results = run(cfg, jobs=1)
    assert [r.diff for r in results] == [0.0] * count
    s = summarize(cfg, results)
    assert set(s["think_ms"]) == {f"{bot}@pure", bot}
    assert s["think_ms"][f"{bot}@pure"]["calls"] == s["think_ms"][bot]["calls"] > 0


def test_compiled_against_pure_ties_exactly_or_is_refused() -> None:
    cfg = Config(CLASSIC, ("hard@pure",), ("hard@compiled",), count=2, budget_ms=1)
    if not spades_engine.COMPILED:
        with pytest.raises(TournamentError, match="needs the mypyc-compiled build"):
            check_config(cfg)
        return
    results = run(cfg, jobs=1)
    assert [r.diff for r in results] == [0.0, 0.0]
    assert not load_pure().COMPILED


def test_compiled_expert_against_pure_expert() -> None:
    """Both Experts in one run (2 deals at a small budget).  Expert counts its
    work, so the two do the same search and should tie unless the pure one's
    clock guard cuts a search short: only that the run completes is asserted."""
    if not spades_engine.COMPILED:
        pytest.skip("the compiled build is not loaded")
    try:
        SimState([1, 2, 4, 8], 0).copy()
    except TypeError:
        pytest.skip("the compiled SimState.copy is broken in this build (fixed on another branch)")
    cfg = Config(CLASSIC, ("expert@compiled",), ("expert@pure",), count=2, budget_ms=5)
    s = summarize(cfg, run(cfg, jobs=1))
    assert s["pairs"] == 2
    assert s["think_ms"]["expert@compiled"]["calls"] == s["think_ms"]["expert@pure"]["calls"]


def test_compiled_is_refused_when_the_pure_build_is_loaded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(spades_engine, "COMPILED", False)
    monkeypatch.setattr(spades_engine, "BUILD", "pure: SPADES_ENGINE_PURE=1")
    with pytest.raises(
        TournamentError, match=r"needs the mypyc-compiled build.*SPADES_ENGINE_PURE"
    ):
        check_config(Config(CLASSIC, ("expert@compiled",), ("expert@pure",)))
    assert main(["--a", "expert@compiled", "--b", "expert@pure", "--deals", "2"]) == 2
    assert "needs the mypyc-compiled build" in capsys.readouterr().err


def test_a_mirror_that_diverges_stops_the_tournament() -> None:
    start = _Start(CLASSIC.replace(target_score=10**9, mercy_score=None), 5, [], None)
    match = start.match(_package())
    seats = _Seats(("hard@pure", "hard", "hard@pure", "hard"), start)
    seats.check(match)  # the same so far
    seat = match.to_act
    match.apply(seat, match.legal_actions(seat)[0])  # the mirror is not told
    with pytest.raises(TournamentError, match="snapshots differ"):
        seats.check(match)
    pure_seat = seat if seat % 2 == 0 else match.to_act  # seats 0 and 2 are @pure
    with pytest.raises(TournamentError, match="legal actions differ"):
        seats.act(match, pure_seat, 1, 1)


def test_mirror_upkeep_is_not_counted_in_think_time(monkeypatch: pytest.MonkeyPatch) -> None:
    pure = load_pure()
    slow_apply, slow_view = pure.Match.apply, pure.Match.view

    def apply(self: Any, seat: int, action: Any) -> Any:
        time.sleep(0.004)
        return slow_apply(self, seat, action)

    def view(self: Any, seat: Any) -> Any:
        time.sleep(0.004)
        return slow_view(self, seat)

    monkeypatch.setattr(pure.Match, "apply", apply)
    monkeypatch.setattr(pure.Match, "view", view)
    cfg = Config(CLASSIC, ("hard@pure",), ("hard",), count=1, budget_ms=1)
    s = summarize(cfg, run(cfg, jobs=1))
    assert s["points_diff"]["mean"] == 0.0
    for name in ("hard@pure", "hard"):  # each call is well under the 4 ms sleeps around it
        assert s["think_ms"][name]["p50_ms"] < 2.0, s["think_ms"]


def test_match_bots_play_on_either_build() -> None:
    for name in ("omniscient", "omniscient@pure"):
        cfg = Config(CLASSIC, (name,), ("hard",), count=1, budget_ms=1)
        (result,) = run(cfg, jobs=1)
        assert result.think[name]


def test_each_lineup_gets_its_budget() -> None:
    cfg = Config(CLASSIC, ("spy_a",), ("spy_b",), count=2, budget_ms=7, budget_a_ms=3)
    s = summarize(cfg, run(cfg, jobs=1))
    assert {b for n, b in BUDGETS if n == "spy_a"} == {3}
    assert {b for n, b in BUDGETS if n == "spy_b"} == {7}
    assert (s["budget_ms_a"], s["budget_ms_b"]) == (3, 7)
    assert list(s["think_ms"]) == ["spy_a (3 ms)", "spy_b (7 ms)"]
    assert "budget A 3 ms, B 7 ms" in format_report(s)
    same = Config(CLASSIC, ("spy_a",), ("spy_b",), count=1, budget_ms=7, budget_b_ms=7)
    assert list(summarize(same, run(same, jobs=1))["think_ms"]) == ["spy_a", "spy_b"]
    with pytest.raises(TournamentError, match="0 or more"):
        check_config(Config(CLASSIC, ("spy_a",), ("spy_b",), budget_b_ms=-1))


def test_cli_builds_and_lineup_budgets(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--a", "Hard@Pure", "--b", "hard", "--deals", "2", "--jobs", "1", "--quiet"]
    assert main([*argv, "--budget-a", "1", "--budget-b", "2"]) == 0
    out = capsys.readouterr().out
    assert "A = hard@pure  vs  B = hard" in out
    assert "budget A 1 ms, B 2 ms" in out and "+0.00" in out
    assert main(["--list-bots"]) == 0
    assert "omniscient" in capsys.readouterr().out.split()


def test_the_pure_package_is_a_separate_copy() -> None:
    pure = load_pure()
    assert pure.Match is not Match and pure.__name__ == "spades_engine_pure"
    assert "omniscient" not in pure.bots.BOTS
