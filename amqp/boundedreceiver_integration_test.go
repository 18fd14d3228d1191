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
			cfg := b.Config()
			q := brokertest.UniqueName(t, "h-ctl-bounded")
			brokertest.DeclareQueue(t, cfg, q)
			c := brokertest.Dial(t, cfg, famqp.ConnOptions{})
			s := brokertest.Session(t, c)
			p := brokertest.Profile(t, cfg)
			node := famqp.Node{Kind: famqp.Queue, Name: q}
			target, err := p.Target(node)
			if err != nil {
				t.Fatal(err)
			}
			msgs := []*goamqp.Message{goamqp.NewMessage(bytes.Repeat([]byte("x"), 1<<20)),
				goamqp.NewMessage(bytes.Repeat([]byte("y"), 10<<20)), {Value: "not data"}, goamqp.NewMessage([]byte("ok-1"))}
			brokertest.SendAll(t, s, target.Address, 4, len(msgs), func(i int) *goamqp.Message { return msgs[i] })
			spec, err := p.Source(t.Context(), node, famqp.Subscription{})
			if err != nil {
				t.Fatal(err)
			}
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
			brokertest.SendAll(t, s, target.Address, 1, 1, func(int) *goamqp.Message { return goamqp.NewMessage([]byte("ok-2")) })
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
