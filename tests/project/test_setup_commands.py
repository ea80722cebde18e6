"""The README's two commands work alone on a fresh clone.

A fresh clone has no virtual environment and no generated stubs: `make test`
and `make run` must each make the environment, install and generate before
they run anything, and the database `make run` writes stays out of git.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _fresh_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)],
        check=True,
        capture_output=True,
    )
    # The working tree's Makefile and .gitignore, committed or not.
    for name in ("Makefile", ".gitignore"):
        shutil.copy(ROOT / name, clone / name)
    return clone


def _dry_run(clone: Path, target: str) -> list[str]:
    # As a fresh shell would run it: under `make test` the parent's MAKELEVEL
    # makes every make print "Entering/Leaving directory" lines around it.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    out = subprocess.run(
        ["make", "-n", target], cwd=clone, check=True, capture_output=True, text=True, env=env
    ).stdout
    # The commands only: not what make itself says around a recursive make
    # (`make test-clients`: "make[1]: Entering directory ...", "Nothing to be done").
    return [line for line in out.splitlines() if not _MAKE_MESSAGE.match(line)]


_MAKE_MESSAGE = re.compile(r"make(\[\d+\])?: ")


@pytest.mark.parametrize("target", ["test", "run"])
def test_each_command_installs_into_a_venv_first(tmp_path: Path, target: str) -> None:
    clone = _fresh_clone(tmp_path)
    lines = _dry_run(clone, target)
    text = "\n".join(lines)
    venv = next(i for i, line in enumerate(lines) if "-m venv .venv" in line)
    install = next(i for i, line in enumerate(lines) if "pip install" in line and "-e" in line)
    stubs = next(i for i, line in enumerate(lines) if "grpc_tools.protoc" in line)
    last = len(lines) - 1
    assert venv < install < last and stubs < last, text
    # Nothing runs on the system interpreter: the command itself is the venv's.
    assert ".venv/bin/python" in lines[last], text


def test_the_run_database_is_ignored(tmp_path: Path) -> None:
    clone = _fresh_clone(tmp_path)
    run = "\n".join(_dry_run(clone, "run"))
    assert ".data/spades.db" in run
    for name in (".data/spades.db", ".data/spades.db-wal", "spades.db", "spades.db-shm"):
        ignored = subprocess.run(["git", "check-ignore", "-q", name], check=False, cwd=clone)
        assert ignored.returncode == 0, f"{name} would show in git status"
