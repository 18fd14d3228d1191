package engine_test

import (
	"fmt"
	"testing"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// smallDestPeer is a destination whose link takes messages of at most
// maxSize bytes (its attach's max-message-size) and accepts every one.
func smallDestPeer(t *testing.T, maxSize uint64) string {
	return destPeerAttach(t, func(a *wire.Attach) { a.MaxMessageSize = maxSize }, func(*wire.Transfer) *wire.DeliveryState {
		return &wire.DeliveryState{Kind: wire.StateAccepted}
	})
}

// Without brokers: a message over the destination link's
// max-message-size is the message's fault, not the link's. It is
// rejected at the source alone with amqp:link:message-size-exceeded (or
// dead-lettered, as the route says), and the messages behind it cross;
// released, it would come back at the head of the source for every run
// and block the route for good.
func TestForwardTooLargeRejectedAlone(t *testing.T) {
	const n = 5
	payloads := make([][]byte, n)
	for i := range payloads {
		size := 64
		if i == 2 {
			size = 2000
		}
		payloads[i] = encodeMessage(fmt.Sprint(i), body(i, size))
	}
	outcomes := make(chan [2]string, n)
	ss := session(t, dialFake(t, sourcePeer(t, payloads, outcomes), engine.Options{}), engine.SessionOptions{})
	ds := session(t, dialFake(t, smallDestPeer(t, 1000), engine.Options{}), engine.SessionOptions{})
	f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: "src", Credit: 10}, ds, engine.SenderOptions{Address: "small"}, engine.ForwardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expectOutcomes(t, f, outcomes, map[string]string{"0": "accepted ", "1": "accepted ", "2": "rejected amqp:link:message-size-exceeded",
		"3": "accepted ", "4": "accepted "}, n)
	if st := f.Stats(); st.Accepted != n-1 || st.Refusals != 1 || st.InFlight != 0 {
		t.Fatalf("stats %+v: want %d accepted and the large one refused", st, n-1)
	}
	if err := f.Err(); err != nil {
		t.Fatalf("the forwarder failed: %v", err)
	}
}
