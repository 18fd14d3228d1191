package topology

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// network runs several Nodes over in-memory brokers (rafttest style): a
// flood sent on a broker reaches every other router attached there, as a
// multicast publish or one message per peer inbox would.
type network struct {
	t        *testing.T
	nodes    map[string]*Node
	attached map[string][]string // broker → routers, from their local state
	queue    []delivery
	now      time.Time
	stopped  map[string]bool
	lose     func() bool // drops a message when true
}

type delivery struct {
	to, broker string
	data       []byte
}

func newNetwork(t *testing.T, rnd *rand.Rand, ids ...string) *network {
	w := &network{t: t, nodes: map[string]*Node{}, attached: map[string][]string{}, now: t0, stopped: map[string]bool{}}
	for i, id := range ids {
		cfg := Config{RouterID: id, Instance: int64(100 * (i + 1)), Secret: testSecret}
		if rnd != nil {
			cfg.Rand = rnd.Float64
		}
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		w.nodes[id] = n
	}
	return w
}

// start gives a router its brokers (all Operational) and links.
func (w *network) start(id string, brokers []string, links []Link) {
	var bs []BrokerState
	for _, b := range brokers {
		bs = append(bs, BrokerState{Name: b, State: StateOperational})
		w.attached[b] = append(w.attached[b], id)
	}
	r, err := w.nodes[id].SetLocal(bs, links, w.now)
	if err != nil {
		w.t.Fatal(err)
	}
	w.send(id, r)
	w.settle()
}

func (w *network) send(from string, r Ready) {
	for _, o := range r.Flood {
		for _, b := range o.To {
			for _, to := range w.attached[b] {
				if to != from && (w.lose == nil || !w.lose()) {
					w.queue = append(w.queue, delivery{to, b, o.Data})
				}
			}
		}
	}
}

// settle delivers until no message is in flight.
func (w *network) settle() {
	for steps := 0; len(w.queue) > 0; steps++ {
		if steps > 100000 {
			w.t.Fatal("flooding does not terminate")
		}
		m := w.queue[0]
		w.queue = w.queue[1:]
		if !w.stopped[m.to] {
			w.send(m.to, w.nodes[m.to].Receive(m.data, m.broker, w.now))
		}
	}
}

// advance runs every live router's timers up to until.
func (w *network) advance(d time.Duration) {
	until := w.now.Add(d)
	for {
		next := until
		for id, n := range w.nodes {
			if t := n.NextTick(w.now); !w.stopped[id] && t.Before(next) {
				next = t
			}
		}
		w.now = next
		for _, id := range sortedKeys(w.nodes) {
			if !w.stopped[id] {
				w.send(id, w.nodes[id].Tick(w.now))
			}
		}
		w.settle()
		if !w.now.Before(until) {
			return
		}
	}
}

// converged checks that the live routers hold the same graph, the same
// table, and each other's LSAs.
func (w *network) converged(live ...string) error {
	first := w.nodes[live[0]]
	for _, id := range live {
		n := w.nodes[id]
		if !reflect.DeepEqual(n.edges, first.edges) {
			return fmt.Errorf("%s and %s hold different graphs:\n%v\n%v", id, live[0], n.edges, first.edges)
		}
		if tableString(n.Paths()) != tableString(first.Paths()) {
			return fmt.Errorf("%s and %s compute different tables", id, live[0])
		}
		if held := sortedKeys(n.db); !reflect.DeepEqual(held, without(live, id)) {
			return fmt.Errorf("%s holds %v, want %v", id, held, without(live, id))
		}
	}
	return nil
}

func without(ids []string, id string) []string {
	out := slices.DeleteFunc(slices.Clone(ids), func(s string) bool { return s == id })
	slices.Sort(out)
	return out
}

func triangle(w *network) {
	w.start("r1", []string{"a", "b"}, both2("a", "b", 1))
	w.now = w.now.Add(10 * time.Second)
	w.start("r2", []string{"b", "c"}, both2("b", "c", 1))
	w.now = w.now.Add(10 * time.Second)
	w.start("r3", []string{"c", "a"}, both2("c", "a", 3))
}

func both2(a, b string, cost int64) []Link {
	return []Link{{From: a, To: b, Cost: cost, Up: true}, {From: b, To: a, Cost: cost, Up: true}}
}

// Routers started 10 s apart converge at once, without waiting for a
// refresh: each newcomer's LSA draws its neighbours' databases.
func TestRoutersConvergeOnStart(t *testing.T) {
	w := newNetwork(t, nil, "r1", "r2", "r3")
	triangle(w)
	if err := w.converged("r1", "r2", "r3"); err != nil {
		t.Fatal(err)
	}
	if r, _ := w.nodes["r3"].Paths().Route("a", "c"); r.Cost != 2 || r.NextHop != "b" {
		t.Fatalf("a→c %+v", r)
	}
	// Refreshes change nothing.
	w.advance(5 * time.Minute)
	if err := w.converged("r1", "r2", "r3"); err != nil {
		t.Fatal(err)
	}
}

// A router that stops is forgotten after MaxAge, with its links.
func TestDeadRouterExpires(t *testing.T) {
	w := newNetwork(t, nil, "r1", "r2", "r3")
	triangle(w)
	// Stopped at 20 s. Its LSA went out at 10 s and again at 20 s (the sync
	// answering r3): each router ages it from its own last receipt, so r1
	// forgets it at 100 s and r3 at 110 s.
	w.stopped["r2"] = true
	w.advance(70 * time.Second)
	if _, ok := w.nodes["r1"].db["r2"]; !ok {
		t.Fatal("r2 forgotten before MaxAge")
	}
	w.advance(20 * time.Second)
	if err := w.converged("r1", "r3"); err != nil {
		t.Fatal(err)
	}
	if r, _ := w.nodes["r1"].Paths().Route("a", "c"); r.Cost != 3 || r.Hops != 1 {
		t.Fatalf("a→c after r2 died: %+v", r)
	}
}

// With 30 % of messages lost, refreshes still bring every router to the
// same view within a few refresh periods.
func TestConvergenceDespiteLoss(t *testing.T) {
	rnd := rand.New(rand.NewPCG(21, 22))
	w := newNetwork(t, rnd, "r1", "r2", "r3", "r4")
	w.lose = func() bool { return rnd.IntN(10) < 3 }
	triangle(w)
	w.start("r4", []string{"c", "d"}, both2("c", "d", 2))
	w.advance(2 * time.Minute)
	w.lose = nil
	w.advance(30 * time.Second) // one refresh each, nothing lost
	if err := w.converged("r1", "r2", "r3", "r4"); err != nil {
		t.Fatal(err)
	}
}
