# SeatFlow. `make run` (embedded mode, nothing to install) and `make test` (real MariaDB +
# Redis, started or installed by scripts/services.sh) are the two commands that matter.

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)

GO ?= go
BIN := bin/seatflow
# Packages for test-cluster: the seat, order, cache, live, reconcile, on-sale queue and API suites.
CLUSTER_PKGS ?= ./internal/seats ./internal/booking ./internal/cache ./internal/live ./internal/reconcile ./internal/queue ./internal/waitlist ./internal/app
CLUSTER_NODES := 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103
BENCH_OUT ?= docs/BENCHMARKS.md

# Content of the generated trees (ent, graph) as seen by git, including untracked files:
# compared before and after `make generate`, so the check works in a fresh clone (clean tree)
# as well as in a working copy with changes of its own.
GEN_STATE = { git status --porcelain --untracked-files=all -- ent graph; git diff -- ent graph; \
	git ls-files -z --others --exclude-standard -- ent graph | xargs -0r cat; } | sha256sum

.PHONY: all run build services generate check-generated playground lint test clients bench bench-onsale-quick load soak test-cluster cluster-up cluster-down faults

all: build

# The server is built, then exec'd rather than `go run` (which exits 1 when its child ends
# on a signal): Ctrl-C shuts it down cleanly and make reports no error.
run:
	$(GO) build -o $(BIN) ./server
	exec $(BIN)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(BIN) ./server

services:
	bash scripts/services.sh

generate:
	$(GO) generate ./...

check-generated:
	@git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "check-generated: not a git work tree" >&2; exit 1; }
	@before="$$($(GEN_STATE))"; \
	$(MAKE) --no-print-directory generate || exit 1; \
	after="$$($(GEN_STATE))"; \
	if [ "$$before" != "$$after" ]; then \
		echo "check-generated: generated code in ent/ or graph/ is stale: 'make generate' changed it." >&2; \
		echo "Run 'make generate' and commit the result. Files now differing from HEAD:" >&2; \
		changed="$$(git status --porcelain -- ent graph)"; \
		echo "$${changed:-  (none: generate put back hand edits to generated files)}" >&2; \
		exit 1; \
	fi; \
	echo "check-generated: ent/ and graph/ are up to date"

# Rebuilds the playground's GraphiQL and React files (internal/playground/vendor/, committed)
# from the npm versions pinned in internal/playground/web/package-lock.json.
playground:
	bash scripts/playground.sh

lint:
	@files="$$(gofmt -l .)"; \
	if [ -n "$$files" ]; then echo "lint: gofmt wants to reformat:" >&2; echo "$$files" >&2; exit 1; fi
	$(GO) vet ./...

# NODE_PINNED=1 runs the client suite on the pinned Node.js of scripts/node.sh with every
# other node hidden from PATH, as on a machine without one (.ci/run sets it). The Node.js
# check comes first: a missing or old one stops make test before anything long runs.
NODE_PINNED ?=
test:
	bash scripts/node.sh $(if $(NODE_PINNED),--pinned) >/dev/null
	$(MAKE) --no-print-directory services
	bash scripts/toxiproxy.sh
	bash scripts/redis-cluster.sh failover
	$(MAKE) --no-print-directory check-generated
	bash scripts/playground.sh --check
	bash scripts/chromium.sh
	$(GO) test -race -count=1 -timeout 20m ./...
	SEATFLOW_FAULTS=short $(GO) test -race -count=1 -timeout 10m ./internal/tooling/faults
	SEATFLOW_FAULTS=short $(GO) test -race -count=1 -timeout 5m -tags seatflow_bug_release -run TestCheckerCatches ./internal/tooling/faults
	$(MAKE) --no-print-directory soak SOAK_DURATION=2m SOAK_OUT=/tmp/seatflow-soak-ci
	@if [ -f scripts/fuzz.sh ]; then echo "bash scripts/fuzz.sh"; bash scripts/fuzz.sh; fi
	bash scripts/clients.sh $(if $(NODE_PINNED),--without-system-node)

# The client-library tests alone (clients/): graphql-http's audit, graphql-ws,
# subscriptions-transport-ws, Apollo Client, urql, graphql-codegen and CORS against a
# server built from this tree on a fresh database.
clients:
	$(MAKE) --no-print-directory services
	bash scripts/clients.sh $(if $(NODE_PINNED),--without-system-node)

# Seat, cache, live, reconcile, queue and waiting-list suites on a local three-master Redis Cluster (ports 7101-7103).
test-cluster:
	$(MAKE) --no-print-directory services
	bash scripts/redis-cluster.sh
	SEATFLOW_TEST_REDIS_CLUSTER=$(CLUSTER_NODES) $(GO) test -race -count=1 -timeout 20m $(CLUSTER_PKGS)

# The fault-injection suite's long version (internal/tooling/faults: the issue's fault durations, 3
# instances, no race detector so latencies are the product's), then docs/RELIABILITY.md
# rewritten from its results, whatever they show; fails when a scenario found a violation.
# toxiproxy (127.0.0.1:8474) and the failover cluster (127.0.0.1:7201-7206) are started
# when they are not up. The short version runs in `make test`.
FAULTS_RESULTS ?= /tmp/seatflow-faults-results
faults:
	$(MAKE) --no-print-directory services
	bash scripts/toxiproxy.sh
	bash scripts/redis-cluster.sh failover
	rm -rf $(FAULTS_RESULTS)
	SEATFLOW_FAULTS=long SEATFLOW_FAULTS_RESULTS=$(FAULTS_RESULTS) $(GO) test -count=1 -timeout 30m -v ./internal/tooling/faults; \
	status=$$?; \
	$(GO) run ./cmd/seatflow-reliability -results $(FAULTS_RESULTS) -out docs/RELIABILITY.md || exit 1; \
	exit $$status

# Regenerates docs/BENCHMARKS.md (the report goes to stdout; the file is replaced only on success).
# Installs wrk (apt-get) and Centrifugo (go install) when missing: the read path's independent
# client and the on-sale burst's anchor. BENCH_ONLY=tracing (comma-separated section names,
# `go run ./cmd/seatflow-bench -h`) runs those sections alone and replaces only them in
# BENCH_OUT, each stamped as measured alone; the rest of the file stays as it was.
BENCH_ONLY ?=
bench:
	$(MAKE) --no-print-directory services
	bash scripts/wrk.sh
	bash scripts/centrifugo.sh
	@mkdir -p $(dir $(BENCH_OUT))
	$(GO) build -o $(BIN) ./server
	@if [ -n "$(BENCH_ONLY)" ]; then \
		echo "$(GO) run ./cmd/seatflow-bench -server $(BIN) -only $(BENCH_ONLY) -splice $(BENCH_OUT)"; \
		$(GO) run ./cmd/seatflow-bench -server $(BIN) -only $(BENCH_ONLY) -splice $(BENCH_OUT) || exit 1; \
		echo "bench: replaced $(BENCH_ONLY) in $(BENCH_OUT)"; \
	else \
		echo "$(GO) run ./cmd/seatflow-bench -server $(BIN) > $(BENCH_OUT).tmp"; \
		$(GO) run ./cmd/seatflow-bench -server $(BIN) > $(BENCH_OUT).tmp || exit 1; \
		mv $(BENCH_OUT).tmp $(BENCH_OUT); \
		echo "bench: wrote $(BENCH_OUT)"; \
	fi

# The on-sale burst's short version (N = 200 and 1,000 watchers, tick default and 0, about a
# minute): the report goes to stdout, docs/BENCHMARKS.md is left alone.
bench-onsale-quick:
	$(MAKE) --no-print-directory services
	$(GO) build -o $(BIN) ./server
	$(GO) run ./cmd/seatflow-bench -server $(BIN) -only onsale -quick

# The premiere-night load test alone (part of `make bench`); extra flags in LOAD_ARGS, e.g.
# LOAD_ARGS='-duration 5m -chaos'. It starts its own private redis-server (127.0.0.1:6391)
# and 3 instances (127.0.0.1:8081-8083) and stops them at the end; `-start=false` runs it
# against `make cluster-up` instead.
load:
	$(MAKE) --no-print-directory services
	$(GO) build -o $(BIN) ./server
	$(GO) run ./cmd/seatflow-bench -server $(BIN) load $(LOAD_ARGS)

# The soak test: the premiere-night mix on 3 instances (127.0.0.1:8081-8083, private Redis
# 127.0.0.1:6391, reconciler running) at half the rate their capacity steps hold, for
# SOAK_DURATION (30m); resources sampled every 10 s must stay flat over the last 20
# minutes, no answer INTERNAL, verify clean. Writes SOAK_OUT/soak.png and the soak section
# of SOAK_OUT/RELIABILITY.md (docs/: commit them); extra flags in SOAK_ARGS (e.g. -rate 600).
# `make test` runs a 2-minute soak into /tmp.
SOAK_DURATION ?= 30m
SOAK_OUT ?= docs
soak:
	$(MAKE) --no-print-directory services
	$(GO) build -o $(BIN) ./server
	$(GO) run ./cmd/seatflow-bench -server $(BIN) soak -duration $(SOAK_DURATION) -out $(SOAK_OUT) $(SOAK_ARGS)

# 3 instances on 127.0.0.1:8081-8083 over one MySQL database (seatflow_load) and a private
# Redis (127.0.0.1:6391); pids and logs in /tmp/seatflow-cluster-up/.
cluster-up:
	$(MAKE) --no-print-directory services
	bash scripts/cluster-up.sh

cluster-down:
	bash scripts/cluster-up.sh down
