package router

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// Other routers' flows: checked and bounded like their consumers, summed
// over routers at this router's brokers only, a change signalled (a
// round at once); this router's own advertised for the shared brokers
// only, while it subtracts them itself, bounded.
func TestRemoteFlows(t *testing.T) {
	rc := newTable().flows
	err := rc.store("self", map[string]json.RawMessage{
		"self": json.RawMessage(`{"b1":{"q":1}}`),
		"r1":   json.RawMessage(`{"b1":{"q":1},"b2":{"q":1}}`),
		"r2":   json.RawMessage(`{"b1":{"q":1,"p":1},"b9":{"q":1}}`),
		"bad":  json.RawMessage(`{"b1":{"q":-1}}`),
	}, func(string, string) bool { return true })
	if err == nil || !strings.Contains(err.Error(), "router bad: extension flows") {
		t.Errorf("a negative count not refused: %v", err)
	}
	select {
	case <-rc.changed:
	default:
		t.Error("a new value not signalled")
	}
	rc.setShared(map[string]bool{"b1": true})
	o := rc.others([]string{"b1", "b2"})
	if got := fmt.Sprint(o.Flows, o.Shared); got != "map[b1:map[p:1 q:2] b2:map[q:1]] map[b1:true]" {
		t.Errorf("others %s", got)
	}
	<-rc.changed // setShared's
	// The same values again: bad's refusal was said once, and holds.
	if err = rc.store("self", map[string]json.RawMessage{"r1": json.RawMessage(`{"b1":{"q":1},"b2":{"q":1}}`),
		"r2": json.RawMessage(`{"b1":{"q":1,"p":1},"b9":{"q":1}}`), "bad": json.RawMessage(`{"b1":{"q":-1}}`)}, func(string, string) bool { return true }); err != nil {
		t.Errorf("unchanged values: %v", err)
	}
	if got := fmt.Sprint(rc.others([]string{"b1"}).Flows); got != "map[b1:map[p:1 q:2]]" {
		t.Errorf("others after the same values %s", got)
	}
	select {
	case <-rc.changed:
		t.Error("nothing changed, yet signalled")
	default:
	}

	now := time.Now()
	g := &globalDests{log: zerolog.Nop(), flowsOut: map[[2]string]time.Time{
		{"b1", "running"}: {},
		{"b1", "lagging"}: now.Add(-ownConsumerLag / 2),
		{"b1", "gone"}:    now.Add(-ownConsumerLag),
		{"b3", "alone"}:   {}, // no other router there
	}}
	g.publishFlows()
	if got := string(g.advertisedFlows(map[string]bool{"b1": true}, now)); got != `{"b1":{"lagging":1,"running":1}}` {
		t.Errorf("advertised %s", got)
	}
	if got := g.advertisedFlows(map[string]bool{"b2": true}, now); got != nil {
		t.Errorf("advertised %s with no shared broker running flows", got)
	}
	for i := range maxAdvertisedFlows + 5 {
		g.flowsOut[[2]string{"b1", fmt.Sprintf("q%03d", i)}] = time.Time{}
	}
	g.publishFlows()
	var m map[string]map[string]int
	if err := json.Unmarshal(g.advertisedFlows(map[string]bool{"b1": true}, now), &m); err != nil || len(m["b1"]) != maxAdvertisedFlows {
		t.Errorf("bounded to %d: %d advertised (%v)", maxAdvertisedFlows, len(m["b1"]), err)
	}
	if _, err := decodeCounts(g.advertisedFlows(map[string]bool{"b1": true}, now), maxAdvertisedFlows); err != nil {
		t.Errorf("its own bounded value refused: %v", err)
	}
}
