package amqp_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
)

// qpidd (the 1.40 test build) segfaults when a connection closes with consumers
// attached while messages arrive for them on another connection
// (docs/brokers.md, qpidd). A fedrouter connection ends its sessions
// before it closes, on both data paths; this loops the sequence on a
// private qpidd (it may crash: never a shared one): receivers with
// credit on a queue being filled, the connection closed under them.
// Before the fix, qpidd died within 400 to 4,000 such closes.
func TestIntegrationQpidCloseWithReceiversAttached(t *testing.T) {
	for _, dp := range []string{"go-amqp", "engine"} {
		t.Run(dp, func(t *testing.T) { qpidCloseWithReceivers(t, dp) })
	}
}

// closeCycles connections are closed under their receivers, by
// closeWorkers at a time; each takes up to closeTake messages first, a
// fifth of its credit (closeCredit), so that receivers wait with credit
// left at the broker as messages arrive for them. (Taking 25 of 100 did
// not crash an unfixed qpidd in two runs; this did, within 15 s.)
const closeCycles, closeWorkers, closeTake, closeCredit = 3000, 4, 10, 50

func qpidCloseWithReceivers(t *testing.T, dataPath string) {
	qpidd := brokertest.StartPrivateQpidd(t)
	cfg := qpidd.Config
	queue := brokertest.UniqueName(t, "closing")
	brokertest.DeclareQueue(t, cfg, queue)

	stop := make(chan struct{})
	sent := make(chan map[int64]bool, 1)
	ps := brokertest.Session(t, brokertest.Dial(t, cfg, famqp.ConnOptions{}))
	go func() { sent <- produce(t, ps.GoAMQP(), queue, stop) }()

	var taken atomic.Int64
	var mu sync.Mutex // guards accepted and failed
	accepted := map[int64]int{}
	var failed error
	var wg sync.WaitGroup
	for range closeWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := taken.Add(1); n <= closeCycles; n = taken.Add(1) {
				err := closeUnderReceiver(t.Context(), cfg, queue, dataPath, func(seq int64) {
					mu.Lock()
					accepted[seq]++
					mu.Unlock()
				})
				if err != nil || n%50 == 0 {
					if gone := qpidd.Gone(); gone != nil {
						err = fmt.Errorf("after %d closes: %w (the close's own error: %v)", n, gone, err)
					}
				}
				mu.Lock()
				if err != nil && failed == nil {
					failed = err
				}
				stop := failed != nil
				mu.Unlock()
				if stop {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	acked := <-sent
	if failed != nil {
		t.Fatal(failed)
	}
	if gone := qpidd.Gone(); gone != nil {
		t.Fatalf("after %d closes: %v", closeCycles, gone)
	}
	// At-least-once: what the closed receivers did not accept is still
	// on the queue.
	left := drain(t, cfg, queue)
	dups := 0
	for seq := range acked {
		c := accepted[seq] + left[seq]
		if c == 0 {
			t.Fatalf("message %d lost: sent, neither accepted nor left on the queue", seq)
		}
		dups += c - 1
	}
	t.Logf("%s: %d connections closed under their receivers, qpidd alive; %d sent, %d accepted before a close, %d left on the queue, lost 0, duplicated %d",
		dataPath, closeCycles, len(acked), len(accepted), len(left), dups)
}

// closeProducers send to the queue at once, on one session: the more
// messages arrive, the likelier one arrives as a connection closes.
const closeProducers = 4

// produce sends small messages numbered from 0 to queue until stop, from
// closeProducers senders; it returns the sequence numbers the broker
// accepted.
func produce(t *testing.T, s *goamqp.Session, queue string, stop <-chan struct{}) map[int64]bool {
	ctx := context.WithoutCancel(t.Context())
	var next atomic.Int64
	var mu sync.Mutex
	sent := map[int64]bool{}
	var wg sync.WaitGroup
	for range closeProducers {
		snd, err := s.NewSender(ctx, queue, nil)
		if err != nil {
			t.Errorf("attach sender %s: %v", queue, err)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				seq := next.Add(1) - 1
				m := &goamqp.Message{ApplicationProperties: map[string]any{"seq": seq}, Data: [][]byte{[]byte("m")}}
				sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := snd.Send(sctx, m, nil)
				cancel()
				if err != nil {
					t.Errorf("send %d: %v", seq, err)
					return
				}
				mu.Lock()
				sent[seq] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return sent
}

// closeUnderReceiver connects as the router does, attaches a receiver
// with credit on queue, takes up to closeTake messages (accepting every
// other one: the rest stay unsettled), and closes the connection with
// the receiver attached. It calls accepted with each sequence number it
// accepts.
func closeUnderReceiver(ctx context.Context, cfg famqp.BrokerConfig, queue, dataPath string, accepted func(int64)) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := famqp.Dial(ctx, cfg, famqp.ConnOptions{})
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }() // the sequence under test
	if dataPath == "engine" {
		return takeEngine(ctx, c, queue, accepted)
	}
	s, _, err := c.NewSession(ctx)
	if err != nil {
		return err
	}
	r, err := famqp.NewReceiver(ctx, s, famqp.LinkSpec{Address: queue}, famqp.ReceiverConfig{Window: closeCredit})
	if err != nil {
		return err
	}
	for i := range closeTake {
		rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		msg, err := r.Receive(rctx)
		rcancel()
		if err != nil {
			return nil // the queue is empty for now: close with credit out
		}
		if i%2 == 0 {
			seq, _ := msg.Property("seq").(int64)
			accepted(seq) // before: once sent, the broker may have it
			if err := r.Accept(ctx, msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// takeEngine is closeUnderReceiver's part on the engine data path.
func takeEngine(ctx context.Context, c *famqp.Conn, queue string, accepted func(int64)) error {
	e, err := c.Engine(ctx)
	if err != nil {
		return err
	}
	s, err := e.NewSession(ctx, engine.SessionOptions{})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var decodeErr error
	arrived := make(chan struct{}, closeTake)
	n := 0
	_, err = s.NewReceiver(ctx, engine.ReceiverOptions{Address: queue, Credit: closeCredit, OnMessage: func(d *engine.Delivery) {
		mu.Lock()
		defer mu.Unlock()
		if n++; n%2 == 1 {
			var m goamqp.Message
			if err := m.UnmarshalBinary(d.Payload); err != nil {
				decodeErr = errors.Join(decodeErr, err)
				return
			}
			seq, _ := m.ApplicationProperties["seq"].(int64)
			accepted(seq)
			d.Receiver.Settle(d.ID, engine.Accepted)
		}
		select {
		case arrived <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		return err
	}
	idle := time.NewTimer(200 * time.Millisecond)
	defer idle.Stop()
wait:
	for range closeTake {
		select {
		case <-arrived:
		case <-idle.C:
			break wait // the queue is empty for now: close with credit out
		case <-ctx.Done():
			break wait
		}
	}
	// Close (the caller's) ends the session after it sends the pending
	// settlements.
	mu.Lock()
	defer mu.Unlock()
	return decodeErr
}

// drain takes what is left on queue (until it stays empty for 3 s) and
// counts each sequence number.
func drain(t *testing.T, cfg famqp.BrokerConfig, queue string) map[int64]int {
	t.Helper()
	s := brokertest.Session(t, brokertest.Dial(t, cfg, famqp.ConnOptions{}))
	defer famqp.CloseSessionContext(t.Context(), s)
	r := brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: queue}, 500)
	left := map[int64]int{}
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		msg, err := r.Receive(ctx)
		if err != nil {
			cancel()
			return left
		}
		if err := r.Accept(ctx, msg); err != nil {
			cancel()
			t.Fatal(err)
		}
		cancel()
		seq, ok := msg.Property("seq").(int64)
		if !ok {
			t.Fatalf("message without seq on %s: %+v", queue, msg.GoAMQP())
		}
		left[seq]++
	}
}

// After its qpidd died (killed here, as a segfault would), a Conn stays
// Waiting and keeps dialling; once the broker is back it is Operational
// again, and engine connections (routes on the engine, control links)
// dial again too.
func TestIntegrationQpidConnAfterBrokerDied(t *testing.T) {
	qpidd := brokertest.StartPrivateQpidd(t)
	c := brokertest.Dial(t, qpidd.Config, famqp.ConnOptions{Backoff: famqp.Backoff{Min: 50 * time.Millisecond, Max: 500 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, _, err := c.WaitOperational(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Engine(ctx); err != nil {
		t.Fatal(err)
	}
	first, _ := c.Status()
	qpidd.Kill(t)
	if qpidd.Gone() == nil {
		t.Fatal("Gone says a killed qpidd lives")
	}
	// Dial after dial is refused: the loop goes on.
	waitStatus(ctx, t, c, "three refused dials", func(st famqp.Status) bool {
		return st.State != famqp.Operational && st.Attempt >= 3 && st.LastError != nil
	})
	qpidd.Restart(t)
	if _, _, err := c.WaitOperational(ctx); err != nil {
		t.Fatalf("not Operational again after qpidd came back: %v", err)
	}
	if st, _ := c.Status(); st.Generation <= first.Generation {
		t.Fatalf("generation %d after the reconnect, %d before", st.Generation, first.Generation)
	}
	e, err := c.Engine(ctx)
	if err != nil {
		t.Fatalf("engine connection after qpidd came back: %v", err)
	}
	if _, err := e.NewSession(ctx, engine.SessionOptions{}); err != nil {
		t.Fatalf("engine session after qpidd came back: %v", err)
	}
}

// waitStatus polls c's status until ok or ctx ends.
func waitStatus(ctx context.Context, t *testing.T, c *famqp.Conn, what string, ok func(famqp.Status) bool) {
	t.Helper()
	for {
		st, changed := c.Status()
		if ok(st) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("%s: not seen (status %+v)", what, st)
		}
	}
}
