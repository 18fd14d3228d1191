package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
)

// Links detach and sessions end cleanly, bounded, on every broker (the
// RabbitMQ plugin answers a closing detach with a non-closing one), and
// a new session on the same connection works after.
func TestConformanceCloseLinksAndSessions(t *testing.T) {
	for _, name := range conformanceBrokers {
		t.Run(name, func(t *testing.T) {
			b := brokertest.Require(t, name)[0]
			addr := queue(t, b)
			c := dial(t, b, engine.Options{})
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			for i := 0; i < 3; i++ {
				s := session(t, c, engine.SessionOptions{})
				r, err := s.NewReceiver(ctx, engine.ReceiverOptions{Address: addr})
				if err != nil {
					t.Fatal(err)
				}
				snd, err := s.NewSender(ctx, engine.SenderOptions{Address: addr})
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Close(ctx); err != nil {
					t.Fatalf("receiver close: %v", err)
				}
				if err := snd.Close(ctx); err != nil {
					t.Fatalf("sender close: %v", err)
				}
				if err := s.End(ctx); err != nil {
					t.Fatalf("end: %v", err)
				}
				select {
				case <-s.Done():
				default:
					t.Fatal("session not done after End")
				}
			}
			if err := c.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
		})
	}
}
