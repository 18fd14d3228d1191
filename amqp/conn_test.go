package amqp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock hands every requested delay to the test, which fires it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	delays chan time.Duration
	fire   chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_700_000_000, 0), delays: make(chan time.Duration, 16), fire: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.delays <- d
	return c.fire
}

// expectDelay waits for the loop to ask for a delay, checks it, advances
// time and fires it.
func (c *fakeClock) expectDelay(t *testing.T, want time.Duration) {
	t.Helper()
	select {
	case d := <-c.delays:
		if d != want {
			t.Fatalf("delay %v, want %v", d, want)
		}
		c.advance(d)
		c.fire <- c.Now()
	case <-time.After(5 * time.Second):
		t.Fatalf("no delay requested (want %v)", want)
	}
}

type fakeTransport struct {
	done chan struct{}
	once sync.Once
	err  error
}

func newFakeTransport() *fakeTransport         { return &fakeTransport{done: make(chan struct{})} }
func (f *fakeTransport) Done() <-chan struct{} { return f.done }
func (f *fakeTransport) Err() error            { return f.err }
func (f *fakeTransport) Close() error          { f.once.Do(func() { close(f.done) }); return nil }

// drop is the peer ending the connection.
func (f *fakeTransport) drop() { _ = f.Close() } // a fake: Close cannot fail

// script answers dials in order: an error, or a transport.
type script struct {
	mu    sync.Mutex
	steps []any
	dials []string
}

func (s *script) dial(_ context.Context, t dialTarget) (transport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dials = append(s.dials, t.addr)
	if len(s.steps) == 0 {
		return nil, errors.New("script exhausted")
	}
	step := s.steps[0]
	s.steps = s.steps[1:]
	switch v := step.(type) {
	case error:
		return nil, v
	case *fakeTransport:
		return v, nil
	}
	panic(fmt.Sprintf("bad step %T", step))
}

func (s *script) dialCount() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.dials) }

func testConn(t *testing.T, urls []string, s *script, clk *fakeClock) (*Conn, chan Status) {
	t.Helper()
	states := make(chan Status, 64)
	cfg := BrokerConfig{Name: "b1", URLs: urls, Profile: "generic"}
	c, err := Dial(context.Background(), cfg, ConnOptions{
		Clock:   clk,
		Backoff: Backoff{Min: 2 * time.Second, Max: 64 * time.Second}, // no jitter: exact delays
		OnState: func(st Status) { states <- st },
		dial:    s.dial,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mustClose(t, c) }) // idempotent: tests may close first
	return c, states
}

func mustClose(t *testing.T, c *Conn) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func waitState(t *testing.T, states chan Status, want State) Status {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case st := <-states:
			if st.State == want {
				return st
			}
		case <-timeout:
			t.Fatalf("state %s not reached", want)
		}
	}
}

func TestConnBacksOffThenConnects(t *testing.T) {
	clk := newFakeClock()
	refused := errors.New("connection refused")
	tr := newFakeTransport()
	s := &script{steps: []any{refused, refused, refused, tr}}
	_, states := testConn(t, []string{"amqp://h1:5672"}, s, clk)

	st := waitState(t, states, Waiting)
	if st.LastError == nil || st.Attempt != 1 {
		t.Fatalf("after first failure: %+v", st)
	}
	// The next attempt's time, for listings to count down to.
	if st.RetryIn != 2*time.Second || !st.RetryAt.Equal(st.LastErrorAt.Add(2*time.Second)) {
		t.Fatalf("retry: in %s at %v, failed at %v", st.RetryIn, st.RetryAt, st.LastErrorAt)
	}
	clk.expectDelay(t, 2*time.Second)
	clk.expectDelay(t, 4*time.Second)
	clk.expectDelay(t, 8*time.Second)
	st = waitState(t, states, Operational)
	if st.Generation != 1 || st.Attempt != 0 || st.URL != "amqp://h1:5672" || !st.RetryAt.IsZero() {
		t.Fatalf("operational status: %+v", st)
	}
	if !errors.Is(st.LastError, refused) {
		t.Fatalf("last error not kept: %v", st.LastError)
	}
}

func TestConnStopsRetryingAfterAuthFailure(t *testing.T) {
	clk := newFakeClock()
	s := &script{steps: []any{errors.New("SASL PLAIN auth failed with code 0x1")}}
	c, states := testConn(t, []string{"amqp://h1:5672", "amqp://h2:5672"}, s, clk)
	st := waitState(t, states, Failed)
	if !errors.Is(st.LastError, ErrAuth) || Classify(st.LastError) != ScopeAuth {
		t.Fatalf("failed status: %+v", st)
	}
	if _, _, err := c.WaitOperational(context.Background()); Classify(err) != ScopeAuth {
		t.Fatalf("WaitOperational on a failed conn: %v", err)
	}
	select {
	case d := <-clk.delays:
		t.Fatalf("a retry was scheduled after an auth failure (%v)", d)
	default:
	}
	mustClose(t, c)
	if n := s.dialCount(); n != 1 {
		t.Fatalf("%d dials, want 1 (no retry, not even the failover URL)", n)
	}
	if st, _ := c.Status(); st.State != Closed {
		t.Fatalf("state after Close: %s", st.State)
	}
}

func TestConnFailsOverToNextURLAndSticksToIt(t *testing.T) {
	clk := newFakeClock()
	tr1, tr2 := newFakeTransport(), newFakeTransport()
	s := &script{steps: []any{errors.New("refused"), tr1, tr2}}
	_, states := testConn(t, []string{"amqp://h1:5672", "amqp://h2:5672"}, s, clk)
	st := waitState(t, states, Operational)
	if st.URL != "amqp://h2:5672" {
		t.Fatalf("connected to %s, want the second URL", st.URL)
	}
	// Lose the connection after it was stable: re-dial at once, same URL.
	clk.advance(time.Minute)
	tr1.err = io.EOF
	tr1.drop()
	st = waitState(t, states, Waiting)
	if !errors.Is(st.LastError, io.EOF) {
		t.Fatalf("loss cause not kept: %v", st.LastError)
	}
	st = waitState(t, states, Operational)
	if st.Generation != 2 {
		t.Fatalf("generation %d after reconnect, want 2", st.Generation)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := []string{"amqp://h1:5672", "amqp://h2:5672", "amqp://h2:5672"}
	if fmt.Sprint(s.dials) != fmt.Sprint(want) {
		t.Fatalf("dials %v, want %v", s.dials, want)
	}
}

func TestConnFlappingKeepsBackingOff(t *testing.T) {
	clk := newFakeClock()
	tr1, tr2, tr3 := newFakeTransport(), newFakeTransport(), newFakeTransport()
	s := &script{steps: []any{tr1, tr2, tr3}}
	_, states := testConn(t, []string{"amqp://h1:5672"}, s, clk)
	waitState(t, states, Operational)
	// Each connection dies before StableAfter: the backoff must grow.
	tr1.drop()
	clk.expectDelay(t, 2*time.Second)
	waitState(t, states, Operational)
	tr2.drop()
	clk.expectDelay(t, 4*time.Second)
	waitState(t, states, Operational)
	tr3.drop()
	clk.expectDelay(t, 8*time.Second)
}

func TestConnReportBrokenDropsOnlyCurrentGeneration(t *testing.T) {
	clk := newFakeClock()
	tr1, tr2 := newFakeTransport(), newFakeTransport()
	s := &script{steps: []any{tr1, tr2}}
	c, states := testConn(t, []string{"amqp://h1:5672"}, s, clk)
	st := waitState(t, states, Operational)
	clk.advance(time.Minute)                                             // stable: the re-dial is immediate
	c.ReportBroken(st.Generation, &Error{Scope: ScopeLink, Err: io.EOF}) // link scope: ignored
	c.ReportBroken(st.Generation+7, &Error{Scope: ScopeConn, Err: io.EOF})
	c.ReportBroken(st.Generation, &Error{Scope: ScopeConn, Err: io.EOF})
	st = waitState(t, states, Operational)
	if st.Generation != 2 {
		t.Fatalf("generation %d, want 2", st.Generation)
	}
	select {
	case <-tr1.Done():
	default:
		t.Fatal("the reported connection was not closed")
	}
}

func TestConnCloseWhileWaiting(t *testing.T) {
	clk := newFakeClock()
	s := &script{steps: []any{errors.New("refused")}}
	c, states := testConn(t, []string{"amqp://h1:5672"}, s, clk)
	waitState(t, states, Waiting)
	<-clk.delays // the loop now waits for the timer
	mustClose(t, c)
	mustClose(t, c) // idempotent
	if st, _ := c.Status(); st.State != Closed {
		t.Fatalf("state %s after Close", st.State)
	}
}

func TestDialRejectsBadConfig(t *testing.T) {
	_, err := Dial(context.Background(), BrokerConfig{Name: "x", URLs: []string{"http://h"}, Profile: "nope", SASL: "kerberos"}, ConnOptions{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"scheme must be amqp or amqps", `unknown broker profile "nope"`, `unknown SASL mechanism "kerberos"`} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func contains(s, sub string) bool { return indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestCredentialsLeaveTheURL(t *testing.T) {
	cfg := BrokerConfig{Name: "x", URLs: []string{"amqp://bob:s3cret@h:5672"}, Profile: "generic"}
	ts, err := cfg.dialTargets("c")
	if err != nil {
		t.Fatal(err)
	}
	if ts[0].addr != "amqp://h:5672" || indexOf(ts[0].redacted, "s3cret") >= 0 {
		t.Fatalf("target %+v leaks or keeps credentials", ts[0])
	}
	if ts[0].opts.SASLType == nil {
		t.Fatal("no SASL PLAIN from URL credentials")
	}
	cfg = BrokerConfig{Name: "x", URLs: []string{"amqps://h:5671"}, Profile: "generic", SASL: SASLExternal}
	if ts, err = cfg.dialTargets("c"); err != nil || ts[0].opts.TLSConfig == nil || ts[0].opts.SASLType == nil {
		t.Fatalf("amqps+external: %+v, %v", ts, err)
	}
}
