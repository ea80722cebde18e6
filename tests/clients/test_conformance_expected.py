"""The conformance transcripts in clients/conformance/expected/ are current.

``clients/conformance/reference.py`` derives each scenario's transcript from
the engine (no server); every client's conformance run compares its own
transcript with the committed file, so the file must be what the reference
makes today: a change to the engine, the bots or the server's conversions
that moves a transcript fails here first, and the fix is to run the script.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / "clients" / "conformance"


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "conformance_reference", CONFORMANCE / "reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


reference = _reference()
NAMES = sorted(p.stem for p in (CONFORMANCE / "scenarios").glob("*.json"))


def test_every_scenario_has_an_expected_transcript_and_no_other() -> None:
    expected = sorted(p.stem for p in (CONFORMANCE / "expected").glob("*.jsonl"))
    assert NAMES and expected == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_expected_transcript_is_current(name: str) -> None:
    scenario = json.loads((CONFORMANCE / "scenarios" / f"{name}.json").read_text(encoding="utf-8"))
    committed = (CONFORMANCE / "expected" / f"{name}.jsonl").read_text(encoding="utf-8")
    assert reference.transcript(scenario) == committed, (
        f"expected/{name}.jsonl is out of date: run python clients/conformance/reference.py"
    )


@pytest.mark.parametrize("name", NAMES)
def test_expected_transcript_is_well_formed(name: str) -> None:
    """Canonical lines, events before outcomes, sequence numbers increasing."""
    text = (CONFORMANCE / "expected" / f"{name}.jsonl").read_text(encoding="utf-8")
    assert text.endswith("\n")
    lines = text.splitlines()
    docs = [json.loads(line) for line in lines]
    for line, doc in zip(lines, docs, strict=True):
        assert reference.canonical(doc) == line
        assert len(doc) == 1 and next(iter(doc)) in ("event", "outcome")
    kinds = [next(iter(d)) for d in docs]
    assert kinds == sorted(kinds), "every event line comes before the outcome lines"
    seqs = [int(d["event"]["seq"]) for d in docs if "event" in d]
    assert seqs == sorted(set(seqs)), "sequence numbers increase strictly"
    assert all("timeMs" not in d["event"] for d in docs if "event" in d)
    steps = [d["outcome"]["step"] for d in docs if "outcome" in d]
    scenario = json.loads((CONFORMANCE / "scenarios" / f"{name}.json").read_text())
    if "lobby" in scenario:  # placed by quick play, then an invitation
        assert steps[:3] == ["friend_quickplay", "quickplay", "await_placement"]
        assert steps[-3:] == ["open_invite_table", "friend_join_by_code", "await_start"]
        placed = next(
            d["outcome"] for d in docs if d.get("outcome", {}).get("step") == "await_placement"
        )
        assert abs(placed["seat"] - placed["partnerSeat"]) == 2, "the party sits as partners"
    else:
        assert steps[:2] == ["claim_wrong_token", "claim"]
        assert steps.count("retry") == steps.count("retry_again") == 1


def test_a_scenario_whose_bot_acts_first_is_refused() -> None:
    """The claim's event would race with the bot's moves on a real server."""
    scenario = json.loads((CONFORMANCE / "scenarios" / "classic_hand.json").read_text())
    seats = scenario["create"]["seats"]
    scenario["create"]["seats"] = [*seats[1:], seats[0]]  # the client at seat 3
    scenario["seat"] = 3
    with pytest.raises(reference.ScenarioError, match="bot acts first"):
        reference.transcript(scenario)
