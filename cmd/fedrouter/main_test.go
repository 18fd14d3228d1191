package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// buildBinary builds fedrouter once per test binary run.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fedrouter-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "fedrouter")
		out, err := exec.Command("go", "build", "-race", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Parallel end-to-end tests. Go runs a package's serial tests first and
// releases the parallel ones (those that called t.Parallel) only once
// every serial one has returned, so a serial test never overlaps another
// test. Serial stay the tests that kill, pause or restart a shared broker
// or the store, those whose cluster leases run on time, those whose
// timings the docs quote as measured, and those that set the
// environment (t.Setenv). A parallel one starts its own router processes
// (admin API on a free port, state in t.TempDir()), names what it
// creates on the brokers after t.Name() (brokertest.UniqueName) and gives
// its routers ids no other running test uses (uniqueRouterID).
//
// e2eSlots bounds how many run at once (-parallel, TestMain): each drives
// race-built routers against the brokers, and on the 2-core test machine
// more than e2eParallel buys little and brings deadlines closer.
var e2eSlots *slots

const e2eParallel = 3

// Lanes: tests whose routers share broker-side state by design run one at
// a time, each still beside the tests of other lanes.
var (
	// limitsLane: a router with destination limits removes, as it starts,
	// every limit policy on its brokers that no router it hears of limits
	// (router.globalDests.sweep) — another test's too.
	limitsLane sync.Mutex
	// linkStateLane: routers with link state take messages from the
	// brokers' transit queues (fedrouter.transit.D), which every router
	// on a broker shares.
	linkStateLane sync.Mutex
)

// parallelE2E makes t a parallel test, holding lanes (in the order
// given: limitsLane before linkStateLane) and one of e2eSlots while it
// runs. A test in a lane goes first to a free slot: a lane's tests run
// one after another, so the lanes are the longest chains of the run.
func parallelE2E(t *testing.T, lanes ...*sync.Mutex) {
	t.Parallel()
	released := time.Now()
	for _, l := range lanes {
		l.Lock()
		t.Cleanup(l.Unlock)
	}
	e2eSlots.acquire(len(lanes) > 0)
	t.Cleanup(e2eSlots.release)
	if waited := time.Since(released); waited > time.Second {
		// Go's time for the test counts the wait: say how much it was.
		t.Logf("waited %s for its lanes and a slot", waited.Round(time.Millisecond))
	}
}

// slots is a counting semaphore whose urgent waiters go before the
// others.
type slots struct {
	mu     sync.Mutex
	cond   *sync.Cond
	free   int
	urgent int // urgent waiters
}

func newSlots(n int) *slots {
	s := &slots{free: n}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *slots) acquire(urgent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if urgent {
		s.urgent++
		defer func() { s.urgent--; s.cond.Broadcast() }() // the others may go on once none is urgent
	}
	for s.free == 0 || (!urgent && s.urgent > 0) {
		s.cond.Wait()
	}
	s.free--
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free++
	s.cond.Broadcast()
}

// TestMain takes -parallel (default e2eParallel) as the size of
// e2eSlots, and lifts Go's own bound: a test waiting for a lane must not
// hold a place that a test of another lane could run in.
func TestMain(m *testing.M) {
	flag.Parse()
	n := e2eParallel
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			n, _ = strconv.Atoi(f.Value.String()) // the testing package parsed it
		}
	})
	e2eSlots = newSlots(max(n, 1))
	if err := flag.Set("test.parallel", "64"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// routerSeq numbers the router ids uniqueRouterID gives.
var routerSeq atomic.Int64

// uniqueRouterID returns base with a suffix no other router of this run,
// nor of another test binary running beside it, has: broker-side names
// derive from a router's id (its destination-events queues, its
// subscriptions), so two tests' routers must not share one.
func uniqueRouterID(base string) string {
	return fmt.Sprintf("%s-%d-%d", base, os.Getpid(), routerSeq.Add(1))
}

func TestCheckConfigReportsFileAndLine(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: rabit}\ncolour: red\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary(t), "check-config", bad).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2\n%s", err, out)
	}
	for _, want := range []string{bad + `:3: broker "a": unknown broker profile "rabit"`, bad + `:4: unknown key "colour"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(binary(t), "check-config", "../../testdata/config/good.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok (router paris-1, 3 brokers)") {
		t.Fatalf("good config: %v\n%s", err, out)
	}
}

// withAdminPort gives the admin API of a test configuration a free
// loopback port in place of its 127.0.0.1:0: a configuration names the
// port the CLI finds, and check-config and run refuse port 0. Another
// process could take the port first; the router then fails to start and
// says so.
func withAdminPort(t *testing.T, yaml string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(`"127.0.0.1:0"`, `"`+addr+`"`, `'127.0.0.1:0'`, `'`+addr+`'`).Replace(yaml)
}

// syncBuffer is a bytes.Buffer safe for a process writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

var waitingRow = regexp.MustCompile(`(?m)^gone\s+amqp://127\.0\.0\.1:1\s+Waiting\s`)

func TestRunConnectsAndStopsOnSIGTERM(t *testing.T) {
	parallelE2E(t)
	bs := brokertest.Require(t, "rabbit1", "proton1")
	cfg := fmt.Sprintf(`router_id: proc-test
brokers:
  - {name: r1, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
  - {name: p1, url: %q, profile: proton}
  - {name: gone, url: "amqp://127.0.0.1:1", profile: generic}
reconnect: {min: 100ms, max: 1s}
log: {level: debug, format: json}
admin: {listen: off}
`, bs[0].URL, bs[0].MgmtURL, bs[1].URL)
	path := filepath.Join(t.TempDir(), "router.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "run", "--config", path, "--status-every", "100ms")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		s := out.String()
		for _, b := range []string{"r1", "p1"} {
			if !logged(s, b, "Operational") {
				return fmt.Errorf("no Operational state logged for %s:\n%s", b, s)
			}
		}
		// The unreachable broker is retried, with its error shown.
		if !waitingRow.MatchString(s) || !strings.Contains(s, "connection refused") {
			return fmt.Errorf("unreachable broker not shown as Waiting:\n%s", s)
		}
		return nil
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, out.String())
	}
	s := out.String()
	for _, b := range []string{"r1", "p1", "gone"} {
		if !logged(s, b, "Closed") {
			t.Errorf("broker %s not reported Closed:\n%s", b, s)
		}
	}
}

// logged reports whether a JSON log line says broker b entered state.
func logged(out, b, state string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, fmt.Sprintf(`"broker":%q`, b)) && strings.Contains(line, fmt.Sprintf(`"state":%q`, state)) {
			return true
		}
	}
	return false
}
