package topology

// Received is a verified advertisement waiting for the node: its origin
// (from Decode), its bytes as received, and the broker it arrived on.
type Received struct {
	Origin Origin
	Data   []byte
	From   string
}

// Offered is what Inbox.Offer did with an advertisement.
type Offered int

const (
	Queued   Offered = iota + 1 // its origin had no slot: one was taken
	Replaced                    // newer than the one waiting from its origin, which is dropped
	Older                       // not newer than the one waiting from its origin: dropped
	Full                        // its origin has no slot and none is free: dropped
)

// Inbox is the queue between a transport that verified advertisements
// and the node: one slot per origin router, holding the newest
// advertisement received from it, taken in the order the slots were
// filled. Whatever arrives, a router's newest advertisement waits in its
// slot until taken: copies, replays and older ones of the same router
// cannot push it out, and other routers only fill their own slots (to get
// one, an advertisement must be signed with the network's secret). At
// most max slots, so at most max × MaxLSASize bytes.
//
// A pure data structure: not safe for concurrent use (a transport with
// several receivers guards it with a mutex).
type Inbox struct {
	max   int
	slots map[string]Received
	order []string // origins with a slot, oldest first
}

// NewInbox returns an inbox of the given number of slots (at least 1).
func NewInbox(slots int) *Inbox {
	return &Inbox{max: max(slots, 1), slots: map[string]Received{}}
}

// Offer puts an advertisement in its origin's slot, unless the one
// waiting there is at least as new, or no slot is free.
func (q *Inbox) Offer(r Received) Offered {
	id := r.Origin.Router
	if cur, ok := q.slots[id]; ok {
		if !r.Origin.Newer(cur.Origin) {
			return Older
		}
		q.slots[id] = r // keeps its place in the order
		return Replaced
	}
	if len(q.slots) >= q.max {
		return Full
	}
	q.slots[id] = r
	q.order = append(q.order, id)
	return Queued
}

// Take removes and returns the advertisement whose slot was filled first.
func (q *Inbox) Take() (Received, bool) {
	if len(q.order) == 0 {
		return Received{}, false
	}
	id := q.order[0]
	q.order[0] = ""
	q.order = q.order[1:]
	r := q.slots[id]
	delete(q.slots, id)
	return r, true
}

// Len is the number of advertisements waiting.
func (q *Inbox) Len() int { return len(q.order) }
