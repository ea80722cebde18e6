"""The docs stay true: the embedding example runs, the guide shows it verbatim,
and the rules page covers every option and preset."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from spades_engine.ruleset import OPTION_NAMES, PRESET_SEEDS, PRESETS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "embed_match.py"
GUIDE = ROOT / "docs" / "embedding.md"
RULES = ROOT / "docs" / "rules.md"


def test_example_plays_a_match_to_a_winner() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("hand  1 |") for line in lines)
    winners = [line for line in lines if line.startswith("winner: team ")]
    assert len(winners) == 1, done.stdout
    assert re.fullmatch(r"winner: team [AB] with -?\d+ points", winners[0])


def test_guide_shows_the_example_verbatim() -> None:
    blocks = re.findall(r"^```python\n(.*?)^```$", GUIDE.read_text(), re.S | re.M)
    assert len(blocks) == 1, "docs/embedding.md must hold exactly one python code block"
    assert blocks[0] == EXAMPLE.read_text()


def test_rules_page_covers_every_option_and_preset() -> None:
    text = RULES.read_text()
    for name in OPTION_NAMES:
        assert f"### `{name}`" in text, name
    for name in PRESETS:
        assert f"| `{name}` | {PRESET_SEEDS[name]} |" in text, name
