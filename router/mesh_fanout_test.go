package router

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// Exchange routes both ways on every side of the square: a message
// published at any broker reaches every broker's consumer exactly once
// (valid origins: each link forwards only the origins whose shortest-path
// tree it is on; traces stop echoes). On each data path: on the engine,
// the fan-out routes and the transit forwarders.
func TestIntegrationMeshExchangeRoutesOnce(t *testing.T) {
	for _, dp := range []string{"engine"} {
		t.Run(dp, func(t *testing.T) { meshExchangeRoutesOnce(t, dp) })
	}
}

func meshExchangeRoutesOnce(t *testing.T, dataPath string) {
	ex := brokertest.UniqueName(t, "meshtopic")
	routesOf := func(a, b string) string {
		return "data_path: " + dataPath + "\n" + fmt.Sprintf("routes:\n  - {kind: exchange, src: %s, dest: %s, exchange: %s, key: 'orders.#'}\n"+
			"  - {kind: exchange, src: %s, dest: %s, exchange: %s, key: 'orders.#'}\n", a, b, ex, b, a, ex)
	}
	// The group's shared queues are durable and outlive the routers (as
	// they should): removed once the routers have stopped.
	shared := routes.FanoutPrefix + ex + "." + routes.ExchangeEdge{Exchange: ex, Key: "orders.#"}.Group()
	t.Cleanup(func() {
		for _, b := range brokertest.Require(t, "rabbit1", "rabbit2", "rabbit3", "rabbit4") {
			mg, err := famqp.NewRabbitManagement(b.Config())
			if err != nil {
				t.Error(err)
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := mg.DeleteQueue(ctx, shared); err != nil {
				t.Errorf("%s: delete %s: %v", b.Name, shared, err)
			}
			cancel()
			mg.Close()
		}
	})
	m := newMesh(t, map[string]string{"mA": routesOf("rabbit1", "rabbit2"), "mB": routesOf("rabbit2", "rabbit4"),
		"mC": routesOf("rabbit1", "rabbit3"), "mD": routesOf("rabbit3", "rabbit4")})
	cols := map[string]*collector{}
	for _, b := range []string{"rabbit1", "rabbit2", "rabbit3", "rabbit4"} {
		q := brokertest.UniqueName(t, "meshsub-"+b)
		brokertest.DeclareExchangeQueue(t, m.brokers[b].Config(), ex, "topic", q, "orders.#")
		cols[b] = m.collect(b, q)
	}
	m.converged("rabbit1 rabbit2 rabbit4")
	for id, r := range m.routers {
		for _, st := range r.routes.List() {
			m.waitRoute(id, st.ID, operational)
		}
	}
	for id, r := range m.routers {
		for _, st := range r.routes.List() {
			if !strings.Contains(st.Detail, "fan-out from "+st.Spec.Src+" to rabbit") ||
				dataPath == "engine" && !strings.Contains(st.Detail, "forwarding on the engine data path") {
				t.Errorf("%s: route %s detail %q: want fan-out", id, st.Spec, st.Detail)
			}
		}
	}
	const n = 500
	brokertest.SendAll(t, m.session("rabbit1"), "/exchange/"+ex+"/orders.created", 100, n, brokertest.Numbered)
	brokertest.SendAll(t, m.session("rabbit4"), "/exchange/"+ex+"/orders.created", 100, n, func(i int) *goamqp.Message { return brokertest.Numbered(1000 + i) })
	// Fan-out at the origin: each message is taken once from its broker's
	// shared queue and copied into transit for the three other brokers;
	// each copy, delivered into the exchange there, lands in that broker's
	// shared queue and is dropped (looped). Once all are accounted for, no
	// copy can still be on its way.
	// Each router is attached to the origin and one neighbour: the copy
	// for that neighbour goes straight there, the two others by transit.
	counts := func() (forwarded, looped, copies, viaTransit uint64) {
		for _, r := range m.routers {
			for _, st := range r.routes.List() {
				forwarded += st.Forwarded
				looped += st.Looped
				copies += st.Copies
				viaTransit += st.CopiesViaTransit
			}
		}
		return
	}
	var forwarded, looped, copies, viaTransit uint64
	brokertest.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
		if forwarded, looped, copies, viaTransit = counts(); forwarded+looped < 8*n {
			return fmt.Errorf("routes have taken %d messages and copies of %d", forwarded+looped, 8*n)
		}
		return nil
	})
	if forwarded != 2*n || copies != 3*2*n || looped != 3*2*n || viaTransit != 2*2*n {
		t.Errorf("routes took %d messages (want %d), sent %d copies (want %d; %d by transit, want %d), dropped %d arrived copies (want %d)",
			forwarded, 2*n, copies, 3*2*n, viaTransit, 2*2*n, looped, 3*2*n)
	}
	for b, c := range cols {
		c.wait(t, 2*n, 60*time.Second)
		got := seqs(c.snapshot())
		brokertest.CheckNoLossFrom(t, got, 0, n)
		dups := brokertest.CheckNoLossFrom(t, got, 1000, 1000+n) // counts all of got
		t.Logf("%s: sent %d, received %d, lost 0, duplicated %d", b, 2*n, len(got), dups)
		if dups != 0 || len(got) != 2*n {
			t.Errorf("%s received %d messages for %d published (%d duplicates)", b, len(got), 2*n, dups)
		}
	}
	t.Logf("messages taken at their origin %d, copies sent %d (%d by transit), arrived copies dropped %d", forwarded, copies, viaTransit, looped)

	// A flap: the side rabbit2 - rabbit4 is cut while 500 more are
	// published at rabbit1, then healed. Every broker gets each once: the
	// copies for rabbit4 go by rabbit3 while the side is down, and nothing
	// is held anywhere to be delivered again when it is back.
	m.proxies["mB"].Cut()
	m.converged("rabbit1 rabbit3 rabbit4")
	brokertest.SendAll(t, m.session("rabbit1"), "/exchange/"+ex+"/orders.created", 100, n, func(i int) *goamqp.Message { return brokertest.Numbered(2000 + i) })
	cols["rabbit4"].wait(t, 3*n, 60*time.Second)
	m.proxies["mB"].Heal()
	m.converged("rabbit1 rabbit2 rabbit4")
	for id, r := range m.routers {
		for _, st := range r.routes.List() {
			m.waitRoute(id, st.ID, operational)
		}
	}
	// And markers after the healing, over the healed side again.
	brokertest.SendAll(t, m.session("rabbit1"), "/exchange/"+ex+"/orders.created", 100, 100, func(i int) *goamqp.Message { return brokertest.Numbered(3000 + i) })
	brokertest.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
		if forwarded, looped, _, _ = counts(); forwarded+looped < 8*n+4*(n+100) {
			return fmt.Errorf("routes have taken %d messages and copies of %d", forwarded+looped, 8*n+4*(n+100))
		}
		return nil
	})
	for b, c := range cols {
		c.wait(t, 3*n+100, 60*time.Second)
		got := seqs(c.snapshot())
		brokertest.CheckNoLossFrom(t, got, 2000, 2000+n)
		dups := brokertest.CheckNoLossFrom(t, got, 3000, 3100) // counts all of got
		t.Logf("flap, %s: sent %d, received %d, lost 0, duplicated %d", b, n+100, len(got)-2*n, dups)
		if dups != 0 || len(got) != 3*n+100 {
			t.Errorf("flap, %s: received %d messages for %d published (%d duplicates)", b, len(got), 3*n+100, dups)
		}
	}

	// The same side cut and healed mid stream, twice, while 5,000 are
	// published at rabbit1 and 5,000 at rabbit4. Nothing is lost.
	// Duplicates come only from outcomes lost with the cut connection:
	// at each broker, each cut, at most the windows of the forwarders on
	// mB's connection to rabbit4 that carry copies to it (meshbounds_test.go).
	// mB's route from rabbit4, while it is the active consumer of
	// rabbit4's shared queue, copies to rabbit1, rabbit2 and rabbit3
	// (window: its credit, the default) and what it held unsettled is
	// copied again by mD's when it takes over; rabbit4's transit for
	// rabbit1 and for rabbit2 (next hop rabbit2, mB) carries rabbit4's
	// copies there while mD's route is the active one; rabbit2's transit
	// for rabbit4 (mB) carries rabbit1's copies to rabbit4.
	const n3, base3, base4 = 5000, 10000, 20000
	const cuts = 2
	cutPerBroker := map[string]struct{ routes, transit int }{
		"rabbit1": {1, 1}, "rabbit2": {1, 1}, "rabbit3": {1, 0}, "rabbit4": {0, 1},
	}
	lateBefore := m.lateDrains()
	sent := make(chan struct{})
	go func() { // ends when the send is done
		defer close(sent)
		var wg sync.WaitGroup
		for _, p := range []struct {
			broker string
			base   int
		}{{"rabbit1", base3}, {"rabbit4", base4}} {
			wg.Add(1)
			go func() { // ends when its send is done
				defer wg.Done()
				brokertest.SendAll(t, m.session(p.broker), "/exchange/"+ex+"/orders.created", 200, n3, func(i int) *goamqp.Message { return brokertest.Numbered(p.base + i) })
			}()
		}
		wg.Wait()
	}()
	before := len(cols["rabbit4"].snapshot())
	for i, at := range []int{n3 / 5, 3 * n3 / 5} {
		brokertest.Eventually(t, 60*time.Second, time.Millisecond, func() error {
			if len(cols["rabbit4"].snapshot())-before < at {
				return fmt.Errorf("waiting for the stream")
			}
			return nil
		})
		m.proxies["mB"].Cut()
		m.converged("rabbit1 rabbit3 rabbit4")
		m.proxies["mB"].Heal()
		m.converged("rabbit1 rabbit2 rabbit4")
		t.Logf("mid-stream flap %d done at %d arrivals at rabbit4", i+1, len(cols["rabbit4"].snapshot())-before)
	}
	<-sent
	for _, b := range []string{"rabbit1", "rabbit2", "rabbit3", "rabbit4"} {
		c := cols[b]
		c.wait(t, 3*n+100+2*n3, 60*time.Second)
		var from1, from4 []int64
		for _, s := range seqs(c.snapshot()) {
			switch {
			case s >= base4:
				from4 = append(from4, s)
			case s >= base3:
				from1 = append(from1, s)
			}
		}
		dups1 := brokertest.CheckNoLossFrom(t, from1, base3, base3+n3)
		dups4 := brokertest.CheckNoLossFrom(t, from4, base4, base4+n3)
		t.Logf("mid-stream flaps, %s: sent %d, received %d, lost 0, duplicated %d of rabbit1's, %d of rabbit4's", b, 2*n3, len(from1)+len(from4), dups1, dups4)
		cut := cutPerBroker[b]
		bound, late := m.dupBound(cuts*cut.routes*routes.DefaultCredit, cuts*cut.transit, lateBefore)
		t.Logf("mid-stream flaps, %s: duplicates %d, bound %d (%d cuts × (%d route × credit %d + %d transit forwarders × window %d), %d drained late)",
			b, dups1+dups4, bound, cuts, cut.routes, routes.DefaultCredit, cut.transit, transitWindow, late)
		if dups1+dups4 > bound {
			t.Errorf("mid-stream flaps, %s: %d duplicates, more than the windows of the forwarders the cuts took (%d)", b, dups1+dups4, bound)
		}
	}
}
