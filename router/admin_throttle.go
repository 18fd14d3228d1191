package router

import (
	"sync"
	"time"
)

// Defaults of the throttle on wrong admin tokens; docs/admin-api.md
// states them.
const (
	// throttleMax wrong tokens from one client within throttleWindow turn
	// it away for throttleBlock.
	throttleMax    = 5
	throttleWindow = time.Minute
	throttleBlock  = time.Minute
	// throttleClients bounds the clients tracked: past it, finished
	// entries go, then the one whose last wrong token is the oldest, but
	// never one that is turned away (forgetting it would let it guess
	// again).
	throttleClients = 4096
	// throttleGlobal wrong tokens per throttleWindow from all clients
	// together (a bucket that refills evenly, one per second): past it,
	// every TCP client is turned away until the bucket refills. It bounds
	// the guesses of an attacker with many addresses (the loopback has
	// 2^24); the local CLI, on the Unix socket, is not counted.
	throttleGlobal = 60
	// wrongTokenLogEvery: after the first wrong-token warning, the
	// repeats are logged as one count per interval.
	wrongTokenLogEvery = 10 * time.Second
)

// throttle counts wrong admin tokens per client and turns a client away
// for a while after too many: guessing costs time, and a flood of wrong
// tokens is logged a few lines per block, not a line per request. Time is
// the caller's (now), so tests need no clock. Safe for concurrent use; no
// I/O under its lock.
type throttle struct {
	max           int
	window, block time.Duration
	capacity      int

	globalMax int // bucket size and refill per window

	mu      sync.Mutex
	clients map[string]*strikes // guarded by mu
	bucket  float64             // wrong tokens still allowed overall; guarded by mu
	filled  time.Time           // when bucket was last refilled; guarded by mu
}

// strikes are one client's wrong tokens.
type strikes struct {
	n     int       // wrong tokens since since
	since time.Time // the first of them: the window's start
	last  time.Time // the latest: eviction order
	until time.Time // turned away until then (zero: not)
}

func newThrottle() *throttle {
	return &throttle{max: throttleMax, window: throttleWindow, block: throttleBlock, capacity: throttleClients,
		globalMax: throttleGlobal, bucket: throttleGlobal, clients: map[string]*strikes{}}
}

// refill adds what the time since the last refill earned. Called with mu
// held.
func (t *throttle) refill(now time.Time) {
	if !t.filled.IsZero() && now.After(t.filled) {
		t.bucket += float64(t.globalMax) * float64(now.Sub(t.filled)) / float64(t.window)
		t.bucket = min(t.bucket, float64(t.globalMax))
	}
	if now.After(t.filled) {
		t.filled = now
	}
}

// globalWait is how long until the bucket holds a wrong token again; 0 if
// it does. Called with mu held.
func (t *throttle) globalWait(now time.Time) time.Duration {
	t.refill(now)
	if t.bucket >= 1 {
		return 0
	}
	return time.Duration((1 - t.bucket) * float64(t.window) / float64(t.globalMax))
}

// wait is how long client is still turned away, and whether by the rate of
// all clients together; 0 if it may try.
func (t *throttle) wait(client string, now time.Time) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.clients[client]; s != nil && now.Before(s.until) {
		return s.until.Sub(now), false
	}
	if w := t.globalWait(now); w > 0 {
		return w, true
	}
	return 0, false
}

// fail records a wrong token from client. It returns the block this one
// started, 0 if none did.
func (t *throttle) fail(client string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refill(now)
	t.bucket = max(t.bucket-1, 0)
	s := t.clients[client]
	if s == nil {
		if !t.makeRoom(now) {
			return 0 // every tracked client is turned away: this one counts overall only
		}
		s = &strikes{since: now}
		t.clients[client] = s
	}
	if now.Sub(s.since) >= t.window {
		s.n, s.since = 0, now // the window has passed: count afresh
	}
	s.n++
	s.last = now
	if s.n < t.max {
		return 0
	}
	s.n, s.since, s.until = 0, now, now.Add(t.block)
	return t.block
}

// makeRoom keeps the map under capacity before an entry is added: first
// the entries that no longer count (window passed, not turned away), then
// the one not turned away that failed longest ago. It reports false when
// every entry is turned away: none of them is ever forgotten before its
// block ends. Called with mu held.
func (t *throttle) makeRoom(now time.Time) bool {
	if len(t.clients) < t.capacity {
		return true
	}
	for k, s := range t.clients {
		if now.Sub(s.since) >= t.window && !now.Before(s.until) {
			delete(t.clients, k)
		}
	}
	for len(t.clients) >= t.capacity {
		var oldest string
		var at time.Time
		for k, s := range t.clients {
			if now.Before(s.until) {
				continue
			}
			if oldest == "" || s.last.Before(at) {
				oldest, at = k, s.last
			}
		}
		if oldest == "" {
			return false
		}
		delete(t.clients, oldest)
	}
	return true
}

// size is how many clients are tracked (tests).
func (t *throttle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients)
}
