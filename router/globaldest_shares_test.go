package router

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/globaldest"
)

// Other routers' ads of the limited destinations: checked (a span may
// name only brokers the router's advertisement says it is attached to),
// refused whole with the router named and counted, gone with the
// advertisement that carried them; a policy another live router limits
// is not stale.
func TestRemoteShares(t *testing.T) {
	var rs remoteShares
	ad := `{"q":{"limits":{"max_messages":100,"overflow":"reject-publish"},"span":["b1","b2"]}}`
	err := rs.store("self", map[string]json.RawMessage{
		"self": json.RawMessage(`not even JSON: its own is never read`),
		"r1":   json.RawMessage(ad),
		"bad1": json.RawMessage(`{"q":{"limits":{"max_messages":100,"overflow":"reject-publish"},"span":["b9"]}}`),
		"bad2": json.RawMessage(`{"q":{"limits":{"max_messages":100,"overflow":"reject-publish"},"span":["b1"],"shares":{"limits":{"max_messages":100,"overflow":"reject-publish"},"messages":{"b1":1}}}}`),
	}, func(router, broker string) bool { return broker != "b9" })
	for _, bad := range []string{"bad1", "bad2"} {
		if err == nil || !strings.Contains(err.Error(), "router "+bad+":") {
			t.Errorf("%s's value not refused: %v", bad, err)
		}
	}
	if n := rs.refusals(); n != 2 {
		t.Errorf("refusals %d, want 2", n)
	}
	if ads := rs.of("q"); len(ads) != 1 || ads[0].Router != "r1" {
		t.Fatalf("ads of q: %+v", ads)
	}
	if !rs.limitsElsewhere("q", "b2") || rs.limitsElsewhere("q", "b3") || rs.limitsElsewhere("other", "b1") {
		t.Error("limitsElsewhere: want q at b2 only")
	}
	// The same values again: not parsed again, not counted again.
	_ = rs.store("self", map[string]json.RawMessage{"r1": json.RawMessage(ad), "bad1": json.RawMessage(`[]`)}, func(string, string) bool { return true })
	if n := rs.refusals(); n != 3 {
		t.Errorf("refusals %d, want 3 (bad1's new value)", n)
	}
	// r1's advertisement expires: its ads go.
	if err := rs.store("self", map[string]json.RawMessage{}, func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if ads := rs.of("q"); len(ads) != 0 || rs.limitsElsewhere("q", "b2") {
		t.Errorf("after expiry: %+v", ads)
	}
}

// A router advertises only shares made for the limits in force: others
// refuse a whole value whose shares do not sum to their limits.
func TestSharesSumTo(t *testing.T) {
	m := func(kv ...int64) map[string]int64 {
		out := map[string]int64{}
		for i, v := range kv {
			out[fmt.Sprint("b", i)] = v
		}
		return out
	}
	msgs := globaldest.Limits{MaxMessages: 10, Overflow: globaldest.RejectPublish}
	both := globaldest.Limits{MaxMessages: 10, MaxBytes: 100, Overflow: globaldest.RejectPublish}
	for _, tc := range []struct {
		s    globaldest.Shares
		lim  globaldest.Limits
		want bool
	}{
		{globaldest.Shares{Messages: m(6, 4)}, msgs, true},
		{globaldest.Shares{Messages: m(6, 5)}, msgs, false},                   // made for another limit
		{globaldest.Shares{}, msgs, false},                                    // none yet
		{globaldest.Shares{Messages: m(6, 4)}, both, false},                   // bytes limited since
		{globaldest.Shares{Messages: m(6, 4), Bytes: m(50, 50)}, both, true},  // both
		{globaldest.Shares{Messages: m(6, 4), Bytes: m(50, 50)}, msgs, false}, // bytes no longer limited
	} {
		if got := sumsTo(tc.s, tc.lim); got != tc.want {
			t.Errorf("sumsTo(%v %v, %s) = %v", tc.s.Messages, tc.s.Bytes, tc.lim, got)
		}
	}
}

// The limits view carries the limits one by one besides their text, so
// that a client prints the sizes in its own units.
func TestLimitsViewCarriesEachLimit(t *testing.T) {
	role := globaldest.Role{Limits: globaldest.Limits{MaxMessages: 10, MaxBytes: 1 << 20, Overflow: globaldest.DropHead}}
	v := limitsView(role, []globaldest.Use{{Broker: "b1", Messages: 3, Bytes: 300}}, shareDecision{}, nil)
	if v.Limits != "max_messages=10 max_bytes=1048576 overflow=drop-head" || v.MaxMessages != 10 || v.MaxBytes != 1<<20 || v.Overflow != "drop-head" || v.MaxProducers != 0 {
		t.Errorf("limits view %+v", v)
	}
}
