package routes_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// lenientProfile passes the destination check for one exchange that is
// not there: the exchange deleted between the check and the attach (or
// the check remembered from before), so that the attach is refused.
type lenientProfile struct {
	famqp.Profile
	missing string
}

func (p lenientProfile) CheckTarget(ctx context.Context, n famqp.Node) error {
	if n.Name == p.missing {
		return nil
	}
	return p.Profile.CheckTarget(ctx, n)
}

// One route's refused attach (RabbitMQ ends a session on a refused
// attach) must not disturb the other routes to the same broker: each run
// begins sessions of its own on the broker's engine connection. The
// others deliver every message, and the refused route's failures leave
// their last errors as they were (the check allows one disturbance, from
// when go-amqp's routes shared a destination session).
func TestIntegrationSharedSessionRefusedRoute(t *testing.T) {
	onEachDataPath(t, sharedSessionRefusedRoute)
}

func sharedSessionRefusedRoute(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	h.m.Stop(context.Background())
	missing := brokertest.UniqueName(t, "missing")
	b2 := h.opts.Brokers["rabbit2"]
	b2.Profile = lenientProfile{Profile: b2.Profile, missing: missing}
	h.opts.Brokers["rabbit2"] = b2
	h.start()

	var good []sharedRoute
	for i := range 3 {
		r := sharedRoute{src: brokertest.UniqueName(t, fmt.Sprint("src", i)), dq: brokertest.UniqueName(t, fmt.Sprint("dq", i))}
		ex := brokertest.UniqueName(t, fmt.Sprint("ex", i))
		brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), r.src)
		h.exchangeWithQueue("rabbit2", ex, "fanout", r.dq, "")
		r.id = h.add(routes.Spec{Kind: routes.KindQueue, Src: "rabbit1", Dest: "rabbit2", Exchange: ex, Queue: r.src}).ID
		h.waitState(r.id, routes.StateOperational)
		good = append(good, r)
	}
	badSrc := brokertest.UniqueName(t, "badsrc")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), badSrc)
	bad := routes.Spec{Kind: routes.KindQueue, Src: "rabbit1", Dest: "rabbit2", Exchange: missing, Queue: badSrc}
	// Messages in flight while the bad route is refused.
	h.sendThrough(good, 0, 3000, func() { bad = h.add(bad).Spec })
	after := h.nextFailure(bad.ID(), missing, time.Time{})
	after = h.nextFailure(bad.ID(), missing, after) // a retry
	before := map[string]time.Time{}
	for _, r := range good {
		before[r.id] = h.waitState(r.id, routes.StateOperational).LastErrorAt
	}
	h.nextFailure(bad.ID(), missing, after) // another one while the others run
	h.sendThrough(good, 3000, 3000, nil)
	for _, r := range good {
		if st := h.waitState(r.id, routes.StateOperational); !st.LastErrorAt.Equal(before[r.id]) {
			t.Errorf("route %s was disturbed by a later refusal of the bad route: %q", r.id, st.LastError)
		}
	}
}

// sharedRoute is a route of the test above, its source queue and the
// queue bound to its destination exchange.
type sharedRoute struct{ id, src, dq string }

// sendThrough sends messages from..from+n-1 into each route's source,
// calling during (when set) meanwhile, and checks that each destination
// queue got all of them.
func (h *harness) sendThrough(rs []sharedRoute, from, n int, during func()) {
	h.t.Helper()
	var wg sync.WaitGroup
	mk := func(i int) *goamqp.Message { return brokertest.Numbered(from + i) }
	for _, r := range rs {
		wg.Go(func() { brokertest.SendAll(h.t, h.session("rabbit1"), "/amq/queue/"+r.src, 200, n, mk) })
	}
	if during != nil {
		during()
	}
	wg.Wait()
	for _, r := range rs {
		got := brokertest.Collect(h.t, h.conns["rabbit2"], "/amq/queue/"+r.dq, n, 30*time.Second)
		brokertest.CheckNoLossFrom(h.t, got, from, from+n)
	}
}

// nextFailure waits until route id has failed to attach its sender to
// the exchange missing at rabbit2 after since — waiting for it, in plain
// words — and returns when.
func (h *harness) nextFailure(id, missing string, since time.Time) time.Time {
	h.t.Helper()
	var at time.Time
	brokertest.Eventually(h.t, 60*time.Second, 20*time.Millisecond, func() error {
		st, _ := h.m.Get(id)
		if st.State != routes.StateWaiting || st.LastError != "exchange "+missing+" does not exist at broker rabbit2" ||
			st.Detail != "waiting for exchange "+missing+" at broker rabbit2" || !st.LastErrorAt.After(since) {
			return fmt.Errorf("route %s: %s (%s), %q at %s", id, st.State, st.Detail, st.LastError, st.LastErrorAt)
		}
		at = st.LastErrorAt
		return nil
	})
	return at
}
