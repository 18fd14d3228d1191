# fedrouter — see README.md. `make test` and `make demo` are the contract.
GO       ?= go
BROKERS  := bash testdata/brokers.sh
# Brokers the tests use: RabbitMQ nodes (four: the topology test attaches
# three routers to a chain of them), Proton C brokers, Proton Python brokers.
TEST_BROKERS ?= -r 4 -p 1 -y 1
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: all build vet test test-short integration bench demo brokers brokers-stop brokers-status fuzz clean

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/fedrouter ./cmd/fedrouter

vet:
	$(GO) vet ./...

# Fast inner loop: unit tests only, no brokers.
test-short:
	$(GO) test -short -race ./...

# go vet + unit + integration tests with -race against real brokers, which
# are installed if missing (root, Debian packages), started once for the
# run and stopped after (KEEP_BROKERS=1 leaves them running). Packages run
# one at a time (-p 1): some tests kill and restart a shared broker, which
# would break another package's test running beside them.
test: vet
	$(BROKERS) start $(TEST_BROKERS)
	$(GO) test -p 1 -race -count=1 -timeout 20m ./... ; rc=$$?; \
	  if [ "$(KEEP_BROKERS)" != 1 ]; then $(BROKERS) stop; fi; exit $$rc

# Benchmarks, reported as ratios against a baseline measured in the same
# run: a queue route RabbitMQ -> RabbitMQ next to a raw go-amqp
# receive-send-accept loop (BENCH_N messages of 256 bytes, BENCH_COUNT
# rounds), and the shortest-path recompute.
BENCH_N     ?= 20000
BENCH_COUNT ?= 3
bench:
	$(BROKERS) start -r 2
	$(GO) test -run '^$$' -bench Forward -benchtime $(BENCH_N)x -count $(BENCH_COUNT) ./routes/
	$(GO) test -run '^$$' -bench . ./topology/

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

# Short fuzz run of the config decoder (seeds in router/config_test.go; new
# failing inputs land in router/testdata/fuzz).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 30s ./router/

clean:
	rm -rf bin
