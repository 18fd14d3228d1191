package router

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
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

// reportEvery: a member publishes its routes' statuses when one's state,
// detail or last error changed, and otherwise this often, for their
// counters. 10,000 routes are ~3 MB of JSON and ~25 ms of CPU
// (BenchmarkClusterReport): with every 2-second beat that was 1.6 MB/s
// written to the store; every 10 s, a fifth of it, and route list shows
// how old the counters are ("as of …").
const reportEvery = 10 * time.Second

// reportCadence decides when a member publishes (the beat's
// store.Member.Routes; nil: the last one stands). Called from the
// member's loop only.
type reportCadence struct {
	own func() []routes.Status
	now func() time.Time
	sum uint64    // the states of the last publication
	at  time.Time // when it was made; zero: never
}

// report is the member's Publish callback.
func (p *reportCadence) report() []byte { return p.next(p.own(), p.now()) }

// next is what to publish of own at now: all of it, or nil when no
// state changed since the last publication and it is less than
// reportEvery old.
func (p *reportCadence) next(own []routes.Status, now time.Time) []byte {
	sum := stateSum(own)
	if !p.at.IsZero() && sum == p.sum && now.Sub(p.at) < reportEvery {
		return nil
	}
	b := reportOf(own)
	if b != nil {
		p.sum, p.at = sum, now
	}
	return b
}

// stateSum hashes what a route list shows of own besides the counters.
func stateSum(own []routes.Status) uint64 {
	h := fnv.New64a()
	var n [8]byte
	for _, s := range own[:min(len(own), maxReported)] {
		binary.LittleEndian.PutUint64(n[:], uint64(s.Epoch))
		_, _ = h.Write(n[:]) // a hash.Hash never fails
		for _, t := range []string{s.ID, string(s.State), clipReported(s.Detail), clipReported(s.LastError)} {
			_, _ = io.WriteString(h, t)
			_, _ = h.Write([]byte{0})
		}
	}
	return h.Sum64()
}

// reportOf encodes the statuses of own, at most maxReported of them.
func reportOf(own []routes.Status) []byte {
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

// published decodes every member's published statuses, by member and
// route id, with the age of each publication on the store's clock (now).
// A member's value that does not decode (another version's) is taken as
// none.
func published(reps []store.Report, now time.Time) (map[string]map[string]heldStatus, map[string]time.Duration) {
	by := make(map[string]map[string]heldStatus, len(reps))
	age := make(map[string]time.Duration, len(reps))
	for _, r := range reps {
		var sts map[string]heldStatus
		if json.Unmarshal(r.Routes, &sts) == nil {
			by[r.Member], age[r.Member] = sts, now.Sub(r.At)
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
