# `make run` and `make test` each work alone on a fresh clone: both depend on
# the virtual environment below, which is made and filled once (and again
# only when pyproject.toml or the proto changes).
BOOTSTRAP_PYTHON ?= python3
VENV := .venv
PYTHON := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
BUF_VERSION := 1.75.0
BUF := build/tools/node_modules/.bin/buf
GEN := server/spades_server/gen
PROTO := proto/spades/v1/spades.proto proto/spades/v1/lobby.proto
# The edge's link (docs/architecture.md): the server's alone, not the clients'.
EDGE_PROTO := proto/spades/edge/v1/link.proto
STUBS := $(GEN)/spades/v1/spades_pb2.py $(GEN)/spades/v1/lobby_pb2.py $(GEN)/spades/edge/v1/link_pb2.py
export PYTHONHASHSEED := 0

.PHONY: install proto test lint buf envoy-config bench run clean test-clients lint-clients redis-server system-packages

# Each client (clients/<language>/) brings its own build and tests in a
# fragment, clients/<language>/client.mk, which appends its targets here.
.DEFAULT_GOAL := install
CLIENT_TESTS :=
CLIENT_LINTS :=
# What `make run` builds first: the web table's fragment (clients/web/) sets it
# to its dist/; without that fragment nothing is built and the page served says
# how to build the table.
WEB_DIST ?=
include $(wildcard clients/*/client.mk)

install: $(INSTALLED) $(STUBS)

# The engine is compiled by mypyc during the install where a C compiler exists
# (setup.py), so an edit of the engine reinstalls it; until then the package
# loads its sources rather than the stale compiled modules (spades_engine._build).
ENGINE_SOURCES := $(shell find engine/spades_engine -name '*.py' -not -path '*/__pycache__/*')
$(INSTALLED): pyproject.toml setup.py $(ENGINE_SOURCES)
	@echo "installing the project and its tools into $(VENV)/ (the first time: a few minutes, the engine is compiled with mypyc)"
	@test -x $(PYTHON) || $(BOOTSTRAP_PYTHON) -m venv $(VENV)
	@$(PYTHON) -m pip install -q --disable-pip-version-check --upgrade pip
	@PYTHONWARNINGS=ignore $(PYTHON) -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $@

# Generated code is never committed: it is made from proto/ here, so it cannot drift.
$(STUBS): $(PROTO) $(EDGE_PROTO) $(INSTALLED)
	@$(MAKE) --no-print-directory -s proto

proto:
	@echo "generating the protobuf stubs from proto/ into $(GEN)/"
	rm -rf $(GEN) && mkdir -p $(GEN) build
	$(PYTHON) -m grpc_tools.protoc -I proto \
	  --plugin=protoc-gen-mypy=$(VENV)/bin/protoc-gen-mypy \
	  --plugin=protoc-gen-mypy_grpc=$(VENV)/bin/protoc-gen-mypy_grpc \
	  --python_out=$(GEN) --grpc_python_out=$(GEN) \
	  --mypy_out=$(GEN) --mypy_grpc_out=$(GEN) \
	  $(PROTO) $(EDGE_PROTO) 2>build/protoc.log || { cat build/protoc.log >&2; exit 1; }
	find $(GEN) -type d -exec touch {}/__init__.py \;
	find $(GEN) -name '*.py*' -exec sed -i 's/^from spades\.v1 import/from spades_server.gen.spades.v1 import/; s/^import spades\.v1\./import spades_server.gen.spades.v1./; s/^from spades\.edge\.v1 import/from spades_server.gen.spades.edge.v1 import/' {} +

# The whole suite on the build installed (compiled where a C compiler exists),
# then the engine's suite again on the pure-Python build; the differential test
# in the first run compares the two builds match by match.
test: system-packages install
	@echo "== pytest: the engine, the server, the stores, the docs (figures: build/test-figures.txt)"
	@$(PYTHON) -m pytest
	@echo "== pytest: the engine again, on its pure-Python build"
	@SPADES_ENGINE_PURE=1 SPADES_EXPECT_BUILD=pure $(PYTHON) -m pytest tests/engine -n 2 --ignore tests/engine/test_differential.py
	@echo "== each client's suite"
	@$(MAKE) --no-print-directory -s test-clients

# The Debian packages the suites need (redis-server; chromium unless
# SPADES_SKIP_BROWSER=1 skips the web table's browser suite): said before
# anything is installed, then installed with apt-get when we are root (as CI
# is), with no recommended extras and nothing else upgraded; else a clear
# failure with the command to run.
SYSTEM_PACKAGES := redis-server $(if $(SPADES_SKIP_BROWSER),,chromium)
system-packages:
	@tests/system-packages.sh $(SYSTEM_PACKAGES)

redis-server:
	@tests/system-packages.sh redis-server

# Every client's suite, after the Python tests (each installs its toolchain's
# packages from the registries first, once).
test-clients: $(CLIENT_TESTS)

lint-clients: $(CLIENT_LINTS)

$(BUF):
	npm install --silent --no-save --no-audit --no-fund --prefix build/tools @bufbuild/buf@$(BUF_VERSION)

buf: $(BUF)
	cd proto && ../$(BUF) lint
	@if git rev-parse -q --verify origin/main >/dev/null && git cat-file -e origin/main:proto/spades/v1/spades.proto 2>/dev/null; then \
	  cd proto && ../$(BUF) breaking --against '../.git#branch=origin/main,subdir=proto'; \
	else echo "buf breaking: no proto on origin/main yet, skipped"; fi

# The Envoy config, rendered with the launcher's defaults, as Envoy reads it.
envoy-config: install
	mkdir -p build/envoy
	$(PYTHON) -m spades_server.stack render > build/envoy/envoy.yaml
	$(VENV)/bin/envoy --mode validate --disable-hot-restart --log-level error -c build/envoy/envoy.yaml

lint: install buf envoy-config
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy
	$(MAKE) --no-print-directory lint-clients

bench: install redis-server
	$(PYTHON) bench/engine.py
	$(PYTHON) bench/store.py
	$(PYTHON) bench/server.py
	$(PYTHON) bench/server.py --via unary
	$(PYTHON) bench/server.py --think-ms 100
	$(PYTHON) bench/finished.py
	$(PYTHON) bench/snapshot_load.py
	$(PYTHON) bench/grpc_floor.py --act bidi
	$(PYTHON) bench/grpc_floor.py
	$(PYTHON) bench/web.py
	$(PYTHON) bench/web.py --mode capacity
	$(PYTHON) bench/replicas.py
	$(PYTHON) bench/capacity.py
	$(PYTHON) bench/redis_reads.py
	$(PYTHON) bench/soak.py
	$(PYTHON) bench/lobby.py
	$(PYTHON) bench/lobby_slot.py
	cd bench/peer/colyseus && npm ci --no-audit --no-fund --silent
	$(MAKE) --no-print-directory $(TS_BUILT)
	$(PYTHON) bench/peer.py
	$(PYTHON) bench/action_profile.py

# The server, Envoy and the web table (python -m spades_server.stack): prints
# the one URL to open and the operator token; Ctrl-C stops all three. The
# database lives under .data/ (ignored by git), not in the project's root, and
# so do the logs (.data/logs/). The bots pause 700 ms before each action so
# that a person can follow their cards (SPADES_BOT_DELAY_MS=0 for none). make
# itself exits 130 after Ctrl-C (it dies by the signal, as make does); the
# stack has stopped its three children by then.
run: install $(WEB_DIST)
	mkdir -p .data
	SPADES_DB=$${SPADES_DB:-.data/spades.db} SPADES_BOT_DELAY_MS=$${SPADES_BOT_DELAY_MS:-700} \
	  $(PYTHON) -m spades_server.stack

clean:
	rm -rf $(VENV) $(GEN) build clients/python/src/spades_client/_gen \
	  clients/typescript/node_modules clients/typescript/src/gen clients/typescript/dist \
	  clients/java/target

# -- Kubernetes and the container image (k8s/, Dockerfile, docs/operations.md) --
# `make lint` runs lint-deploy: kustomize builds every overlay, k8s/lint.py
# checks each object against Kubernetes' schemas (kubernetes-validate, strict,
# the oldest and newest versions the manifests are for) and the minimal
# schemas of k8s/schemas/ (Prometheus Operator kinds), the envoy component's
# rendered config against a fresh render and `envoy --mode validate`, and
# hadolint the Dockerfile. kustomize comes from the Go module proxy into
# build/tools/ once per version; the tests (tests/deploy/) use it too, so
# `make test` builds it first.
KUSTOMIZE_VERSION := v5.8.1
KUSTOMIZE := build/tools/kustomize-$(KUSTOMIZE_VERSION)/kustomize
K8S_OVERLAYS := $(notdir $(wildcard k8s/overlays/*))
K8S_VERSIONS := 1.30 1.37
K8S_ENVOY := k8s/components/envoy/envoy.yaml
K8S_ENVOY_FLAGS := --host 0.0.0.0 --port 8080 --server-host spades-headless --server-port 50051 \
  --web-host spades-web --web-port 8081 --admin-host 127.0.0.1 --admin-port 9901 \
  --cors-origins https://table.example
# The lobby-replicas overlay's Envoy: the same, the lobby on its own replicas.
K8S_ENVOY_LOBBY := k8s/overlays/lobby-replicas/envoy.yaml
K8S_ENVOY_LOBBY_FLAGS := $(K8S_ENVOY_FLAGS) --lobby-host spades-lobby --lobby-port 50051

.PHONY: lint-deploy kustomize k8s-envoy-config
lint: lint-deploy
test: $(KUSTOMIZE)

$(KUSTOMIZE):
	GOBIN=$(CURDIR)/$(@D) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

kustomize: $(KUSTOMIZE)

# Writes the envoy component's config again (commit it): after a change of
# deploy/envoy/envoy.yaml or of the flags above.
k8s-envoy-config: install
	$(PYTHON) k8s/lint.py envoy-render $(K8S_ENVOY) $(K8S_ENVOY_FLAGS)
	$(PYTHON) k8s/lint.py envoy-render $(K8S_ENVOY_LOBBY) $(K8S_ENVOY_LOBBY_FLAGS)

lint-deploy: install $(KUSTOMIZE)
	rm -rf build/k8s && mkdir -p build/k8s
	set -e; for o in $(K8S_OVERLAYS); do $(KUSTOMIZE) build k8s/overlays/$$o > build/k8s/$$o.yaml; done
	$(PYTHON) k8s/lint.py validate $(addprefix -k ,$(K8S_VERSIONS)) build/k8s/*.yaml k8s/secret.example.yaml
	set -e; for f in $(K8S_ENVOY) $(K8S_ENVOY_LOBBY); do \
	  $(PYTHON) k8s/lint.py envoy-check $$f; \
	  $(VENV)/bin/envoy --mode validate --disable-hot-restart --log-level error -c $$f; \
	done
	$(VENV)/bin/hadolint Dockerfile
