# Jarvis. CGO stays on (go-sqlite3); every build uses the pure-Go olm tag.
GO       ?= go
TAGS     := goolm
VERSION  ?= $(shell cat VERSION)
COMMIT   ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
DATE     := $(DATE)
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
export CGO_ENABLED := 1
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck-$(STATICCHECK_VERSION)

.PHONY: build test unit integration chaos bench bench-kit soak demo homeserver vet release release-check clean

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
soak: homeserver ## The mixed workload for SOAK_DURATION (20m), with HOSTILE=1 the insiders' beside it; Jarvis's memory, goroutines, files and database must not grow
	JARVIS_SOAK_DURATION=$(SOAK_DURATION) JARVIS_SOAK_HOSTILE=$(HOSTILE) $(GO) test -tags $(TAGS) -count=1 -run '^TestSoak$$' -v -timeout 3h ./integration/

demo: homeserver ## Homeserver, Jarvis and a scripted person talking to it
	$(GO) run -tags $(TAGS) ./cmd/jarvis-demo

# Release builds: static (netgo and osusergo keep the C library out of DNS and
# users; go-sqlite3 is linked in statically), stripped, without paths of this
# machine; arm64 with Debian's cross compiler (gcc-aarch64-linux-gnu).
RELEASE_TAGS    := $(TAGS),netgo,osusergo,sqlite_omit_load_extension
RELEASE_LDFLAGS := -s -w $(LDFLAGS) -linkmode=external -extldflags=-static
CC_amd64 ?= gcc
CC_arm64 ?= aarch64-linux-gnu-gcc
define release_binary
	CC=$(CC_$(1)) GOOS=linux GOARCH=$(1) $(GO) build -tags $(RELEASE_TAGS) -trimpath -ldflags "$(RELEASE_LDFLAGS)" \
		-o dist/jarvis_$(VERSION)_linux_$(1) ./cmd/jarvis
endef

bench-kit: ## .benchkit/benchkit.tar.gz: static binaries, as release builds them, to run the chat-under-load benchmarks on a machine without Go (scripts/benchkit.sh run .benchkit there)
	TAGS=$(RELEASE_TAGS) LDFLAGS='$(RELEASE_LDFLAGS)' scripts/benchkit.sh build .benchkit

release: ## dist/: static linux/amd64 and linux/arm64 binaries, a .deb of each, the OCI image (oci-archive) and SHA256SUMS, then release-check
	rm -rf dist && mkdir -p dist
	$(call release_binary,amd64)
	$(call release_binary,arm64)
	cd tools/release && $(GO) run . -root $(CURDIR) -version $(VERSION) -commit $(COMMIT) -date $(DATE)
	$(MAKE) release-check VERSION=$(VERSION) COMMIT=$(COMMIT)

release-check: ## Check what make release left in dist/: the binaries, the .debs and their unit, the image
	cd tools/release && JARVIS_DIST=$(CURDIR)/dist JARVIS_VERSION=$(VERSION) JARVIS_COMMIT=$(COMMIT) $(GO) test -count=1 .

clean:
	rm -f jarvis
	rm -rf dist
