package router

import (
	"encoding/json"
	"fmt"
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
	reps := []store.Report{
		{Member: "m2", Routes: []byte(`{"r1":{"epoch":3,"state":"Operational","detail":"multi-hop via a > b","counters":{"forwarded":42,"in_flight":2}},
			"r2":{"epoch":1,"state":"Operational","counters":{"forwarded":7}}}`), At: now.Add(-1200 * time.Millisecond)},
		{Member: "m3", Routes: []byte(`["not", "a", "map"]`), At: now},
	}
	by, age := published(reps, now)
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

// reportRoutes are n statuses as a busy member's look: Operational, a
// detail, every counter in the millions.
func reportRoutes(n int) []routes.Status {
	out := make([]routes.Status, n)
	since := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	for i := range out {
		s := &out[i]
		s.ID, s.Epoch, s.State, s.Since = fmt.Sprintf("q-%08d", i), 12, routes.StateOperational, since
		s.Detail = "forwarding on the engine data path"
		s.Sent, s.Forwarded, s.Redelivered, s.InFlight = 123456789, 123456700, 89, 200
	}
	return out
}

// BenchmarkClusterReport: what a member with 10,000 routes writes with
// each beat (bytes per beat, b.ReportMetric) and what encoding it costs.
func BenchmarkClusterReport(b *testing.B) {
	own := reportRoutes(maxReported)
	var n int
	for b.Loop() {
		n = len(reportOf(own))
	}
	b.ReportMetric(float64(n), "bytes/beat")
	b.ReportMetric(float64(n)/float64(len(own)), "bytes/route")
}

// A member publishes its routes' statuses when a state, detail or last
// error changed, at once; counters alone, once reportEvery has passed.
func TestReportCadence(t *testing.T) {
	own := reportRoutes(3)
	now := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	p := &reportCadence{}
	step := func(what string, at time.Duration, want bool) {
		t.Helper()
		got := p.next(own, now.Add(at))
		if (got != nil) != want {
			t.Fatalf("%s (at +%s): published %v, want %v", what, at, got != nil, want)
		}
		if got != nil {
			var m map[string]heldStatus
			if err := json.Unmarshal(got, &m); err != nil || len(m) != len(own) || m[own[1].ID].Counters.Forwarded != own[1].Forwarded {
				t.Fatalf("%s: published %s (%v)", what, got, err)
			}
		}
	}
	step("the first beat", 0, true)
	step("nothing changed", time.Second, false)
	own[1].Forwarded++
	step("counters only", 2*time.Second, false)
	step("counters, reportEvery later", reportEvery, true)
	own[2].State = routes.StateFailed
	step("a state", reportEvery+time.Second, true)
	own[0].Detail = "rerouting"
	step("a detail", reportEvery+2*time.Second, true)
	own[0].LastError = "refused"
	step("a last error", reportEvery+3*time.Second, true)
	own = own[:2]
	step("a route gone", reportEvery+4*time.Second, true)
	step("and then nothing", reportEvery+5*time.Second, false)
}
