"""Which engine build is loaded: compiled, pure when forced, pure when stale."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import spades_engine


def _env(build: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SPADES_ENGINE_PURE"}
    if build == "pure":
        env["SPADES_ENGINE_PURE"] = "1"
    return env


def test_the_pure_build_can_be_forced_and_says_so() -> None:
    code = (
        "import spades_engine, spades_engine.kernel as k; print(spades_engine.COMPILED, k.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env("pure"), capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "False" and out[1].endswith("kernel.py")


@pytest.mark.parametrize("build", ["compiled", "pure"])
def test_no_build_needs_mypy_extensions_at_run_time(build: str) -> None:
    """The engine's native integers (``i64``) come from mypy_extensions, a
    build-time package only: a full random hand and a bot's move in either
    build, and mypy_extensions never imported."""
    code = (
        "import sys, spades_engine as s\n"
        "from spades_engine import Match, preset\n"
        "from spades_engine.bots import BOTS\n"
        "from spades_engine.kernel import Draws, random_hand\n"
        "random_hand(preset('classic'), Draws(1))\n"
        "m = Match(preset('classic'), seed=1)\n"
        "BOTS['expert'](m.view(m.to_act), 1, 20)\n"
        "print(s.COMPILED, 'mypy_extensions' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(build), capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[1] == "False", "mypy_extensions was imported at run time"
    if build == "pure":  # "compiled" loads whichever build is installed
        assert out[0] == "False"


def test_the_build_loaded_is_the_one_expected() -> None:
    """CI says which build it tests (SPADES_EXPECT_BUILD), so a failed compile
    cannot pass as a second run of the pure build."""
    expected = os.environ.get("SPADES_EXPECT_BUILD")
    if expected is None:
        pytest.skip("SPADES_EXPECT_BUILD not set")
    assert expected in {"compiled", "pure"}
    assert spades_engine.COMPILED is (expected == "compiled"), spades_engine.BUILD


def test_compiled_modules_older_than_their_source_are_not_loaded(tmp_path: Path) -> None:
    package = Path(spades_engine.__file__).parent
    if not spades_engine.COMPILED:
        pytest.skip(f"no compiled engine ({spades_engine.BUILD})")
    copy = tmp_path / "spades_engine"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    trick = copy / "trick.py"
    trick.write_text(trick.read_text() + "\n# edited after the build\n")
    code = "import spades_engine as s, spades_engine.trick as t; print(s.COMPILED, t.__file__)"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**_env("compiled"), "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    compiled, file = proc.stdout.split()
    assert compiled == "False" and file == str(trick)
    assert "older than their sources (trick.py)" in proc.stderr
