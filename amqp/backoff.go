package amqp

import (
	"math/rand/v2"
	"time"
)

// Backoff is a capped exponential backoff with jitter: attempt n waits
// Min·2ⁿ, capped at Max, minus up to Jitter of itself. The defaults follow
// Qpid's resilient connections: 2 s doubling to 64 s.
type Backoff struct {
	Min    time.Duration
	Max    time.Duration
	Jitter float64        // 0..1, fraction of the delay taken off at random
	Rand   func() float64 // [0,1); nil means math/rand/v2
}

// DefaultBackoff returns 2 s → 64 s with 20 % jitter.
func DefaultBackoff() Backoff {
	return Backoff{Min: 2 * time.Second, Max: 64 * time.Second, Jitter: 0.2}
}

// Delay returns the wait before retry number attempt (0-based). It never
// exceeds Max, so Max is also the bound on reconnect latency once a broker
// is back.
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Min
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	if b.Jitter > 0 {
		r := b.Rand
		if r == nil {
			r = rand.Float64
		}
		d -= time.Duration(float64(d) * b.Jitter * r())
	}
	return d
}

// Clock is the time source of the reconnect loop; tests inject a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
