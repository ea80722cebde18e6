# The Python client (clients/python): installed editable into the project's
# .venv once (a stamp file; again when its pyproject or the proto changes),
# with its own stubs generated from proto/ into src/spades_client/_gen.

PY_CLIENT := clients/python
# The interpreter clients/conformance/serve.py runs the server with (it has
# spades_server): every client's tests read it.
export SPADES_PYTHON ?= $(CURDIR)/$(PYTHON)
PY_CLIENT_STAMP := $(VENV)/.spades-client-installed
PY_CLIENT_GEN := $(PY_CLIENT)/src/spades_client/_gen/spades/v1
PY_CLIENT_STUBS := $(PY_CLIENT_GEN)/spades_pb2.py $(PY_CLIENT_GEN)/lobby_pb2.py

.PHONY: install-client-python test-client-python lint-client-python

CLIENT_TESTS += test-client-python
CLIENT_LINTS += lint-client-python

install-client-python: $(PY_CLIENT_STAMP) $(PY_CLIENT_STUBS)

# `make install` installs it too: the root's mypy checks spades_client, whose
# stubs must exist by then.
install: install-client-python

$(PY_CLIENT_STAMP): $(PY_CLIENT)/pyproject.toml $(INSTALLED)
	@PYTHONWARNINGS=ignore $(PYTHON) -m pip install -q --disable-pip-version-check -e '$(PY_CLIENT)[dev,terminal,terminal-dev]'
	@touch $@

# One run of generate.py makes every stub ($(PROTO): spades.proto and
# lobby.proto); a grouped target, so that make runs it once for both.
$(PY_CLIENT_STUBS) &: $(PROTO) $(PY_CLIENT)/generate.py $(PY_CLIENT_STAMP)
	@$(PYTHON) $(PY_CLIENT)/generate.py

# The conformance runner and the client's tests, against servers started by
# clients/conformance/serve.py with the project's Python (it has the server).
test-client-python: install-client-python $(STUBS)
	$(PYTHON) -m pytest $(PY_CLIENT)/tests -p no:cacheprovider

lint-client-python: install-client-python
	$(PYTHON) -m ruff check $(PY_CLIENT) clients/conformance
	$(PYTHON) -m ruff format --check $(PY_CLIENT) clients/conformance
	$(PYTHON) -m mypy -p spades_client
	$(PYTHON) -m mypy --strict $(PY_CLIENT)/tests $(PY_CLIENT)/generate.py clients/conformance/reference.py
