PYTHON ?= python3
export PYTHONHASHSEED := 0

.PHONY: install test lint bench run

install:
	$(PYTHON) -m pip install -q -e '.[dev]'

test:
	$(PYTHON) -m pytest

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy

bench:
	$(PYTHON) bench/engine.py

# Until the gRPC server lands (issue 3), `make run` plays one match through the
# embedded engine and prints the result.
run: install
	$(PYTHON) docs/examples/embed_match.py
