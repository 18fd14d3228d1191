package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// The advertised exchange routes are listed by group; a router without
// them, or with a value that does not decode, adds no line.
func TestPrintExchangeRoutes(t *testing.T) {
	raw := func(es ...routes.ExchangeEdge) json.RawMessage {
		b, _ := json.Marshal(es)
		return b
	}
	e := routes.ExchangeEdge{Src: "rabbit1", Dest: "rabbit2", Exchange: "orders", Key: "eu.#"}
	back := routes.ExchangeEdge{Src: "rabbit2", Dest: "rabbit1", Exchange: "orders", Key: "eu.#"}
	rvs := []topology.RouterView{
		{Router: "mA", Ext: map[string]json.RawMessage{router.ExchangeRoutesExt: raw(e)}},
		{Router: "mB", Ext: map[string]json.RawMessage{router.ExchangeRoutesExt: raw(back)}},
		{Router: "mC"},
		{Router: "mD", Ext: map[string]json.RawMessage{router.ExchangeRoutesExt: json.RawMessage(`{"bad":1}`)}},
	}
	var out bytes.Buffer
	list := func(rvs []topology.RouterView) {
		p := newPrinter(&out)
		printExchangeRoutes(p, rvs)
		if err := p.done(); err != nil {
			t.Fatal(err)
		}
	}
	list(rvs)
	text := out.String()
	for _, want := range []string{"Exchange routes (advertised for fan-out):", "rabbit1 > rabbit2", "rabbit2 > rabbit1", e.Group(), "mA", "mB"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "mC") || strings.Contains(text, "mD") {
		t.Errorf("a router without exchange routes is listed:\n%s", text)
	}
	out.Reset()
	list(rvs[2:3])
	if out.Len() != 0 {
		t.Errorf("no exchange routes: printed %q", out.String())
	}
}
