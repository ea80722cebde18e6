"""The compiled and the pure-Python engine play thousands of matches alike.

``differential.py`` plays seeded random (and bot-driven) matches of every
preset and variant and hashes every line it writes of them; here it runs in
child processes, compiled and with ``SPADES_ENGINE_PURE=1``, and the hashes
must be equal match by match.  On a difference the first differing line of
that match is shown, from each build.

``SPADES_DIFFERENTIAL_MATCHES`` sets the matches per preset (a quarter of it
per variant); the default, 200, makes 1,150 matches in about 100 s on two
cores (400, 2,300 matches, took three minutes of ``make test``'s 25).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).with_name("differential.py")
MATCHES = int(os.environ.get("SPADES_DIFFERENTIAL_MATCHES", "200"))
SHARDS = {"compiled": 2, "pure": 4}  # the pure build is about three times slower


def _env(build: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SPADES_ENGINE_PURE"}
    if build == "pure":
        env["SPADES_ENGINE_PURE"] = "1"
    return env


def _run(build: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=_env(build),
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert proc.returncode == 0, f"{build}: {proc.stderr[-3000:]}"
    return proc.stdout


def _compiled_installed() -> bool:
    """Whether a child without SPADES_ENGINE_PURE loads the compiled engine
    (this process may be the pure one)."""
    code = "import spades_engine; print(spades_engine.COMPILED)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=_env("compiled"),
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip() == "True"


def _shard(build: str, shard: int) -> dict[str, Any]:
    out = _run(build, "--matches", str(MATCHES), "--shard", f"{shard}/{SHARDS[build]}")
    result: dict[str, Any] = json.loads(out)
    return result


def _first_difference(name: str, seed: str) -> str:
    compiled = _run("compiled", "--dump", name, seed).splitlines()
    pure = _run("pure", "--dump", name, seed).splitlines()
    for i, (c, p) in enumerate(zip(compiled, pure, strict=False)):
        if c != p:
            return f"{name} seed {seed}, line {i + 1}:\n compiled: {c[:800]}\n pure:     {p[:800]}"
    return f"{name} seed {seed}: {len(compiled)} lines compiled, {len(pure)} pure"


def test_both_builds_write_the_same_bytes_for_every_match() -> None:
    if not _compiled_installed():
        pytest.skip("no compiled engine installed to compare")
    tasks = [(b, i) for b, n in SHARDS.items() for i in range(n)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda t: _shard(*t), tasks))
    digests: dict[str, dict[str, str]] = {"compiled": {}, "pure": {}}
    for (build, _), result in zip(tasks, results, strict=True):
        assert result["compiled"] is (build == "compiled"), result["build"]
        digests[build].update(result["digests"])
    compiled, pure = digests["compiled"], digests["pure"]
    matches = sum(1 for key in compiled if not key.endswith("/kernel"))
    print(f"differential: {matches} matches and {len(compiled) - matches} kernel blocks")
    assert matches >= MATCHES * 5, matches
    assert compiled.keys() == pure.keys()
    differing = [key for key in compiled if compiled[key] != pure[key]]
    if differing:
        name, seed = differing[0].split("/")
        pytest.fail(
            f"{len(differing)} of {len(compiled)} differ, first {_first_difference(name, seed)}"
        )
