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
	// entries go, then the one whose last wrong token is the oldest.
	throttleClients = 4096
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

	mu      sync.Mutex
	clients map[string]*strikes // guarded by mu
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
		clients: map[string]*strikes{}}
}

// wait is how long client is still turned away; 0 if it may try.
func (t *throttle) wait(client string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.clients[client]
	if s == nil || !now.Before(s.until) {
		return 0
	}
	return s.until.Sub(now)
}

// fail records a wrong token from client. It returns the block this one
// started, 0 if none did.
func (t *throttle) fail(client string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.clients[client]
	if s == nil {
		t.makeRoom(now)
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
// the one that failed longest ago. Called with mu held.
func (t *throttle) makeRoom(now time.Time) {
	if len(t.clients) < t.capacity {
		return
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
			if oldest == "" || s.last.Before(at) {
				oldest, at = k, s.last
			}
		}
		delete(t.clients, oldest)
	}
}

// size is how many clients are tracked (tests).
func (t *throttle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients)
}
