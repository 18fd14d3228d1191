package amqp_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// Issue 27, item 7: a bounded receiver (the control links') on a queue
// holding 1 MiB and 10 MiB messages and one whose body is not data, then
// a valid one. The refused messages are never held whole (the most held
// for one message stays within the 64 KiB bound), are counted by kind,
// and are rejected at the broker: a second attach does not get them
// again, only the next valid message.
func TestIntegrationBoundedReceiverRefusesOversize(t *testing.T) {
	const bound = 64 << 10
	for _, b := range brokertest.Require(t, "rabbit1", "qpidd1") {
		t.Run(b.Name, func(t *testing.T) {
			msgs := []*goamqp.Message{goamqp.NewMessage(bytes.Repeat([]byte("x"), 1<<20)),
				goamqp.NewMessage(bytes.Repeat([]byte("y"), 10<<20)), {Value: "not data"}, goamqp.NewMessage([]byte("ok-1"))}
			q := queueHolding(t, b, msgs)
			c, p, spec, s := q.c, q.p, q.spec, brokertest.Session(t, q.c)
			br := famqp.Broker{Conn: c, Profile: p}
			rcv, err := br.NewBoundedReceiver(t.Context(), spec, bound, 4)
			if err != nil {
				t.Fatal(err)
			}
			var refused []string
			for {
				body, err := receiveWithin(t, rcv)
				var re *famqp.RefusedError
				if errors.As(err, &re) {
					refused = append(refused, err.Error())
					continue
				}
				if err != nil {
					t.Fatalf("after refusing %v: %v", refused, err)
				}
				if string(body) != "ok-1" {
					t.Fatalf("got %.40q, want ok-1", body)
				}
				break
			}
			st := rcv.Stats()
			t.Logf("%s: refused %v; stats %+v", b.Name, refused, st)
			if st.Oversize != 2 || st.NotData != 1 {
				t.Fatalf("refused %d oversize and %d not data, want 2 and 1: %v", st.Oversize, st.NotData, refused)
			}
			if st.PeakBuffered > bound {
				t.Fatalf("held %d bytes of one message, the bound is %d", st.PeakBuffered, bound)
			}
			if err := rcv.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			brokertest.SendAll(t, s, q.target, 1, 1, func(int) *goamqp.Message { return goamqp.NewMessage([]byte("ok-2")) })
			again, err := br.NewBoundedReceiver(t.Context(), spec, bound, 4)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = again.Close(t.Context()) }()
			body, err := receiveWithin(t, again)
			if err != nil || string(body) != "ok-2" {
				t.Fatalf("second attach: %.40q, %v (stats %+v): a refused message came back", body, err, again.Stats())
			}
		})
	}
}

func receiveWithin(t *testing.T, r *famqp.BoundedReceiver) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	return r.Receive(ctx)
}

// Why the bounded receiver reads an oversize message to its end and
// rejects it rather than detach (the engine's default): neither RabbitMQ
// nor qpidd honours the max-message-size of the receiver's attach (they
// send a 1 MiB message on a link that announced 64 KiB), and a message
// whose transfer the receiver cut short by a detach stays unsettled, so
// the broker gives it to the next attach: detach on it and it comes back
// forever (RabbitMQ once the session ends, qpidd at once).
func TestIntegrationOversizeAfterDetachComesBack(t *testing.T) {
	for _, b := range brokertest.Require(t, "rabbit1", "qpidd1") {
		t.Run(b.Name, func(t *testing.T) {
			q := queueHolding(t, b, []*goamqp.Message{goamqp.NewMessage(bytes.Repeat([]byte("x"), 1<<20))})
			p, spec := q.p, q.spec
			// The cut link on a connection of its own, closed after the
			// cut: RabbitMQ 3.10 keeps the cut delivery until the session
			// ends, and at times answers neither the detach nor the end of
			// a session whose delivery was cut mid-transfer.
			cutConn := brokertest.Dial(t, b.Config(), famqp.ConnOptions{})
			ec, err := cutConn.Engine(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			sess, err := ec.NewSession(t.Context(), engine.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			opts, err := spec.EngineReceiver(p)
			if err != nil {
				t.Fatal(err)
			}
			opts.Credit, opts.MaxMessageSize = 1, 64<<10
			cut, err := sess.NewReceiver(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-cut.Done():
			case <-time.After(60 * time.Second):
				t.Fatal("the 1 MiB message did not end the link: the broker honoured max-message-size?")
			}
			t.Logf("%s: the link announcing max-message-size 64 KiB got the 1 MiB message and ended: %v", b.Name, cut.Err())
			_ = ec.Close() // bounded by its close timeout; an unanswered close is the quirk above
			sizes := make(chan uint64, 1)
			opts.DiscardOversize = true
			opts.OnMessage = func(d *engine.Delivery) {
				if d.Oversize {
					d.Receiver.Settle(d.ID, &engine.DeliveryState{Kind: wire.StateRejected})
				}
				sizes <- d.Size
			}
			ec2, err := q.c.Engine(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			sess2, err := ec2.NewSession(t.Context(), engine.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			opts.Name += "-again"
			again, err := sess2.NewReceiver(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = again.Close(t.Context()) }()
			select {
			case n := <-sizes:
				if n < 1<<20 {
					t.Fatalf("the next attach got a %d-byte message, want the 1 MiB one back", n)
				}
				t.Logf("%s: the next attach got the %d-byte message again (and rejected it)", b.Name, n)
			case <-time.After(60 * time.Second):
				t.Fatal("the cut message did not come back")
			}
		})
	}
}

// heldQueue is a test queue with messages in it, and what to reach it.
type heldQueue struct {
	c      *famqp.Conn
	p      famqp.Profile
	spec   famqp.LinkSpec
	target string
}

// queueHolding declares a queue unique to the test on b and sends msgs
// to it.
func queueHolding(t *testing.T, b brokertest.Broker, msgs []*goamqp.Message) heldQueue {
	t.Helper()
	cfg := b.Config()
	name := brokertest.UniqueName(t, "h-ctl-big")
	brokertest.DeclareQueue(t, cfg, name)
	q := heldQueue{c: brokertest.Dial(t, cfg, famqp.ConnOptions{}), p: brokertest.Profile(t, cfg)}
	node := famqp.Node{Kind: famqp.Queue, Name: name}
	target, err := q.p.Target(node)
	if err != nil {
		t.Fatal(err)
	}
	q.target = target.Address
	brokertest.SendAll(t, brokertest.Session(t, q.c), q.target, 4, len(msgs), func(i int) *goamqp.Message { return msgs[i] })
	if q.spec, err = q.p.Source(t.Context(), node, famqp.Subscription{}); err != nil {
		t.Fatal(err)
	}
	return q
}
