# Garra developer entry points. `make test` is what CI runs.
GO        ?= go
BIN       ?= bin
VERSION   ?= $(shell hack/version.sh)
LDFLAGS   := -s -w -X main.version=$(VERSION)
GOLANGCI  := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

.PHONY: all build run test unit vet fmt-check conformance conformance-gateway bench bench-go bench-startup bench-gateway bench-e2e lint tidy-check clean e2e images npm release-dry-run

all: build

build: ## Build the garra binary into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/garra ./cmd/garra

run: build ## Start the stdio MCP server (what Claude Desktop runs)
	$(BIN)/garra mcp-server

# `make test` packs and runs the host platform's package only (npm/npm_test.go).
npm: ## npm tarballs of @garraia/garra-mcp and its five platform packages in bin/npm (NPM_VERSION, NPM_PLATFORMS: hack/npm.sh)
	hack/npm.sh

test: fmt-check vet unit conformance conformance-gateway release-dry-run ## Everything CI checks

# What .github/workflows/release.yml does on a tag, offline, into a temporary
# directory (hack/release.sh): the five binaries, SHA256SUMS and SBOMs, the
# npm tarballs installed and started, the images read back, the chart and
# server.json checked, the workflows linted. Warm, the builds come from Go's
# cache.
release-dry-run: ## Build and check every release artifact offline; list them with sizes and checksums
	hack/release.sh dry-run

# Modules besides the product's own: what only tests and tools need (Helm,
# go-containerregistry, the cluster clients) stays out of the product's
# dependency graph (hack/serverjson: the MCP registry's module, for its
# server.json type and schemas). test/e2e builds with -tags e2e.
TOOL_MODULES := test/chart hack/imagebuild hack/serverjson test/e2e

unit: ## Go tests (unit, integration against loopback doubles, child-process tests)
	$(GO) test -count=1 ./...
	cd test/chart && $(GO) test -count=1 ./...
	cd hack/imagebuild && $(GO) test -count=1 ./...
	cd hack/serverjson && $(GO) test -count=1 ./...
	cd test/e2e && $(GO) test -count=1 -tags e2e -run 'TestParams|TestInCluster' .  # the e2e suite's own logic; no cluster

vet:
	$(GO) vet ./...
	cd test/chart && $(GO) vet ./...
	cd hack/imagebuild && $(GO) vet ./...
	cd hack/serverjson && $(GO) vet ./...
	cd test/e2e && $(GO) vet -tags e2e ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './test/conformance/node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# The MCP protocol revisions the servers are held to: the last with the
# initialize handshake, and the first without it.
MCP_REVISIONS := 2025-11-25 2026-07-28

conformance: build ## The official MCP conformance suite against `garra mcp-server`, at each of MCP_REVISIONS
	@rc=0; for v in $(MCP_REVISIONS); do \
		test/conformance/run.sh --stdio "$(abspath $(BIN))/garra mcp-server" --spec-version $$v \
			--expected test/conformance/expected-failures-stdio-$$v.txt || rc=1; \
	done; exit $$rc

conformance-gateway: build ## The MCP conformance suite against `garra gateway` (POST /mcp, bearer), at each of MCP_REVISIONS
	hack/conformance-gateway.sh "$(abspath $(BIN))/garra" $(foreach v,$(MCP_REVISIONS),--spec-version $(v))

bench: bench-go ## Benchmarks (printed, not asserted); the cluster ones too when a cluster can be had
	@if why="$$(hack/e2e.sh --can-run)"; then $(MAKE) --no-print-directory bench-e2e; \
	else echo "bench-e2e skipped: no KUBECONFIG and the local cluster cannot start without a build:"; echo "$$why" | sed 's/^/  /'; fi

bench-go: ## Go benchmarks of the packages (no cluster)
	$(GO) test -run '^$$' -bench . -benchmem -timeout 45m ./...

bench-startup: ## garra mcp-server vs a bare go-sdk server: initialize latency, idle RSS, package init, side by side
	$(GO) test -run '^$$' -bench StdioStartupVsBare -benchtime 20x ./cmd/garra

bench-gateway: ## garra gateway vs a bare go-sdk HTTP server, whole processes: req/s, p50/p99, CPU per request (GARRA_BENCH_GATEWAY_BEFORE=other/garra adds a column)
	$(GO) test -run '^$$' -bench GatewayVsBareHTTP -benchtime 5x -v ./cmd/garra

bench-e2e: ## On a real cluster: apply → Ready for 1 and 10 orchestrators, idle pod memory, live onboarding and rotation p50/p95 (hack/e2e.sh bench)
	hack/e2e.sh bench

lint: ## golangci-lint (pinned) in every module, the e2e suite included
	$(GO) run $(GOLANGCI) run ./...
	@for m in $(TOOL_MODULES); do echo "golangci-lint: $$m"; \
	  (cd $$m && $(GO) run $(GOLANGCI) run --config "$(abspath .golangci.yml)" --build-tags e2e ./...) || exit 1; done

tidy-check: ## go.mod and go.sum of every module are tidy
	$(GO) mod tidy -diff
	@for m in $(TOOL_MODULES); do (cd $$m && $(GO) mod tidy -diff) || { echo "$$m: go mod tidy needed"; exit 1; }; done

clean:
	rm -rf $(BIN)

# ---------------------------------------------------------------------------
# Operator (api/, controllers/, cmd/manager/, config/) — added by the operator
# engineer. controller-gen is pinned by the `tool` directive in go.mod.
# controllers/generated_test.go runs the same generators into a temp dir and
# diffs, so `make test` (through `unit`) fails on stale generated files.
# ---------------------------------------------------------------------------
CONTROLLER_GEN ?= $(GO) tool controller-gen

.PHONY: manifests generate envtest-assets envtest-suite

manifests: ## CRD (config/crd/bases) and ClusterRole (config/rbac/role.yaml) from the kubebuilder markers
	$(CONTROLLER_GEN) crd rbac:roleName=manager-role paths="./api/...;./controllers/..." output:crd:dir=config/crd/bases output:rbac:dir=config/rbac

generate: ## DeepCopy methods of the API types (api/v1alpha1/zz_generated.deepcopy.go)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

envtest-assets: ## Build once (~20 min cold) and cache kube-apiserver and etcd for envtest (hack/envtest.sh)
	@hack/envtest.sh >/dev/null

envtest-suite: ## The controller's Ginkgo suite on a real kube-apiserver and etcd
	@assets="$$(hack/envtest.sh)" && \
	KUBEBUILDER_ASSETS="$$assets" $(GO) test -count=1 ./controllers/...

# `unit` (go test ./...) runs the envtest suite too, which finds the binaries
# through `hack/envtest.sh --check`: build them before it.
unit: envtest-assets

# ---------------------------------------------------------------------------
# End to end on a real cluster (test/e2e, built with -tags e2e; not in `test`).
# ---------------------------------------------------------------------------
images: ## garra, garra-sandbox and garra-llmdouble image tarballs in bin/images (no container engine)
	hack/images.sh

e2e: ## The e2e suite on KUBECONFIG's cluster, or on a local one brought up and torn down (hack/e2e.sh)
	hack/e2e.sh test

# ---------------------------------------------------------------------------
# Local development against a control plane built from the envtest binaries.
# ---------------------------------------------------------------------------
.PHONY: dev

dev: ## kube-apiserver+etcd (envtest binaries), the CRD, the manager, the sample; prints what it owns, then tears down (DEV_KEEP=1 keeps it running)
	@hack/dev.sh
