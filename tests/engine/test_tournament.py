"""The duplicate tournament: pairing, statistics, JSON, PNG and the CLI."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib.image
import pytest

from spades_engine.actions import Action
from spades_engine.bots import BOTS
from spades_engine.ruleset import preset
from spades_engine.tournament import (
    Config,
    TournamentError,
    check_config,
    mean_ci,
    orientations,
    percentile,
    play_pair,
    run,
    seat_bots,
    summarize,
)
from spades_engine.tournament_chart import PNG_SIGNATURE, render
from spades_engine.tournament_cli import main
from spades_engine.view import SeatView

ROOT = Path(__file__).resolve().parents[2]
CLASSIC = preset("classic")


def _other_random(view: SeatView, seed: int, budget_ms: int) -> Action:
    """Random play with a different stream from the "random" bot."""
    return random.Random(seed ^ 0x5DEECE66D).choice(view.legal_actions)


SEEN: list[tuple[str, int, int, tuple[int, ...]]] = []  # (bot, hand number, seat, cards)


def _spy(name: str) -> object:
    def bot(view: SeatView, seed: int, budget_ms: int) -> Action:
        assert view.seat is not None and view.hand is not None
        if len(view.hand) == view.rules.hand_size and view.bids[view.seat] is None:
            SEEN.append((name, view.hand_number, view.seat, tuple(view.hand)))
        return view.legal_actions[0]

    return bot


@pytest.fixture(autouse=True)
def _test_bots() -> Iterator[None]:
    added = {"test_random2": _other_random, "spy_a": _spy("spy_a"), "spy_b": _spy("spy_b")}
    BOTS.update(added)  # type: ignore[arg-type]
    SEEN.clear()
    yield
    for name in added:
        BOTS.pop(name, None)


def _cfg(a: str = "random", b: str = "random", **kw: object) -> Config:
    base: dict[str, object] = {"rules": CLASSIC, "a": (a,), "b": (b,), "count": 8, "seed": 3}
    base.update(kw)
    return Config(**base)  # type: ignore[arg-type]


def test_random_vs_random_shared_seeds_ties_exactly() -> None:
    # Identical bots get identical seeds in both seatings: every pair cancels to 0.
    results = run(_cfg(count=12), jobs=1)
    s = summarize(_cfg(count=12), results)
    assert [r.diff for r in results] == [0.0] * 12
    assert s["points_diff"]["mean"] == 0.0
    assert s["points_diff"]["ci95"] == [0.0, 0.0]
    a, b = s["lineups"]["A"], s["lineups"]["B"]
    for key in ("points_per_hand", "bags_per_hand", "nil_bids", "nil_made", "hands"):
        assert a[key] == b[key], key


def test_random_vs_random_ci_contains_zero() -> None:
    cfg = _cfg(count=40, independent_seeds=True)
    s = summarize(cfg, run(cfg, jobs=1))
    lo, hi = s["points_diff"]["ci95"]
    assert lo < 0 < hi
    assert s["points_diff"]["sd"] > 0  # the two line-ups really made different choices
    assert s["points_diff"]["half_width"] < 60


def test_swapping_the_lineups_negates_the_result() -> None:
    ab = run(_cfg("random", "test_random2", count=10), jobs=1)
    ba = run(_cfg("test_random2", "random", count=10), jobs=1)
    assert any(r.diff != 0 for r in ab)
    for x, y in zip(ab, ba, strict=True):
        assert x.diff == pytest.approx(-y.diff)
    sab = summarize(_cfg("random", "test_random2"), ab)
    sba = summarize(_cfg("test_random2", "random"), ba)
    assert sab["lineups"]["A"]["points_per_hand"] == sba["lineups"]["B"]["points_per_hand"]
    assert sab["lineups"]["A"]["nil_bids"] == sba["lineups"]["B"]["nil_bids"]


def test_duplicate_pair_swaps_seats_on_the_same_deal() -> None:
    pair = play_pair(_cfg("spy_a", "spy_b"), 5)
    first, second = pair.logs
    assert first.labels == ("A", "B", "A", "B")
    assert second.labels == ("B", "A", "B", "A")
    assert first.bots == ("spy_a", "spy_b", "spy_a", "spy_b")
    assert second.bots == ("spy_b", "spy_a", "spy_b", "spy_a")
    assert first.first_deal == second.first_deal
    assert first.dealer == second.dealer
    assert first.hands == second.hands == 1
    # What the bots saw: each seat's cards went to A once and to B once.
    assert len(SEEN) == 8
    by_seat: dict[int, dict[str, tuple[int, ...]]] = {}
    for name, _, seat, cards in SEEN:
        assert name not in by_seat.setdefault(seat, {})
        by_seat[seat][name] = cards
    for seat in range(4):
        assert by_seat[seat]["spy_a"] == by_seat[seat]["spy_b"]
    assert len({cards for seat in by_seat.values() for cards in seat.values()}) == 4


def test_games_mode_uses_one_seed_for_both_seatings() -> None:
    pair = play_pair(_cfg("spy_a", "spy_b", mode="games", count=1), 0)
    first, second = pair.logs
    assert first.first_deal == second.first_deal and first.dealer == second.dealer
    assert pair.win is not None and 0 <= pair.win <= 1
    # Every hand both seatings reached was dealt alike, and each seat's cards
    # went to line-up A in one seating and to line-up B in the other.
    seen: dict[tuple[int, int], list[tuple[str, tuple[int, ...]]]] = {}
    for name, hand, seat, cards in SEEN:
        seen.setdefault((hand, seat), []).append((name, cards))
    both = min(first.hands, second.hands)
    assert both >= 1
    for hand in range(both):
        for seat in range(4):
            (n1, c1), (n2, c2) = seen[hand, seat]
            assert {n1, n2} == {"spy_a", "spy_b"}
            assert c1 == c2


def test_cutthroat_rotates_lineups_through_every_seat() -> None:
    three = preset("german", players=3)
    orients = orientations(three)
    assert len(orients) == 6
    for seat in range(3):
        assert sorted(o[seat] for o in orients) == ["A"] * 3 + ["B"] * 3
    assert orientations(preset("german")) == [("A", "B", "A", "B"), ("B", "A", "B", "A")]
    cfg = Config(three, ("spy_a",), ("spy_b",), "deals", 2, 1)
    pair = play_pair(cfg, 0)
    assert len(pair.logs) == 6
    assert len({g.first_deal for g in pair.logs}) == 1


def test_per_seat_lineups_and_unknown_bots() -> None:
    cfg = Config(CLASSIC, ("random", "test_random2"), ("spy_b",))
    assert seat_bots(cfg, ("A", "B", "A", "B")) == ("random", "spy_b", "test_random2", "spy_b")
    assert seat_bots(cfg, ("B", "A", "B", "A")) == ("spy_b", "random", "spy_b", "test_random2")
    with pytest.raises(TournamentError, match="unknown bot 'nobody'"):
        check_config(Config(CLASSIC, ("nobody",), ("random",)))
    with pytest.raises(TournamentError, match="at most 2"):
        check_config(Config(CLASSIC, ("random",) * 3, ("random",)))
    two = preset("german", players=2)
    with pytest.raises(TournamentError, match="players=2 has no deal"):
        check_config(Config(two, ("random",), ("random",)))
    check_config(Config(two, ("random",), ("random",), mode="games"))


def test_parallel_run_matches_serial() -> None:
    cfg = _cfg("random", "test_random2", count=6)
    serial = run(cfg, jobs=1)
    progress: list[tuple[int, int]] = []
    parallel = run(cfg, jobs=2, progress=lambda d, t: progress.append((d, t)))
    assert [r.diff for r in serial] == [r.diff for r in parallel]
    assert progress[0] == (0, 6) and progress[-1] == (6, 6)


def test_statistics_helpers() -> None:
    s = mean_ci([1.0, 2.0, 3.0, 4.0])
    assert s["mean"] == 2.5
    assert s["sd"] == pytest.approx(1.2909944)
    assert s["ci95"] == pytest.approx([2.5 - 1.96 * 1.2909944 / 2, 2.5 + 1.96 * 1.2909944 / 2])
    assert mean_ci([1.0])["ci95"] is None
    values = sorted(float(i) for i in range(1, 101))
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0


JSON_FIELDS = {
    "tool",
    "mode",
    "a",
    "b",
    "preset",
    "rules",
    "seed",
    "budget_ms",
    "jobs",
    "pairs",
    "orientations",
    "hands",
    "points_diff",
    "win_rate",
    "lineups",
    "think_ms",
    "elapsed_s",
}


def test_summary_json_has_the_fields() -> None:
    cfg = _cfg(mode="games", count=3, independent_seeds=True)
    s = json.loads(json.dumps(summarize(cfg, run(cfg, jobs=1))))
    assert set(s) >= JSON_FIELDS
    assert set(s["points_diff"]) >= {"n", "mean", "sd", "half_width", "ci95"}
    assert s["win_rate"]["n"] == 3 and 0 <= s["win_rate"]["mean"] <= 1
    for label in ("A", "B"):
        u = s["lineups"][label]
        assert set(u) >= {
            "bots",
            "points_per_hand",
            "bags_per_hand",
            "nil_bids",
            "nil_success_rate",
            "wins",
        }
    assert s["lineups"]["A"]["wins"] + s["lineups"]["B"]["wins"] == 6
    t = s["think_ms"]["random"]
    assert t["calls"] > 0 and 0 <= t["p50_ms"] <= t["p99_ms"] <= t["max_ms"]


def _pixels(data: bytes) -> Any:
    """The image of a PNG as an array (rows, columns, RGBA), read back by matplotlib."""
    assert data[:8] == PNG_SIGNATURE
    return matplotlib.image.imread(io.BytesIO(data), format="png")


def test_chart_is_a_png_of_the_asked_size_with_ink() -> None:
    for mode in ("deals", "games"):
        cfg = _cfg("random", "test_random2", mode=mode, count=3)
        image = _pixels(render(summarize(cfg, run(cfg, jobs=1)), width=800, height=400))
        assert image.shape[:2] == (400, 800)
        colours = {tuple(px) for px in image.reshape(-1, image.shape[2])[::97]}
        assert len(colours) > 2  # more than a blank page


def test_cli_runs_as_a_subprocess(tmp_path: Path) -> None:
    out_json, out_png = tmp_path / "t.json", tmp_path / "t.png"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "spades_engine.tournament_cli",
            "--a",
            "random",
            "--b",
            "random",
            "--deals",
            "8",
            "--jobs",
            "2",
            "--json",
            str(out_json),
            "--png",
            str(out_png),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "points per hand, A - B" in done.stdout
    assert "8/8 deals" in done.stderr
    s = json.loads(out_json.read_text())
    assert set(s) >= JSON_FIELDS
    assert s["pairs"] == 8 and s["jobs"] == 2 and s["mode"] == "deals"
    assert _pixels(out_png.read_bytes()).shape[:2] == (420, 900)


def test_cli_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--a", "nobody", "--b", "random", "--deals", "2"]) == 2
    assert "unknown bot 'nobody'" in capsys.readouterr().err
    assert main(["--a", "random", "--b", "random"]) == 2
    assert main(["--a", "random", "--b", "random", "--deals", "2", "--set", "players=9"]) == 2
    assert main(["--list-bots"]) == 0
    assert "random" in capsys.readouterr().out


def test_cli_in_process_cutthroat_games(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.json"
    argv = ["--a", "random", "--b", "test_random2", "--games", "2", "--jobs", "1"]
    argv += ["--preset", "german", "--quiet", "--json", str(path)]
    assert main(argv) == 0
    s = json.loads(path.read_text())
    assert len(s["orientations"]) == 2 and s["win_rate"]["n"] == 2
    assert "games won by A" in capsys.readouterr().out
