package routes

import (
	"slices"
	"strings"
	"testing"
)

// The square of the mesh tests, routes both ways on every side.
func square(ex, key string) []ExchangeEdge {
	var out []ExchangeEdge
	for _, side := range [][2]string{{"rabbit1", "rabbit2"}, {"rabbit2", "rabbit4"}, {"rabbit1", "rabbit3"}, {"rabbit3", "rabbit4"}} {
		out = append(out, ExchangeEdge{Src: side[0], Dest: side[1], Exchange: ex, Key: key},
			ExchangeEdge{Src: side[1], Dest: side[0], Exchange: ex, Key: key})
	}
	return out
}

func TestReach(t *testing.T) {
	sq := square("x", "k")
	chain := []ExchangeEdge{{Src: "a", Dest: "b"}, {Src: "b", Dest: "c"}, {Src: "d", Dest: "a"}}
	for _, tc := range []struct {
		name   string
		origin string
		edges  []ExchangeEdge
		skip   []string
		want   []string
	}{
		{"square from a corner", "rabbit1", sq, nil, []string{"rabbit2", "rabbit3", "rabbit4"}},
		{"square from the far corner", "rabbit4", sq, nil, []string{"rabbit1", "rabbit2", "rabbit3"}},
		{"trace skipped", "rabbit2", sq, []string{"rabbit1"}, []string{"rabbit3", "rabbit4"}},
		{"edges have a direction", "a", chain, nil, []string{"b", "c"}},
		{"nothing leads out", "c", chain, nil, []string{}},
		{"an origin without edges", "z", sq, nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reach(tc.origin, tc.edges, tc.skip); !slices.Equal(got, tc.want) {
				t.Errorf("reach(%s) = %v, want %v", tc.origin, got, tc.want)
			}
		})
	}
}

func TestFanoutGroupsAndEligibility(t *testing.T) {
	a := ExchangeEdge{Src: "r1", Dest: "r2", Exchange: "orders", Key: "eu.#"}
	b := ExchangeEdge{Src: "r3", Dest: "r4", Exchange: "orders", Key: "eu.#"}
	c := ExchangeEdge{Src: "r1", Dest: "r2", Exchange: "orders", Key: "us.#"}
	if a.Group() != b.Group() || a.Group() == c.Group() || len(a.Group()) != 12 {
		t.Errorf("groups: %s %s %s", a.Group(), b.Group(), c.Group())
	}
	// The separator keeps ("a.b", "c") and ("a", "b.c") apart.
	if (ExchangeEdge{Exchange: "a\nb", Key: "c"}).Group() == (ExchangeEdge{Exchange: "a", Key: "b\nc"}).Group() {
		t.Error("groups collide across the exchange/key boundary")
	}
	if sub := fanoutSubscription(a); sub.Name != "fedrouter.fanout.orders."+a.Group() || !sub.Durable || !sub.Single {
		t.Errorf("subscription %+v", sub)
	}
	long := ExchangeEdge{Exchange: strings.Repeat("x", 250)}
	if sub := fanoutSubscription(long); len(sub.Name) > maxQueueName || !strings.HasSuffix(sub.Name, long.Group()) {
		t.Errorf("long exchange: subscription %q", sub.Name)
	}
	for _, tc := range []struct {
		spec Spec
		ok   bool
	}{
		{Spec{Kind: KindExchange, Src: "r1", Dest: "r2", Exchange: "orders", Key: "eu.#"}, true},
		{Spec{Kind: KindExchange, Src: "r1", Dest: "r2", Exchange: "orders", DestExchange: "orders"}, true},
		{Spec{Kind: KindExchange, Src: "r1", Dest: "r2", Exchange: "orders", DestExchange: "other"}, false},
		{Spec{Kind: KindQueue, Src: "r1", Dest: "r2", Exchange: "orders", Queue: "q"}, false},
		{Spec{Kind: KindDynamic, Src: "r1", Dest: "r2", Exchange: "orders"}, false},
	} {
		e, ok := fanoutEdge(tc.spec)
		if ok != tc.ok || (ok && (e.Src != tc.spec.Src || e.Dest != tc.spec.Dest || e.Exchange != "orders" || e.Key != tc.spec.Key)) {
			t.Errorf("%s: fanoutEdge = %+v, %v; want ok %v", tc.spec, e, ok, tc.ok)
		}
	}
}

func TestFanned(t *testing.T) {
	if !fanned("aaa,bbb", "bbb") || fanned("aaa,bbb", "bb") || fanned("aaa,bbb", "ccc") {
		t.Error("fanned misreads the list")
	}
	if fanned("", "aaa") {
		t.Error("a message without the annotation counts as fanned")
	}
}
