# The TypeScript client (clients/typescript/): its npm packages (installed with
# `npm ci` again only when package-lock.json changes), the code protoc-gen-es
# generates from proto/ (never committed), tsc, and node --test against a real
# server started by clients/conformance/serve.py.
TS_DIR := clients/typescript
TS_INSTALLED := $(TS_DIR)/node_modules/.installed
TS_GEN := $(TS_DIR)/src/gen/spades/v1/spades_pb.ts $(TS_DIR)/src/gen/spades/v1/lobby_pb.ts
TS_BUILT := $(TS_DIR)/dist/.built
TS_SOURCES := $(wildcard $(TS_DIR)/src/*.ts $(TS_DIR)/test/*.ts $(TS_DIR)/examples/*.ts) $(TS_DIR)/tsconfig.json
TS_ENV := SPADES_PYTHON=$(abspath $(PYTHON))

CLIENT_TESTS += test-client-typescript
CLIENT_LINTS += lint-client-typescript
.PHONY: test-client-typescript lint-client-typescript

# The rules below must not become the Makefile's default goal (install).
_TS_DEFAULT_GOAL := $(.DEFAULT_GOAL)

$(TS_INSTALLED): $(TS_DIR)/package-lock.json $(TS_DIR)/package.json
	cd $(TS_DIR) && npm ci --no-audit --no-fund
	touch $@

# One run of generate.mjs makes both files (a grouped target: made once, and
# again when any file of $(PROTO), spades.proto or lobby.proto, changes).
$(TS_GEN) &: $(PROTO) $(TS_DIR)/scripts/generate.mjs $(TS_INSTALLED) $(INSTALLED)
	cd $(TS_DIR) && $(TS_ENV) node scripts/generate.mjs

$(TS_BUILT): $(TS_GEN) $(TS_SOURCES)
	rm -rf $(TS_DIR)/dist
	cd $(TS_DIR) && node_modules/.bin/tsc -p tsconfig.json
	touch $@

test-client-typescript: $(TS_BUILT) $(STUBS)
	cd $(TS_DIR) && $(TS_ENV) ../../tests/node-suite.sh typescript . dist/test/*.test.js

lint-client-typescript: $(TS_GEN)
	cd $(TS_DIR) && node_modules/.bin/tsc -p tsconfig.json --noEmit

.DEFAULT_GOAL := $(_TS_DEFAULT_GOAL)
