# LangBot plugin services. `make help` lists the targets.

GO        ?= go
GOFLAGS   ?=
BIN       := bin
SERVICES  := githubkit takeover schenotify
TESTFLAGS ?= -race -count=1 -timeout 20m
# Packages of the root module; the deploy module (k8s manifests, NATS
# permissions) is tested separately because its dependencies are heavy.
PKGS      := ./...

# The nats-py wheel the LangBot packages bundle (its name, version and
# sha256 are pinned in pkg/lbpkg/wheel.go).
NATS_PY_WHEEL ?= ../shared/vendor/wheels/nats_py-2.15.0-py3-none-any.whl
DIST      := dist

.PHONY: help build build-arm64 packages try-packages test skip-summary test-root test-memory test-deploy run bench bench-process e2e lint fuzz images images-multiarch clean

help:
	@echo "make build   build the service binaries, langbot-plugins and lbctl into $(BIN)/"
	@echo "make test    run every test with the race detector (what CI runs); ends by naming skipped groups"
	@echo "             (scripts/test-deps.sh installs what the runtime, real-LangBot and browser tests need)"
	@echo "make run     start the dev stack: embedded NATS, all services, interactive host"
	@echo "make bench   run the benchmarks (figures reported next to the bus floor)"
	@echo "make bench-process  the same against nats-server in a process of its own"
	@echo "make e2e     end-to-end run with separate processes and a real Jaeger"
	@echo "make lint    gofmt and go vet"
	@echo "make fuzz    run each fuzz target for FUZZTIME (default 10s)"
	@echo "make images  build container images with the Dockerfile"
	@echo "make packages  build the three LangBot packages (.lbpkg) into $(DIST)/ (NATS_PY_WHEEL=...)"
	@echo "make images-multiarch  build and push linux/amd64+arm64 images (docker buildx)"
	@echo "make build-arm64  cross-compile every binary for linux/arm64 (what CI checks)"
	@echo "make try-packages  the packages in LangBot's real runtime against lbctl dev (TRY_ARGS=\"-e '!sche' -wait 3s\" for a script)"

packages:
	$(GO) run ./cmd/lbctl package --plugin all --out $(DIST) --nats-py-wheel $(NATS_PY_WHEEL)

# Tried as a new user would, on one machine: the built packages installed in
# LangBot's real plugin runtime (cmd/fakelangbot plays LangBot's side; the
# runtime's Python comes as pkg/lbpkg/runtimetest describes), forwarding to
# lbctl dev's services (fake GitHub). Chat lines are read from the terminal,
# or given as TRY_ARGS="-e '!sche add in 3s hi' -e '!sche' -wait 5s".
TRY_LISTEN ?= 127.0.0.1:14222
TRY_HTTP   ?= 127.0.0.1:18080
TRY_DATA   ?= .data/try
TRY_ARGS   ?=
try-packages: packages
	@mkdir -p $(BIN) $(TRY_DATA)
	$(GO) build -o $(BIN)/lbctl ./cmd/lbctl
	$(GO) build -o $(BIN)/fakelangbot ./cmd/fakelangbot
	@set -e; \
	$(BIN)/lbctl dev --no-prompt --fake-github --listen $(TRY_LISTEN) --http $(TRY_HTTP) --data $(TRY_DATA) >$(TRY_DATA)/lbctl-dev.log 2>&1 & dev=$$!; \
	trap 'kill $$dev 2>/dev/null; wait $$dev 2>/dev/null' EXIT INT TERM; \
	for i in $$(seq 1 300); do grep -q 'LangBot plugin dev stack' $(TRY_DATA)/lbctl-dev.log && break; \
	  kill -0 $$dev 2>/dev/null || { cat $(TRY_DATA)/lbctl-dev.log; exit 1; }; sleep 0.1; done; \
	echo "lbctl dev is up (log: $(TRY_DATA)/lbctl-dev.log)"; \
	$(BIN)/fakelangbot --nats nats://$(TRY_LISTEN) $(TRY_ARGS) $(DIST)/*.lbpkg

build:
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS) -o $(BIN)/lbctl ./cmd/lbctl
	$(GO) build $(GOFLAGS) -o $(BIN)/langbot-plugins ./cmd/langbot-plugins
	@for s in $(SERVICES); do \
	  if [ -d services/$$s/cmd/$$s ]; then $(GO) build $(GOFLAGS) -o $(BIN)/$$s ./services/$$s/cmd/$$s || exit 1; fi; \
	done

# Every main package (services, lbctl, and any other cmd/) for linux/arm64,
# into a temporary directory: a boards-and-ARM-servers check, not a release.
build-arm64:
	@out=$$(mktemp -d) && trap 'rm -rf "$$out"' EXIT && \
	echo "CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -o $$out/ ./cmd/... ./services/..." && \
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -o $$out/ ./cmd/... ./services/... && \
	for f in "$$out"/*; do echo "  linux/arm64 $${f##*/}"; done

# Tests that need a part this machine lacks (LangBot's plugin runtime, a
# real LangBot, Chromium) skip through pkg/testskip, which records each
# skipped group here; make test ends by naming them and what enables them.
SKIP_REPORT := $(CURDIR)/.data/test-skips.txt

test:
	@mkdir -p .data && rm -f $(SKIP_REPORT)
	@status=0; LANGBOT_SKIP_REPORT=$(SKIP_REPORT) $(MAKE) --no-print-directory test-root test-memory test-deploy || status=$$?; \
	$(MAKE) --no-print-directory skip-summary; exit $$status

skip-summary:
	@if [ -s $(SKIP_REPORT) ]; then \
	  echo "== skipped test groups (these tests did not run):"; \
	  sort $(SKIP_REPORT) | awk -F'\t' '!seen[$$1]++ { printf "   %s: enable with %s\n     (%s)\n", $$1, $$2, $$3 }'; \
	else echo "== no test group was skipped"; fi

test-root:
	$(GO) test $(TESTFLAGS) $(PKGS)

# Memory per request is measured without the race detector, whose shadow
# allocations would count too (docs/reliability.md, issue 19 rows).
test-memory:
	$(GO) test -count=1 -timeout 10m -run 'MemoryBounded' ./services/takeover/console/

test-deploy:
	cd deploy && $(GO) test $(TESTFLAGS) ./...

run:
	$(GO) run ./cmd/lbctl dev $(ARGS)

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m $(PKGS)

# The server as production runs it, apart from the code under test
# (its own heap, collector and scheduler); built from the version go.mod
# pins. BENCH_NATS_SERVER can name any other binary.
bench-process:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/nats-server github.com/nats-io/nats-server/v2
	BENCH_NATS_SERVER=$(CURDIR)/$(BIN)/nats-server $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m $(PKGS)

e2e:
	@if [ -x e2e/run.sh ]; then e2e/run.sh; else echo "e2e: not built yet"; exit 1; fi
	LANGBOT_SOAK=1 $(GO) test -race -count=1 -timeout 30m ./reliability/...

# staticcheck, pinned; fetched from the module proxy on first use.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd deploy && $(GO) vet ./...
	$(GO) run $(STATICCHECK) $(PKGS)
	cd deploy && $(GO) run $(STATICCHECK) ./...
	@# a merge left half done (markers in docs or code) fails here, not in a reader's hands
	@if git grep -nE '^(<<<<<<<|>>>>>>>) ' -- . ':!*.lbpkg'; then echo "merge conflict markers left"; exit 1; fi

FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
	  done; \
	done

# 0.1.0 is the tag the kustomize overlays deploy.
IMAGE_REPO ?= ghcr.io/langbot-nats
IMAGE_TAG  ?= 0.1.0
images:
	@for s in $(SERVICES) lbctl; do \
	  echo "docker build --build-arg SERVICE=$$s -t $(IMAGE_REPO)/$$s:$(IMAGE_TAG) ."; \
	  docker build --build-arg SERVICE=$$s -t $(IMAGE_REPO)/$$s:$(IMAGE_TAG) . || exit 1; \
	done

# Multi-platform images, pushed to IMAGE_REPO (an image index cannot be
# loaded into the local image store). Needs a buildx builder with the
# docker-container driver: docker buildx create --use
PLATFORMS ?= linux/amd64,linux/arm64
images-multiarch:
	@for s in $(SERVICES) lbctl; do \
	  echo "docker buildx build --platform $(PLATFORMS) --build-arg SERVICE=$$s -t $(IMAGE_REPO)/$$s:$(IMAGE_TAG) --push ."; \
	  docker buildx build --platform $(PLATFORMS) --build-arg SERVICE=$$s -t $(IMAGE_REPO)/$$s:$(IMAGE_TAG) --push . || exit 1; \
	done

clean:
	rm -rf $(BIN) .data $(DIST)
