"""Player ratings from finished matches: OpenSkill (Weng-Lin, Plackett-Luce).

What one rated match does to its players' ratings, and nothing else: no store,
no clock (issue 26; the pools, the leaderboards and the exactly-once update
are built on this). A partnership match is rated as its sides, two teams of
two, so the partners share the credit; a cutthroat or two-player match as
every player against every other. Sides are ranked by their final score,
equal scores sharing a rank.

A *leaver* is a human a bot stood in for during more than
``RatingRules.leaver_share`` of their turns. The leaver's own update ranks
them below everyone at the table; everyone else, the partner included, is
rated on the match as it was played, as if nobody had left.

The model is the ``openskill`` package's ``PlackettLuce`` with its defaults
(mu 25, sigma 25/3); the leaderboard orders players by the conservative
rating ``mu - 3 sigma`` (``Rating.conservative``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openskill.models import PlackettLuce

from .gen.spades.v1 import spades_pb2 as pb
from .seats import CONTROL_HUMAN, CONTROL_STAND_IN

MODEL = PlackettLuce()


class RatingError(ValueError):
    """A match that cannot be rated as given (a player twice, no opponent...)."""


@dataclass(frozen=True, slots=True)
class Rating:
    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """What a leaderboard orders by: the rating the player is very likely above."""
        return self.mu - 3 * self.sigma


DEFAULT = Rating(MODEL.mu, MODEL.sigma)


@dataclass(frozen=True, slots=True)
class Participant:
    """A rated player's part in one finished match."""

    player: str  # the player's id
    side: int  # the partnership's side, or the seat when everyone plays alone
    score: int  # the side's final score
    turns: int = 0  # the seat's turns in the match
    bot_turns: int = 0  # of them, those a bot played standing in


@dataclass(frozen=True, slots=True)
class RatingRules:
    # A human whose stand-in played more than this share of their turns left.
    leaver_share: float = 0.5

    def __post_init__(self) -> None:
        if not 0 <= self.leaver_share <= 1:
            raise RatingError(f"leaver_share must be 0 to 1, got {self.leaver_share}")

    def left(self, p: Participant) -> bool:
        return p.turns > 0 and p.bot_turns > self.leaver_share * p.turns


@dataclass(frozen=True, slots=True)
class RatedBots:
    """Whether bots may sit at rated tables, and the fixed rating each level plays at."""

    allowed: bool = False
    ratings: Mapping[int, Rating] = field(
        default_factory=lambda: {
            # bench/rating_sim.py's levels' mean mu (bench/ratings/README.md).
            pb.BOT_LEVEL_EASY: Rating(13.0, 1.0),
            pb.BOT_LEVEL_NORMAL: Rating(24.0, 1.0),
            pb.BOT_LEVEL_HARD: Rating(28.0, 1.0),
            pb.BOT_LEVEL_EXPERT: Rating(35.0, 1.0),
        }
    )


def ranks(scores: Sequence[int]) -> list[int]:
    """Competition ranks, 1 the best: the highest score first, ties share a rank."""
    return [1 + sum(other > s for other in scores) for s in scores]


def rate(
    ratings: Mapping[str, Rating],
    participants: Sequence[Participant],
    rules: RatingRules = RatingRules(),  # frozen: one shared default is safe
) -> dict[str, Rating]:
    """The new rating of every participant after the match; a player not in
    ``ratings`` starts from ``DEFAULT``."""
    sides = _sides(participants)
    players = [[p.player for p in side] for side in sides]
    side_ranks = ranks([side[0].score for side in sides])
    played = _rate(ratings, players, side_ranks)
    out = dict(played)
    for p in participants:
        if rules.left(p):
            out[p.player] = _leaver(ratings, players, side_ranks, p.player)
    return out


def rank_of(participants: Sequence[Participant]) -> dict[str, int]:
    """Each player's side's rank in the match (1: won, shared on equal scores)."""
    sides = _sides(participants)
    side_ranks = ranks([side[0].score for side in sides])
    return {p.player: r for side, r in zip(sides, side_ranks, strict=True) for p in side}


def _sides(participants: Sequence[Participant]) -> list[list[Participant]]:
    by_side: dict[int, list[Participant]] = {}
    seen: set[str] = set()
    for p in participants:
        if p.player in seen:
            raise RatingError(f"player {p.player!r} is in the match twice")
        if not 0 <= p.bot_turns <= p.turns:
            raise RatingError(f"player {p.player!r}: bot_turns must be 0 to turns")
        seen.add(p.player)
        by_side.setdefault(p.side, []).append(p)
    sides = [by_side[s] for s in sorted(by_side)]
    if len(sides) < 2:
        raise RatingError("a rated match needs at least two sides")
    for side in sides:
        if len({p.score for p in side}) != 1:
            raise RatingError(f"side {side[0].side}: its players have different scores")
    return sides


def _rate(
    ratings: Mapping[str, Rating], teams: list[list[str]], team_ranks: list[int]
) -> dict[str, Rating]:
    model_teams = [[_model_rating(ratings, player) for player in team] for team in teams]
    rated: Any = MODEL.rate(model_teams, ranks=list(team_ranks))
    return {
        player: Rating(r.mu, r.sigma)
        for team, new in zip(teams, rated, strict=True)
        for player, r in zip(team, new, strict=True)
    }


def _leaver(
    ratings: Mapping[str, Rating], teams: list[list[str]], team_ranks: list[int], leaver: str
) -> Rating:
    """The leaver's rating from the match ranked below everyone at the table:
    the leaver alone, last; every other player with their side at its rank."""
    others = [[p for p in team if p != leaver] for team in teams]
    kept = [(team, rank) for team, rank in zip(others, team_ranks, strict=True) if team]
    last = max(team_ranks) + 1
    rated = _rate(ratings, [t for t, _ in kept] + [[leaver]], [r for _, r in kept] + [last])
    return rated[leaver]


def _model_rating(ratings: Mapping[str, Rating], player: str) -> Any:
    r = ratings.get(player, DEFAULT)
    return MODEL.rating(mu=r.mu, sigma=r.sigma, name=player)


def seat_turns(
    controls: Iterable[tuple[int, int, int]], actions: Iterable[tuple[int, int]], seats: int
) -> list[tuple[int, int]]:
    """Each seat's turns in a finished match and how many of them a bot played
    standing in, from its stored log alone: ``controls`` are its seat control
    changes as (sequence number, seat, new control), ``actions`` its stored
    actions as (first sequence number of their events, seat), both in log
    order. A turn is a stand-in's when the seat is under a stand-in once the
    changes through the action's first event are made: a turn timer's stand-in
    takes the seat in its move's first event, and a human who acts takes it
    back in their action's first event."""
    control: list[int] = [CONTROL_HUMAN] * seats
    pending = iter(controls)
    change = next(pending, None)
    turns = [0] * seats
    bot = [0] * seats
    for first_seq, seat in actions:
        while change is not None and change[0] <= first_seq:
            control[change[1]] = change[2]
            change = next(pending, None)
        turns[seat] += 1
        if control[seat] == CONTROL_STAND_IN:
            bot[seat] += 1
    return list(zip(turns, bot, strict=True))
