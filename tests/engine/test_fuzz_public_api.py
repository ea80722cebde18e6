"""Junk into every public function and constructor of the engine.

Each call either works or raises a ``SpadesError`` (the engine's own
exceptions, as docs/embedding.md names them), never a TypeError, KeyError...
from inside; a refused call leaves the match exactly as it was (same snapshot
bytes, same action record).  Matches of several tables are first played into
every phase by random legal play, then junk is thrown at them.
"""

from __future__ import annotations

import functools
import io
import json
import os
import random
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spades_engine import (
    BLIND_NIL,
    EXCHANGE,
    LOOK,
    NO_EXCHANGE,
    Bid,
    ExchangeDecision,
    IllegalAction,
    Match,
    PassCards,
    Phase,
    Play,
    Ruleset,
    SpadesError,
    card_name,
    parse_action,
    parse_card,
    parse_hand,
    preset,
    replay_snapshot,
)
from spades_engine.record import RecordError, loads_record, record_of, replay, start_match
from spades_engine.record_cli import main as record_main
from spades_engine.ruleset import OPTION_NAMES
from spades_engine.snapshot import MAGIC, VERSION, snapshot_document

FUZZ = settings(
    # SPADES_FUZZ_EXAMPLES=2000 for a long hunt; the default keeps the file near 10 s
    max_examples=int(os.environ.get("SPADES_FUZZ_EXAMPLES", "100")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

TABLES: dict[str, Ruleset] = {
    "classic": preset("classic"),
    "polish": preset("polish", blind_nil_deficit=0),  # blind nil and its exchange at once
    "german": preset("german"),
    "bulgarian": preset("bulgarian"),
    "cutthroat-3": preset("german", players=3),
    "cutthroat-5": preset("german", players=5),
    "two-players": preset("german", players=2),  # the draw before bidding
    "short": preset("classic", target_score=60, mercy_score=-60),  # reaches the match end
}

# -- junk ---------------------------------------------------------------------------------


def _nested(depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(depth):
        out = [out]
    return out


SPECIAL = [
    -1,
    0,
    1,
    3,
    4,
    5,
    13,
    15,
    52,
    61,
    62,
    63,
    64,
    1000,
    2**63,
    2**64,
    -(2**64),
    2**256,
    10**5000,  # past the digits int() and json convert
    float("nan"),
    float("inf"),
    -0.0,
    1.5,
    "",
    "AS",
    "bid 3",
    "1",
    b"\xff",
    (),
    [],
    {},
    _nested(3000),
    object(),
]


def _special(i: int) -> Any:
    return SPECIAL[i]


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(-3, 70)
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=6)
    # by index: hypothesis prints its strategies, and 10**5000 has no repr
    | st.integers(0, len(SPECIAL) - 1).map(_special)
)
junk = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6) | st.integers(-2, 70), inner, max_size=4)
    ),
    max_leaves=10,
)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(-2, 20)  # passes the type and range checks, reaches the consistency ones
    | st.sampled_from([-1, 0, 1, 4, 13, 64, 2**64, 2**300, 10**300])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["AS", "bid 3", "play QS", "pass AS KH", "look", "blind_nil", "LJ"])
)
json_junk = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
seats = st.integers(-2, 6) | junk


def refuses(call: Callable[[], object], *allowed: type[BaseException]) -> BaseException | None:
    """Run ``call``; return the engine exception it raised (None if it worked).
    Anything but a SpadesError (or one of ``allowed``) fails the test."""
    try:
        call()
    except SpadesError as e:
        if allowed:
            assert isinstance(e, allowed), f"{type(e).__name__} where {allowed} was promised: {e}"
        str(e)  # the message itself must not raise
        return e
    return None


# -- matches in every phase ----------------------------------------------------------------


def _random_play(rules: Ruleset, seed: int, steps: int) -> Iterator[Match]:
    """A match of random legal play (blind nil taken half the time it is offered),
    yielded after every action."""
    m = Match(rules, seed=seed)
    rng = random.Random(seed)
    yield m
    for _ in range(steps):
        if m.is_over:
            return
        seat = rng.choice(m.seats_to_act())
        legal = m.legal_actions(seat)
        action = BLIND_NIL if BLIND_NIL in legal and rng.random() < 0.5 else rng.choice(legal)
        m.apply(seat, action)
        yield m


@functools.cache
def positions() -> tuple[tuple[str, Phase, bytes], ...]:
    """Snapshots of each table at the start, during bidding, the exchange and play
    (mid-trick and between tricks), after a scored hand, and once it is over."""
    out: list[tuple[str, Phase, bytes]] = []
    for name, rules in TABLES.items():
        seen: set[tuple[Phase, int]] = set()
        for seed in (1, 2, 3):
            for i, m in enumerate(_random_play(rules, seed, 400)):
                key = (m.phase, len(m.state.hand.trick) % 2 if m.phase is Phase.PLAYING else 0)
                if i == 0 or key not in seen or i % 37 == 0 or m.is_over:
                    seen.add(key)
                    out.append((name, m.phase, m.to_snapshot()))
    phases = {p for _, p, _ in out}
    assert phases == set(Phase), phases
    return tuple(out)


@st.composite
def a_match(draw: st.DrawFn) -> Match:
    _, _, data = draw(st.sampled_from(positions()))
    return Match.from_snapshot(data)


def actions_for(m: Match) -> st.SearchStrategy[Any]:
    """Junk actions, actions with junk inside, and real ones (legal or not)."""
    legal = [a for s in range(m.rules.players) for a in m.legal_actions(s)]
    real = [
        BLIND_NIL,
        LOOK,
        EXCHANGE,
        NO_EXCHANGE,
        Bid(3),
        Play(parse_card("2C")),
        PassCards((0, 1)),
    ]
    return st.one_of(
        junk,
        st.builds(Bid, junk),
        st.builds(Play, junk),
        st.builds(PassCards, junk),
        st.builds(PassCards, st.tuples(junk, junk)),
        st.builds(ExchangeDecision, junk),
        st.sampled_from(real + legal),
        *([st.sampled_from(legal)] * 3 if legal else []),
    )


def frozen(m: Match) -> tuple[bytes, list[Any]]:
    return m.to_snapshot(), list(m.actions)


# -- Match: apply, legal_actions, view ------------------------------------------------------


@FUZZ
@given(m=a_match(), data=st.data())
def test_apply_works_or_refuses_and_a_refusal_changes_nothing(
    m: Match, data: st.DataObject
) -> None:
    for _ in range(6):
        seat = data.draw(seats | st.sampled_from(m.seats_to_act() or [0]), label="seat")
        action = data.draw(actions_for(m), label="action")
        before = frozen(m)
        if refuses(lambda: m.apply(seat, action), IllegalAction):  # noqa: B023
            assert frozen(m) == before


@FUZZ
@given(m=a_match(), seat=seats)
def test_legal_actions_and_view_answer_or_refuse_and_change_nothing(m: Match, seat: Any) -> None:
    before = frozen(m)
    e = refuses(lambda: m.legal_actions(seat), IllegalAction)
    if type(seat) is not int:
        assert isinstance(e, IllegalAction) and e.reason.value == "INVALID_SEAT"
    elif not 0 <= seat < m.rules.players:
        assert e is None and m.legal_actions(seat) == []
    e = refuses(lambda: m.view(seat), IllegalAction)
    assert (e is None) == (seat is None or (type(seat) is int and 0 <= seat < m.rules.players))
    assert frozen(m) == before


# -- Match(...) -----------------------------------------------------------------------------


@st.composite
def deals(draw: st.DrawFn, rules: Ruleset) -> Any:
    """Junk, or the real deal of a seed with one place changed to junk."""
    if draw(st.booleans()):
        return draw(junk)
    m = Match(rules, seed=draw(st.integers(0, 50)))
    deal = [sorted(int(c) for c in range(64) if h >> c & 1) for h in m.state.hand.dealt]
    if not any(deal):  # two players draw their hands: there is no deal to change, only junk
        return [draw(junk)]
    seat = draw(st.integers(0, len(deal) - 1))
    where = draw(st.sampled_from(["card", "seat", "deal", "none"]))
    if where == "card":
        deal[seat][draw(st.integers(0, len(deal[seat]) - 1))] = draw(junk)
    elif where == "seat":
        deal[seat] = draw(junk)
    elif where == "deal":
        deal = draw(junk)
    return [deal]


@FUZZ
@given(data=st.data())
def test_match_constructor_works_or_refuses(data: st.DataObject) -> None:
    rules = data.draw(st.sampled_from(list(TABLES.values())) | st.none() | junk, label="rules")
    table = rules if isinstance(rules, Ruleset) else Ruleset()
    kwargs: dict[str, Any] = {}
    if data.draw(st.booleans()):
        kwargs["seed"] = data.draw(st.integers() | junk, label="seed")
    if data.draw(st.booleans()):
        kwargs["deals"] = data.draw(deals(table), label="deals")
    if data.draw(st.booleans()):
        kwargs["dealer"] = data.draw(st.integers(-1, 5) | junk, label="dealer")
    refuses(lambda: Match(rules, **kwargs).to_snapshot())


# -- rulesets -----------------------------------------------------------------------------


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


option_values = st.dictionaries(
    st.sampled_from(OPTION_NAMES) | st.text(max_size=6) | junk.filter(_hashable),
    junk | st.sampled_from([3, 4, 5, True, False, "off", "dealer", "zero", None, 0, 2, 500]),
    max_size=5,
)


@FUZZ
@given(data=junk | option_values)
def test_ruleset_from_dict_works_or_names_every_problem(data: Any) -> None:
    e = refuses(lambda: Ruleset.from_dict(data).to_dict())
    if e is not None:
        assert e.problems and set(e.options) == {o for _, opts in e.problems for o in opts}
        for message, _ in e.problems:
            assert message in str(e)


@FUZZ
@given(name=st.sampled_from(["classic", "polish", "german", "bulgarian"]) | junk, data=st.data())
def test_preset_replace_and_the_constructor_work_or_refuse(name: Any, data: st.DataObject) -> None:
    overrides = data.draw(
        st.dictionaries(st.sampled_from(OPTION_NAMES), junk | st.integers(-5, 600), max_size=4)
    )
    refuses(lambda: preset(name, **overrides))
    refuses(lambda: Ruleset(**overrides))
    refuses(lambda: preset("classic").replace(**overrides))


# -- texts and cards ---------------------------------------------------------------------

words = st.sampled_from(
    ["bid", "play", "pass", "look", "blind_nil", "AS", "10H", "qs", "LJ", "BJ", "ZZ", "-1", "14"]
)
texts = st.lists(words | st.text(max_size=5), max_size=4).map(" ".join)


@FUZZ
@given(text=texts | junk)
def test_parse_action_and_cards_work_or_refuse(text: Any) -> None:
    refuses(lambda: str(parse_action(text)))
    refuses(lambda: parse_card(text))
    refuses(lambda: parse_hand(text))
    refuses(lambda: card_name(text))


# -- snapshots and records -----------------------------------------------------------------


def _paths(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*path, i))


def mutated(draw: st.DrawFn, doc: Any) -> Any:
    """The document with one to three places replaced by JSON junk (or removed)."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        value = draw(json_junk)
        if not path:
            doc = value
            continue
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
    return doc


def _encode(doc: Any) -> bytes:
    text = json.dumps(doc, separators=(",", ":"))
    return MAGIC + bytes((VERSION,)) + zlib.compress(text.encode("ascii"))


@st.composite
def snapshots(draw: st.DrawFn) -> Any:
    _, _, data = draw(st.sampled_from(positions()))
    kind = draw(st.sampled_from(["doc", "doc", "bytes", "junk"]))
    if kind == "junk":
        return draw(junk)
    if kind == "bytes":
        cut = draw(st.integers(0, len(data)))
        return data[:cut] + draw(st.binary(max_size=8))
    m = Match.from_snapshot(data)
    return _encode(mutated(draw, snapshot_document(m.state, m.actions)))


@FUZZ
@given(data=snapshots())
def test_snapshot_loading_works_or_raises_a_snapshot_error(data: Any) -> None:
    from spades_engine import SnapshotError

    refuses(lambda: Match.from_snapshot(data).to_snapshot(), SnapshotError)
    refuses(lambda: replay_snapshot(data), SnapshotError)


@st.composite
def records(draw: st.DrawFn) -> Any:
    _, _, data = draw(st.sampled_from(positions()))
    rec = record_of(Match.from_snapshot(data))
    if draw(st.booleans()):
        m = Match.from_snapshot(data)
        deal = [[card_name(c) for c in range(64) if h >> c & 1] for h in m.state.hand.dealt]
        rec = {**record_of(Match(m.rules, seed=m.seed)), "deals": [deal]}
    return mutated(draw, rec)


@FUZZ
@given(rec=records() | junk)
def test_record_loading_works_or_raises_a_record_error(rec: Any) -> None:
    refuses(lambda: replay(rec).to_snapshot(), RecordError)
    refuses(lambda: start_match(rec), RecordError)


@FUZZ
@given(text=st.text(max_size=40) | records().map(json.dumps) | json_junk.map(json.dumps))
def test_record_text_and_the_cli_answer_junk_with_exit_1(text: str) -> None:
    refuses(lambda: loads_record(text), RecordError)
    fd, path = tempfile.mkstemp(suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = record_main(["validate", path])
    finally:
        os.unlink(path)
    assert code in (0, 1)
    if code == 1:
        assert out.getvalue() == ""
        assert err.getvalue().count("\n") == 1 and "invalid record" in err.getvalue()


# -- the command, through a real process -----------------------------------------------------


JUNK_FILES: dict[str, bytes] = {
    "binary": b"\xff\xfe\x00\x81junk",
    "empty": b"",
    "list": b"[1, 2, 3]",
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "huge int": b'{"format": "spades-record", "version": 1, "seed": ' + b"9" * 5000 + b"}",
    "big seed": b'{"format": "spades-record", "version": 1, "ruleset": {}, "seed": '
    + str(2**300).encode()
    + b', "actions": []}',
    "deep action": b'{"format": "spades-record", "version": 1, "ruleset": {}, "seed": 1, '
    b'"actions": [' + b"[" * 900 + b"]" * 900 + b"]}",
    "wrong types": b'{"format": "spades-record", "version": 1, "ruleset": {"players": [4]}, '
    b'"seed": 1.5, "deals": {"a": 1}, "actions": [[null, 3]]}',
    "nan": b'{"format": "spades-record", "version": 1, "ruleset": {"target_score": NaN}, '
    b'"seed": 1, "actions": []}',
}


def _run(args: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "spades_engine.record_cli", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode(errors="replace")


@pytest.mark.parametrize("name", sorted(JUNK_FILES))
def test_cli_validate_answers_a_junk_file_with_one_line(name: str, tmp_path: Any) -> None:
    path = tmp_path / "junk.json"
    path.write_bytes(JUNK_FILES[name])
    for args, stdin in ((["validate", str(path)], b""), (["validate", "-"], JUNK_FILES[name])):
        code, out, err = _run(args, stdin)
        assert (code, out) == (1, ""), err
        assert err.count("\n") == 1 and "Traceback" not in err, err


@pytest.mark.parametrize(
    "args",
    [
        ["--seed", str(2**300)],
        ["--seed", "1", "--set", "players=" + "[" * 100_000],
        ["--seed", "1", "--set", "nonsense"],
        ["--seed", "1", "--set", "players=3.5"],
    ],
    ids=["seed out of range", "deep option", "no value", "float players"],
)
def test_cli_play_answers_bad_arguments_with_one_line(args: list[str]) -> None:
    code, out, err = _run(["play", "--max-hands", "1", *args])
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
