"""docs/security.md stays true: every flag of spades-server is on it with its
default, and every test it names as covering something exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from spades_server.main import OPTIONS

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "security.md"
_TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def test_every_flag_is_on_the_page() -> None:
    text = DOC.read_text()
    missing = [o.flag for o in OPTIONS if f"`{o.flag}`" not in text]
    assert not missing, f"docs/security.md does not mention {missing}"


def test_every_limit_row_names_its_default_and_a_test() -> None:
    text = DOC.read_text()
    limits = text[text.index("## Limits and defaults") :]
    limits = limits[: limits.index("Settings that are not limits")]
    rows = [r for r in limits.splitlines() if r.startswith("| `--")]
    assert rows, "no limit rows"
    defaults = {o.flag: o.default for o in OPTIONS}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        flag = cells[0].strip("`").split("`")[0]
        assert flag in defaults, row
        assert cells[1].split()[0] == defaults[flag], f"{flag}: {cells[1]} != {defaults[flag]}"
        assert _TEST_REF.search(cells[3]), f"{flag} names no covering test"


def test_every_test_the_page_names_exists() -> None:
    refs = _TEST_REF.findall(DOC.read_text())
    assert len(refs) > 30
    missing = []
    for path, name in sorted(set(refs)):
        file = ROOT / path
        tree = ast.parse(file.read_text()) if file.exists() else ast.Module([], [])
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        if name not in names:
            missing.append(f"{path}::{name}")
    assert not missing, f"docs/security.md names tests that do not exist: {missing}"
