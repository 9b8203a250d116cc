# Garra developer entry points. `make test` is what CI runs.
GO        ?= go
BIN       ?= bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
GOLANGCI  := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

.PHONY: all build run test unit vet fmt-check conformance conformance-gateway bench lint tidy-check clean

all: build

build: ## Build the garra binary into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/garra ./cmd/garra

run: build ## Start the stdio MCP server (what Claude Desktop runs)
	$(BIN)/garra mcp-server

test: fmt-check vet unit conformance conformance-gateway ## Everything CI checks

unit: ## Go tests (unit, integration against loopback doubles, child-process tests)
	$(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './test/conformance/node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

conformance: build ## The official MCP conformance suite against `garra mcp-server`
	test/conformance/run.sh --stdio "$(abspath $(BIN))/garra mcp-server" --expected test/conformance/expected-failures-stdio.txt

conformance-gateway: build ## The MCP conformance suite against `garra gateway` (POST /mcp, bearer)
	hack/conformance-gateway.sh "$(abspath $(BIN))/garra"

bench: ## Benchmarks (printed, not asserted)
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint: ## golangci-lint (pinned)
	$(GO) run $(GOLANGCI) run ./...

tidy-check:
	$(GO) mod tidy -diff

clean:
	rm -rf $(BIN)
