# fedrouter — see README.md. `make test` and `make demo` are the contract.
GO       ?= go
BROKERS  := bash testdata/brokers.sh
# Brokers the tests use: RabbitMQ nodes (four: the topology test attaches
# three routers to a chain of them), Proton C brokers, Proton Python brokers.
TEST_BROKERS ?= -r 4 -p 1 -y 1
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The toolchain is go.mod's `toolchain` line (a Go release without the
# standard-library vulnerabilities govulncheck reports in older ones),
# fetched through the Go module proxy on first use: `auto` lets the go
# command switch to it even where the environment says `local`.
export GOTOOLCHAIN := auto

.PHONY: all build vet lint vulncheck test test-short integration bench demo brokers brokers-stop brokers-status postgres postgres-stop qpidd qpidd-stop chromium fuzz clean

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/fedrouter ./cmd/fedrouter

vet:
	$(GO) vet ./...

# staticcheck and errcheck, pinned, fetched through the Go module proxy on
# first use: both must report nothing (an error ignored on purpose is
# written `_ = f()` with a comment saying why).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
ERRCHECK    ?= github.com/kisielk/errcheck@v1.30.0
lint: vet
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(ERRCHECK) ./...

# govulncheck (pinned) against the Go vulnerability database taken as a Go
# module through the proxy, offline otherwise (testdata/vulncheck.sh): a
# vulnerability reachable from our code fails the target.
vulncheck:
	GO=$(GO) bash testdata/vulncheck.sh

# Fast inner loop: unit tests only, no brokers.
test-short:
	$(GO) test -short -race ./...

# go vet, staticcheck, errcheck, then unit + integration tests with -race
# against real brokers, which are installed if missing (root, Debian
# packages), started once for the run and stopped after (KEEP_BROKERS=1 leaves them running). Packages run
# one at a time (-p 1): some tests kill and restart a shared broker, which
# would break another package's test running beside them. Inside
# cmd/fedrouter the end-to-end tests that share nothing then run three at
# a time, after the serial ones (cmd/fedrouter/main_test.go, parallelE2E).
test: lint vulncheck postgres qpidd chromium
	$(BROKERS) start $(TEST_BROKERS)
	DATABASE_URL=$$($(POSTGRES) start) && export DATABASE_URL && \
	  $(GO) test -p 1 -race -count=1 -timeout 30m ./... ; rc=$$?; \
	  if [ "$(KEEP_BROKERS)" != 1 ]; then $(BROKERS) stop; $(POSTGRES) stop; $(MAKE) -s qpidd-stop; fi; exit $$rc

# Headless Chromium for the web console's browser tests (docs/console.md):
# Debian's packages installed if missing (root); nothing downloads a
# browser of its own. Without it those tests skip, except under CI.
CHROMIUM := /usr/lib/chromium/chromium-headless-shell
chromium:
	@test -x $(CHROMIUM) || { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-headless-shell || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-headless-shell; }; }

# PostgreSQL for the cluster tests (store/, cluster/): Debian's server
# installed if missing, a throwaway cluster on 127.0.0.1:55432 started by
# testdata/postgres.sh (root; the tests read DATABASE_URL, which
# `bash testdata/postgres.sh start` prints).
POSTGRES := bash testdata/postgres.sh
postgres:
	@ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; }
	@$(POSTGRES) start >/dev/null

postgres-stop:
	$(POSTGRES) stop

# qpidd (Apache Qpid C++ broker) test peers for the qpid profile's tests:
# qpidd1, 2 and 4 strict, qpidd3 creating queues on demand, on 5901..5904
# (testdata/qpidd.sh). The binaries are not in this repository: they are
# found at $$FEDROUTER_QPIDD_DIR or ../shared/peers/qpidd beside it. Without
# them the qpidd tests skip, except under CI (CI set; or with
# FEDROUTER_QPIDD_DIR set), where this target and the tests fail.
QPIDD := bash testdata/qpidd.sh
qpidd:
	@if $(QPIDD) dir >/dev/null 2>&1; then $(QPIDD) deps && $(QPIDD) start-test; \
	elif [ -n "$$CI" ] || [ -n "$$FEDROUTER_QPIDD_DIR" ]; then $(QPIDD) dir; exit 1; \
	else echo "qpidd: no shared qpidd build found (bash testdata/qpidd.sh dir): the qpidd tests will skip"; fi

qpidd-stop:
	@if $(QPIDD) dir >/dev/null 2>&1; then $(QPIDD) stop-test; fi

# Benchmarks (docs/performance.md), every figure measured in this run on
# this machine: a raw go-amqp pipe (the floor, the baseline of every
# ratio), fedrouter on its engine (one queue route, then 8, without and
# with --ack; exchange routes fanning out with link state on, RabbitMQ; a
# queue route crossing two routers through rabbit2's transit queue to
# rabbit3), Qpid Dispatch Router 1.19 (qdrouterd from the shared build
# found as the qpidd one is, or FEDROUTER_QDROUTERD_DIR; one worker
# thread, auto-links; skipped with a line when absent),
# the RabbitMQ shovel (AMQP 0-9-1 and 1.0, ack-mode on-confirm),
# on RabbitMQ->RabbitMQ, Proton C->Proton C and qpidd->qpidd, 256-byte and 16 KiB
# messages; router memory under a 1,000,000-message backlog; the topology
# recompute. Prints a table and writes BENCH_OUT (JSON); 192 timed runs
# at the defaults (BENCH_REPS=1 BENCH_BACKLOG=0 BENCH_PAIRS=rabbitmq,qpidd:
# 52). Knobs, as make or
# environment variables: BENCH_N (256-byte messages per case),
# BENCH_N_LARGE (16 KiB), BENCH_REPS (runs per case; the median is
# reported), BENCH_CREDIT, BENCH_ROUTES, BENCH_BACKLOG (0 skips it),
# BENCH_BACKLOG_DATA_PATHS (engine, the only one; go-amqp is refused),
# BENCH_PAIRS (rabbitmq,proton,qpidd: qpidd only with the shared qpidd
# build, see the qpidd target), BENCH_VARIANTS
# (raw,engine,engine-ack,qdrouterd,shovel091,shovel10,fanout,transit-engine,qpidfed:
# fedrouter's queue routes on the engine, and with BENCH_ENGINE_ACK,
# default 100; transit-engine: the transit routers, a run failing when a
# forwarder of the way did not run on the engine; fedrouter and transit,
# fedrouter on go-amqp, were removed on 2026-12-05). BENCH_ROUTES=1 runs
# only the one-route cases.
# A failed run is run again once (reported); a second failure fails the
# case, the bench goes on and exits non-zero. Uses rabbit1,
# rabbit2, rabbit3 (transit-engine), proton1, proton2, qpidd1 and qpidd2 (started if missing), removes what it
# creates, and leaves the brokers running.
BENCH_OUT ?= bench-results.json
bench: build
	$(BROKERS) start -r 3 -p 2
	@if ! $(QPIDD) dir >/dev/null 2>&1; then echo "bench: no shared qpidd build found (bash testdata/qpidd.sh dir): the qpidd pair is skipped"; \
	else case ",$${BENCH_PAIRS-qpidd}," in *,qpidd,*) $(QPIDD) deps >/dev/null && $(QPIDD) start 1 && $(QPIDD) start 2 ;; esac; fi
	$(GO) build -o bin/fedbench ./cmd/fedbench
	bin/fedbench run --fedrouter bin/fedrouter --go $(GO) --out $(BENCH_OUT)

# Starts two RabbitMQ nodes and the Proton C broker, a router with
# testdata/demo.yaml (a queue route, an exchange route, a route to Proton),
# publishes at one broker, shows the messages arriving at the other and
# prints route list, link list and route map.
demo: build
	bash testdata/demo.sh

brokers:
	$(BROKERS) start $(TEST_BROKERS)

brokers-stop:
	$(BROKERS) stop

brokers-status:
	$(BROKERS) status

# Short fuzz runs of what is decoded from outside: the config file, the
# signed advertisements, the transit annotations of a message, the ingress
# allow-list's globs, the frames go-amqp reads (the key guard), a route
# spec as the admin API and the state file decode it, the state file's
# journal as a start replays it (new failing inputs land in
# <pkg>/testdata/fuzz).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./config/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./topology/
	$(GO) test -run '^$$' -fuzz FuzzTransitAnnotations -fuzztime 30s ./links/
	$(GO) test -run '^$$' -fuzz FuzzGlob -fuzztime 10s ./links/
	$(GO) test -run '^$$' -fuzz FuzzKeyGuard -fuzztime 30s ./amqp/
	$(GO) test -run '^$$' -fuzz FuzzSpecUnmarshalJSON -fuzztime 30s ./routes/routespec/
	$(GO) test -run '^$$' -fuzz FuzzJournalReplay -fuzztime 30s ./routes/

clean:
	rm -rf bin

# Fault suite (docs/chaos.md): a router process forwards a durable queue
# route rabbit3 -> rabbit4 while cmd/fedchaos kills -9 and restarts rabbit4,
# kills -9 and restarts the router, and cuts and heals the router's links
# through fault proxies; it fails on any loss, or on more duplicates than
# the route's credit × faults. Only rabbit3 and rabbit4 are used (rabbit4 is
# killed); -r 4 because the harness starts nodes 1..N. The brokers are left
# running (make brokers-stop). chaos: 50,000 messages, 12 faults (~1.5 min),
# then the same with a cluster of CHAOS_CLUSTER members (3; 0 skips it)
# sharing the route through PostgreSQL, which the suite also kills, and 15
# faults (~3 min); chaos-short: 5,000 messages, 4 faults (~35 s);
# chaos-cluster-short: 5,000 messages, a cluster of 3, 5 faults (~45 s).
# CHAOS_FLAGS go to both modes. The suite kills rabbit4 and PostgreSQL:
# run it under the brokers' lock when others share them.
.PHONY: chaos chaos-short chaos-cluster-short
CHAOS_FLAGS ?=
CHAOS_CLUSTER ?= 3
chaos: build postgres
	$(BROKERS) start -r 4 -p 0
	$(GO) build -o bin/fedchaos ./cmd/fedchaos
	bin/fedchaos -fedrouter bin/fedrouter -n 50000 -rounds 3 -timeout 20m $(CHAOS_FLAGS)
	if [ "$(CHAOS_CLUSTER)" != 0 ]; then DATABASE_URL=$$($(POSTGRES) start) && export DATABASE_URL && \
	  bin/fedchaos -fedrouter bin/fedrouter -cluster $(CHAOS_CLUSTER) -n 50000 -rounds 3 -timeout 30m $(CHAOS_FLAGS); fi

chaos-short: build
	$(BROKERS) start -r 4 -p 0
	$(GO) build -o bin/fedchaos ./cmd/fedchaos
	bin/fedchaos -fedrouter bin/fedrouter -n 5000 -rounds 1 -timeout 5m $(CHAOS_FLAGS)

chaos-cluster-short: build postgres
	$(BROKERS) start -r 4 -p 0
	$(GO) build -o bin/fedchaos ./cmd/fedchaos
	DATABASE_URL=$$($(POSTGRES) start) && export DATABASE_URL && \
	  bin/fedchaos -fedrouter bin/fedrouter -cluster 3 -n 5000 -rounds 1 -timeout 8m $(CHAOS_FLAGS)
