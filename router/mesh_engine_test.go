package router

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// Four routers, each holding one side of a square of qpidd brokers with
// exchange routes both ways, on each data path (data_path in their
// configuration): the routes judge every message by the origin's
// shortest-path tree and the trace (meshHop; qpidd's subscriptions are
// not shared, so no fan-out), and a message published at any broker
// reaches every broker once. The brokers go by names of this test's own
// (hk1..hk4): the transit queues their tables make the routers carry
// are named for them, so no other test's messages are taken.
func TestIntegrationMeshExchangeRoutesQpidd(t *testing.T) {
	for _, dp := range []string{routes.DataPathEngine} {
		t.Run(dp, func(t *testing.T) { meshExchangeRoutesQpidd(t, dp) })
	}
}

func meshExchangeRoutesQpidd(t *testing.T, dataPath string) {
	m := brokersOf(t, "qpidd1", "qpidd2", "qpidd3", "qpidd4")
	for i := 1; i <= 4; i++ {
		b := m.brokers[fmt.Sprintf("qpidd%d", i)]
		delete(m.brokers, b.Name)
		alias := fmt.Sprintf("hk%d", i)
		m.brokers[alias] = b
		t.Cleanup(func() { // after the routers stopped (cleanups run last first)
			qm := brokertest.QpidManagement(t, b.Config())
			for j := 1; j <= 4; j++ {
				_ = qm.Delete(context.Background(), "queue", fmt.Sprintf("%shk%d", links.TransitPrefix, j)) // absent: never carried
			}
		})
	}
	ex := brokertest.UniqueName(t, "h-enghook-ex")
	cols := map[string]*collector{}
	for alias, b := range m.brokers {
		q := brokertest.UniqueName(t, "h-enghook-q-"+alias)
		brokertest.DeclareExchangeQueue(t, b.Config(), ex, "topic", q, "orders.#")
		cols[alias] = m.collect(alias, q)
	}
	routesOf := func(a, b string) string {
		return fmt.Sprintf("data_path: %s\nroutes:\n  - {kind: exchange, src: %s, dest: %s, exchange: %s, key: 'orders.#'}\n"+
			"  - {kind: exchange, src: %s, dest: %s, exchange: %s, key: 'orders.#'}\n", dataPath, a, b, ex, b, a, ex)
	}
	for _, s := range [][3]string{{"eA", "hk1", "hk2"}, {"eB", "hk2", "hk3"}, {"eC", "hk3", "hk4"}, {"eD", "hk4", "hk1"}} {
		m.start(s[0], s[1], s[2], routesOf(s[1], s[2]))
	}
	m.sameTables(4)
	for id, r := range m.routers {
		for _, st := range r.routes.List() {
			m.waitRoute(id, st.ID, func(st routes.Status) error {
				if err := operational(st); err != nil {
					return err
				}
				if onEngine := strings.Contains(st.Detail, "engine"); onEngine != (dataPath == routes.DataPathEngine) {
					return fmt.Errorf("route %s on data path %s: detail %q", st.Spec, dataPath, st.Detail)
				}
				return nil
			})
		}
	}
	const n = 500
	brokertest.SendAll(t, m.session("hk1"), ex, 100, n, func(i int) *goamqp.Message { return subjected(i) })
	brokertest.SendAll(t, m.session("hk3"), ex, 100, n, func(i int) *goamqp.Message { return subjected(1000 + i) })
	for _, c := range cols {
		c.wait(t, 2*n, 60*time.Second)
	}
	// Each message crosses its origin's three tree links and is dropped
	// by the five other routes that see it: once all are counted, no
	// copy can still be on its way.
	counts := func() (forwarded, looped uint64) {
		for _, r := range m.routers {
			for _, st := range r.routes.List() {
				forwarded += st.Forwarded
				looped += st.Looped
			}
		}
		return
	}
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if f, l := counts(); f != 3*2*n || l != 5*2*n {
			return fmt.Errorf("routes forwarded %d (want %d), dropped %d (want %d)", f, 3*2*n, l, 5*2*n)
		}
		return nil
	})
	for alias, c := range cols {
		got := seqs(c.snapshot())
		brokertest.CheckNoLossFrom(t, got, 0, n)
		dups := brokertest.CheckNoLossFrom(t, got, 1000, 1000+n)
		t.Logf("%s, %s: published %d, received %d, lost 0, duplicated %d", dataPath, alias, 2*n, len(got), dups)
		if dups != 0 || len(got) != 2*n {
			t.Errorf("%s received %d for %d published (%d duplicates)", alias, len(got), 2*n, dups)
		}
	}
}

// subjected is Numbered(i) published with the subject orders.created,
// which qpidd's topic exchange routes by.
func subjected(i int) *goamqp.Message {
	msg := brokertest.Numbered(i)
	subject := "orders.created"
	msg.Properties.Subject = &subject
	return msg
}

// sameTables waits until every router's table holds n brokers and the
// same paths between all of them.
func (m *mesh) sameTables(n int) {
	m.t.Helper()
	brokertest.Eventually(m.t, 60*time.Second, 20*time.Millisecond, func() error {
		first := ""
		for id, r := range m.routers {
			p := r.table.Load()
			if p == nil || len(p.Brokers()) != n {
				return fmt.Errorf("%s: no table of %d brokers yet", id, n)
			}
			if all := pathsText(p); first == "" {
				first = all
			} else if all != first {
				return fmt.Errorf("the routers hold different paths")
			}
		}
		return nil
	})
}

// pathsText is every path of p, as text to compare.
func pathsText(p *topology.Paths) string {
	var all strings.Builder
	for _, a := range p.Brokers() {
		for _, b := range p.Brokers() {
			fmt.Fprintf(&all, "%s>%s:%v ", a, b, p.Path(a, b))
		}
	}
	return all.String()
}
