package router

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Other routers' consumers: checked and bounded (nothing from the network
// is trusted), merged over routers, this router's own brokers left out,
// gone with the advertisement that carried them.
func TestRemoteConsumers(t *testing.T) {
	rc := remoteCounts{ext: ConsumersExt, max: maxAdvertisedConsumers}
	many := map[string]map[string]int{"b": {}}
	for i := range maxAdvertisedConsumers + 1 {
		many["b"][fmt.Sprint("q", i)] = 1
	}
	tooMany, _ := json.Marshal(many)
	err := rc.store("self", map[string]json.RawMessage{
		"self": json.RawMessage(`{"own":{"q":9}}`),
		"r1":   json.RawMessage(`{"b3":{"q":2},"b1":{"q":5}}`),
		"r2":   json.RawMessage(`{"b3":{"q":4,"other":1}}`),
		"bad1": json.RawMessage(`{"b4":{"q":-1}}`),
		"bad2": json.RawMessage(`["not","a","map"]`),
		"bad3": tooMany,
		"bad4": json.RawMessage(`{"` + strings.Repeat("b", 256) + `":{"q":1}}`),
		"bad5": json.RawMessage(`{"elsewhere":{"q":1}}`),
	}, func(_, broker string) bool { return broker != "elsewhere" })
	for _, bad := range []string{"bad1", "bad2", "bad3", "bad4", "bad5"} {
		if err == nil || !strings.Contains(err.Error(), "router "+bad+":") {
			t.Errorf("%s's value not refused: %v", bad, err)
		}
	}
	got := fmt.Sprint(rc.merged([]string{"b1"}))
	if got != "map[b3:map[other:1 q:4]]" {
		t.Fatalf("merged %s", got)
	}
	// r2's advertisement expires; r1's changes.
	if err := rc.store("self", map[string]json.RawMessage{"r1": json.RawMessage(`{"b3":{"q":1}}`)}, func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rc.merged(nil)); got != "map[b3:map[q:1]]" {
		t.Fatalf("after expiry: %s", got)
	}
}
