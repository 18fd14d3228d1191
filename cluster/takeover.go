package cluster

import (
	"fmt"
	"time"

	"github.com/fedrouter/fedrouter/store"
)

// Takeover says that a route is being taken over: its holder is suspect
// or failed and no other member holds it yet. Seed 004 refuses new client
// connections while a failed broker's data are taken over; a cluster
// refuses changes to such a route (the admin API answers 503 with
// RetryAfter) so that an operator's change does not race the member that
// is about to start it.
type Takeover struct {
	Route  string
	Holder string      // the member whose lease is going
	State  MemberState // its state: suspect or failed
	Epoch  int64       // the lease being taken over
	// RetryAfter is when the takeover should be over: the lease's end (a
	// lease is taken only once it has expired) plus a heartbeat for the
	// claim. The holder's lease may be longer than this member's (another
	// configuration): its end is what counts.
	RetryAfter time.Duration
}

func (t Takeover) String() string {
	return fmt.Sprintf("route %s is being taken over: its holder %s is %s (lease epoch %d); retry in %s",
		t.Route, t.Holder, t.State, t.Epoch, t.RetryAfter.Round(time.Second))
}

// InTakeover says whether route r is being taken over at the store's time
// now. Its holder is suspect or failed (as the members' rows say), and
// either its lease still runs (the others wait for it to end) or it ended
// less than a lease ago (a member is about to claim it). A lease that
// ended longer ago than that is not being taken over — nobody attached to
// its brokers is left to take it — and changes to it go through: refusing
// them would leave an operator stuck behind a takeover that never comes.
func (p Params) InTakeover(r store.RouteRow, members []store.MemberRow, now time.Time) (Takeover, bool) {
	if r.Owner == "" || r.Owner == p.Self {
		return Takeover{}, false
	}
	state := Failed // a holder without a member row: its row was removed
	for _, m := range members {
		if m.ID == r.Owner {
			state = p.State(m, now)
		}
	}
	if state != Suspect && state != Failed {
		return Takeover{}, false
	}
	left := r.Until.Sub(now)
	if left < -p.Lease {
		return Takeover{}, false
	}
	retry := max(left, 0) + p.Heartbeat
	return Takeover{Route: r.ID, Holder: r.Owner, State: state, Epoch: r.Epoch, RetryAfter: retry}, true
}
