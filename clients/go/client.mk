# The Go client (clients/go/), included by the top-level Makefile.
#
# The code generated from proto/ is committed under clients/go/gen/ (so that
# `go get` works); `make proto-go` regenerates it, and `make lint-client-go`
# fails if it has drifted from the proto. The two protoc plugins are installed
# at pinned versions into build/tools/go/bin (never the user's PATH), once.
GO ?= go
GO_DIR := clients/go
GO_MODULE := github.com/spades-engine/spades/clients/go
GO_GEN := $(GO_DIR)/gen
GO_TOOLS := build/tools/go/bin
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GO_TOOLS_STAMP := build/tools/go/.installed-$(PROTOC_GEN_GO_VERSION)-$(PROTOC_GEN_GO_GRPC_VERSION)
# Where each test writes its transcripts: build/conformance/go/ (repo root).
GO_TEST_FLAGS ?= -count=1 -timeout 10m

CLIENT_TESTS += test-client-go
CLIENT_LINTS += lint-client-go

.PHONY: test-client-go lint-client-go proto-go

$(GO_TOOLS_STAMP):
	mkdir -p $(GO_TOOLS)
	GOBIN=$(abspath $(GO_TOOLS)) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(abspath $(GO_TOOLS)) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	touch $@

# $(call go-protoc,OUT): generate the Go messages and service stubs into OUT.
go-protoc = mkdir -p $(1) && $(PYTHON) -m grpc_tools.protoc -I proto \
  --plugin=protoc-gen-go=$(GO_TOOLS)/protoc-gen-go \
  --plugin=protoc-gen-go-grpc=$(GO_TOOLS)/protoc-gen-go-grpc \
  --go_out=$(1) --go_opt=paths=source_relative,Mspades/v1/spades.proto=$(GO_MODULE)/gen/spades/v1\;spadesv1,Mspades/v1/lobby.proto=$(GO_MODULE)/gen/spades/v1\;spadesv1 \
  --go-grpc_out=$(1) --go-grpc_opt=paths=source_relative,Mspades/v1/spades.proto=$(GO_MODULE)/gen/spades/v1\;spadesv1,Mspades/v1/lobby.proto=$(GO_MODULE)/gen/spades/v1\;spadesv1 \
  $(PROTO)

proto-go: $(INSTALLED) $(GO_TOOLS_STAMP)
	rm -rf $(GO_GEN)
	$(call go-protoc,$(GO_GEN))

# The packages' closing lines, without the example packages' "no test files";
# the whole output stays in build/test-reports/go.log.
test-client-go: install
	@mkdir -p build/test-reports
	@cd $(GO_DIR) && SPADES_PYTHON=$(abspath $(PYTHON)) $(GO) test $(GO_TEST_FLAGS) ./... > $(abspath build/test-reports/go.log) 2>&1; \
	  status=$$?; grep -v 'no test files' $(abspath build/test-reports/go.log); exit $$status

# The drift check regenerates into a scratch directory and compares it with the
# committed code, ignoring only the header line that names protoc's version
# (grpcio-tools' protoc, which pyproject.toml does not pin).
lint-client-go: $(INSTALLED) $(GO_TOOLS_STAMP)
	cd $(GO_DIR) && $(GO) vet ./...
	@out=$$(cd $(GO_DIR) && gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; fi
	rm -rf build/go-gen-check
	$(call go-protoc,build/go-gen-check)
	git diff --no-index --exit-code -I '^// .*protoc +v[0-9]' -- $(GO_GEN) build/go-gen-check
	rm -rf build/go-gen-check
