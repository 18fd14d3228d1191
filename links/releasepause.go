package links

import (
	"sync/atomic"
	"time"
)

// A destination that releases a message did not take it, and the
// source delivers it again at once: a full qpidd queue with
// qpid.policy_type reject releases every message past qpid.max_count
// (docs/brokers.md, qpidd), and without a pause a run sends the same
// messages round at full speed (measured: ~5,000 a second for 15
// messages, each counted in qpidd's discardsOverflow) for as long as the
// queue stays full. After a release the run therefore holds its copies
// back and grants the source no credit (engine.ForwardOptions.Hold) for
// a pause that doubles from ReleasePauseMin to ReleasePauseMax while
// releases go on, and starts again from ReleasePauseMin once the
// destination accepts a message.

// The pause after a destination's release.
const (
	ReleasePauseMin = 100 * time.Millisecond
	ReleasePauseMax = 5 * time.Second
)

// releasePause is a run's pause after its destination released a
// message. It takes the time from its caller (Unix nanoseconds): its
// methods are called on the destination's reader (released, under the
// forwarder's lock), on the readers asking Hold (holding), and on the
// run's goroutine (accepted); its fields are atomics.
type releasePause struct {
	until atomic.Int64 // holding until then; 0: not holding
	next  atomic.Int64 // the next pause, in nanoseconds; 0: ReleasePauseMin
}

// released starts a pause, unless one runs already (a destination
// releases a whole window at once: one pause for it), and doubles the
// next one up to ReleasePauseMax.
func (p *releasePause) released(now int64) {
	if p.holding(now) {
		return
	}
	d := p.next.Load()
	if d == 0 {
		d = int64(ReleasePauseMin)
	}
	p.until.Store(now + d)
	p.next.Store(min(2*d, int64(ReleasePauseMax)))
}

// holdingNow is holding at the present time. The common case, no pause,
// is one atomic load and no clock read: Hold is asked for every message.
func (p *releasePause) holdingNow() bool {
	return p.until.Load() != 0 && p.holding(time.Now().UnixNano())
}

// holding says whether the pause runs at now.
func (p *releasePause) holding(now int64) bool {
	u := p.until.Load()
	if u == 0 {
		return false
	}
	if now < u {
		return true
	}
	p.until.CompareAndSwap(u, 0)
	return false
}

// accepted makes the next pause ReleasePauseMin again: the destination
// takes messages.
func (p *releasePause) accepted() { p.next.Store(0) }
