package router

import (
	"sync"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// listings shares the brokers' queue listings between the global
// destinations (which list their spans every 2 s) and the destinations
// advertised in link state (every 5 s): a broker listed by one recently
// is not listed again by the other — one management API call, not two.
type listings struct {
	mu sync.Mutex
	m  map[string]listing // guarded by mu
}

type listing struct {
	qs []amqp.QueueInfo
	at time.Time
}

// put records broker's listing made at at; callers must not change qs.
func (l *listings) put(broker string, qs []amqp.QueueInfo, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]listing{}
	}
	l.m[broker] = listing{qs: qs, at: at}
}

// fresh returns broker's listing if it was made less than maxAge before
// now.
func (l *listings) fresh(broker string, maxAge time.Duration, now time.Time) ([]amqp.QueueInfo, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[broker]
	if !ok || now.Sub(e.at) >= maxAge {
		return nil, false
	}
	return e.qs, true
}
