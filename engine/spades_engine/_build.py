"""Which build of the engine is loaded: the mypyc-compiled modules or the sources.

Both come from the same files.  ``setup.py`` compiles every rules module when a
C compiler exists and leaves the ``.py`` beside each extension; Python's import
system prefers the extension.  This module, never compiled, runs first (from
the package's ``__init__``) and decides:

* ``SPADES_ENGINE_PURE=1`` in the environment: the sources, always;
* no compiled modules installed: the sources;
* compiled modules whose source changed since they were built (an in-place
  developer build after an edit; the build records each source's SHA-256): the
  sources, with a warning, because stale machine code would run old rules;
* otherwise the compiled modules.

To load the sources a meta path finder is put first, which resolves the
package's submodules to their ``.py`` files.  The same finder can load the
sources a second time under another package name (``load_pure``), so that
tools compare both builds in one process.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

PURE_ENV = "SPADES_ENGINE_PURE"
MANIFEST = "_compiled.json"
NATIVE = "native__mypyc"  # the shared library of the compiled group (setup.py)


class SourceFinder(importlib.abc.MetaPathFinder):
    """Finds ``<name>.<sub>…`` in the ``.py`` files under ``root``, never in
    an extension module."""

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name and not fullname.startswith(self.name + "."):
            return None
        base = self.root.joinpath(*fullname.split(".")[1:])
        init = base / "__init__.py"
        if init.is_file():
            return importlib.util.spec_from_file_location(
                fullname,
                init,
                loader=importlib.machinery.SourceFileLoader(fullname, str(init)),
                submodule_search_locations=[str(base)],
            )
        source = base.with_suffix(".py")
        if source.is_file():
            return importlib.util.spec_from_file_location(
                fullname, source, loader=importlib.machinery.SourceFileLoader(fullname, str(source))
            )
        return None


def _use_sources(name: str, root: Path) -> None:
    if not any(isinstance(f, SourceFinder) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, SourceFinder(name, root))


def _native_present(root: Path) -> bool:
    return any(
        (root / (NATIVE + suffix)).is_file() for suffix in importlib.machinery.EXTENSION_SUFFIXES
    )


def stale_sources(root: Path) -> list[str]:
    """The compiled modules whose source no longer matches the build's record
    (every one, when the record is missing or unreadable)."""
    try:
        recorded = json.loads((root / MANIFEST).read_text())
    except (OSError, ValueError):
        return ["(no build record)"]
    stale = []
    for rel, digest in sorted(recorded.items()):
        try:
            if hashlib.sha256((root / rel).read_bytes()).hexdigest() != digest:
                stale.append(rel)
        except OSError:
            stale.append(rel)
    return stale


def choose(name: str, root: Path) -> str:
    """Decide the build for package ``name`` in ``root`` before its modules are
    imported; returns why, for ``spades_engine.BUILD``."""
    if name != "spades_engine":  # a second copy loaded by load_pure
        return "pure: loaded as " + name
    if os.environ.get(PURE_ENV, "").strip() not in {"", "0"}:
        _use_sources(name, root)
        return f"pure: {PURE_ENV}={os.environ[PURE_ENV]}"
    if not _native_present(root):
        return "pure: no compiled modules installed"
    stale = stale_sources(root)
    if stale:
        _use_sources(name, root)
        shown = ", ".join(stale[:3]) + (" …" if len(stale) > 3 else "")
        warnings.warn(
            f"spades_engine: compiled modules are older than their sources ({shown}); "
            "loading the sources. Rebuild with `make install` (or pip install again).",
            RuntimeWarning,
            stacklevel=3,
        )
        return "pure: compiled modules are stale (" + shown + ")"
    return "compiled: mypyc"


def is_compiled(module: ModuleType) -> bool:
    file = getattr(module, "__file__", None) or ""
    return any(file.endswith(s) for s in importlib.machinery.EXTENSION_SUFFIXES)


def load_pure(alias: str = "spades_engine_pure") -> ModuleType:
    """The engine's sources imported a second time as package ``alias``: its own
    classes and modules, beside whichever build ``spades_engine`` is."""
    root = Path(__file__).resolve().parent
    _use_sources(alias, root)
    return importlib.import_module(alias)
