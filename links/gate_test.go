package links

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// A closed gate holds a send until it opens; a refusal by the instance is
// a release at the source (nothing lost, nothing rejected there) and
// closes the gate for RefusalPause; the router's own refusal passes as it
// is.
func TestGatedSinkWithholdsAndReleasesRefusals(t *testing.T) {
	refuse := true
	k := &fakeSink{outcome: func(string) (*amqp.Outcome, error) {
		if refuse {
			o := amqp.Refused("amqp:resource-limit-exceeded", "max-length")
			return &o, nil
		}
		return outcome(amqp.Accepted), nil
	}}
	g := NewGate()
	s := GatedSink{Sink: k, Gate: g}
	g.Set(true)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, err := s.Send(ctx, amqp.NewMessage([]byte("a"))); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("send through a closed gate: %v, want it held until the context ended", err)
	}
	cancel()
	if len(k.sent) != 0 {
		t.Fatalf("%d sent through a closed gate", len(k.sent))
	}
	sent := make(chan Receipt, 1)
	go func() { // owned: joined through sent
		r, err := s.Send(context.Background(), amqp.NewMessage([]byte("b")))
		if err != nil {
			t.Error(err)
		}
		sent <- r
	}()
	time.Sleep(20 * time.Millisecond) // held (the check above proved a closed gate holds)
	g.Set(false)
	r := <-sent
	o, err := r.Wait(context.Background())
	if err != nil || o.Kind != amqp.Released {
		t.Fatalf("a refusal by the instance: %v %v, want released", o, err)
	}
	if !g.Closed() {
		t.Fatal("the gate is open right after a refusal")
	}
	refuse = false
	start := time.Now()
	r, err = s.Send(context.Background(), amqp.NewMessage([]byte("c")))
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < RefusalPause/2 {
		t.Errorf("sent %s after a refusal, want about %s later", waited, RefusalPause)
	}
	if o, _ := r.Wait(context.Background()); o.Kind != amqp.Accepted {
		t.Errorf("after the pause: %v, want accepted", o)
	}
	local := GatedSink{Sink: &fakeSink{outcome: func(string) (*amqp.Outcome, error) {
		o := amqp.Outcome{Kind: amqp.Rejected, Local: true, Condition: "fed:no-path"}
		return &o, nil
	}}, Gate: NewGate()}
	r, _ = local.Send(context.Background(), amqp.NewMessage([]byte("d")))
	if o, _ := r.Wait(context.Background()); o.Kind != amqp.Rejected || !o.Local {
		t.Errorf("the router's own refusal became %v", o)
	}
}
