package router

import (
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/store"
)

// A route held elsewhere takes its holder's published status under the
// lease's current epoch only; a status of an earlier epoch, a member's
// value that does not decode, or none at all leave it said held and not
// reported yet.
func TestHeldElsewhere(t *testing.T) {
	now := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	snap := store.Snapshot{Now: now, Members: []store.MemberRow{
		{Member: store.Member{ID: "m2", Routes: []byte(`{"r1":{"epoch":3,"state":"Operational","detail":"multi-hop via a > b","counters":{"forwarded":42,"in_flight":2}},
			"r2":{"epoch":1,"state":"Operational","counters":{"forwarded":7}}}`)}, LastBeat: now.Add(-1200 * time.Millisecond)},
		{Member: store.Member{ID: "m3", Routes: []byte(`["not", "a", "map"]`)}, LastBeat: now},
	}}
	by, age := published(snap)
	for _, c := range []struct {
		rr                store.RouteRow
		state             routes.State
		forwarded, flight int64
		detail            string
	}{
		{store.RouteRow{RouteDef: store.RouteDef{ID: "r1"}, Owner: "m2", Epoch: 3}, routes.StateOperational, 42, 2, "held by m2 (as of 1.2s ago): multi-hop via a > b"},
		{store.RouteRow{RouteDef: store.RouteDef{ID: "r2"}, Owner: "m2", Epoch: 2}, routes.StateWaiting, 0, 0, "held by m2 (its status not reported yet)"},
		{store.RouteRow{RouteDef: store.RouteDef{ID: "r3"}, Owner: "m3", Epoch: 1}, routes.StateWaiting, 0, 0, "held by m3 (its status not reported yet)"},
	} {
		s := routes.Status{ID: c.rr.ID, State: routes.StateWaiting}
		heldElsewhere(&s, c.rr, by, age)
		if s.Holder != c.rr.Owner || s.State != c.state || int64(s.Forwarded) != c.forwarded || s.InFlight != c.flight || s.Detail != c.detail {
			t.Errorf("%s: holder %s, %s, %d forwarded, %d in flight, %q; want %s, %s, %d, %d, %q",
				c.rr.ID, s.Holder, s.State, s.Forwarded, s.InFlight, s.Detail, c.rr.Owner, c.state, c.forwarded, c.flight, c.detail)
		}
	}
}

// A published route's detail and last error are clipped.
func TestClipReported(t *testing.T) {
	long := strings.Repeat("x", 3*maxReportedText)
	if got := clipReported(long); len(got) != maxReportedText+3 || !strings.HasSuffix(got, "...") {
		t.Fatalf("clipped to %d bytes", len(got))
	}
	if got := clipReported("short"); got != "short" {
		t.Fatalf("short text changed: %q", got)
	}
}
