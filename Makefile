PYTHON ?= python3
BUF_VERSION := 1.75.0
BUF := build/tools/node_modules/.bin/buf
GEN := server/spades_server/gen
export PYTHONHASHSEED := 0

.PHONY: install proto test lint buf bench run

install:
	$(PYTHON) -m pip install -q --disable-pip-version-check -e '.[dev]'
	$(MAKE) proto

# Generated code is never committed: it is made from proto/ here, so it cannot drift.
proto:
	rm -rf $(GEN) && mkdir -p $(GEN)
	$(PYTHON) -m grpc_tools.protoc -I proto \
	  --python_out=$(GEN) --grpc_python_out=$(GEN) \
	  --mypy_out=$(GEN) --mypy_grpc_out=$(GEN) \
	  proto/spades/v1/spades.proto
	find $(GEN) -type d -exec touch {}/__init__.py \;
	find $(GEN) -name '*.py*' -exec sed -i 's/^from spades\.v1 import/from spades_server.gen.spades.v1 import/; s/^import spades\.v1\./import spades_server.gen.spades.v1./' {} +

test:
	$(PYTHON) -m pytest

$(BUF):
	npm install --silent --no-save --no-audit --no-fund --prefix build/tools @bufbuild/buf@$(BUF_VERSION)

buf: $(BUF)
	cd proto && ../$(BUF) lint
	@if git rev-parse -q --verify origin/main >/dev/null && git cat-file -e origin/main:proto/spades/v1/spades.proto 2>/dev/null; then \
	  cd proto && ../$(BUF) breaking --against '../.git#branch=origin/main,subdir=proto'; \
	else echo "buf breaking: no proto on origin/main yet, skipped"; fi

lint: buf
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy

bench:
	$(PYTHON) bench/engine.py
	$(PYTHON) bench/store.py
	$(PYTHON) bench/server.py
	$(PYTHON) bench/server.py --via unary
	$(PYTHON) bench/server.py --think-ms 100
	$(PYTHON) bench/finished.py
	$(PYTHON) bench/grpc_floor.py --act bidi
	$(PYTHON) bench/grpc_floor.py

run: install
	$(PYTHON) -m spades_server.main
