package engine_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// Without brokers, a full qpidd queue (qpid.max_count 3,
// qpid.policy_type reject) as it answers, measured on qpidd 1.40: the
// messages under qpid.flow_stop_count (80% of max_count) accepted, the
// one that passes it enqueued with its outcome withheld until the queue
// drains (producer flow control), every later one released. The
// released ones wait behind the withheld one (the source is settled in
// order) and OnReleased is told each; Expire settles the withheld one
// with its state, and the released ones go back to the source.
func TestForwardFullQueueWithheldThenReleased(t *testing.T) {
	const n = 5
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = encodeMessage(fmt.Sprint(i), body(i, 64))
	}
	outcomes := make(chan [2]string, n)
	dst := destPeer(t, func(tr *wire.Transfer) *wire.DeliveryState {
		switch {
		case tr.DeliveryID < 2:
			return &wire.DeliveryState{Kind: wire.StateAccepted}
		case tr.DeliveryID == 2:
			return nil // withheld: qpidd's producer flow control
		}
		return &wire.DeliveryState{Kind: wire.StateReleased}
	})
	ss := session(t, dialFake(t, sourcePeer(t, payloads, outcomes), engine.Options{}), engine.SessionOptions{})
	ds := session(t, dialFake(t, dst, engine.Options{}), engine.SessionOptions{})
	var released atomic.Int64
	f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: "src", Credit: 10}, ds, engine.SenderOptions{Address: "full"},
		engine.ForwardOptions{OnReleased: func() { released.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for released.Load() < n-3 || f.Stats().Settled < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, OnReleased told %d times; want 2 settled and %d released", f.Stats(), released.Load(), n-3)
		}
		time.Sleep(10 * time.Millisecond)
	}
	expectOutcomes(t, f, outcomes, map[string]string{"0": "accepted ", "1": "accepted "}, 2)
	if st := f.Stats(); st.Settled != 2 || st.InFlight != n-2 || st.Forwarded != n {
		t.Fatalf("behind the withheld outcome: %+v; want 2 settled, %d in flight", st, n-2)
	}
	if got := f.Expire(time.Now().Add(-time.Hour), engine.Released); got != 0 {
		t.Fatalf("Expire before any send expired %d", got)
	}
	rejected := &engine.DeliveryState{Kind: wire.StateRejected, Error: &wire.Error{Condition: "amqp:not-allowed", Description: "no outcome"}}
	if got := f.Expire(time.Now(), rejected); got != 1 {
		t.Fatalf("Expire expired %d, want the withheld one", got)
	}
	expectOutcomes(t, f, outcomes, map[string]string{"2": "rejected amqp:not-allowed", "3": "released ", "4": "released "}, n-2)
	st := f.Stats()
	if st.Settled != n || st.InFlight != 0 || st.Accepted != 2 || st.Expired != 1 || st.Abandoned != 1 || st.Rejected != 0 {
		t.Fatalf("after Expire: %+v", st)
	}
	if got := released.Load(); got != n-3 {
		t.Fatalf("OnReleased told %d times, want %d", got, n-3)
	}
}
