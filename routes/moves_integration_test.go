package routes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
)

// A global destination's flow (max_moves 2) moves a message that has
// moved fewer times, counting the move, and parks the others back at the
// tail of the source queue, stamped with the run (one whose count is not
// a count a router writes too); meeting its own stamp, the run rests.
// On each data path: on the engine, two destinations chosen per message
// (links.EngineMove).
func TestIntegrationFlowMovesAndParks(t *testing.T) {
	onEachDataPath(t, flowMovesAndParks)
}

func flowMovesAndParks(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	q, dq := brokertest.UniqueName(t, "h-engcore-flow"), brokertest.UniqueName(t, "h-engcore-flowdq")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), q)
	brokertest.DeclareQueue(t, h.brokers["rabbit2"].Config(), dq)
	st := h.add(routes.Spec{Kind: routes.KindQueue, Src: "rabbit1", Dest: "rabbit2", Queue: q, DestQueue: dq, MaxMoves: 2})
	h.waitDataPath(st.ID, dataPath) // the source is empty yet: the run waits for messages
	moves := []any{int64(0), int64(1), int64(0), int64(1), int64(0), int64(1), int64(2), int64(2), "x"}
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+q, 100, len(moves), func(i int) *goamqp.Message {
		m := brokertest.Body(i)
		m.Annotations = goamqp.Annotations{links.AnnotationMoves: moves[i]}
		return m
	})
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		s, _ := h.m.Get(st.ID)
		if s.Moved != 6 || s.Parked < 3 || !strings.Contains(s.Detail, "resting") {
			return fmt.Errorf("moved %d, parked %d, %s (%s)", s.Moved, s.Parked, s.State, s.Detail)
		}
		return nil
	})
	// Moved: counted once more, no stamp.
	r := brokertest.OpenReceiver(t, h.session("rabbit2"), famqp.LinkSpec{Address: "/amq/queue/" + dq}, 10)
	for range 6 {
		msg := receiveOne(t, r)
		a := msg.GoAMQP().Annotations
		var i int
		if _, err := fmt.Sscanf(string(msg.Data()), "m-%06d", &i); err != nil {
			t.Fatal(err)
		}
		if a[links.AnnotationMoves] != moves[i].(int64)+1 || a[links.AnnotationParked] != nil {
			t.Fatalf("moved message %d: annotations %v", i, a)
		}
	}
	if err := h.m.Delete(t.Context(), st.ID); err != nil {
		t.Fatal(err)
	}
	// Parked: left at the source, stamped, the count as it was.
	r = brokertest.OpenReceiver(t, h.session("rabbit1"), famqp.LinkSpec{Address: "/amq/queue/" + q}, 10)
	for range 3 {
		msg := receiveOne(t, r)
		a := msg.GoAMQP().Annotations
		var i int
		if _, err := fmt.Sscanf(string(msg.Data()), "m-%06d", &i); err != nil || i < 6 {
			t.Fatalf("parked %q (%v)", msg.Data(), err)
		}
		if stamp, _ := a[links.AnnotationParked].(string); stamp == "" || a[links.AnnotationMoves] != moves[i] {
			t.Fatalf("parked message %d: annotations %v", i, a)
		}
	}
}

func receiveOne(t *testing.T, r *famqp.Receiver) famqp.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	msg, err := r.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Accept(ctx, msg); err != nil {
		t.Fatal(err)
	}
	return msg
}
