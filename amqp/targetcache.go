package amqp

import (
	"sync"
	"time"
)

// targetTTL is how long a destination found to exist through the
// management API is taken to exist without asking again. Routes to the
// same exchange then share one lookup: a start with 10,000 routes to 100
// exchanges asked 10,000 times. A destination deleted meanwhile is found
// at the attach instead (RabbitMQ refuses it, which ends the session; the
// routes on it retry) or, later, by the next lookup. Absence is never
// remembered: a destination created a moment ago is found at once.
const targetTTL = 5 * time.Second

// targetCache remembers destinations seen to exist, until targetTTL.
type targetCache struct {
	mu      sync.Mutex
	seen    map[Node]time.Time // when each was seen; keys without Key
	sweepAt int                // the size at which saw drops the expired
}

// fresh says whether n was seen to exist less than targetTTL before now.
func (c *targetCache) fresh(n Node, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.seen[Node{Kind: n.Kind, Name: n.Name}]
	return ok && now.Sub(at) < targetTTL
}

// saw records that n exists at now. When the map has doubled since the
// last sweep it drops what has expired, so it stays within twice the
// destinations seen in one TTL (at least 1,024), at an amortised constant
// cost per call.
func (c *targetCache) saw(n Node, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[Node]time.Time{}
	}
	if len(c.seen) >= max(c.sweepAt, 1024) {
		for k, at := range c.seen {
			if now.Sub(at) >= targetTTL {
				delete(c.seen, k)
			}
		}
		c.sweepAt = 2 * len(c.seen)
	}
	c.seen[Node{Kind: n.Kind, Name: n.Name}] = now
}
