package router

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/routes"
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
	if !woke(ch) || !slices.Equal(tb.Edges(), []routes.ExchangeEdge{e1, e2}) {
		t.Fatalf("edges %v", tb.Edges())
	}
	_, ch = tb.Paths()
	if err := tb.StoreEdges(map[string]json.RawMessage{"mA": raw(e2, e1)}); err != nil || woke(ch) {
		t.Fatalf("unchanged (and mB gone): woke %v, err %v", woke(ch), err)
	}
	if err := tb.StoreEdges(map[string]json.RawMessage{}); err != nil || len(tb.Edges()) != 2 {
		t.Fatalf("mA's advertisement expired: its routes must stay, got %v (%v)", tb.Edges(), err)
	}
	err := tb.StoreEdges(map[string]json.RawMessage{"mA": json.RawMessage(`{"src":1}`)})
	if err == nil || !strings.Contains(err.Error(), "router mA") || !strings.Contains(err.Error(), ExchangeRoutesExt) || len(tb.Edges()) != 2 {
		t.Fatalf("bad value: err %v, edges %v", err, tb.Edges())
	}
	_, ch = tb.Paths()
	if err := tb.StoreEdges(map[string]json.RawMessage{"mA": nil}); err != nil || !woke(ch) || len(tb.Edges()) != 0 {
		t.Fatalf("mA advertises none: edges %v, err %v", tb.Edges(), err)
	}
}
