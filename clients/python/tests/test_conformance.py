"""The conformance scenarios (clients/conformance/scenarios/*.json), run with
spades_client against a real server: each transcript, written to
build/conformance/python/<name>.jsonl, must equal clients/conformance/expected/<name>.jsonl
byte for byte. Then again against three replicas on one Redis, the client's
connection moved to the next replica by each cut (build/conformance/python-replicas/)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
from conformance import run_scenario
from harness import ROOT, Harness, run

SCENARIOS = ROOT / "clients" / "conformance" / "scenarios"
EXPECTED = ROOT / "clients" / "conformance" / "expected"
OUT = ROOT / "build" / "conformance" / "python"
NAMES = sorted(p.stem for p in SCENARIOS.glob("*.json"))


def test_there_are_scenarios() -> None:
    assert NAMES


@pytest.mark.parametrize("name", NAMES)
def test_scenario_transcript_matches_the_expected_one(harness: Harness, name: str) -> None:
    check_scenario(harness, name, OUT)


@pytest.mark.parametrize("name", NAMES)
def test_scenario_transcript_is_the_same_on_three_replicas(
    replicated_harness: Harness, name: str
) -> None:
    check_scenario(replicated_harness, name, OUT.with_name("python-replicas"))


def check_scenario(harness: Harness, name: str, out_dir: Path) -> None:
    scenario = json.loads((SCENARIOS / f"{name}.json").read_text(encoding="utf-8"))
    runner = run(run_scenario(harness, scenario))
    text = runner.text
    # The cut and the send-then-cut each made the session reconnect.
    cuts = sum(step["do"] in ("cut", "send_then_cut") for step in scenario["steps"])
    assert runner.reconnects >= cuts
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{name}.jsonl"
    out.write_bytes(text.encode("utf-8"))
    expected = (EXPECTED / f"{name}.jsonl").read_bytes()
    if out.read_bytes() != expected:
        diff = difflib.unified_diff(
            expected.decode().splitlines(),
            text.splitlines(),
            f"expected/{name}.jsonl",
            str(out.relative_to(ROOT)),
            lineterm="",
            n=1,
        )
        pytest.fail("transcripts differ:\n" + "\n".join(list(diff)[:60]))
