package links

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fedrouter/fedrouter/amqp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSource hands out msgs, then blocks (or fails with endErr), and
// records how each message was settled.
type fakeSource struct {
	msgs   []amqp.Message
	endErr error

	mu      sync.Mutex
	settled map[amqp.Message]string
	order   []string
	conds   []string // the conditions of rejects, in order
}

func newSource(n int) *fakeSource {
	s := &fakeSource{settled: map[amqp.Message]string{}}
	for i := 0; i < n; i++ {
		s.msgs = append(s.msgs, amqp.NewMessage([]byte(fmt.Sprint(i))))
	}
	return s
}

func (s *fakeSource) Receive(ctx context.Context) (amqp.Message, error) {
	s.mu.Lock()
	if len(s.msgs) > 0 {
		m := s.msgs[0]
		s.msgs = s.msgs[1:]
		s.mu.Unlock()
		return m, nil
	}
	s.mu.Unlock()
	if s.endErr != nil {
		return amqp.Message{}, s.endErr
	}
	<-ctx.Done()
	return amqp.Message{}, ctx.Err()
}

func (s *fakeSource) record(m amqp.Message, how string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, twice := s.settled[m]; twice {
		return errors.New("settled twice")
	}
	s.settled[m] = how
	s.order = append(s.order, string(m.Data())+"="+how)
	return nil
}
func (s *fakeSource) Accept(_ context.Context, m amqp.Message) error { return s.record(m, "accept") }
func (s *fakeSource) Release(_ context.Context, m amqp.Message) error {
	return s.record(m, "release")
}
func (s *fakeSource) Reject(_ context.Context, m amqp.Message, cond, desc string) error {
	s.mu.Lock()
	s.conds = append(s.conds, cond)
	s.mu.Unlock()
	return s.record(m, "reject:"+desc)
}

func (s *fakeSource) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.settled)
}

// fakeSink answers each message with outcome(body); a nil state means no
// outcome ever (the receipt waits until its context ends).
type fakeSink struct {
	outcome func(body string) (*amqp.Outcome, error)
	mu      sync.Mutex
	sent    []amqp.Message
}

type fakeReceipt struct {
	state *amqp.Outcome // nil: no outcome ever
	err   error
}

func (r fakeReceipt) Wait(ctx context.Context) (amqp.Outcome, error) {
	if r.state == nil && r.err == nil {
		<-ctx.Done()
		return amqp.Outcome{}, ctx.Err()
	}
	if r.err != nil {
		return amqp.Outcome{}, r.err
	}
	return *r.state, nil
}

func (k *fakeSink) Send(_ context.Context, m amqp.Message) (Receipt, error) {
	k.mu.Lock()
	k.sent = append(k.sent, m)
	k.mu.Unlock()
	st, err := k.outcome(string(m.Data()))
	if err != nil && st == nil {
		if amqp.PerMessage(err) {
			return nil, err
		}
	}
	return fakeReceipt{st, err}, nil
}

func outcome(k amqp.OutcomeKind) *amqp.Outcome { return &amqp.Outcome{Kind: k} }

func accepted(string) (*amqp.Outcome, error) { return outcome(amqp.Accepted), nil }

// run forwards until every message of src is settled, then stops.
func run(t *testing.T, src *fakeSource, dst Sink, cfg Config) (*Counters, error) {
	t.Helper()
	n := len(src.msgs)
	var c Counters
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, src, dst, cfg, &c) }()
	deadline := time.Now().Add(5 * time.Second)
	for src.count() < n && src.endErr == nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	err := <-done
	if src.endErr == nil && src.count() != n {
		t.Fatalf("settled %d of %d", src.count(), n)
	}
	return &c, err
}

func TestForwardAcceptsInOrder(t *testing.T) {
	src := newSource(100)
	dst := &fakeSink{outcome: accepted}
	c, err := run(t, src, dst, Config{Window: 7, OutcomeTimeout: time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	for i, m := range dst.sent {
		if string(m.Data()) != fmt.Sprint(i) {
			t.Fatalf("sent %d as %q: out of order", i, m.Data())
		}
	}
	if c.Forwarded.Load() != 100 || c.InFlight.Load() != 0 {
		t.Fatalf("forwarded %d in flight %d", c.Forwarded.Load(), c.InFlight.Load())
	}
}

func TestForwardOutcomes(t *testing.T) {
	outcomes := func(body string) (*amqp.Outcome, error) {
		switch body {
		case "1":
			return outcome(amqp.Released), nil
		case "2":
			o := amqp.Refused("amqp:not-allowed", "nope")
			return &o, nil
		case "3":
			return nil, nil // no outcome
		case "4":
			return outcome(amqp.Modified), nil
		case "5":
			return nil, fmt.Errorf("send: %w", amqp.ErrMessageTooLarge)
		}
		return outcome(amqp.Accepted), nil
	}
	t.Run("reject at source", func(t *testing.T) {
		src := newSource(7)
		c, _ := run(t, src, &fakeSink{outcome: outcomes}, Config{Window: 3, OutcomeTimeout: 50 * time.Millisecond})
		want := map[string]string{"0": "accept", "1": "release", "2": "reject:fedrouter: rejected by the destination",
			"3": "reject:fedrouter: no outcome", "4": "release", "5": "reject:fedrouter: rejected by the destination", "6": "accept"}
		for _, got := range src.order {
			body, how, _ := strings.Cut(got, "=")
			if !strings.HasPrefix(how, want[body]) {
				t.Errorf("message %s settled %q, want %q…", body, how, want[body])
			}
		}
		if c.Forwarded.Load() != 2 || c.Redelivered.Load() != 2 || c.Rejected.Load() != 3 || c.NoOutcome.Load() != 1 {
			t.Fatalf("counters fwd %d redel %d rej %d noout %d", c.Forwarded.Load(), c.Redelivered.Load(), c.Rejected.Load(), c.NoOutcome.Load())
		}
	})
	t.Run("dead letter", func(t *testing.T) {
		src := newSource(7)
		dl := &fakeSink{outcome: accepted}
		cfg := Config{Window: 3, OutcomeTimeout: 50 * time.Millisecond, DeadLetter: dl,
			DeadLetterAnnotations: map[string]string{AnnotationRoute: "r1"}}
		c, _ := run(t, src, &fakeSink{outcome: outcomes}, cfg)
		if c.DeadLettered.Load() != 3 || c.Rejected.Load() != 0 {
			t.Fatalf("dead-lettered %d rejected %d", c.DeadLettered.Load(), c.Rejected.Load())
		}
		for _, m := range dl.sent {
			if m.Annotation(AnnotationRoute) != "r1" || m.AnnotationString(AnnotationReason) == "" {
				t.Fatalf("annotations %v", m.GoAMQP().Annotations)
			}
		}
		if got := dl.sent[1].AnnotationString(AnnotationReason); !strings.Contains(got, "no outcome") {
			t.Fatalf("reason %q", got)
		}
	})
	t.Run("dead-letter queue refuses", func(t *testing.T) {
		src := newSource(3)
		src.msgs = src.msgs[2:3] // only the rejected one
		dl := &fakeSink{outcome: func(string) (*amqp.Outcome, error) { return outcome(amqp.Released), nil }}
		var c Counters
		err := Forward(context.Background(), src, &fakeSink{outcome: outcomes}, Config{Window: 1, OutcomeTimeout: time.Second, DeadLetter: dl}, &c)
		if err == nil || !strings.Contains(err.Error(), "did not accept") || src.order[0] != "2=release" {
			t.Fatalf("err %v settled %v", err, src.order)
		}
	})
}

func TestForwardLinkErrorEndsRun(t *testing.T) {
	src := newSource(5)
	linkErr := errors.New("link detached")
	dst := &fakeSink{outcome: func(b string) (*amqp.Outcome, error) {
		if b == "3" {
			return nil, linkErr
		}
		return outcome(amqp.Accepted), nil
	}}
	var c Counters
	err := Forward(context.Background(), src, dst, Config{Window: 10, OutcomeTimeout: time.Second}, &c)
	if !errors.Is(err, linkErr) {
		t.Fatalf("err %v, want the link error", err)
	}
	if c.InFlight.Load() != 0 {
		t.Fatalf("in flight %d after the run", c.InFlight.Load())
	}
	if c.Forwarded.Load() != 3 {
		t.Fatalf("forwarded %d, want the 3 before the failure", c.Forwarded.Load())
	}
}

func TestUndecodable(t *testing.T) {
	if _, ok := Undecodable(errors.New("x")); ok {
		t.Fatal("plain error taken for undecodable")
	}
}

func TestForwardLimitEndsCleanly(t *testing.T) {
	src := newSource(10)
	var c Counters
	err := Forward(context.Background(), src, &fakeSink{outcome: accepted}, Config{Window: 1, Limit: 4, OutcomeTimeout: time.Second}, &c)
	if err != nil {
		t.Fatalf("err %v, want a clean end at the limit", err)
	}
	if c.Forwarded.Load() != 4 || c.Sent.Load() != 4 || c.Settled() != 4 || src.count() != 4 {
		t.Fatalf("forwarded %d sent %d settled %d", c.Forwarded.Load(), c.Sent.Load(), src.count())
	}
}

func TestForwardPrepareDropsLoopedMessages(t *testing.T) {
	src := newSource(6)
	dst := &fakeSink{outcome: accepted}
	cfg := Config{Window: 2, OutcomeTimeout: time.Second, Prepare: func(m amqp.Message) bool {
		m.SetAnnotation("x-trace", "seen")
		return string(m.Data()) != "2" && string(m.Data()) != "4"
	}}
	c, _ := run(t, src, dst, cfg)
	if c.Looped.Load() != 2 || c.Forwarded.Load() != 4 || len(dst.sent) != 4 {
		t.Fatalf("looped %d forwarded %d sent %d", c.Looped.Load(), c.Forwarded.Load(), len(dst.sent))
	}
	for _, m := range dst.sent {
		if m.AnnotationString("x-trace") != "seen" {
			t.Fatalf("Prepare's change not sent: %v", m.GoAMQP().Annotations)
		}
	}
	if got := strings.Join(src.order, " "); got != "0=accept 1=accept 2=accept 3=accept 4=accept 5=accept" {
		t.Fatalf("settled out of order or not all: %s", got)
	}
}

// A refusal made by the router itself (condition fed:...) reaches the
// source with its own condition and reason; a dead-letter carries the time.
func TestForwardRouterRefusalKeepsItsCondition(t *testing.T) {
	noPath := func(string) (*amqp.Outcome, error) {
		o := amqp.Refused("fed:no-path", "no-path: no path to broker b")
		o.Local = true // as links.Refusal makes it
		return &o, nil
	}
	src := newSource(2)
	if _, err := run(t, src, &fakeSink{outcome: noPath}, Config{Window: 2, OutcomeTimeout: time.Second}); !errors.Is(err, context.Canceled) {
		t.Fatalf("reject run: %v", err)
	}
	if fmt.Sprint(src.conds) != "[fed:no-path fed:no-path]" || !strings.HasPrefix(src.order[0], "0=reject:fedrouter: no-path: no path to broker b") {
		t.Fatalf("conditions %v, settled %v", src.conds, src.order)
	}
	dl := &fakeSink{outcome: accepted}
	if _, err := run(t, newSource(1), &fakeSink{outcome: noPath}, Config{Window: 1, OutcomeTimeout: time.Second, DeadLetter: dl}); !errors.Is(err, context.Canceled) {
		t.Fatalf("dead-letter run: %v", err)
	}
	if _, ok := dl.sent[0].Annotation(AnnotationTime).(time.Time); !ok || dl.sent[0].AnnotationString(AnnotationReason) != "no-path: no path to broker b" {
		t.Fatalf("dead-letter annotations %v", dl.sent[0].GoAMQP().Annotations)
	}
}

// slowReceipt answers accepted after a delay: an outcome still in flight
// when the run is told to drain.
type slowReceipt struct{ d time.Duration }

func (r slowReceipt) Wait(ctx context.Context) (amqp.Outcome, error) {
	select {
	case <-time.After(r.d):
		return amqp.Outcome{Kind: amqp.Accepted}, nil
	case <-ctx.Done():
		return amqp.Outcome{}, ctx.Err()
	}
}

type slowSink struct {
	mu   sync.Mutex
	sent int
}

func (k *slowSink) Send(context.Context, amqp.Message) (Receipt, error) {
	k.mu.Lock()
	k.sent++
	k.mu.Unlock()
	return slowReceipt{50 * time.Millisecond}, nil
}

// Drain ends a run cleanly: what was sent is settled after its outcome,
// nothing more is taken from the source, and Forward returns nil.
func TestForwardDrainSettlesInFlight(t *testing.T) {
	src := newSource(1000)
	sink := &slowSink{}
	drain := make(chan struct{})
	var c Counters
	done := make(chan error, 1)
	go func() {
		done <- Forward(context.Background(), src, sink, Config{Window: 10, OutcomeTimeout: time.Second, Drain: drain}, &c)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for c.Sent.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(drain)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Forward after a drain: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Forward did not return after the drain")
	}
	sink.mu.Lock()
	sent := sink.sent
	sink.mu.Unlock()
	if got := src.count(); got != sent || int(c.Forwarded.Load()) != sent {
		t.Fatalf("sent %d, settled %d, forwarded %d: a drained run settles exactly what it sent", sent, got, c.Forwarded.Load())
	}
	if sent >= 1000 {
		t.Fatalf("the drain did not stop the run: all %d sent", sent)
	}
}
