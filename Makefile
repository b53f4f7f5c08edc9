# Jarvis. CGO stays on (go-sqlite3); every build uses the pure-Go olm tag.
GO       ?= go
TAGS     := goolm
VERSION  ?= $(shell cat VERSION)
COMMIT   ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
export CGO_ENABLED := 1
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck-$(STATICCHECK_VERSION)

.PHONY: build test unit integration chaos bench soak demo homeserver vet clean

build: ## Build ./jarvis
	$(GO) build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o jarvis ./cmd/jarvis

homeserver: ## Build the test homeserver (Dendrite), cached after the first time
	scripts/homeserver.sh build

$(STATICCHECK):
	mkdir -p $(dir $@) && GOBIN=$$(mktemp -d) && GOBIN=$$GOBIN $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && mv $$GOBIN/staticcheck $@

vet: $(STATICCHECK) ## go vet, gofmt, go mod tidy, staticcheck, and the core-imports-stdlib-only check
	$(GO) vet -tags $(TAGS) ./...
	$(GO) mod tidy -diff
	$(STATICCHECK) -tags $(TAGS) ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt would change the files above"; exit 1; }
	@bad=$$($(GO) list -tags $(TAGS) -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./core/... | grep -v '^github.com/jarvis-hmi/jarvis/core\(/.*\)\{0,1\}$$'); \
		test -z "$$bad" || { echo "packages under core/ import more than the standard library and core:"; echo "$$bad"; exit 1; }

unit: ## Unit tests (no homeserver)
	$(GO) test -tags $(TAGS) -count=1 $$($(GO) list ./... | grep -v /integration)

integration: homeserver ## Integration tests against a real Dendrite (started by the tests), side by side, once
	TAGS=$(TAGS) scripts/integration.sh

# The fault matrix: N scenarios from SEED (a seed of the current time when
# empty); a failed scenario's seed and plan are printed, and
# `make chaos SEED=<seed> N=1` replays it.
SEED ?= $(shell date +%s%N | tail -c 7)
N    ?= 20
chaos: homeserver ## The fault matrix, long: make chaos SEED=… N=…
	JARVIS_CHAOS_SEED=$(SEED) JARVIS_CHAOS_N=$(N) $(GO) test -tags $(TAGS) -count=1 -timeout 0 -run '^TestFaultMatrix$$' ./integration/

test: ## Every test in timed stages: vet, build, unit, the store on both engines side by side, integration
	TAGS=$(TAGS) scripts/test.sh

bench: homeserver ## Every benchmark a fixed number of times, then the table of docs/benchmarks.md (figures depend on machine load)
	scripts/bench.sh

SOAK_DURATION ?= 20m
soak: homeserver ## The mixed workload for SOAK_DURATION (20m); Jarvis's memory, goroutines, files and database must not grow
	JARVIS_SOAK_DURATION=$(SOAK_DURATION) $(GO) test -tags $(TAGS) -count=1 -run '^TestSoak$$' -v -timeout 3h ./integration/

demo: homeserver ## Homeserver, Jarvis and a scripted person talking to it
	$(GO) run -tags $(TAGS) ./cmd/jarvis-demo

clean:
	rm -f jarvis
