package router

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/store"
)

// A cluster member publishes, with each beat, the statuses of the routes
// it runs (store.Member.Routes), so that `route list` on any member shows
// a route held elsewhere with its holder's state and counters, as of the
// holder's last beat, rather than as a route waiting with nothing
// forwarded.

// maxReported bounds the routes a member publishes (about 200 bytes
// each: 2 MB a beat at most); a route past it is listed by the others
// as held, its status not published.
const maxReported = 10000

// maxReportedText bounds a published route's detail and last error.
const maxReportedText = 256

// heldStatus is a route's status as its holder publishes it.
type heldStatus struct {
	Epoch       int64            `json:"epoch"`
	State       routes.State     `json:"state"`
	Since       time.Time        `json:"since"`
	Detail      string           `json:"detail,omitempty"`
	LastError   string           `json:"last_error,omitempty"`
	LastErrorAt time.Time        `json:"last_error_at,omitzero"`
	Counters    *routes.Counters `json:"counters,omitempty"`
}

// report is what this member publishes: its routes' statuses by id.
func (c *clusterPart) report() []byte {
	own := c.own()
	out := make(map[string]heldStatus, min(len(own), maxReported))
	for _, s := range own {
		if len(out) == maxReported {
			break
		}
		counters := s.Counters
		out[s.ID] = heldStatus{Epoch: s.Epoch, State: s.State, Since: s.Since, Detail: clipReported(s.Detail),
			LastError: clipReported(s.LastError), LastErrorAt: s.LastErrorAt, Counters: &counters}
	}
	b, err := json.Marshal(out)
	if err != nil { // strings, times and numbers: cannot fail
		return nil
	}
	return b
}

// clipReported bounds a published text to maxReportedText bytes.
func clipReported(s string) string {
	if len(s) <= maxReportedText {
		return s
	}
	return s[:maxReportedText] + "..."
}

// published reads every member's published statuses, by member and route
// id, with the store's age of each member's beat. A member's value that
// does not decode (another version's) is taken as none.
func published(snap store.Snapshot) (map[string]map[string]heldStatus, map[string]time.Duration) {
	by := make(map[string]map[string]heldStatus, len(snap.Members))
	age := make(map[string]time.Duration, len(snap.Members))
	for _, m := range snap.Members {
		age[m.ID] = snap.Now.Sub(m.LastBeat)
		var sts map[string]heldStatus
		if len(m.Routes) > 0 && json.Unmarshal(m.Routes, &sts) == nil {
			by[m.ID] = sts
		}
	}
	return by, age
}

// heldElsewhere fills s, a route rr's holder runs, with the status the
// holder published under the route's current epoch; without one (the
// holder has not beaten since it took the route, or publishes too many)
// the route is said held there and waiting to be reported.
func heldElsewhere(s *routes.Status, rr store.RouteRow, by map[string]map[string]heldStatus, age map[string]time.Duration) {
	s.Holder = rr.Owner
	h, ok := by[rr.Owner][rr.ID]
	if !ok || h.Epoch != rr.Epoch {
		s.Detail = "held by " + rr.Owner + " (its status not reported yet)"
		return
	}
	s.State, s.Since, s.LastError, s.LastErrorAt = h.State, h.Since, h.LastError, h.LastErrorAt
	if h.Counters != nil {
		s.Counters = *h.Counters
	}
	s.Detail = fmt.Sprintf("held by %s (as of %s ago)", rr.Owner, age[rr.Owner].Round(100*time.Millisecond))
	if h.Detail != "" {
		s.Detail += ": " + h.Detail
	}
}
