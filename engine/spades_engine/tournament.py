"""Duplicate tournaments between two bot line-ups.

Every deal (or whole game) is played once per *orientation*: an assignment of
the two line-ups, A and B, to the seats.  With partnerships there are two
orientations, A in seats 0/2 then A in seats 1/3, so each line-up holds each
hand once and the luck of the cards cancels out of the difference.  In
cutthroat the alternating pattern A B A B … and its complement are rotated
through the seats, so every seat is held by each line-up equally often.

The unit of the statistics is the *duplicate pair*: one deal (or one game
seed) with all its orientations.  Its difference is the average over the
orientations of (A's points per hand minus B's points per hand), where a
line-up's points are the mean over the sides it holds.  The confidence
interval is mean ± 1.96·sd/√n over those paired differences.

Bots are looked up by name when the tournament runs: a level registered in
``spades_engine.bots.BOTS`` then (it gets its seat's view), or a
tournament-only bot of :data:`MATCH_BOTS` (``omniscient``: it gets the match
itself, every hand included, and is never offered to a table's seats).  Each
bot call is timed here, with ``time.perf_counter``, around the call alone.

Builds.  A name may end in ``@pure`` or ``@compiled`` (``expert@pure``,
``hard@compiled``, ``omniscient@pure``).  ``@compiled`` is the bot of the
loaded ``spades_engine``, which must be the mypyc-compiled build (else the
tournament refuses to start).  ``@pure`` is the bot of the engine's sources
imported a second time (``_build.load_pure``, package ``spades_engine_pure``),
whatever build is loaded: the seat is played on a *mirror* match of that
package, made from the same rules (``Ruleset.to_dict``/``from_dict``), seed,
deal and dealer, to which every seat's action is applied too (through its text
form, ``parse_action(str(action))``).  The pure bot decides on the mirror's
view (or the mirror itself) and its action is converted back.  Before each of
its calls the seat's legal actions in both matches are compared, and after
every hand the two matches' snapshots; any difference stops the tournament.
Only the bot call is timed: building the views and keeping the mirror are not.
A name without a build is the bot of the build loaded (``spades_engine.BUILD``).
"""

from __future__ import annotations

import importlib
import math
import multiprocessing
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from . import _build
from .actions import Action, parse_action
from .cards import cards_of
from .deck import SplitMix64, deal, first_dealer, hand_seed
from .errors import IllegalAction
from .events import HandScored, MatchEnded
from .match import Match
from .ruleset import Ruleset

Mode = Literal["deals", "games"]
MatchBot = Callable[[Match, int, int, int], Action]
"""A tournament-only bot: ``(match, seat, seed, budget_ms) -> Action``.  It
reads the match (every hand) and must not change it."""
BUILDS = ("pure", "compiled")
LABELS = ("A", "B")
Z95 = 1.96
_MASK64 = (1 << 64) - 1


class TournamentError(ValueError):
    """A tournament that cannot be run as asked (unknown bot, bad line-up)."""


@dataclass(frozen=True, slots=True)
class Config:
    rules: Ruleset
    a: tuple[str, ...]  # bot names of line-up A, used in turn for the seats A holds
    b: tuple[str, ...]
    mode: Mode = "deals"
    count: int = 100  # deals, or games, per orientation
    seed: int = 0
    budget_ms: int = 200
    max_hands: int = 200  # games mode: a game not over after this many hands is a draw
    independent_seeds: bool = False  # give the line-ups different bot seeds (see _bot_seed)
    budget_a_ms: int | None = None  # line-up A's budget when not budget_ms
    budget_b_ms: int | None = None

    def lineup(self, label: str) -> tuple[str, ...]:
        return self.a if label == "A" else self.b

    def budget(self, label: str) -> int:
        """The time budget the bots of line-up ``label`` get per call."""
        own = self.budget_a_ms if label == "A" else self.budget_b_ms
        return self.budget_ms if own is None else own

    def think_key(self, label: str, name: str) -> str:
        """The name a bot's think times are reported under: with the budget
        when the line-ups have different budgets."""
        if self.budget("A") == self.budget("B"):
            return name
        return f"{name} ({self.budget(label)} ms)"


MATCH_BOTS: dict[str, tuple[str, str]] = {"omniscient": (".bots.omniscient", "omniscient")}
"""The tournament-only bots (:data:`MatchBot`), never in ``BOTS``: name ->
(module, function).  A module starting with ``.`` is in the engine package,
imported when a tournament uses it from whichever package (build) plays the
seat; another module is imported as named, the same for every build."""


def bot_names() -> list[str]:
    """Every name the tournament plays without a build suffix: the registered
    levels, then the tournament-only bots."""
    from .bots import BOTS

    return [*BOTS, *(n for n in MATCH_BOTS if n not in BOTS)]


def split_name(name: str) -> tuple[str, str | None]:
    """``"expert@pure"`` -> ``("expert", "pure")``; ``"hard"`` -> ``("hard", None)``."""
    base, at, build = name.partition("@")
    return base, (build if at else None)


def _package() -> ModuleType:
    """The engine package this module belongs to (the build loaded)."""
    return sys.modules[__name__.rpartition(".")[0]]


def _pure_package() -> ModuleType:
    """The engine's sources loaded as a second package (once per process)."""
    return _build.load_pure()


def _lookup(pkg: ModuleType, base: str) -> tuple[Callable[..., Action], bool] | None:
    """Bot ``base`` of package ``pkg``, and whether it is a match bot; None if unknown."""
    bots: dict[str, Callable[..., Action]] = importlib.import_module(pkg.__name__ + ".bots").BOTS
    if base in bots:
        return bots[base], False
    if base in MATCH_BOTS:
        module, function = MATCH_BOTS[base]
        if module.startswith("."):
            module = pkg.__name__ + module
        bot: MatchBot = getattr(importlib.import_module(module), function)
        return bot, True
    return None


def _resolve(name: str) -> tuple[Callable[..., Action], bool, bool]:
    """The bot a name stands for: the function, whether it gets the match (not
    a view), and whether it is the pure package's (played on a mirror)."""
    base, build = split_name(name)
    if build is not None and build not in BUILDS:
        raise TournamentError(
            f"unknown build {build!r} in bot name {name!r}: {' or '.join(BUILDS)}"
        )
    main = _package()
    found = _lookup(main, base)
    if found is None:
        raise TournamentError(
            f"unknown bot {base!r}; registered: {', '.join(bot_names())} "
            f"(each also as NAME@pure or NAME@compiled)"
        )
    if build == "pure":
        pure = _lookup(_pure_package(), base)
        if pure is None:
            raise TournamentError(
                f"bot {base!r} is not registered in the pure build "
                "(spades_engine_pure.bots.BOTS lists the levels of the sources)"
            )
        return pure[0], pure[1], True
    if build == "compiled":
        if not getattr(main, "COMPILED", False):
            raise TournamentError(
                f"{name!r} needs the mypyc-compiled build, but the engine loaded is "
                f"{getattr(main, 'BUILD', 'pure')!r}: build it with `make install` (a C "
                f"compiler is needed) and run without {_build.PURE_ENV}"
            )
        module = sys.modules.get(getattr(found[0], "__module__", None) or "")
        file = str(getattr(module, "__file__", None) or "")
        if file.endswith(".py") and not file.endswith("__init__.py"):
            raise TournamentError(
                f"{name!r}: {module.__name__ if module else base} is not compiled (added or "
                "changed since the build): rebuild with `make install`"
            )
    return found[0], found[1], False


def check_config(cfg: Config) -> None:
    """Refuse unknown bot names and line-ups longer than the seats they get."""
    if cfg.count < 1:
        raise TournamentError(f"the number of {cfg.mode} must be at least 1")
    if cfg.max_hands < 1:
        raise TournamentError("max_hands must be at least 1")
    if min(cfg.budget("A"), cfg.budget("B"), cfg.budget_ms) < 0:
        raise TournamentError("budget_ms must be 0 or more")
    if cfg.mode == "deals" and cfg.rules.players == 2:
        raise TournamentError(
            "players=2 has no deal to repeat (each hand is drawn from the stock): use games mode"
        )
    most = max(sum(1 for x in o if x == label) for o in orientations(cfg.rules) for label in LABELS)
    for label in LABELS:
        names = cfg.lineup(label)
        if not names:
            raise TournamentError(f"line-up {label} names no bot")
        for name in names:
            try:
                _resolve(name)
            except TournamentError as e:
                raise TournamentError(f"line-up {label}: {e}") from None
        if len(names) > most:
            raise TournamentError(
                f"line-up {label} names {len(names)} bots but holds at most {most} seat(s)"
            )


def orientations(rules: Ruleset) -> list[tuple[str, ...]]:
    """The seat assignments each deal is played under: a line-up label by seat."""
    n = rules.players
    if rules.partnerships:
        return [("A", "B", "A", "B"), ("B", "A", "B", "A")]
    pattern = tuple(LABELS[s % 2] for s in range(n))
    out: list[tuple[str, ...]] = []
    for base in (pattern, tuple("B" if x == "A" else "A" for x in pattern)):
        for k in range(n):
            o = base[k:] + base[:k]
            if o not in out:
                out.append(o)
    return out


def seat_bots(cfg: Config, orientation: Sequence[str]) -> tuple[str, ...]:
    """Bot name by seat: a line-up's i-th seat (in seat order) gets its i-th bot, cyclically."""
    used = {"A": 0, "B": 0}
    out: list[str] = []
    for label in orientation:
        names = cfg.lineup(label)
        out.append(names[used[label] % len(names)])
        used[label] += 1
    return tuple(out)


def pair_seed(base: int, index: int) -> int:
    """The seed of duplicate pair ``index``: its deal, or its game's match seed."""
    return hand_seed(base & _MASK64, index)


_LABEL_SALT = {"A": 0x5851F42D4C957F2D, "B": 0x14057B7EF767814F}


def _bot_seed(seed: int, step: int, seat: int) -> int:
    """The seed handed to the bot for one decision.  By default it depends on the
    pair, the action index and the seat, not on the line-up: identical bots then
    play identical games in every orientation, so their duplicate difference is
    exactly zero.  With ``independent_seeds`` the line-up label is mixed into
    ``seed`` first, so even identical bots make different random choices."""
    return SplitMix64(seed ^ (step * 0x9E3779B97F4A7C15) ^ (seat * 0xC2B2AE3D27D4EB4F)).next_u64()


# -- one duplicate pair -------------------------------------------------------------


@dataclass(slots=True)
class LineupTally:
    side_hands: int = 0  # hands times sides held
    points: int = 0  # hand points of the sides held, bag penalties included
    bags: int = 0  # bags taken
    seat_hands: int = 0
    nil_bids: int = 0  # blind nils included
    nil_made: int = 0
    games: float = 0.0  # games mode: games played (each orientation counts once)
    wins: float = 0.0  # a draw (no winner within max_hands) counts half

    def add(self, other: LineupTally) -> None:
        self.side_hands += other.side_hands
        self.points += other.points
        self.bags += other.bags
        self.seat_hands += other.seat_hands
        self.nil_bids += other.nil_bids
        self.nil_made += other.nil_made
        self.games += other.games
        self.wins += other.wins


@dataclass(slots=True)
class OrientationLog:
    labels: tuple[str, ...]  # line-up label by seat
    bots: tuple[str, ...]  # bot name by seat
    dealer: int  # first dealer
    first_deal: tuple[int, ...]  # the first hand as dealt, card masks by seat
    hands: int
    side_points: tuple[int, ...]  # total hand points by side
    diff_per_hand: float  # A minus B, per hand
    winner_label: str | None  # games mode: the winning line-up; None if unfinished


@dataclass(slots=True)
class PairResult:
    index: int
    seed: int
    diff: float  # mean over orientations of A minus B points per hand
    win: float | None  # games mode: share of the orientations A won (draws half)
    unfinished: int
    hands: int  # hands played, all orientations
    tallies: dict[str, LineupTally]
    think: dict[str, list[float]]  # bot name -> milliseconds per call
    logs: list[OrientationLog] = field(default_factory=list)


def play_pair(cfg: Config, index: int) -> PairResult:
    """Play duplicate pair ``index`` under every orientation."""
    rules = cfg.rules
    seed = pair_seed(cfg.seed, index)
    tallies = {label: LineupTally() for label in LABELS}
    think: dict[str, list[float]] = {}
    logs: list[OrientationLog] = []
    # deals mode: one explicit deal, and a target no hand can reach, so exactly
    # one hand is scored; games mode: the same match seed in every orientation.
    dealer = first_dealer(seed, rules.players)
    cards = [cards_of(m) for m in deal(rules, seed, dealer)]
    hand_rules = rules.replace(target_score=10**9, mercy_score=None)
    for labels in orientations(rules):
        names = seat_bots(cfg, labels)
        if cfg.mode == "deals":
            start = _Start(hand_rules, seed, [cards], dealer)
            max_hands = 1
        else:
            start = _Start(rules, seed, [], None)
            max_hands = cfg.max_hands
        match = start.match(_package())
        first_deal = tuple(match.state.hand.dealt)
        first = match.state.hand.dealer
        salts = tuple(_LABEL_SALT[x] if cfg.independent_seeds else 0 for x in labels)
        seats = _Seats(names, start)
        budgets = tuple(cfg.budget(x) for x in labels)
        keys = tuple(cfg.think_key(x, n) for x, n in zip(labels, names, strict=True))
        scored, winner = _play(match, seats, names, keys, salts, budgets, seed, max_hands, think)
        logs.append(_tally(rules, labels, names, first, first_deal, scored, winner, tallies))
        if cfg.mode == "games":
            tallies["A"].games += 1
            tallies["B"].games += 1
    unfinished = sum(1 for g in logs if cfg.mode == "games" and g.winner_label is None)
    win: float | None = None
    if cfg.mode == "games":
        win = math.fsum(_win_share(g.winner_label) for g in logs) / len(logs)
        for g in logs:
            tallies["A"].wins += _win_share(g.winner_label)
            tallies["B"].wins += 1 - _win_share(g.winner_label)
    diff = math.fsum(g.diff_per_hand for g in logs) / len(logs)
    hands = sum(g.hands for g in logs)
    return PairResult(index, seed, diff, win, unfinished, hands, tallies, think, logs)


def _win_share(winner_label: str | None) -> float:
    return 0.5 if winner_label is None else float(winner_label == "A")


@dataclass(frozen=True, slots=True)
class _Start:
    """How an orientation's match begins, so a mirror can begin alike."""

    rules: Ruleset
    seed: int
    deals: Sequence[Sequence[Sequence[int]]]
    dealer: int | None

    def match(self, pkg: ModuleType) -> Any:
        """The match in package ``pkg`` (the loaded engine, or the pure copy)."""
        rules: Any = self.rules
        if pkg is not _package():
            rules = pkg.Ruleset.from_dict(self.rules.to_dict())
        return pkg.Match(rules, seed=self.seed, deals=self.deals, dealer=self.dealer)


class _Seats:
    """What plays each seat of one orientation: the bot of each seat, and the
    pure build's mirror match when a seat's bot is ``@pure``."""

    def __init__(self, names: Sequence[str], start: _Start) -> None:
        resolved = [_resolve(n) for n in names]
        self.names = tuple(names)
        self.bots = [r[0] for r in resolved]
        self.gets_match = [r[1] for r in resolved]
        self.mirrored = [r[2] for r in resolved]
        self.pure: ModuleType | None = None
        self.mirror: Any = None
        if any(self.mirrored):
            self.pure = _pure_package()
            self.mirror = start.match(self.pure)

    def act(self, match: Match, seat: int, seed: int, budget: int) -> tuple[Action, float]:
        """The action of the bot in ``seat`` and its think time in milliseconds,
        timed around the bot call alone."""
        bot = self.bots[seat]
        table: Any = match
        if self.mirrored[seat]:
            table = self.mirror
            mine = [str(a) for a in table.legal_actions(seat)]
            if mine != [str(a) for a in match.legal_actions(seat)]:
                self._diverged(f"seat {seat}'s legal actions differ: {mine}")
        if self.gets_match[seat]:
            t0 = time.perf_counter()
            action = bot(table, seat, seed, budget)
        else:
            view = table.view(seat)
            t0 = time.perf_counter()
            action = bot(view, seed, budget)
        ms = (time.perf_counter() - t0) * 1000.0
        if self.mirrored[seat]:
            action = parse_action(str(action))
        return action, ms

    def applied(self, seat: int, action: Action) -> None:
        """Apply to the mirror the action the match took."""
        if self.mirror is None or self.pure is None:
            return
        try:
            self.mirror.apply(seat, self.pure.parse_action(str(action)))
        except self.pure.SpadesError as e:
            self._diverged(f"it refused seat {seat}'s {action}: {e}")

    def check(self, match: Match) -> None:
        """The mirror is the match, action for action (after every hand)."""
        if self.mirror is not None and self.mirror.to_snapshot() != match.to_snapshot():
            self._diverged(f"the snapshots differ after hand {match.hand_number}")

    def _diverged(self, what: str) -> None:
        raise TournamentError(f"the pure build's mirror match diverged from the match: {what}")


def _play(
    match: Match,
    seats: _Seats,
    names: Sequence[str],
    keys: Sequence[str],
    salts: Sequence[int],
    budgets: Sequence[int],
    seed: int,
    max_hands: int,
    think: dict[str, list[float]],
) -> tuple[list[HandScored], int | None]:
    """Let the bots play until the match is over or ``max_hands`` hands are scored."""
    scored: list[HandScored] = []
    winner: int | None = None
    times = [think.setdefault(key, []) for key in keys]
    step = 0
    while True:
        seat = match.to_act
        if seat < 0:  # the blind nil exchange: its seats act in any order
            seat = match.seats_to_act()[0]
        bot_seed = _bot_seed(seed ^ salts[seat], step, seat)
        action, ms = seats.act(match, seat, bot_seed, budgets[seat])
        times[seat].append(ms)
        try:
            events = match.apply(seat, action)
        except IllegalAction as e:  # report the bot that made it
            raise TournamentError(
                f"bot {names[seat]!r} in seat {seat} chose an illegal action {action}: {e}"
            ) from e
        seats.applied(seat, action)
        step += 1
        for ev in events:
            if isinstance(ev, HandScored):
                scored.append(ev)
                seats.check(match)
            elif isinstance(ev, MatchEnded):
                winner = ev.winner
        if match.is_over or len(scored) >= max_hands:
            return scored, winner


def _tally(
    rules: Ruleset,
    labels: tuple[str, ...],
    names: tuple[str, ...],
    dealer: int,
    first_deal: tuple[int, ...],
    scored: list[HandScored],
    winner: int | None,
    tallies: dict[str, LineupTally],
) -> OrientationLog:
    side_label = [labels[rules.seats_of(side)[0]] for side in range(rules.sides)]
    held = {label: side_label.count(label) for label in LABELS}
    side_points = [0] * rules.sides
    for ev in scored:
        for s in ev.sides:
            t = tallies[side_label[s.side]]
            t.side_hands += 1
            t.points += s.hand_points
            t.bags += s.bags_taken
            side_points[s.side] += s.hand_points
        for seat, b in enumerate(ev.bids):
            t = tallies[labels[seat]]
            t.seat_hands += 1
            if b == 0:
                t.nil_bids += 1
                t.nil_made += ev.tricks[seat] == 0
    hands = len(scored)
    per = {
        label: sum(p for p, lab in zip(side_points, side_label, strict=True) if lab == label)
        / held[label]
        for label in LABELS
    }
    diff = (per["A"] - per["B"]) / hands if hands else 0.0
    return OrientationLog(
        labels=labels,
        bots=names,
        dealer=dealer,
        first_deal=first_deal,
        hands=hands,
        side_points=tuple(side_points),
        diff_per_hand=diff,
        winner_label=None if winner is None else side_label[winner],
    )


# -- the whole tournament -------------------------------------------------------------

_WORKER_CONFIG: Config | None = None


def _init_worker(cfg: Config) -> None:
    global _WORKER_CONFIG  # noqa: PLW0603 - one config per worker process
    _WORKER_CONFIG = cfg


def _work(index: int) -> PairResult:
    assert _WORKER_CONFIG is not None
    result = play_pair(_WORKER_CONFIG, index)
    result.logs = []  # the parent needs only the numbers; keep the pickles small
    return result


Progress = Callable[[int, int], None]


def run(cfg: Config, jobs: int = 1, progress: Progress | None = None) -> list[PairResult]:
    """Play every pair, in ``jobs`` processes (1: in this process); results in pair order."""
    check_config(cfg)
    total = cfg.count
    results: list[PairResult] = []
    if progress:
        progress(0, total)
    if jobs <= 1 or total == 1:
        for i in range(total):
            results.append(play_pair(cfg, i))
            if progress:
                progress(i + 1, total)
        return results
    jobs = min(jobs, total)
    chunk = max(1, min(16, total // (jobs * 8)))
    with multiprocessing.Pool(jobs, initializer=_init_worker, initargs=(cfg,)) as pool:
        for r in pool.imap_unordered(_work, range(total), chunksize=chunk):
            results.append(r)
            if progress:
                progress(len(results), total)
    results.sort(key=lambda r: r.index)
    return results


# -- statistics ----------------------------------------------------------------------


def mean_ci(values: Sequence[float]) -> dict[str, Any]:
    """Mean, sample sd and the normal 95% interval mean ± 1.96·sd/√n (None if n < 2)."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "half_width": None, "ci95": None}
    mean = math.fsum(values) / n
    if n < 2:
        return {"n": n, "mean": mean, "sd": None, "half_width": None, "ci95": None}
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = Z95 * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "sd": sd, "half_width": half, "ci95": [mean - half, mean + half]}


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in 0..100)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def summarize(
    cfg: Config,
    results: Sequence[PairResult],
    *,
    preset_name: str | None = None,
    jobs: int = 1,
    elapsed_s: float = 0.0,
) -> dict[str, Any]:
    """The JSON-ready result of a tournament."""
    tallies = {label: LineupTally() for label in LABELS}
    think: dict[str, list[float]] = {}
    for r in results:
        for label in LABELS:
            tallies[label].add(r.tallies[label])
        for name, ms in r.think.items():
            think.setdefault(name, []).extend(ms)
    diffs = [r.diff for r in results]
    wins = [r.win for r in results if r.win is not None]
    lineups: dict[str, Any] = {}
    for label in LABELS:
        t = tallies[label]
        lineups[label] = {
            "bots": list(cfg.lineup(label)),
            "hands": t.side_hands,
            "points_per_hand": t.points / t.side_hands if t.side_hands else None,
            "bags_per_hand": t.bags / t.side_hands if t.side_hands else None,
            "nil_bids": t.nil_bids,
            "nil_made": t.nil_made,
            "nil_bid_rate": t.nil_bids / t.seat_hands if t.seat_hands else None,
            "nil_success_rate": t.nil_made / t.nil_bids if t.nil_bids else None,
            "games": t.games if cfg.mode == "games" else None,
            "wins": t.wins if cfg.mode == "games" else None,
        }
    think_out: dict[str, Any] = {}
    keys = [cfg.think_key(label, n) for label in LABELS for n in cfg.lineup(label)]
    order = list(dict.fromkeys([*keys, *sorted(think)]))  # A's bots, then B's
    for name in (n for n in order if n in think):
        ms = sorted(think[name])
        think_out[name] = {
            "calls": len(ms),
            "p50_ms": percentile(ms, 50),
            "p99_ms": percentile(ms, 99),
            "mean_ms": math.fsum(ms) / len(ms) if ms else None,
            "max_ms": ms[-1] if ms else None,
        }
    n_orient = len(orientations(cfg.rules))
    return {
        "tool": "spades-tournament",
        "mode": cfg.mode,
        "a": list(cfg.a),
        "b": list(cfg.b),
        "preset": preset_name,
        "rules": cfg.rules.to_dict(),
        "seed": cfg.seed,
        "budget_ms": cfg.budget_ms,
        "budget_ms_a": cfg.budget("A"),
        "budget_ms_b": cfg.budget("B"),
        "engine_build": getattr(_package(), "BUILD", None),
        "max_hands": cfg.max_hands if cfg.mode == "games" else None,
        "independent_seeds": cfg.independent_seeds,
        "jobs": jobs,
        "pairs": len(results),
        "orientations": [list(o) for o in orientations(cfg.rules)],
        "plays": len(results) * n_orient,
        "hands": sum(r.hands for r in results),
        "points_diff": mean_ci(diffs),
        "win_rate": mean_ci(wins) if cfg.mode == "games" else None,
        "unfinished_games": sum(r.unfinished for r in results) if cfg.mode == "games" else None,
        "lineups": lineups,
        "think_ms": think_out,
        "elapsed_s": elapsed_s,
        "pair_diffs": [round(d, 4) for d in diffs],
    }


def _signed(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:+.{digits}f}"


def _num(x: float | None, fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def format_report(summary: dict[str, Any]) -> str:
    """The human-readable report printed by ``spades-tournament``."""
    s = summary
    unit = "deals" if s["mode"] == "deals" else "games"
    seats = " ".join("".join(o) for o in s["orientations"])  # e.g. ABAB BABA
    budget_a, budget_b = s.get("budget_ms_a", s["budget_ms"]), s.get("budget_ms_b", s["budget_ms"])
    budget = (
        f"budget {budget_a} ms"
        if budget_a == budget_b
        else f"budget A {budget_a} ms, B {budget_b} ms"
    )
    lines = [
        f"A = {','.join(s['a'])}  vs  B = {','.join(s['b'])}",
        f"rules {s['preset'] or 'custom'}, {s['pairs']} {unit} x {len(s['orientations'])} "
        f"orientations (seats {seats}), seed {s['seed']}, {budget}",
    ]
    if s.get("engine_build"):
        lines.append(f"engine build loaded: {s['engine_build']}")
    d = s["points_diff"]
    ci = d["ci95"]
    ci_text = f"95% CI [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "95% CI n/a (n < 2)"
    lines.append(
        f"points per hand, A - B (per duplicate pair): {_signed(d['mean'])}  {ci_text}  "
        f"(n={d['n']}, sd={_num(d['sd'], '.2f')})"
    )
    if s["win_rate"] is not None:
        w = s["win_rate"]
        wci = w["ci95"]
        w_text = f"95% CI [{wci[0]:.1%}, {wci[1]:.1%}]" if wci else "95% CI n/a (n < 2)"
        lines.append(
            f"games won by A: {_num(w['mean'], '.1%')}  {w_text}  "
            f"(n={w['n']} pairs, {s['unfinished_games']} unfinished after {s['max_hands']} "
            "hands counted as half)"
        )
    lines.append("")
    wide = max([16, *(len(",".join(s["lineups"][label]["bots"])) for label in LABELS)])
    lines.append(
        f"{'line-up':<8} {'bots':<{wide}} {'pts/hand':>9} {'nil bids':>9} {'nil made':>9} "
        f"{'nil rate':>9} {'bags/hand':>10}" + (f" {'wins':>7}" if s["mode"] == "games" else "")
    )
    for label in LABELS:
        u = s["lineups"][label]
        row = (
            f"{label:<8} {','.join(u['bots']):<{wide}} {_num(u['points_per_hand'], '.2f'):>9} "
            f"{u['nil_bids']:>9} {u['nil_made']:>9} {_num(u['nil_success_rate'], '.1%'):>9} "
            f"{_num(u['bags_per_hand'], '.3f'):>10}"
        )
        if s["mode"] == "games":
            row += f" {u['wins']:>7g}"
        lines.append(row)
    lines.append("")
    width = max([12, *(len(name) for name in s["think_ms"])])
    lines.append(f"{'think time':<{width}} {'calls':>9} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
    for name, t in s["think_ms"].items():
        lines.append(
            f"{name:<{width}} {t['calls']:>9} {t['p50_ms']:>9.3f} {t['p99_ms']:>9.3f} "
            f"{t['max_ms']:>9.3f}"
        )
    lines.append("")
    lines.append(
        f"{s['plays']} plays, {s['hands']} hands in {s['elapsed_s']:.1f} s with {s['jobs']} job(s)"
    )
    return "\n".join(lines)
