package links

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// A run on the engine into a full qpidd queue (qpid.max_count 5,
// qpid.policy_type reject), on a private qpidd: qpidd accepts the first
// four, withholds the outcome of the fifth (enqueued: producer flow
// control, until the queue drains) and releases every later one. The
// withheld one is rejected at the source after the outcome timeout
// (counted no-outcome: it is in the destination), the released ones go
// back to the source and the run pauses before each new round instead of
// sending them round at full speed; once the destination is drained,
// every message is there, none is left at the source or in flight, and
// the run never ended.
func TestIntegrationEngineFullQpidQueue(t *testing.T) {
	const n, maxCount = 20, 5
	q := brokertest.StartPrivateQpidd(t)
	cfg := q.Config
	m := brokertest.QpidManagement(t, cfg)
	src, dst := brokertest.UniqueName(t, "h-qpidfull-src"), brokertest.UniqueName(t, "h-qpidfull-dst")
	brokertest.DeclareQueue(t, cfg, src)
	if err := m.Create(t.Context(), "queue", dst, map[string]any{"qpid.max_count": maxCount, "qpid.policy_type": "reject"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Delete(context.Background(), "queue", dst) })
	fillEngine(t, cfg, src, n)

	ss, ds := engineSession(t, cfg), engineSession(t, cfg)
	l := EngineLinks{Src: ss, Dst: ds, Source: engine.ReceiverOptions{Address: src}, Target: engine.SenderOptions{Address: dst}}
	rc := Config{Window: 10, OutcomeTimeout: 2 * time.Second}
	e, err := AttachEngine(t.Context(), l, rc, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var c Counters
	errc := make(chan error, 1)
	go func() { errc <- e.Run(ctx, rc, &c) }()
	defer func() {
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("the run ended with %v, want its context's end", err)
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		e.Close(cctx)
	}()
	counts := func() string {
		return fmt.Sprintf("sent %d, accepted %d, rejected %d, no outcome %d, redelivered %d, in flight %d",
			c.Sent.Load(), c.Forwarded.Load(), c.Rejected.Load(), c.NoOutcome.Load(), c.Redelivered.Load(), c.InFlight.Load())
	}
	// The queue full: four accepted, the fifth expired, the other 15
	// released at least twice (a second round after a pause).
	brokertest.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		if c.Forwarded.Load() != maxCount-1 || c.NoOutcome.Load() != 1 || c.Rejected.Load() != 1 || c.Redelivered.Load() < 2*(n-maxCount) {
			return fmt.Errorf("%s; want %d accepted, 1 without outcome, at least %d redelivered", counts(), maxCount-1, 2*(n-maxCount))
		}
		return nil
	})
	// While the queue stays full, the run pauses between rounds: at most
	// 6 rounds in 3 s (pauses of 0.1, 0.2, 0.4, 0.8, 1.6 s), each of the
	// 15 messages (measured without the pause: ~15,000 sends in 3 s). A
	// slower machine sends fewer.
	before := c.Sent.Load()
	time.Sleep(3 * time.Second) // an observation window, not a wait for an event
	if sent := c.Sent.Load() - before; sent > 10*(n-maxCount) {
		t.Fatalf("%d sends in 3 s into a full queue (%s): the run does not pause after a release", sent, counts())
	}
	select {
	case err := <-errc:
		t.Fatalf("the run ended while the queue was full: %v", err)
	default:
	}
	// Drained: every message reaches the destination.
	got := drainEngine(t, cfg, dst, n)
	brokertest.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		if missing := got.missing(n); len(missing) > 0 {
			return fmt.Errorf("messages %v not at the destination yet (%s)", missing, counts())
		}
		if c.Forwarded.Load()+c.Rejected.Load() != n || c.Rejected.Load() != c.NoOutcome.Load() || c.InFlight.Load() != 0 {
			return fmt.Errorf("%s; want %d accepted or rejected for want of an outcome, none in flight", counts(), n)
		}
		return queueEmpty(m, src)
	})
	select {
	case err := <-errc:
		t.Fatalf("the run ended: %v", err)
	default:
	}
	t.Logf("%s; the destination got %d deliveries of %d messages", counts(), got.total(), n)
}

// engineSession is a session on a new engine connection to cfg's broker,
// closed at cleanup.
func engineSession(t *testing.T, cfg amqp.BrokerConfig) *engine.Session {
	t.Helper()
	u, err := url.Parse(cfg.URLs[0])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := engine.Dial(ctx, u.Host, engine.Options{SASL: engine.SASLAnonymous})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s, err := c.NewSession(ctx, engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// seqMessage is message i: one data section "seq=i".
func seqMessage(i int) []byte {
	b := wire.AppendDescriptor(nil, wire.DescData)
	return wire.AppendBinary(b, []byte("seq="+strconv.Itoa(i)))
}

// fillEngine sends n messages to queue addr and waits until all were
// accepted.
func fillEngine(t *testing.T, cfg amqp.BrokerConfig, addr string, n int) {
	t.Helper()
	accepted := make(chan struct{}, n)
	snd, err := engineSession(t, cfg).NewSender(t.Context(), engine.SenderOptions{Address: addr,
		OnSettled: func(first, last uint32, st *engine.DeliveryState) {
			for id := first; int32(last-id) >= 0; id++ {
				if st.Kind == wire.StateAccepted {
					accepted <- struct{}{}
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := snd.Send(t.Context(), seqMessage(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		select {
		case <-accepted:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d messages accepted by %s", i, n, addr)
		}
	}
}

// received counts the deliveries of each message a receiver took.
type received struct {
	mu  sync.Mutex
	got map[int]int
}

func (r *received) missing(n int) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for i := range n {
		if r.got[i] == 0 {
			out = append(out, i)
		}
	}
	return out
}

func (r *received) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	sum := 0
	for _, k := range r.got {
		sum += k
	}
	return sum
}

// drainEngine takes every message from queue addr from now on, accepting
// each; it stops at cleanup.
func drainEngine(t *testing.T, cfg amqp.BrokerConfig, addr string, n int) *received {
	t.Helper()
	r := &received{got: map[int]int{}}
	_, err := engineSession(t, cfg).NewReceiver(t.Context(), engine.ReceiverOptions{Address: addr, Credit: uint32(n),
		OnMessage: func(d *engine.Delivery) {
			if i := bytes.Index(d.Payload, []byte("seq=")); i >= 0 {
				if seq, err := strconv.Atoi(string(d.Payload[i+4:])); err == nil {
					r.mu.Lock()
					r.got[seq]++
					r.mu.Unlock()
				}
			}
			if !d.Settled {
				d.Receiver.Settle(d.ID, engine.Accepted)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// queueEmpty is nil once queue q holds no message.
func queueEmpty(m *amqp.QpidManagement, q string) error {
	o, err := m.Queue(context.Background(), q)
	if err != nil {
		return err
	}
	if d := fmt.Sprint(o["msgDepth"]); d != "0" {
		return fmt.Errorf("%s holds %s messages", q, d)
	}
	return nil
}
