"""Build of the compiled engine: the same typed sources compiled by mypyc.

pyproject.toml holds everything else; this file only adds the extension
modules.  They are built when a C compiler is found and
``SPADES_ENGINE_BUILD`` is not ``pure``; otherwise the package installs as pure
Python, unchanged.  ``SPADES_ENGINE_BUILD=compiled`` makes a missing compiler
an error instead of a silent pure install (the Dockerfile sets it).

At run time ``SPADES_ENGINE_PURE=1`` loads the pure sources even when the
compiled modules are installed (``spades_engine._build``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
PACKAGE = ROOT / "engine" / "spades_engine"
# Tools and package markers stay Python: ``__init__`` chooses the build at
# import time, and the tournament and CLIs are not on any hot path.
NOT_COMPILED = {
    "__init__.py",
    "_build.py",
    "tournament.py",
    "tournament_cli.py",
    "tournament_chart.py",
    "record_cli.py",
}
MANIFEST = PACKAGE / "_compiled.json"


def compiled_sources() -> list[Path]:
    return sorted(
        p
        for p in PACKAGE.rglob("*.py")
        if p.name not in NOT_COMPILED and "__pycache__" not in p.parts
    )


def have_c_compiler() -> bool:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shutil.which(shlex.split(cc)[0]) is not None


def want_compiled() -> bool:
    mode = os.environ.get("SPADES_ENGINE_BUILD", "auto").strip().lower()
    if mode not in {"auto", "pure", "compiled"}:
        sys.exit(f"SPADES_ENGINE_BUILD must be auto, pure or compiled, not {mode!r}")
    if mode == "pure":
        return False
    if have_c_compiler():
        return True
    if mode == "compiled":
        sys.exit("SPADES_ENGINE_BUILD=compiled, but no C compiler was found")
    print("spades-engine: no C compiler found; installing the pure-Python engine", file=sys.stderr)
    return False


def write_manifest(sources: list[Path]) -> None:
    """Record each compiled module's source hash: ``_build`` refuses compiled
    modules whose source changed since (an in-place build gone stale)."""
    digests = {
        p.relative_to(PACKAGE).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sources
    }
    MANIFEST.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")


def ext_modules() -> list[object]:
    if not want_compiled():
        MANIFEST.unlink(missing_ok=True)
        return []
    from mypyc.build import mypycify

    sources = compiled_sources()
    write_manifest(sources)
    # Paths relative to the root (pip builds here): mypy names the modules by
    # climbing to engine/, which is not a package, so they are spades_engine.*.
    # The group's shared library lands inside the package, beside its modules.
    return list(
        mypycify(
            [p.relative_to(ROOT).as_posix() for p in sources],
            group_name="spades_engine.native",
            opt_level=os.environ.get("MYPYC_OPT_LEVEL", "3"),
        )
    )


setup(ext_modules=ext_modules())
