package amqp_test

import (
	"context"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// Frames written through the coalescing connection (the default) and
// through go-amqp's plain one reach a real broker whole and in order,
// with many transfers and settlements in flight at once — the load under
// which writes share system calls.
func TestIntegrationCoalescedWritesRoundTrip(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	cfg := b.Config()
	for name, buf := range map[string]int{"coalesced": 0, "small buffer": 512, "plain": -1} {
		t.Run(name, func(t *testing.T) {
			q := brokertest.UniqueName(t, "coalesce")
			brokertest.DeclareQueue(t, cfg, q)
			before := famqp.ReadWriteStats()
			c := brokertest.Dial(t, cfg, famqp.ConnOptions{WriteBuffer: buf})
			s := brokertest.Session(t, c)
			p := brokertest.Profile(t, cfg)
			node := famqp.Node{Kind: famqp.Queue, Name: q}
			target, err := p.Target(node)
			if err != nil {
				t.Fatal(err)
			}
			const n = 5000
			brokertest.SendAll(t, s, target.Address, 500, n, brokertest.Body)
			src, err := p.Source(context.Background(), node, famqp.Subscription{})
			if err != nil {
				t.Fatal(err)
			}
			got := brokertest.ReceiveN(t, brokertest.OpenReceiver(t, s, src, 500), n, 20*time.Second)
			for i, g := range got {
				if want := string(brokertest.Body(i).GetData()); g != want {
					t.Fatalf("message %d = %q, want %q (order or content broken)", i, g, want)
				}
			}
			st := famqp.ReadWriteStats()
			t.Logf("%d frames written in %d system calls", st.Writes-before.Writes, st.SystemCalls-before.SystemCalls)
			if buf < 0 && st.Writes-before.Writes >= n {
				t.Fatalf("the plain connection went through the coalescing one (%d writes)", st.Writes-before.Writes)
			}
			if buf >= 0 && st.Writes-before.Writes < n {
				t.Fatalf("%d frames counted for %d transfers: the connection is not the coalescing one", st.Writes-before.Writes, n)
			}
		})
	}
}
