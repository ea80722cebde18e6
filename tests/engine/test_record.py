"""Game records: record_of / replay reach the identical state, bad records are
refused with errors naming what is wrong, and the spades-record command."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rules_helpers import CONFIGS

from spades_engine import (
    BLIND_NIL,
    LOOK,
    Bid,
    Match,
    PassCards,
    Phase,
    Reason,
    Ruleset,
    SpadesBroken,
    parse_action,
    preset,
)
from spades_engine.cards import card_name, cards_of
from spades_engine.deck import deal, hand_seed
from spades_engine.events import CardsPassed
from spades_engine.record import (
    FORMAT,
    VERSION,
    RecordActionError,
    RecordError,
    dumps_record,
    loads_record,
    read_record,
    record_of,
    replay,
    replay_events,
    results_of,
    write_record,
)
from spades_engine.record_cli import main, play_random


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spades_engine.record_cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# -- round trips -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("seed", [3, 4])
def test_replay_reaches_the_identical_state(name: str, seed: int, tmp_path: Path) -> None:
    m = play_random(CONFIGS[name], seed, max_hands=6)
    rec = record_of(m)
    path = tmp_path / "game.json"
    write_record(path, rec)
    loaded = read_record(path)
    assert loaded == json.loads(json.dumps(rec))
    again = replay(loaded)
    assert again.to_snapshot() == m.to_snapshot()
    assert record_of(again) == rec


def test_a_record_mid_hand_replays() -> None:
    m = Match(preset("classic"), seed=12)
    rng = random.Random(12)
    for _ in range(23):
        seat = rng.choice(m.seats_to_act())
        m.apply(seat, rng.choice(m.legal_actions(seat)))
    assert replay(record_of(m)).to_snapshot() == m.to_snapshot()


def test_blind_nil_and_exchange_are_recorded() -> None:
    m = Match(preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False), seed=5)
    first = m.to_act
    m.apply(first, BLIND_NIL)
    while m.phase is Phase.BIDDING:
        seat = m.to_act
        if m.state.hand.face_down[seat]:
            m.apply(seat, m.legal_actions(seat)[-1])  # look
        m.apply(seat, m.legal_actions(seat)[3])
    assert m.state.phase is Phase.EXCHANGE
    for seat in m.state.hand.exchange_seats:
        m.apply(seat, m.legal_actions(seat)[1])
    rec = record_of(m)
    texts = [text for _, text in rec["actions"]]
    assert texts[0] == "blind_nil" and "look" in texts
    assert sum(t.startswith("pass ") for t in texts) == 2
    again, events = replay_events(rec)
    assert again.to_snapshot() == m.to_snapshot()
    assert sum(isinstance(e, CardsPassed) for e in events) == 2


def test_the_optional_exchange_decisions_are_recorded() -> None:
    m = Match(preset("polish", blind_nil_deficit=0), seed=11, dealer=0)
    for seat, action in ((1, BLIND_NIL), (2, LOOK), (2, Bid(5)), (3, LOOK), (3, Bid(4))):
        m.apply(seat, action)
    m.apply(0, BLIND_NIL)
    m.apply(1, parse_action("no_exchange"))
    m.apply(0, parse_action("exchange"))
    rec = record_of(m)
    texts = [text for _, text in rec["actions"]]
    assert texts[-2:] == ["no_exchange", "exchange"]
    again, events = replay_events(rec)
    assert again.to_snapshot() == m.to_snapshot()
    assert [(e.seat, e.exchange) for e in events if type(e).__name__ == "ExchangeDecided"] == [
        (1, False),
        (0, True),
    ]


def test_pass_text_keeps_any_card_order() -> None:
    m = Match(preset("polish", blind_nil_deficit=0, blind_nil_exchange_optional=False), seed=6)
    m.apply(m.to_act, BLIND_NIL)
    while m.phase is Phase.BIDDING:
        seat = m.to_act
        if m.state.hand.face_down[seat]:
            m.apply(seat, m.legal_actions(seat)[-1])
        m.apply(seat, m.legal_actions(seat)[2])
    seat = m.state.hand.exchange_seats[0]
    action = m.legal_actions(seat)[0]
    assert isinstance(action, PassCards)
    m.apply(seat, PassCards(tuple(reversed(action.cards))))
    rec = record_of(m)
    assert replay(rec).to_snapshot() == m.to_snapshot()


def test_explicit_deals_are_written_and_replayed() -> None:
    rules = preset("classic")
    deals = [[cards_of(h) for h in deal(rules, hand_seed(99, i), (1 + i) % 4)] for i in range(2)]
    m = Match(rules, seed=1, deals=deals, dealer=1)
    rng = random.Random(0)
    while len(m.state.results) < 2 and not m.is_over:
        seat = rng.choice(m.seats_to_act())
        m.apply(seat, rng.choice(m.legal_actions(seat)))
    rec = record_of(m)
    assert rec["deals"][0][0] == [card_name(c) for c in deals[0][0]]
    assert rec["dealer"] == 1
    assert replay(rec).to_snapshot() == m.to_snapshot()
    assert "deals" not in record_of(Match(rules, seed=1))


def test_hand_written_record_with_defaults() -> None:
    """Options left out take their default, a missing dealer is drawn from the seed."""
    rec = {"format": FORMAT, "version": VERSION, "ruleset": {}, "seed": 7, "actions": []}
    m = replay(rec)
    assert m.rules == Ruleset() and m.to_snapshot() == Match(seed=7).to_snapshot()
    seat = m.to_act
    rec["actions"] = [[seat, "bid 4"], [(seat + 1) % 4, "BID 2"]]
    assert replay(rec).state.hand.bids[seat] == 4


def test_a_record_without_the_scoring_option_plays_classic_scoring() -> None:
    m = Match(preset("classic", scoring="tricks"), seed=3)
    rec = record_of(m)
    assert rec["ruleset"]["scoring"] == "tricks"
    assert replay(rec).rules == m.rules
    del rec["ruleset"]["scoring"]  # a record from before the option
    assert replay(rec).rules == preset("classic")


def test_dumps_record_layout() -> None:
    m = play_random(preset("classic"), 1, max_hands=1)
    text = dumps_record(record_of(m))
    assert loads_record(text) == record_of(m)
    lines = text.splitlines()
    assert lines[1] == '  "format": "spades-record",'
    assert len(lines) == len(m.actions) + 9  # one line per action


# -- refusals ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good() -> dict[str, Any]:
    return record_of(play_random(preset("classic"), 8, max_hands=2))


def test_tampered_action_names_index_seat_and_reason(good: dict[str, Any]) -> None:
    rec = json.loads(json.dumps(good))
    i = next(i for i, (_, t) in enumerate(rec["actions"]) if t.startswith("play"))
    seat = rec["actions"][i][0]
    rec["actions"][i][0] = (seat + 1) % 4
    with pytest.raises(RecordActionError) as e:
        replay(rec)
    assert e.value.index == i and e.value.seat == (seat + 1) % 4
    assert e.value.reason is Reason.NOT_YOUR_TURN
    assert f"action {i} (seat {(seat + 1) % 4}" in str(e.value)
    assert "NOT_YOUR_TURN" in str(e.value)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("bid 14", Reason.BID_OUT_OF_RANGE),
        ("play AS", Reason.WRONG_PHASE),
        ("pass 2C 3C", Reason.WRONG_PHASE),
        ("blind_nil", Reason.BLIND_NIL_NOT_ALLOWED),
        ("look", Reason.ALREADY_LOOKED),
    ],
)
def test_first_action_refused(good: dict[str, Any], text: str, reason: Reason) -> None:
    rec = json.loads(json.dumps(good))
    seat = rec["actions"][0][0]
    rec["actions"][0] = [seat, text]
    with pytest.raises(RecordActionError) as e:
        replay(rec)
    assert e.value.index == 0 and e.value.seat == seat and e.value.action == text
    assert e.value.reason is reason


def test_unreadable_action_text(good: dict[str, Any]) -> None:
    rec = json.loads(json.dumps(good))
    rec["actions"][5][1] = "play ZZ"
    with pytest.raises(RecordActionError, match=r"action 5 .*'play ZZ'.*not a card") as e:
        replay(rec)
    assert e.value.reason is None


def test_action_after_the_end(good: dict[str, Any]) -> None:
    rec = record_of(play_random(preset("classic"), 9, max_hands=100))
    rec["actions"].append([0, "bid 3"])
    with pytest.raises(RecordActionError) as e:
        replay(rec)
    assert e.value.reason is Reason.MATCH_OVER and e.value.index == len(rec["actions"]) - 1


def test_seat_out_of_range(good: dict[str, Any]) -> None:
    rec = json.loads(json.dumps(good))
    rec["actions"][0][0] = 7
    with pytest.raises(RecordActionError, match="INVALID_SEAT"):
        replay(rec)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "chess-pgn"}, "not a game record"),
        ({"version": 2}, "unsupported record version 2"),
        ({"version": True}, "unsupported record version true"),
        ({"seed": "7"}, '"seed" must be an integer'),
        ({"dealer": 4}, '"dealer" must be a seat from 0 to 3'),
        ({"ruleset": {"players": 3}}, "bad ruleset: players=3"),
        ({"ruleset": {"trumps": "hearts"}}, "unknown ruleset option"),
        ({"ruleset": []}, '"ruleset" must be an object'),
        ({"actions": {}}, '"actions" must be a list'),
        ({"moves": []}, "unknown record key"),
        ({"deals": [[["AS"]]]}, r"bad deals\[0\]: a deal needs 4 hands"),
        ({"deals": [[["AS", "XX"]]]}, r"deals\[0\]\[0\]: 'XX' is not a card"),
        ({"deals": [[["AS", "AS"]]]}, "appears twice"),
        ({"deals": [[[1]]]}, "a card is a name"),
    ],
)
def test_bad_headers(good: dict[str, Any], change: dict[str, Any], message: str) -> None:
    rec = {**good, **change}
    with pytest.raises(RecordError, match=message):
        replay(rec)


def test_bad_action_entries(good: dict[str, Any]) -> None:
    for entry, message in (
        ("bid 3", r"actions\[0\] must be \[seat, action\]"),
        ([0], r"actions\[0\] must be"),
        ([True, "bid 3"], "the seat must be an integer"),
        ([0, 3], "the action must be a string"),
    ):
        rec = {**good, "actions": [entry]}
        with pytest.raises(RecordError, match=message):
            replay(rec)


def test_missing_keys_and_bad_json(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="missing seed"):
        replay({"format": FORMAT, "version": 1, "ruleset": {}, "actions": []})
    with pytest.raises(RecordError, match="not valid JSON"):
        loads_record("{")
    with pytest.raises(RecordError, match="a record is a JSON object"):
        loads_record("[]")
    with pytest.raises(RecordError, match="cannot read"):
        read_record(tmp_path / "missing.json")


# -- results -----------------------------------------------------------------------------


def test_results_add_up() -> None:
    m = play_random(preset("classic"), 10, max_hands=100)
    match, events = replay_events(record_of(m))
    res = results_of(match, events)
    assert match.is_over and res["result"]["winner"] == m.winner
    assert res["in_progress"] is None
    assert len(res["hands"]) == len(m.state.results)
    totals = [0, 0]
    for n, hand in enumerate(res["hands"], start=1):
        assert hand["hand"] == n
        assert hand["dealer"] == (m.state.first_dealer + n - 1) % 4
        assert sum(hand["tricks"]) == 13
        for side in hand["sides"]:
            totals[side["side"]] += side["points"]
            assert side["score"] == totals[side["side"]]
            assert side["contract"] == sum(hand["bids"][s] for s in side["seats"])
    assert totals == list(m.scores) == res["scores"]


def test_results_of_an_unfinished_record() -> None:
    m = play_random(preset("bulgarian"), 3, max_hands=2)
    match, events = replay_events(record_of(m))
    res = results_of(match, events)
    assert res["result"] is None
    assert res["in_progress"] == {
        "hand": 3,
        "dealer": (m.state.first_dealer + 2) % 4,
        "phase": "bidding",
        "bids": [None] * 4,
        "tricks": [0] * 4,
    }


# -- the command -------------------------------------------------------------------------


def test_cli_play_then_validate(tmp_path: Path) -> None:
    out = tmp_path / "game.json"
    done = run_cli("play", "--preset", "classic", "--seed", "21", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "match over" in done.stderr
    rec = read_record(out)
    assert replay(rec).to_snapshot() == play_random(preset("classic"), 21, 50).to_snapshot()

    done = run_cli("validate", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["valid"] is True and report["hands"]
    first = report["hands"][0]
    assert set(first) == {"hand", "dealer", "bids", "blind", "tricks", "sides"}
    assert {"contract", "tricks", "points", "bags", "score"} <= set(first["sides"][0])
    assert report["result"]["winner"] in (0, 1)
    assert report["result"]["scores"] == [s["score"] for s in report["hands"][-1]["sides"]]


def test_cli_rejects_a_tampered_record(tmp_path: Path) -> None:
    out = tmp_path / "game.json"
    assert run_cli("play", "--seed", "22", "--out", str(out), cwd=tmp_path).returncode == 0
    rec = read_record(out)
    i = next(i for i, (_, t) in enumerate(rec["actions"]) if t.startswith("play"))
    seat = rec["actions"][i][0]
    held = {
        card_name(c)
        for c in cards_of(replay({**rec, "actions": rec["actions"][:i]}).state.hand.hands[seat])
    }
    missing = next(card_name(c) for c in range(64) if c & 15 < 13 and card_name(c) not in held)
    rec["actions"][i] = [seat, f"play {missing}"]
    bad = tmp_path / "tampered.json"
    write_record(bad, rec)
    done = run_cli("validate", str(bad), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    assert f"action {i} (seat {seat}, 'play {missing}') is illegal: CARD_NOT_IN_HAND" in done.stderr
    assert str(bad) in done.stderr


def test_cli_rejects_malformed_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("{ nope")
    done = run_cli("validate", "a.json", cwd=tmp_path)
    assert done.returncode == 1 and "not valid JSON" in done.stderr
    done = run_cli("validate", "absent.json", cwd=tmp_path)
    assert done.returncode == 1 and "cannot read" in done.stderr


def test_cli_play_variants_and_stdout(tmp_path: Path) -> None:
    args = ["play", "--preset", "german", "--set", "players=5", "--seed", "3"]
    done = run_cli(*args, "--max-hands", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rec = loads_record(done.stdout)
    assert rec["ruleset"]["players"] == 5
    m = replay(rec)
    assert m.is_over or len(m.state.results) == 2
    done = run_cli("play", "--preset", "classic", "--set", "players=3", "--seed", "1", cwd=tmp_path)
    assert done.returncode == 2 and "partnerships" in done.stderr


def test_cli_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "g.json"
    args = ["play", "--preset", "bulgarian", "--seed", "5", "--max-hands", "3"]
    assert main([*args, "--out", str(out)]) == 0
    assert main(["validate", "--compact", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["hands"]) == 3 or report["result"] is not None
    assert main(["--help"]) == 0
    assert main(["validate"]) == 2
    assert "usage" in capsys.readouterr().err


def test_a_record_written_before_spades_broken_replays_with_any_spade() -> None:
    """A record's ruleset lists its options; one written before ``spades_broken``
    existed lacks it, and it takes its default (the rule it was played by), even
    for a polish table, whose preset now breaks spades only by trumping."""
    old_polish = preset("polish", spades_broken="any_spade")
    m = play_random(old_polish, 4, max_hands=1)
    rec = record_of(m)
    assert rec["ruleset"].pop("spades_broken") == "any_spade"
    again = replay(rec)
    assert again.rules == old_polish and again.rules.spades_broken is SpadesBroken.ANY_SPADE
    assert again.to_snapshot() == m.to_snapshot()
