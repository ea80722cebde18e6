# The web table (clients/web/): its npm packages (`npm ci` again only when
# package-lock.json changes), the Vite build into clients/web/dist/ (which
# `make run` serves), `tsc --noEmit` for the lint, and the browser tests:
# Debian's Chromium driven by Playwright against the real stack
# (python -m spades_server.stack: spades-server, Envoy, the web table's server).
# The page imports the TypeScript client's built output, so it is built first.
WEB_DIR := clients/web
WEB_INSTALLED := $(WEB_DIR)/node_modules/.installed
WEB_TS_BUILT := clients/typescript/dist/.built
WEB_SOURCES := $(shell find $(WEB_DIR)/src -type f -name '*.ts*' -o -type f -name '*.css' -o -type f -name '*.json') \
  $(WEB_DIR)/index.html $(WEB_DIR)/vite.config.ts $(WEB_DIR)/tsconfig.json
WEB_TESTS_BUILT := $(WEB_DIR)/build/test/.built
WEB_CHROMIUM := $(or $(SPADES_CHROMIUM),/usr/bin/chromium)
# What `make run` builds first (the root Makefile's `run: install $(WEB_DIST)`).
WEB_DIST := $(WEB_DIR)/dist/index.html

CLIENT_TESTS += test-client-web
CLIENT_LINTS += lint-client-web
.PHONY: web-dist web-chromium test-client-web lint-client-web clean-client-web

# The rules below must not become the Makefile's default goal (install).
_WEB_DEFAULT_GOAL := $(.DEFAULT_GOAL)

# Playwright never downloads a browser here: the tests use the system's Chromium.
$(WEB_INSTALLED): $(WEB_DIR)/package-lock.json $(WEB_DIR)/package.json
	cd $(WEB_DIR) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
	touch $@

$(WEB_DIST): $(WEB_INSTALLED) $(WEB_TS_BUILT) $(WEB_SOURCES)
	cd $(WEB_DIR) && node_modules/.bin/vite build --logLevel warn

web-dist: $(WEB_DIST)

$(WEB_TESTS_BUILT): $(WEB_INSTALLED) $(WEB_TS_BUILT) $(wildcard $(WEB_DIR)/test/*.ts) $(WEB_DIR)/tsconfig.test.json
	rm -rf $(WEB_DIR)/build
	cd $(WEB_DIR) && node_modules/.bin/tsc -p tsconfig.test.json
	touch $@

# Debian's chromium, installed (and announced) when missing and we are root
# (as CI is); otherwise a clear failure (tests/system-packages.sh).
web-chromium:
	@tests/system-packages.sh chromium

WEB_ENV := SPADES_PYTHON=$(abspath $(PYTHON)) SPADES_CHROMIUM=$(WEB_CHROMIUM)

ifdef SPADES_SKIP_BROWSER
test-client-web:
	@echo "web table: the browser suite skipped (SPADES_SKIP_BROWSER=1)"
else
test-client-web: $(WEB_DIST) $(WEB_TESTS_BUILT) $(STUBS) web-chromium
	cd $(WEB_DIR) && $(WEB_ENV) ../../tests/node-suite.sh web-table . build/test/*.test.js
endif

lint-client-web: $(WEB_INSTALLED) $(WEB_TS_BUILT)
	cd $(WEB_DIR) && node_modules/.bin/tsc -p tsconfig.json --noEmit && node_modules/.bin/tsc -p tsconfig.test.json --noEmit

clean: clean-client-web
clean-client-web:
	rm -rf $(WEB_DIR)/node_modules $(WEB_DIR)/dist $(WEB_DIR)/build

.DEFAULT_GOAL := $(_WEB_DEFAULT_GOAL)
