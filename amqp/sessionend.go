package amqp

import (
	"context"
	"sync"

	goamqp "github.com/Azure/go-amqp"
)

// openSessions are the sessions begun on a Conn's current go-amqp
// connection and not yet ended. Before the Conn closes that connection
// it ends them (endSessions): qpidd (seen with 1.40; docs/brokers.md) frees
// a connection's I/O handler in the same moment as it cancels the
// connection's consumers, when the socket closes, and a message arriving
// for one of them then on another connection notifies the freed handler:
// the broker segfaults. A session ended first has its links cancelled
// while the connection still stands.
type openSessions struct {
	mu  sync.Mutex
	set map[*goamqp.Session]struct{}
}

func (o *openSessions) add(s *goamqp.Session) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.set == nil {
		o.set = map[*goamqp.Session]struct{}{}
	}
	o.set[s] = struct{}{}
}

func (o *openSessions) remove(s *goamqp.Session) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.set, s)
}

// take empties the set and returns what it held.
func (o *openSessions) take() []*goamqp.Session {
	o.mu.Lock()
	defer o.mu.Unlock()
	ss := make([]*goamqp.Session, 0, len(o.set))
	for s := range o.set {
		ss = append(ss, s)
	}
	o.set = nil
	return ss
}

// endSessions ends ss at once and waits for the broker's ends, at most
// sessionCloseWait in all. A session its owner ends at the same time is
// ended once (go-amqp's Close is idempotent and safe to race).
func endSessions(ss []*goamqp.Session) {
	if len(ss) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sessionCloseWait)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Close(ctx) // ending it either way; the connection closes next
		}()
	}
	wg.Wait()
}

// closeTransport ends the connection's open sessions, then closes it.
func (c *Conn) closeTransport(t transport) {
	endSessions(c.sessions.take())
	_ = t.Close() // closing: a close error changes nothing
}
