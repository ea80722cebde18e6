#!/usr/bin/env python3
"""Does the rating find the strong players? Rated quick play simulated with
players of known strength, rated by the server's own ``rating.rate``
(OpenSkill Plackett-Luce, issue 26), and the fixed rating each bot level
should have at rated tables (``--rated-bots``).

1. **Calibration** on the engine: real bot matches between the levels Easy,
   Normal, Hard and Expert (``spades_engine.tournament.play_pair``, whole games
   of the ``classic`` preset to its target score, each game played in both
   orientations with the same seed, so each line-up holds both sides' cards).
   A match's four seats get random levels: ``--cal-pairs`` (1,000) line-ups
   without Expert (fast bots), and ``--cal-expert-pairs`` (60) with at least
   one Expert seat, the Expert thinking ``--expert-budget`` ms (50) a
   decision, in ``--jobs`` processes. The server's bots get 200 ms, 4x slower
   to calibrate; Expert measured 2.8 at 20 ms, 3.0 to 3.6 at 50 ms and 3.7
   at 200 ms (bench/ratings/README.md): its figure is the least sure.
   Model: a level has a strength s (Easy 0), a side's strength is the sum of
   its two players', and the side of strength a beats the side of strength b
   with probability 1 / (1 + exp(b - a)) (a draw, no winner within 200
   hands, counts half). The strengths are fitted by maximum likelihood
   (Newton; standard errors from the Hessian). Nothing is cached:
   ``--strengths`` skips this step with strengths given by hand.
2. **Simulation**: ``--players`` (2,000) players, equal shares of the four
   levels (``--mix``), each of true strength s(level) + N(0, noise), noise
   ``--noise`` (0.25) times the mean gap between adjacent levels. ``--matches``
   (20,000) matches of four: ``--pairing band`` (default), like the rated
   quick-play queue (lobby/matchmaker.py): a queue of ``--queue`` (16) players
   drawn at random, first come first served into a table while the spread of
   their mu stays within ``--band`` (5.0, ``matchmaker.Band``'s base), the
   table completed by the closest of the queue when the band is not met (as
   the band widens with waiting), seats in joining order 0, 2, 1, 3 (the
   first two partners); or ``--pairing random``: four players at random,
   partners at random. Each match's winner is drawn from the model with the
   players' true strengths, and all four are rated with ``rating.rate``.
3. **Report**: at checkpoints (2k, 5k, 10k, 20k matches) Kendall's tau-b
   between the players' true strength and their conservative rating
   (``mu - 3 sigma``, what the leaderboard orders by), their mu, and between
   their level and their conservative rating. At the end, per level: mean mu
   (the figure ``--rated-bots`` should give that bot level: a bot of the
   level is rated as the level's average player), sd, mean sigma, mean
   conservative. Then **newcomers**: ``--newcomers`` (100) new players of
   each level join the settled population (frozen now: only the newcomer is
   rated) and play ``--newcomer-games`` (200) matches each, paired as above;
   printed: the matches a newcomer needs (median, p90) until its conservative
   rating is first within ``--within`` (2.0) of the mean conservative rating
   of its level's settled players ("placed": it ranks among its peers, who
   have played the simulation's games), and the newcomers' mean conservative
   rating and mu after 1, 5, 10, 20, ... matches.

    .venv/bin/python bench/rating_sim.py [--players 2000] [--matches 20000]
        [--pairing band|random] [--cal-pairs 1000] [--cal-expert-pairs 60]
        [--expert-budget 50] [--jobs 2] [--noise 0.25] [--seed 1]
        [--strengths 0,S_normal,S_hard,S_expert]
"""

from __future__ import annotations

import argparse
import itertools
import math
import multiprocessing
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.rating import DEFAULT, Participant, RatedBots, Rating, rate

from load import pct
from spades_engine import preset
from spades_engine.tournament import Config, play_pair

LEVELS = ("easy", "normal", "hard", "expert")
SERVER_BOTS = {
    "easy": pb.BOT_LEVEL_EASY,
    "normal": pb.BOT_LEVEL_NORMAL,
    "hard": pb.BOT_LEVEL_HARD,
    "expert": pb.BOT_LEVEL_EXPERT,
}
PRESET = "classic"
SEATS_IN_ORDER = (0, 2, 1, 3)  # the matchmaker's seats for lone players


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


# -- calibration on the engine ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Game:
    a: tuple[str, str]  # the levels of one side
    b: tuple[str, str]
    score: float  # 1: side a won, 0: side b, 0.5: no winner


def _play(job: tuple[tuple[str, ...], int, int, int]) -> list[Game]:
    """One duplicate pair: the line-up (levels of seats 0..3) in both orientations."""
    seats, seed, index, budget = job
    cfg = Config(
        rules=preset(PRESET),
        a=(seats[0], seats[2]),
        b=(seats[1], seats[3]),
        mode="games",
        count=1,
        seed=seed,
        budget_ms=budget,
    )
    out = []
    for log in play_pair(cfg, index).logs:
        side0 = (log.bots[0], log.bots[2])
        side1 = (log.bots[1], log.bots[3])
        if log.winner_label is None:
            score = 0.5
        else:
            score = 1.0 if log.labels[0] == log.winner_label else 0.0
        out.append(Game(side0, side1, score))
    return out


def lineups(
    rng: random.Random, count: int, levels: Sequence[str], need: str | None
) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    while len(out) < count:
        seats = tuple(rng.choice(levels) for _ in range(4))
        if need is None or need in seats:
            out.append(seats)
    return out


def calibrate(args: argparse.Namespace) -> list[Game]:
    rng = random.Random(args.seed)
    cheap = lineups(rng, args.cal_pairs, LEVELS[:3], None)
    costly = lineups(rng, args.cal_expert_pairs, LEVELS, "expert")
    jobs = [(s, args.seed, i, args.expert_budget) for i, s in enumerate(cheap + costly)]
    # The costly ones first, so that the processes end together.
    jobs.sort(key=lambda j: -j[0].count("expert"))
    games: list[Game] = []
    with multiprocessing.Pool(args.jobs) as pool:
        for done in pool.imap_unordered(_play, jobs, chunksize=1):
            games.extend(done)
    return games


def fit(games: Sequence[Game], ridge: float = 1e-3) -> tuple[dict[str, float], dict[str, float]]:
    """Maximum-likelihood strengths (easy 0) and their standard errors."""
    free = LEVELS[1:]
    index = {lv: i for i, lv in enumerate(free)}
    s = [0.0] * len(free)

    def row(g: Game) -> list[float]:
        x = [0.0] * len(free)
        for lv in g.a:
            if lv in index:
                x[index[lv]] += 1
        for lv in g.b:
            if lv in index:
                x[index[lv]] -= 1
        return x

    rows = [(row(g), g.score) for g in games]
    hess: list[list[float]] = []
    for _ in range(50):
        grad = [-ridge * v for v in s]
        hess = [[ridge * (i == j) for j in range(len(s))] for i in range(len(s))]
        for x, y in rows:
            p = sigmoid(sum(xi * si for xi, si in zip(x, s, strict=True)))
            w = p * (1 - p)
            for i, xi in enumerate(x):
                if xi:
                    grad[i] += (y - p) * xi
                    for j, xj in enumerate(x):
                        if xj:
                            hess[i][j] += w * xi * xj
        step = solve(hess, grad)
        s = [si + d for si, d in zip(s, step, strict=True)]
        if max(abs(d) for d in step) < 1e-9:
            break
    inv = invert(hess)
    strengths = {"easy": 0.0} | {lv: s[i] for lv, i in index.items()}
    errors = {"easy": 0.0} | {lv: math.sqrt(inv[i][i]) for lv, i in index.items()}
    return strengths, errors


def solve(a: list[list[float]], b: list[float]) -> list[float]:
    inv = invert(a)
    return [sum(inv[i][j] * b[j] for j in range(len(b))) for i in range(len(b))]


def invert(a: list[list[float]]) -> list[list[float]]:
    n = len(a)
    m = [list(r) + [float(i == j) for j in range(n)] for i, r in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        pivot = m[c][c]
        m[c] = [v / pivot for v in m[c]]
        for r in range(n):
            if r != c and m[r][c]:
                f = m[r][c]
                m[r] = [v - f * w for v, w in zip(m[r], m[c], strict=True)]
    return [r[n:] for r in m]


def report_calibration(games: Sequence[Game], s: dict[str, float], se: dict[str, float]) -> None:
    seats = {lv: 0 for lv in LEVELS}
    for g in games:
        for lv in g.a + g.b:
            seats[lv] += 1
    draws = sum(g.score == 0.5 for g in games)
    print(
        f"calibration: {len(games):,} games ({draws} without a winner), seats per level "
        + ", ".join(f"{lv} {seats[lv]:,}" for lv in LEVELS)
    )
    head = f"{'level':<8} {'strength':>9} {'± se':>6} {'P(LL beats EE)':>15}"
    head += f" {'P(LL beats L-1 pair)':>21}"
    print(head)
    print("-" * len(head))
    for k, lv in enumerate(LEVELS):
        vs_easy = sigmoid(2 * (s[lv] - s["easy"]))
        below = f"{sigmoid(2 * (s[lv] - s[LEVELS[k - 1]])):.3f}" if k else "-"
        print(f"{lv:<8} {s[lv]:>9.3f} {se[lv]:>6.3f} {vs_easy:>15.3f} {below:>21}")
    # The model against the games: observed wins of side a by predicted bucket.
    buckets: dict[int, list[tuple[float, float]]] = {}
    for g in games:
        p = sigmoid(sum(s[lv] for lv in g.a) - sum(s[lv] for lv in g.b))
        p, y = (p, g.score) if p >= 0.5 else (1 - p, 1 - g.score)
        buckets.setdefault(min(4, int((p - 0.5) * 10)), []).append((p, y))
    print("model check (the favoured side): predicted vs observed win share")
    for b in sorted(buckets):
        xs = buckets[b]
        print(
            f"  predicted {0.5 + b / 10:.1f}-{0.6 + b / 10:.1f}: {len(xs):>5} games,"
            f" predicted {statistics.fmean(p for p, _ in xs):.3f},"
            f" observed {statistics.fmean(y for _, y in xs):.3f}"
        )


# -- the simulation -----------------------------------------------------------------------


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b (ties in either variable allowed), O(n^2)."""
    n = len(x)
    concordant = discordant = tied_x = tied_y = 0
    for i in range(n):
        xi, yi = x[i], y[i]
        for j in range(i + 1, n):
            dx = x[j] - xi
            dy = y[j] - yi
            if dx == 0:
                tied_x += 1
                if dy == 0:
                    tied_y += 1
            elif dy == 0:
                tied_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    pairs = n * (n - 1) // 2
    denom = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    return (concordant - discordant) / denom if denom else float("nan")


@dataclass(slots=True)
class Player:
    id: str
    level: str
    true: float
    rating: Rating = DEFAULT
    games: int = 0


def seat_table(
    rng: random.Random,
    candidates: Sequence[Player],
    pairing: str,
    queue: int,
    band: float,
    first: Player | None = None,
) -> list[Player]:
    """Four players in seat order 0..3 (sides 0/2 and 1/3)."""
    if pairing == "random":
        drawn = rng.sample(candidates, 4 if first is None else 3)
        table = drawn if first is None else [first, *drawn]
        rng.shuffle(table)
        return table
    waiting = rng.sample(candidates, queue if first is None else queue - 1)
    if first is not None:
        waiting = [first, *waiting]
    joined = [waiting[0]]
    for p in waiting[1:]:
        mus = [q.rating.mu for q in joined] + [p.rating.mu]
        if max(mus) - min(mus) <= band:
            joined.append(p)
            if len(joined) == 4:
                break
    if len(joined) < 4:  # the band widens: the closest of the rest
        centre = statistics.fmean(q.rating.mu for q in joined)
        rest = sorted(
            (p for p in waiting if p not in joined), key=lambda p: abs(p.rating.mu - centre)
        )
        joined += rest[: 4 - len(joined)]
    seats: list[Player | None] = [None] * 4
    for seat, p in zip(SEATS_IN_ORDER, joined, strict=True):
        seats[seat] = p
    return [p for p in seats if p is not None]


def play(rng: random.Random, table: list[Player], frozen: bool = False) -> None:
    """One match: the winner drawn from the true strengths, the four rated."""
    edge = table[0].true + table[2].true - table[1].true - table[3].true
    side0_won = rng.random() < sigmoid(edge)
    scores = (500, 300) if side0_won else (300, 500)
    participants = [Participant(p.id, seat % 2, scores[seat % 2]) for seat, p in enumerate(table)]
    after = rate({p.id: p.rating for p in table}, participants)
    for p in table:
        if frozen and not p.id.startswith("new-"):  # only the newcomer moves
            continue
        p.rating = after[p.id]
        p.games += 1


def checkpoint(players: Sequence[Player], done: int) -> dict[str, float]:
    true = [p.true for p in players]
    cons = [p.rating.conservative for p in players]
    level = [float(LEVELS.index(p.level)) for p in players]
    return {
        "matches": done,
        "tau_cons": kendall_tau_b(true, cons),
        "tau_mu": kendall_tau_b(true, [p.rating.mu for p in players]),
        "tau_level": kendall_tau_b(level, cons),
        "games": statistics.fmean(p.games for p in players),
        "sigma": statistics.fmean(p.rating.sigma for p in players),
    }


TRACK = (1, 5, 10, 20, 40, 80, 160, 320)  # newcomers' games at which their ratings are shown


def newcomers(
    rng: random.Random,
    settled: list[Player],
    strengths: dict[str, float],
    noise: float,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Each level's newcomers: the match that first brought the conservative
    rating within ``--within`` of the settled players' mean, and the mean
    conservative rating and mu after ``TRACK`` games."""
    by_level = {lv: [p for p in settled if p.level == lv] for lv in LEVELS}
    mean_cons = {
        lv: statistics.fmean(p.rating.conservative for p in ps) for lv, ps in by_level.items()
    }
    out: dict[str, Any] = {}
    for lv in LEVELS:
        placed: list[float] = []
        cons: dict[int, list[float]] = {g: [] for g in TRACK if g <= args.newcomer_games}
        mus: dict[int, list[float]] = {g: [] for g in cons}
        for k in range(args.newcomers):
            me = Player(f"new-{lv}-{k}", lv, strengths[lv] + rng.gauss(0, noise))
            got = math.inf
            for g in range(1, args.newcomer_games + 1):
                table = seat_table(rng, settled, args.pairing, args.queue, args.band, first=me)
                play(rng, table, frozen=True)
                if math.isinf(got) and abs(me.rating.conservative - mean_cons[lv]) <= args.within:
                    got = g
                if g in cons:
                    cons[g].append(me.rating.conservative)
                    mus[g].append(me.rating.mu)
            placed.append(got)
        out[lv] = {"placed": placed, "cons": cons, "mu": mus, "target": mean_cons[lv]}
    return out


def simulate(strengths: dict[str, float], args: argparse.Namespace) -> None:
    rng = random.Random(args.seed + 1)
    gaps = [strengths[b] - strengths[a] for a, b in itertools.pairwise(LEVELS)]
    noise = args.noise * abs(statistics.fmean(gaps))
    weights = [float(w) for w in args.mix.split(":")]
    players = []
    for i in range(args.players):
        lv = (
            rng.choices(LEVELS, weights)[0]
            if args.mix_random
            else LEVELS[_level_of(i, args.players, weights)]
        )
        players.append(Player(f"sim-{i}", lv, strengths[lv] + rng.gauss(0, noise)))
    counts = {lv: sum(p.level == lv for p in players) for lv in LEVELS}
    print()
    print(
        f"simulation: {args.players:,} players ("
        + ", ".join(f"{lv} {counts[lv]}" for lv in LEVELS)
        + f"), per-player noise sd {noise:.3f} ({args.noise} x the mean gap between levels),"
        f" {args.matches:,} matches, pairing {args.pairing}"
        + (f" (queue {args.queue}, band {args.band} mu)" if args.pairing == "band" else "")
    )
    marks = sorted(
        {int(c) for c in args.checkpoints.split(",") if int(c) <= args.matches} | {args.matches}
    )
    head = (
        f"{'matches':>8} {'games/player':>12} {'mean sigma':>10} {'tau(true,cons)':>15}"
        f" {'tau(true,mu)':>13} {'tau(level,cons)':>16}"
    )
    print(head)
    print("-" * len(head))
    t0 = time.perf_counter()
    for done in range(1, args.matches + 1):
        play(rng, seat_table(rng, players, args.pairing, args.queue, args.band))
        if done in marks:
            c = checkpoint(players, done)
            print(
                f"{done:>8,} {c['games']:>12.1f} {c['sigma']:>10.2f} {c['tau_cons']:>15.3f}"
                f" {c['tau_mu']:>13.3f} {c['tau_level']:>16.3f}",
                flush=True,
            )
    sim_s = time.perf_counter() - t0
    print()
    print("per level at the end (the figure for --rated-bots: the level's mean mu)")
    head = (
        f"{'level':<8} {'players':>7} {'true s':>7} {'mean mu':>8} {'sd mu':>6} {'mean sigma':>10}"
        f" {'mean cons':>9} {'server now':>10}"
    )
    print(head)
    print("-" * len(head))
    fixed = RatedBots().ratings
    suggested = {}
    for lv in LEVELS:
        ps = [p for p in players if p.level == lv]
        mus = [p.rating.mu for p in ps]
        suggested[lv] = statistics.fmean(mus)
        print(
            f"{lv:<8} {len(ps):>7} {statistics.fmean(p.true for p in ps):>7.3f}"
            f" {suggested[lv]:>8.2f} {statistics.pstdev(mus):>6.2f}"
            f" {statistics.fmean(p.rating.sigma for p in ps):>10.2f}"
            f" {statistics.fmean(p.rating.conservative for p in ps):>9.2f}"
            f" {fixed[SERVER_BOTS[lv]].mu:>10.1f}"
        )
    print(
        "suggested --rated-bots: "
        + ",".join(f"{lv}={suggested[lv]:.0f}" for lv in LEVELS)
        + "   (server default: "
        + ",".join(f"{lv}={fixed[SERVER_BOTS[lv]].mu:.0f}" for lv in LEVELS)
        + ")"
    )
    t1 = time.perf_counter()
    got = newcomers(rng, players, strengths, noise, args)
    print()
    print(
        f"newcomers: {args.newcomers} per level join the settled population (frozen now: only"
        f" the newcomer is rated), {args.newcomer_games} matches each, paired as above."
        f" 'placed': the matches until the newcomer's conservative rating is first within"
        f" {args.within} of the mean conservative rating of the level's settled players"
        f" (those players' {statistics.fmean(p.games for p in players):.0f} games on average)"
    )
    head = f"{'level':<8} {'target':>7} {'placed median':>13} {'p90':>5} {'never':>6}"
    print(head)
    print("-" * len(head))
    for lv in LEVELS:
        a = sorted(got[lv]["placed"])
        print(
            f"{lv:<8} {got[lv]['target']:>7.2f} {_n(pct(a, 0.5)):>13} {_n(pct(a, 0.9)):>5}"
            f" {sum(math.isinf(v) for v in a):>6}"
        )
    tracked = list(got[LEVELS[0]]["cons"])
    print("newcomers' mean conservative rating (mean mu) after n matches; the level's mean mu last")
    head = (
        f"{'level':<8} " + " ".join(f"{'n=' + str(g):>13}" for g in tracked) + f" {'level mu':>8}"
    )
    print(head)
    print("-" * len(head))
    for lv in LEVELS:
        cells = [
            f"{statistics.fmean(got[lv]['cons'][g]):.1f} ({statistics.fmean(got[lv]['mu'][g]):.1f})"
            for g in tracked
        ]
        print(f"{lv:<8} " + " ".join(f"{c:>13}" for c in cells) + f" {suggested[lv]:>8.2f}")
    print(f"(simulation {sim_s:.0f} s, newcomers {time.perf_counter() - t1:.0f} s)")


def _n(v: float) -> str:
    return "never" if math.isinf(v) else f"{v:.0f}"


def _level_of(i: int, n: int, weights: Sequence[float]) -> int:
    """Level of player i when the shares are exact (players in level blocks)."""
    edge = 0.0
    total = sum(weights)
    for k, w in enumerate(weights):
        edge += w / total * n
        if i < round(edge):
            return k
    return len(weights) - 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--players", type=int, default=2_000)
    ap.add_argument("--matches", type=int, default=20_000)
    ap.add_argument("--checkpoints", default="2000,5000,10000,20000")
    ap.add_argument("--pairing", choices=("band", "random"), default="band")
    ap.add_argument("--queue", type=int, default=16, help="band pairing: players queued at once")
    ap.add_argument("--band", type=float, default=5.0, help="band pairing: widest mu spread")
    ap.add_argument("--mix", default="1:1:1:1", help="shares of easy:normal:hard:expert")
    ap.add_argument("--mix-random", action="store_true", help="draw each level at random")
    ap.add_argument("--noise", type=float, default=0.25, help="x the mean gap between levels")
    ap.add_argument("--newcomers", type=int, default=100, help="per level")
    ap.add_argument("--newcomer-games", type=int, default=200)
    ap.add_argument("--within", type=float, default=2.0)
    ap.add_argument("--cal-pairs", type=int, default=1_000, help="line-ups without Expert")
    ap.add_argument("--cal-expert-pairs", type=int, default=60, help="line-ups with Expert")
    ap.add_argument("--expert-budget", type=int, default=50, help="ms an Expert decision")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--strengths", help="skip calibration: easy,normal,hard,expert strengths")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if args.players < args.queue or args.queue < 4:
        ap.error("need --players >= --queue >= 4")
    print("rating simulation (bench/rating_sim.py)")
    print(
        f"python  {platform.python_implementation()} {platform.python_version()}, "
        f"cpu {os.cpu_count()} cores ({platform.machine()})"
    )
    t0 = time.perf_counter()
    if args.strengths:
        values = [float(v) for v in args.strengths.split(",")]
        strengths = dict(zip(LEVELS, values, strict=True))
        print("strengths given: " + ", ".join(f"{lv} {strengths[lv]:.3f}" for lv in LEVELS))
    else:
        print(
            f"calibrating on the engine: {PRESET} to its target, {args.cal_pairs:,} + "
            f"{args.cal_expert_pairs:,} line-ups x 2 orientations, Expert {args.expert_budget} ms, "
            f"{args.jobs} processes",
            flush=True,
        )
        games = calibrate(args)
        strengths, errors = fit(games)
        print(f"(calibration {time.perf_counter() - t0:.0f} s)")
        report_calibration(games, strengths, errors)
        print(
            "rerun without calibrating: --strengths "
            + ",".join(f"{strengths[lv]:.3f}" for lv in LEVELS)
        )
    simulate(strengths, args)
    print()
    print(
        "command: .venv/bin/python bench/rating_sim.py "
        + " ".join(sys.argv[1:] if argv is None else argv)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
