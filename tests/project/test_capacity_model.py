"""docs/capacity.md shows the model bench/capacity_model.py computes: its
table row for row, and where the lobby's slot fills. A changed input in the
script (a new measurement) fails here until the document says the same."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def model() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "capacity_model", ROOT / "bench" / "capacity_model.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["capacity_model"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_documents_model_table_is_the_scripts() -> None:
    m = model()
    doc = (ROOT / "docs" / "capacity.md").read_text()
    assert m.table(m.Inputs()) in doc


def test_the_documents_slot_limits_are_the_scripts() -> None:
    m = model()
    doc = " ".join((ROOT / "docs" / "capacity.md").read_text().split())
    inp = m.Inputs()
    half, full = m.slot_limit(inp, 0.5), m.slot_limit(inp, 1.0)
    assert f"at about {half:,} tables and full at about {full:,}" in doc
    half, full = m.opened_limit(inp, 0.5), m.opened_limit(inp, 1.0)
    assert f"half a core at about {half:,} and full at about {full:,}" in doc


def test_an_input_moves_the_model() -> None:
    m = model()
    base = m.Inputs()
    more = m.Inputs(slot_per_replica_us=2 * base.slot_per_replica_us)
    assert m.slot_limit(more, 1.0) < m.slot_limit(base, 1.0)
    assert re.search(r"\*\*30\*\*", m.table(base))  # replicas at 100,000 tables
