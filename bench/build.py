#!/usr/bin/env python3
"""What the compiled engine costs to build and to ship.

Builds the project's wheel twice from a copy of the working tree, as the
Dockerfile's builder does (``pip wheel``, here with this .venv's setuptools
and mypy: ``--no-build-isolation --no-deps``): once with
``SPADES_ENGINE_BUILD=compiled`` and once with ``pure``.  Prints each build's
wall and CPU time (of the pip process and its children: mypyc, gcc), the
wheel's size, and the installed size of the package alone and of the image's
environment (/opt/spades: the package and every distribution it needs with
the image's extras, measured from this .venv's installed files).  The base
image (python:3.11.14-slim-bookworm) comes on top; no Docker engine here to
weigh the image itself.

    python3 bench/build.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024


def _copy_tree(dest: Path) -> None:
    def ignore(directory: str, names: list[str]) -> set[str]:
        skip = {".venv", ".git", "build", "node_modules", "__pycache__", "clients", ".data"}
        return {n for n in names if n in skip or n.endswith((".so", ".egg-info"))} | (
            {"_compiled.json"} if directory.endswith("spades_engine") else set()
        )

    shutil.copytree(ROOT, dest, ignore=ignore)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def build_wheel(mode: str, work: Path) -> dict[str, Any]:
    src = work / f"src-{mode}"
    _copy_tree(src)
    out = work / f"wheel-{mode}"
    env = {**os.environ, "SPADES_ENGINE_BUILD": mode}
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check"]
    cmd += ["--no-deps", "--no-build-isolation", "-w", str(out), str(src)]
    cpu0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    (wheel,) = out.glob("spades_engine-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        infos = whl.infolist()
    engine = [i for i in infos if i.filename.startswith("spades_engine/")]
    return {
        "mode": mode,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "wheel_bytes": wheel.stat().st_size,
        "installed_bytes": sum(i.file_size for i in infos),
        "engine_installed_bytes": sum(i.file_size for i in engine),
        "extension_modules": sum(1 for i in engine if i.filename.endswith(".so")),
        "wheel": wheel.name,
    }


def image_extras() -> list[str]:
    text = (ROOT / "Dockerfile").read_text()
    return re.search(r"^ARG EXTRAS=(\S+)", text, re.M).group(1).split(",")  # type: ignore[union-attr]


def dependency_bytes(extras: list[str]) -> tuple[int, list[str]]:
    """Installed size of every distribution the package needs with ``extras``,
    transitively, from this .venv's records of their files."""
    seen: set[str] = set()
    todo = [(r, extras) for r in metadata.requires("spades-engine") or []]
    total = 0
    while todo:
        line, active = todo.pop()
        req = Requirement(line)
        env_ok = req.marker is None or any(
            req.marker.evaluate({"extra": e}) for e in active or [""]
        )
        name = req.name.lower().replace("_", "-")
        if not env_ok or name in seen or name == "spades-engine":
            continue
        seen.add(name)
        dist = metadata.distribution(req.name)
        total += sum(f.size or 0 for f in dist.files or [])
        todo += [(r, list(req.extras)) for r in dist.requires or []]
    return total, sorted(seen)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="spades-build-") as tmp:
        rows = [build_wheel(mode, Path(tmp)) for mode in ("compiled", "pure")]
    deps, names = dependency_bytes(image_extras())
    print("Wheel builds (pip wheel --no-deps --no-build-isolation, this machine)")
    heads = ("wall s", "cpu s", "wheel", "package", "engine")
    print(
        f"{'build':<9} " + " ".join(f"{h:>{7 if 's' in h[-1:] else 10}}" for h in heads) + "  .so"
    )
    for r in rows:
        print(
            f"{r['mode']:<9} {r['wall_s']:>7.1f} {r['cpu_s']:>7.1f} "
            f"{r['wheel_bytes'] / MiB:>8.2f} M {r['installed_bytes'] / MiB:>8.2f} M "
            f"{r['engine_installed_bytes'] / MiB:>8.2f} M {r['extension_modules']:>4}"
        )
    print()
    print(
        f"dependencies with extras {','.join(image_extras())}: {len(names)} distributions, "
        f"{deps / MiB:.1f} MiB installed"
    )
    for r in rows:
        size = (deps + r["installed_bytes"]) / MiB
        print(f"/opt/spades with the {r['mode']} engine: {size:.1f} MiB")
    if args.json:
        Path(args.json).write_text(json.dumps({"builds": rows, "dependency_bytes": deps}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
