package topology

import (
	"fmt"
	"slices"
	"testing"
)

// The brokers a node has ever heard named come out once each, from its
// own state and from accepted LSAs only, and stay named after the LSA
// that named them expired.
func TestNamedBrokers(t *testing.T) {
	n := newNode(t, "r1")
	r, err := n.SetLocal([]BrokerState{{Name: "a", State: StateOperational}, {Name: "b", State: StateOperational}},
		[]Link{{From: "a", To: "b", Cost: 1, Up: true}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b"}; !slices.Equal(r.Named, want) {
		t.Fatalf("own state named %v, want %v", r.Named, want)
	}
	l := LSA{Router: "r2", Instance: 1, Seq: 1, Time: t0.UnixNano(),
		Brokers: []BrokerState{{Name: "b", State: StateOperational}, {Name: "c", State: "Waiting"}, {Name: "d", State: StateOperational}},
		Links:   []Link{{From: "c", To: "d", Cost: 1}}}
	forged := l
	forged.Brokers, forged.Links = []BrokerState{{Name: "x", State: StateOperational}}, nil
	if r := n.Receive(mustEncode(t, forged, []byte("forged")), "b", t0); len(r.Named) != 0 {
		t.Fatalf("a refused LSA named %v", r.Named)
	}
	r = n.Receive(mustEncode(t, l, testSecret), "b", t0)
	if want := []string{"c", "d"}; !slices.Equal(r.Named, want) {
		t.Fatalf("LSA named %v, want %v (b was named already)", r.Named, want)
	}
	if r := n.Receive(mustEncode(t, l, testSecret), "b", t0); len(r.Named) != 0 {
		t.Fatalf("a duplicate LSA named %v again", r.Named)
	}
	if r := n.Tick(t0.Add(10 * n.cfg.MaxAge)); len(r.Named) != 0 || len(n.Snapshot(t0.Add(10*n.cfg.MaxAge)).Routers) != 1 {
		t.Fatalf("expiry: named %v, routers %v", r.Named, n.Snapshot(t0).Routers)
	}
	if _, ok := n.named["d"]; !ok {
		t.Fatal("d forgotten when the LSA naming it expired")
	}
}

// Past MaxNamed, names are counted and not remembered.
func TestNamedBound(t *testing.T) {
	n := newNode(t, "r1")
	var r Ready
	for i := range MaxNamed + 3 {
		n.noteNamed([]BrokerState{{Name: fmt.Sprintf("b%d", i)}}, nil, &r)
	}
	if len(n.named) != MaxNamed || len(r.Named) != MaxNamed || n.Counters().NamedDropped != 3 {
		t.Fatalf("named %d, ready %d, dropped %d", len(n.named), len(r.Named), n.Counters().NamedDropped)
	}
}
