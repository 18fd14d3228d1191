package amqp_test

// Integration tests against the real brokers of testdata/brokers.sh.
// Skipped with -short. rabbit2 is killed and restarted by
// TestIntegrationReconnectAfterKill.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

func TestIntegrationQueueRoundTripEachProfile(t *testing.T) {
	brokers := brokertest.Require(t, "rabbit1", "rabbit2", "proton1", "pyproton1")
	for _, b := range brokers {
		cfg := b.Config()
		if b.Name == "pyproton1" {
			cfg.Profile = "generic" // a third AMQP 1.0 implementation, through the generic dialect
		}
		t.Run(b.Name+"/"+cfg.Profile, func(t *testing.T) {
			q := brokertest.UniqueName(t, "rt")
			brokertest.DeclareQueue(t, cfg, q)
			c := brokertest.Dial(t, cfg, famqp.ConnOptions{})
			s := brokertest.Session(t, c)
			p := brokertest.Profile(t, cfg)
			target, err := p.Target(famqp.Node{Kind: famqp.Queue, Name: q})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.CheckTarget(context.Background(), famqp.Node{Kind: famqp.Queue, Name: q}); err != nil {
				t.Fatal(err)
			}
			const n = 500
			brokertest.SendAll(t, s, target.Address, 100, n, brokertest.Body)
			src, err := p.Source(context.Background(), famqp.Node{Kind: famqp.Queue, Name: q}, famqp.Subscription{})
			if err != nil {
				t.Fatal(err)
			}
			got := brokertest.ReceiveN(t, brokertest.OpenReceiver(t, s, src, 50), n, 20*time.Second)
			for i, g := range got {
				if want := string(brokertest.Body(i).GetData()); g != want {
					t.Fatalf("message %d = %q, want %q (order or content broken)", i, g, want)
				}
			}
		})
	}
}

func TestIntegrationRabbitMissingTargetIsReported(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	p := brokertest.Profile(t, b.Config())
	err := p.CheckTarget(context.Background(), famqp.Node{Kind: famqp.Queue, Name: "no-such-queue-here"})
	if !errors.Is(err, famqp.ErrNotFound) {
		t.Fatalf("CheckTarget on a missing queue: %v", err)
	}
}

func TestIntegrationRabbitExchangeBindingKey(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	cfg := b.Config()
	p := brokertest.Profile(t, cfg)
	ctx := context.Background()
	ex := famqp.Node{Kind: famqp.Exchange, Name: "amq.topic", Key: "eu.*"}
	sub := famqp.Subscription{Name: brokertest.UniqueName(t, "sub")}
	src, err := p.Source(ctx, ex, sub)
	if err != nil {
		t.Fatal(err)
	}
	// A catch-all binding keeps non-matching keys routable, so their sends
	// get an outcome (RabbitMQ gives none for unroutable messages).
	all := famqp.Subscription{Name: brokertest.UniqueName(t, "all")}
	if _, err := p.Source(ctx, famqp.Node{Kind: famqp.Exchange, Name: "amq.topic", Key: "#"}, all); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Unsubscribe(ctx, famqp.Node{Kind: famqp.Exchange, Name: "amq.topic"}, all); err != nil {
			t.Logf("remove the catch-all subscription: %v", err) // its queue is left behind; no test reads it
		}
	}()

	c := brokertest.Dial(t, cfg, famqp.ConnOptions{})
	s := brokertest.Session(t, c)
	for _, key := range []string{"eu.paris", "us.nyc", "eu.rome", "eu.paris.left", "asia.tokyo", "eu.end"} {
		target, err := p.Target(famqp.Node{Kind: famqp.Exchange, Name: "amq.topic", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		brokertest.SendAll(t, s, target.Address, 1, 1, func(int) *goamqp.Message { return goamqp.NewMessage([]byte(key)) })
	}
	got := brokertest.ReceiveN(t, brokertest.OpenReceiver(t, s, src, 10), 3, 20*time.Second)
	if fmt.Sprint(got) != "[eu.paris eu.rome eu.end]" {
		t.Fatalf("subscription eu.* got %v", got)
	}
	if err := p.Unsubscribe(ctx, ex, sub); err != nil {
		t.Fatal(err)
	}
	m, _ := famqp.NewRabbitManagement(cfg)
	defer m.Close()
	if _, err := m.Queue(ctx, sub.Name); !errors.Is(err, famqp.ErrNotFound) {
		t.Fatalf("subscription queue still there after Unsubscribe: %v", err)
	}
	if err := p.Unsubscribe(ctx, ex, sub); err != nil {
		t.Fatalf("second Unsubscribe: %v", err)
	}
}

func TestIntegrationWrongPasswordFailsWithoutRetry(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	cfg := b.Config()
	cfg.Password = "wrong"
	var mu sync.Mutex
	connecting := 0
	c := brokertest.Dial(t, cfg, famqp.ConnOptions{
		Backoff: famqp.Backoff{Min: 50 * time.Millisecond, Max: 100 * time.Millisecond},
		OnState: func(st famqp.Status) {
			if st.State == famqp.Connecting {
				mu.Lock()
				connecting++
				mu.Unlock()
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, err := c.WaitOperational(ctx)
	if famqp.Classify(err) != famqp.ScopeAuth || !errors.Is(err, famqp.ErrAuth) {
		t.Fatalf("WaitOperational with a wrong password: %v", err)
	}
	st, changed := c.Status()
	if st.State != famqp.Failed || st.LastError == nil {
		t.Fatalf("status %+v", st)
	}
	// With a 50–100 ms backoff, a retrying loop would have dialled several
	// times in 1 s; a failed one makes no state change at all.
	select {
	case <-changed:
		st, _ = c.Status()
		t.Fatalf("state changed after Failed: %+v", st)
	case <-time.After(time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	if connecting != 1 {
		t.Fatalf("%d connection attempts, want 1", connecting)
	}
}

func TestIntegrationAnonymousAndFailover(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	cfg := b.Config()
	cfg.Username, cfg.Password, cfg.SASL = "", "", famqp.SASLAnonymous // RabbitMQ lets ANONYMOUS in as guest
	cfg.URLs = []string{"amqp://127.0.0.1:1", b.URL}
	c := brokertest.Dial(t, cfg, famqp.ConnOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, _, err := c.WaitOperational(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := c.Status()
	if st.URL != b.URL || st.LastError == nil {
		t.Fatalf("status %+v: want connected to %s after the dead URL failed", st, b.URL)
	}
}

func TestIntegrationReconnectAfterKill(t *testing.T) {
	b := brokertest.Require(t, "rabbit2")[0]
	bound := famqp.Backoff{Min: 250 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2}
	c := brokertest.Dial(t, b.Config(), famqp.ConnOptions{Backoff: bound, ConnectTimeout: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, _, err := c.WaitOperational(ctx); err != nil {
		t.Fatal(err)
	}
	brokertest.Kill(t, b.Name)
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if st, _ := c.Status(); st.State == famqp.Operational {
			return errors.New("still Operational")
		}
		return nil
	})
	brokertest.Restart(t, b.Name) // returns once the node has booted
	restarted := time.Now()
	_, gen, err := c.WaitOperational(ctx)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(restarted)
	t.Logf("reconnected %v after the broker was back (backoff cap %v)", took.Round(time.Millisecond), bound.Max)
	if took > bound.Max+5*time.Second {
		t.Fatalf("reconnect took %v, more than the backoff cap %v plus a connect", took, bound.Max)
	}
	if gen < 2 {
		t.Fatalf("generation %d after a reconnect", gen)
	}
	q := brokertest.UniqueName(t, "after-restart")
	brokertest.DeclareQueue(t, b.Config(), q)
	s := brokertest.Session(t, c)
	brokertest.SendAll(t, s, "/amq/queue/"+q, 10, 10, brokertest.Body)
	brokertest.ReceiveN(t, brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: "/amq/queue/" + q}, 10), 10, 20*time.Second)
}
