package routes_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	"github.com/rs/zerolog"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// logBuffer keeps a harness's log lines for a test to count.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// stallHarness is a harness on rabbit1 and rabbit2 with stall_after
// after, whose log is also kept.
func stallHarness(t *testing.T, dataPath string, after time.Duration) (*harness, *logBuffer) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	h.m.Stop(context.Background())
	logs := &logBuffer{}
	h.opts.Log = zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), logs)).Level(zerolog.InfoLevel)
	h.opts.StallAfter = after
	h.start()
	return h, logs
}

// waitFor waits until route id is in state with a detail that holds
// detail, and returns its status.
// stalledOnce waits for route id to attach and then be Stalled with
// detail, and checks that it re-attached once only: still stalled after
// that, it says so once, and 3 stall_after later (long enough for a
// looping re-attach to show) it has announced one re-attach and attached
// twice (the first attach and the re-attach).
func (h *harness) stalledOnce(logs *logBuffer, id, detail string, after time.Duration) {
	t := h.t
	t.Helper()
	up := h.waitState(id, routes.StateOperational).Since
	st := h.waitFor(id, routes.StateStalled, detail)
	t.Logf("Stalled %s after the route was attached (stall_after %s): %s", st.Since.Sub(up).Round(time.Millisecond), after, st.Detail)
	brokertest.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		if n := logs.count("not re-attached again"); n != 1 {
			return fmt.Errorf("%d lines saying it is not re-attached again", n)
		}
		return nil
	})
	time.Sleep(3 * after) // nothing to poll for: the test is that nothing happens
	if n := logs.count("re-attaching its links once"); n != 1 {
		t.Fatalf("%d lines announcing a re-attach: want exactly one", n)
	}
	if n := logs.count("not re-attached again"); n != 1 {
		t.Fatalf("%d lines saying it is not re-attached again: want one", n)
	}
	if n := logs.count(`"state":"Connecting"`); n != 2 {
		t.Fatalf("the route attached %d times: want 2", n)
	}
}

func (h *harness) waitFor(id string, state routes.State, detail string) routes.Status {
	h.t.Helper()
	var st routes.Status
	brokertest.Eventually(h.t, 60*time.Second, 20*time.Millisecond, func() error {
		st, _ = h.m.Get(id)
		if st.State != state || !strings.Contains(st.Detail, detail) {
			return fmt.Errorf("route %s: %s (%q), last error %q; want %s (%q)", id, st.State, st.Detail, st.LastError, state, detail)
		}
		return nil
	})
	return st
}

// A route whose source queue does not exist yet waits for it, says so in
// plain words, and starts by itself once it is declared.
func TestIntegrationRouteWaitsForSourceQueue(t *testing.T) {
	onEachDataPath(t, routeWaitsForSourceQueue)
}

func routeWaitsForSourceQueue(t *testing.T, dataPath string) {
	h, _ := stallHarness(t, dataPath, time.Minute)
	src, ex, dq := brokertest.UniqueName(t, "h-stall-src"), brokertest.UniqueName(t, "h-stall-ex"), brokertest.UniqueName(t, "h-stall-dq")
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	r := h.add(routes.Spec{Kind: routes.KindQueue, Src: "rabbit1", Dest: "rabbit2", Exchange: ex, Queue: src})
	st := h.waitFor(r.ID, routes.StateWaiting, "waiting for queue "+src+" at broker rabbit1")
	if st.LastError != "queue "+src+" does not exist at broker rabbit1" {
		t.Fatalf("last error %q: want the missing queue in plain words", st.LastError)
	}
	created := time.Now()
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	h.waitState(r.ID, routes.StateOperational)
	t.Logf("source queue declared: route Operational after %s", time.Since(created).Round(time.Millisecond))
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 100, 500, brokertest.Numbered)
	brokertest.CheckInOrderOnce(t, brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 500, 30*time.Second), 500)
}

// A route whose destination exchange is deleted waits for it, and
// forwards what waited at its source once the exchange is back: nothing
// is lost.
func TestIntegrationRouteWaitsForDestinationExchange(t *testing.T) {
	onEachDataPath(t, routeWaitsForDestinationExchange)
}

func routeWaitsForDestinationExchange(t *testing.T, dataPath string) {
	h, _ := stallHarness(t, dataPath, time.Minute)
	src, ex, dq := brokertest.UniqueName(t, "h-stall-src"), brokertest.UniqueName(t, "h-stall-ex"), brokertest.UniqueName(t, "h-stall-dq")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	r := h.add(routes.Spec{Kind: routes.KindQueue, Src: "rabbit1", Dest: "rabbit2", Exchange: ex, Queue: src})
	h.waitState(r.ID, routes.StateOperational)
	s := h.session("rabbit1")
	brokertest.SendAll(t, s, "/amq/queue/"+src, 100, 200, brokertest.Numbered)
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 200, 30*time.Second)

	m := h.mgmt("rabbit2")
	if err := m.DeleteExchange(t.Context(), ex); err != nil {
		t.Fatal(err)
	}
	brokertest.SendAll(t, s, "/amq/queue/"+src, 100, 300, func(i int) *goamqp.Message { return brokertest.Numbered(200 + i) })
	st := h.waitFor(r.ID, routes.StateWaiting, "waiting for exchange "+ex+" at broker rabbit2")
	t.Logf("exchange deleted: route %s (%s), last error %q", st.State, st.Detail, st.LastError)
	recreated := time.Now()
	if err := m.DeclareExchange(t.Context(), ex, "fanout", true); err != nil {
		t.Fatal(err)
	}
	if err := m.Bind(t.Context(), ex, dq, ""); err != nil {
		t.Fatal(err)
	}
	h.waitState(r.ID, routes.StateOperational)
	t.Logf("exchange re-created: route Operational after %s", time.Since(recreated).Round(time.Millisecond))
	got = append(got, brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 300, 30*time.Second)...)
	if dups := brokertest.CheckNoLoss(t, got, 500); dups > 0 {
		t.Logf("%d duplicates", dups)
	}
}

// A route whose source holds messages that never reach it is Stalled —
// here a single-active-consumer queue another consumer holds: the route
// is attached with credit granted, and nothing arrives. It is re-attached
// once, then left attached (one log line each), and is Operational again
// as soon as it forwards.
func TestIntegrationStalledRoute(t *testing.T) { onEachDataPath(t, stalledRoute) }

func stalledRoute(t *testing.T, dataPath string) {
	const after = 3 * time.Second
	h, logs := stallHarness(t, dataPath, after)
	src, ex, dq := brokertest.UniqueName(t, "h-stall-src"), brokertest.UniqueName(t, "h-stall-ex"), brokertest.UniqueName(t, "h-stall-dq")
	m := h.mgmt("rabbit1")
	if err := m.DeclareQueue(t.Context(), src, famqp.QueueArgs{Durable: true, Arguments: map[string]any{"x-single-active-consumer": true}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.DeleteQueue(context.Background(), src) })
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	s := h.session("rabbit1")
	brokertest.SendAll(t, s, "/amq/queue/"+src, 100, 100, brokertest.Numbered)

	// The active consumer: takes one message and sits on it.
	holder := brokertest.Session(t, h.conns["rabbit1"])
	hr := brokertest.OpenReceiver(t, holder, famqp.LinkSpec{Address: "/amq/queue/" + src}, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	if _, err := hr.Receive(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	cancel()

	r := h.add(routes.Spec{Kind: routes.KindQueue, Src: "rabbit1", Dest: "rabbit2", Exchange: ex, Queue: src})
	h.stalledOnce(logs, r.ID, "the source holds", after)
	if st, _ := h.m.Get(r.ID); st.State != routes.StateStalled || st.Forwarded != 0 {
		t.Fatalf("route %s, %d forwarded: want still Stalled, nothing forwarded", st.State, st.Forwarded)
	}

	// The holder goes: the route becomes the active consumer and forwards.
	released := time.Now()
	famqp.CloseSessionContext(t.Context(), holder)
	h.waitState(r.ID, routes.StateOperational)
	t.Logf("Operational again %s after the other consumer went", time.Since(released).Round(time.Millisecond))
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 100, 30*time.Second)
	brokertest.CheckNoLoss(t, got, 100)
	if n := logs.count("forwards again after being stalled"); n != 1 {
		t.Fatalf("%d lines saying it forwards again: want one", n)
	}
}

// startNoSettle starts testdata/nosettle.py, a peer that takes messages
// and settles none until it is sent SIGUSR1, on a free loopback port of
// its own; it is killed at cleanup. It returns the peer's process and
// its broker configuration. args go to the script (--reject: it rejects
// every message instead).
func startNoSettle(t *testing.T, args ...string) (*os.Process, famqp.BrokerConfig) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", append([]string{"../testdata/nosettle.py", addr}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	drained := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-drained // every read done before Wait closes the pipe
		_ = cmd.Wait()
	})
	if !lines.Scan() || lines.Text() != "listening" {
		close(drained)
		t.Fatalf("nosettle.py did not start: %q %v", lines.Text(), lines.Err())
	}
	go func() { // reads until the process ends (killed at cleanup)
		defer close(drained)
		for lines.Scan() {
		}
	}()
	return cmd.Process, famqp.BrokerConfig{Name: "nosettle", URLs: []string{"amqp://" + addr}, Profile: "proton"}
}

// A destination that accepts the attach and the messages but settles
// none: the route holds them in flight, forwards nothing, and is Stalled
// (a profile-independent sign: what the route itself holds); re-attached
// once, then left; Operational again once the destination settles.
func TestIntegrationStalledRouteDestinationNeverSettles(t *testing.T) {
	onEachDataPath(t, stalledRouteDestinationNeverSettles)
}

func stalledRouteDestinationNeverSettles(t *testing.T, dataPath string) {
	const after = 2 * time.Second
	peer, cfg := startNoSettle(t)
	h := newHarnessOn(t, dataPath, "rabbit1")
	h.m.Stop(context.Background())
	logs := &logBuffer{}
	h.opts.Log = zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), logs)).Level(zerolog.InfoLevel)
	h.opts.StallAfter = after
	c := brokertest.Dial(t, cfg, famqp.ConnOptions{Backoff: famqp.Backoff{Min: 200 * time.Millisecond, Max: time.Second}})
	h.opts.Brokers["nosettle"] = famqp.Broker{Conn: c, Profile: brokertest.Profile(t, cfg)}
	h.start()
	src := brokertest.UniqueName(t, "h-stall-src")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 20, 20, brokertest.Numbered)

	r := h.add(routes.Spec{Kind: routes.KindQueue, Src: "rabbit1", Dest: "nosettle", Exchange: "sink", Queue: src, OutcomeTimeout: 10 * time.Minute})
	h.stalledOnce(logs, r.ID, "20 messages sent to the destination wait for its outcome", after)

	settled := time.Now()
	if err := peer.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	h.waitState(r.ID, routes.StateOperational)
	t.Logf("Operational again %s after the destination began to settle", time.Since(settled).Round(time.Millisecond))
	brokertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		if st, _ := h.m.Get(r.ID); st.Forwarded < 20 || st.InFlight != 0 {
			return fmt.Errorf("forwarded %d, in flight %d", st.Forwarded, st.InFlight)
		}
		return nil
	})
}
