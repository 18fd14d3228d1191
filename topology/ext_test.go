package topology

import (
	"encoding/json"
	"testing"
	"time"
)

// An extension set on one node is advertised at once and seen by a node
// that receives the advertisement; setting it again unchanged sends
// nothing, removing it is advertised too.
func TestSetExtIsAdvertised(t *testing.T) {
	mk := func(id string) *Node {
		cfg := DefaultConfig()
		cfg.RouterID, cfg.Instance, cfg.Secret, cfg.MinOriginate = id, 1, []byte("0123456789abcdef"), time.Nanosecond
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b := mk("a"), mk("b")
	now := time.Unix(100, 0)
	up := []BrokerState{{Name: "x", State: StateOperational}}
	if _, err := a.SetLocal(up, nil, now); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetLocal(up, nil, now); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	r := a.SetExt("demand", json.RawMessage(`{"x":{"amq.topic":["k"]}}`), now)
	if len(r.Flood) != 1 || string(r.Flood[0].LSA.Ext["demand"]) != `{"x":{"amq.topic":["k"]}}` {
		t.Fatalf("flood %+v", r.Flood)
	}
	b.Receive(r.Flood[0].Data, "x", now)
	snap := b.Snapshot(now)
	var seen bool
	for _, rv := range snap.Routers {
		if rv.Router == "a" && string(rv.Ext["demand"]) == `{"x":{"amq.topic":["k"]}}` {
			seen = true
		}
	}
	if !seen {
		t.Fatalf("b does not see a's demand: %+v", snap.Routers)
	}
	if got := b.Ext("demand"); len(got) != 1 || string(got["a"]) != `{"x":{"amq.topic":["k"]}}` {
		t.Fatalf("b.Ext(demand) = %v", got)
	}
	if got, ok := b.Ext("other")["a"]; !ok || got != nil {
		t.Fatalf("b.Ext(other): a advertises none, want a nil entry; got %q, %v", got, ok)
	}
	now = now.Add(time.Second)
	if r := a.SetExt("demand", json.RawMessage(`{"x":{"amq.topic":["k"]}}`), now); len(r.Flood) != 0 {
		t.Fatalf("unchanged extension advertised again: %+v", r.Flood)
	}
	if r := a.SetExt("demand", nil, now); len(r.Flood) != 1 || r.Flood[0].LSA.Ext != nil {
		t.Fatalf("removal: %+v", r.Flood)
	}
}
