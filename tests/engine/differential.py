"""Seeded random matches written out byte for byte, for comparing two builds.

Run once with the compiled engine and once with ``SPADES_ENGINE_PURE=1``: each
prints the SHA-256 of every match's lines, and the two must be equal
(``test_differential.py`` does both, and on a difference prints the first line
that differs, from ``--dump TABLE SEED`` in each build).

Per match, one line per step: the legal actions of every seat that may act,
the acting seat's legal actions, the action taken (uniformly random among them,
or a Hard or Normal bot's choice in two matches of three, so the bots'
compiled code is compared too) and every event it caused with its audience
(``event_to_dict`` as JSON); every 16 steps every seat's legal actions; at the
end of every fourth hand every seat's view and the spectator's (``repr``); at the end
of the match its scores and snapshot.  Then a block
of kernel hands (``kernel.random_hand``) per table.

    python tests/engine/differential.py --matches 200
    python tests/engine/differential.py --dump classic 7
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Iterator

import spades_engine
from spades_engine import Match, Ruleset, event_to_dict, preset
from spades_engine.bots import BOTS
from spades_engine.kernel import random_hand

# Every preset, and the variants no preset turns on.
TABLES: dict[str, Ruleset] = {
    **{name: preset(name) for name in spades_engine.PRESETS},
    "two_players": preset("classic", players=2, partnerships=False, jokers=True),
    "cutthroat3": preset("classic", players=3, partnerships=False, jokers=True),
    "suicide": preset("classic", suicide=True),
    "auction_trump": preset("classic", auction_trump=True),
    "deuces_high": preset("classic", deuces_high=True, jokers=True),
    "tricks": preset("polish", scoring="tricks"),
    "blind_nil_exchange": preset("classic", blind_nil=True, blind_nil_deficit=0),
}
MAX_ACTIONS = 20_000  # a random match ends long before; a bound, not a rule


def match_lines(name: str, rules: Ruleset, seed: int) -> Iterator[str]:
    m = Match(rules, seed=seed)
    rng = random.Random(f"{name}/{seed}")
    bot = ("hard", "normal", None)[seed % 3]
    yield f"match {name} {seed}"
    for step in range(MAX_ACTIONS):
        if m.is_over:
            break
        seats = m.seats_to_act()
        seat = seats[int(rng.random() * len(seats))]
        legal = m.legal_actions(seat)
        if bot is None:
            action = legal[int(rng.random() * len(legal))]
        else:
            action = BOTS[bot](m.view(seat), rng.getrandbits(32), 0)
        hand = m.hand_number
        events = m.apply(seat, action)
        yield f"{seat} {action} {','.join(map(str, legal))}"
        for e in events:
            yield f"{e.audience} {json.dumps(event_to_dict(e), sort_keys=True)}"
        if step % 16 == 0:  # now and then every seat's legal actions, not only the actor's
            yield repr([[str(a) for a in m.legal_actions(s)] for s in range(rules.players)])
        if (m.hand_number != hand and hand % 4 == 1) or m.is_over:  # views: big, so seldom
            yield repr([m.view(v) for v in [*range(rules.players), None]])
    yield f"end {m.scores} {m.bags} {m.winner} {m.to_snapshot().hex()}"


def kernel_lines(name: str, rules: Ruleset, hands: int) -> Iterator[str]:
    rng = random.Random(f"kernel/{name}")
    for i in range(hands):
        yield f"kernel {i} {random_hand(rules, rng, i % rules.players)!r}"


def digest(lines: Iterator[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()


def jobs(matches: int, first_seed: int) -> list[tuple[str, str]]:
    """(table, seed or "kernel") for every match and kernel block, in order."""
    out: list[tuple[str, str]] = []
    for name in TABLES:
        count = matches if name in spades_engine.PRESETS else max(1, matches // 4)
        out += [(name, str(seed)) for seed in range(first_seed, first_seed + count)]
        out.append((name, "kernel"))
    return out


def lines_of(name: str, seed: str, kernel_hands: int) -> Iterator[str]:
    if seed == "kernel":
        return kernel_lines(name, TABLES[name], kernel_hands)
    return match_lines(name, TABLES[name], int(seed))


def run(
    matches: int, first_seed: int, kernel_hands: int, shard: int, shards: int
) -> dict[str, str]:
    """The SHA-256 of the lines of every match, and of each table's kernel
    hands, of this shard (every ``shards``-th job from ``shard``)."""
    return {
        f"{name}/{seed}": digest(lines_of(name, seed, kernel_hands))
        for name, seed in jobs(matches, first_seed)[shard::shards]
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--matches", type=int, default=100, help="matches per preset (a quarter per variant)"
    )
    ap.add_argument("--kernel-hands", type=int, default=500, help="kernel hands per table")
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--shard", default="0/1", help="I/N: every N-th job from the I-th")
    ap.add_argument("--dump", nargs=2, metavar=("TABLE", "SEED"), help="print one match's lines")
    args = ap.parse_args(argv)
    if args.dump:
        for line in lines_of(*args.dump, args.kernel_hands):
            print(line)
        return 0
    shard, shards = (int(x) for x in args.shard.split("/"))
    digests = run(args.matches, args.first_seed, args.kernel_hands, shard, shards)
    print(
        json.dumps(
            {"compiled": spades_engine.COMPILED, "build": spades_engine.BUILD, "digests": digests}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
