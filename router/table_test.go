package router

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// The table keeps the other routers' advertised exchange routes: a change
// wakes waiters, an unchanged value does not, a router whose advertisement
// expired keeps its routes, one that advertises none drops them, and a
// value that does not decode is refused with the router named while its
// previous routes stay.
func TestTableEdges(t *testing.T) {
	tb := newTable()
	woke := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	e1 := routes.ExchangeEdge{Src: "r1", Dest: "r2", Exchange: "x", Key: "k"}
	e2 := routes.ExchangeEdge{Src: "r2", Dest: "r1", Exchange: "x", Key: "k"}
	raw := func(es ...routes.ExchangeEdge) json.RawMessage {
		b, _ := json.Marshal(es)
		return b
	}
	_, ch := tb.Paths()
	if err := tb.StoreEdges(map[string]json.RawMessage{"mA": raw(e2, e1), "mB": nil}); err != nil {
		t.Fatal(err)
	}
	if !woke(ch) || !slices.Equal(tb.Advertised(), []routes.ExchangeEdge{e1, e2}) {
		t.Fatalf("edges %v", tb.Advertised())
	}
	_, ch = tb.Paths()
	if err := tb.StoreEdges(map[string]json.RawMessage{"mA": raw(e2, e1)}); err != nil || woke(ch) {
		t.Fatalf("unchanged (and mB gone): woke %v, err %v", woke(ch), err)
	}
	if err := tb.StoreEdges(map[string]json.RawMessage{}); err != nil || len(tb.Advertised()) != 2 {
		t.Fatalf("mA's advertisement expired: its routes must stay, got %v (%v)", tb.Advertised(), err)
	}
	err := tb.StoreEdges(map[string]json.RawMessage{"mA": json.RawMessage(`{"src":1}`)})
	if err == nil || !strings.Contains(err.Error(), "router mA") || !strings.Contains(err.Error(), ExchangeRoutesExt) || len(tb.Advertised()) != 2 {
		t.Fatalf("bad value: err %v, edges %v", err, tb.Advertised())
	}
	_, ch = tb.Paths()
	if err := tb.StoreEdges(map[string]json.RawMessage{"mA": nil}); err != nil || !woke(ch) || len(tb.Advertised()) != 0 {
		t.Fatalf("mA advertises none: edges %v, err %v", tb.Advertised(), err)
	}
}

// The table is the routes' one view of the mesh: its next hop is the
// first hop of the latest paths, unknown before any.
func TestTableNextHop(t *testing.T) {
	var tb routes.Table = newTable()
	if next, ok := tb.NextHop("r1", "r3"); ok {
		t.Fatalf("next hop %q before any paths", next)
	}
	p, err := topology.Compute([]topology.Edge{{From: "r1", To: "r2", Cost: 1, Up: true}, {From: "r2", To: "r3", Cost: 1, Up: true}})
	if err != nil {
		t.Fatal(err)
	}
	_, changed := tb.Paths()
	tb.(*table).Store(p)
	select {
	case <-changed:
	default:
		t.Fatal("storing paths did not wake the waiter")
	}
	if next, ok := tb.NextHop("r1", "r3"); !ok || next != "r2" {
		t.Fatalf("next hop r1 to r3: %q %v, want r2", next, ok)
	}
	if next, ok := tb.NextHop("r3", "r1"); ok {
		t.Fatalf("next hop r3 to r1 on one-way links: %q", next)
	}
}
