package links

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/fedrouter/fedrouter/amqp"
)

// benchSource hands out the same n messages (a fresh wrapper each time,
// as a receiver does) and counts settlements.
type benchSource struct {
	msg  amqp.Message
	left int
	mu   sync.Mutex
	done chan struct{}
	n    int
}

func (s *benchSource) Receive(ctx context.Context) (amqp.Message, error) {
	s.mu.Lock()
	if s.left > 0 {
		s.left--
		s.mu.Unlock()
		return s.msg, nil
	}
	s.mu.Unlock()
	<-ctx.Done()
	return amqp.Message{}, ctx.Err()
}

func (s *benchSource) settle() error {
	s.mu.Lock()
	s.n--
	if s.n == 0 {
		close(s.done)
	}
	s.mu.Unlock()
	return nil
}

func (s *benchSource) Accept(context.Context, amqp.Message) error  { return s.settle() }
func (s *benchSource) Release(context.Context, amqp.Message) error { return s.settle() }
func (s *benchSource) Reject(context.Context, amqp.Message, string, string) error {
	return s.settle()
}

type acceptAll struct{}

func (acceptAll) Wait(context.Context) (amqp.Outcome, error) {
	return amqp.Outcome{Kind: amqp.Accepted}, nil
}

type benchSink struct{}

func (benchSink) Send(context.Context, amqp.Message) (Receipt, error) { return acceptAll{}, nil }

// BenchmarkForward is the forwarder's own work per message, with no
// broker: receive, forward copy, prepare, send, outcome, settle. Its
// allocs/op is the hot path's copying (docs/performance.md).
func BenchmarkForward(b *testing.B) {
	msg := amqp.NewMessage(make([]byte, 256))
	msg.SetAnnotation("x-opt-origin", "paris")
	src := &benchSource{msg: msg, left: b.N, n: b.N, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var c Counters
	b.ReportAllocs()
	b.ResetTimer()
	errc := make(chan error, 1)
	go func() { errc <- Forward(ctx, src, benchSink{}, Config{Window: 500, OutcomeTimeout: 30e9}, &c) }()
	<-src.done
	b.StopTimer()
	cancel()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
}
