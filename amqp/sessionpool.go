package amqp

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Shared sessions for senders. RabbitMQ 3.10 runs a channel (several
// Erlang processes) per AMQP 1.0 session, and creating them is most of
// what a start with thousands of routes waits for (docs/performance.md).
// A route's source keeps a session of its own — ending it is what hands
// the route's unsettled messages back to the source queue — but its
// destination sender needs none: what it has in flight is unsettled at
// the source, so a sender that dies loses nothing. Senders therefore join
// a connection's shared sessions, up to LinksPerSession each.
//
// A refused attach ends the session on RabbitMQ, and with it every other
// sender on it. The pool then retires the session (no sender joins it
// again) and the others' Send and Wait errors say ErrSharedSessionEnded,
// which is no refusal of theirs: their routes retry on a new session.

// DefaultLinksPerSession is how many senders share one session.
const DefaultLinksPerSession = 64

// ErrSharedSessionEnded: the shared session a sender was on ended,
// possibly because of another sender's refused attach.
var ErrSharedSessionEnded = errors.New("amqp: shared session ended")

// sessionPool is a connection's shared sessions; open is the one new
// senders join, nil until the first.
type sessionPool struct {
	mu   sync.Mutex
	open *sharedSession
}

// sharedSession is one pooled session. ready is closed once the begin is
// done (s or err set); until then joiners wait for it.
type sharedSession struct {
	ready   chan struct{}
	s       *Session
	gen     uint64
	err     error
	links   int  // senders on it not yet closed, and joiners
	joined  int  // senders that ever joined it
	retired bool // full or ended: no one joins; ended when links reaches 0
}

// began says whether the session's begin is done.
func (sh *sharedSession) began() bool {
	select {
	case <-sh.ready:
		return true
	default:
		return false
	}
}

// PooledSender is a sender on a session the connection's pool gave it:
// one it shares with other senders (Conn.NewSharedSender) or one of its
// own (Conn.NewOwnSender). Close gives its place back.
type PooledSender struct {
	*Sender
	c    *Conn
	sh   *sharedSession
	once sync.Once
}

// NewSharedSender attaches a sender for spec on one of c's shared
// sessions, beginning one when none has room. Close it when done.
func (c *Conn) NewSharedSender(ctx context.Context, spec LinkSpec) (*PooledSender, error) {
	sh, err := c.joinShared(ctx)
	if err != nil {
		return nil, err
	}
	return c.attachShared(ctx, sh, spec)
}

// attachShared attaches a sender for spec on sh, on which it is counted
// already; on failure it leaves sh.
func (c *Conn) attachShared(ctx context.Context, sh *sharedSession, spec LinkSpec) (*PooledSender, error) {
	snd, err := sh.s.NewSender(ctx, spec)
	if err != nil {
		if Classify(err) != ScopeLink {
			c.retireShared(sh) // the attach ended the session (RabbitMQ's refusal) or worse
		}
		c.leaveShared(sh)
		return nil, err
	}
	return &PooledSender{Sender: snd, c: c, sh: sh}, nil
}

// NewOwnSender is NewSharedSender on a session of the sender's own, for a
// sender whose attach may be refused again: it ends no one else's.
func (c *Conn) NewOwnSender(ctx context.Context, spec LinkSpec) (*PooledSender, error) {
	sh := &sharedSession{ready: make(chan struct{}), links: 1, retired: true}
	sh.s, sh.gen, sh.err = c.NewSession(ctx)
	close(sh.ready)
	if sh.err != nil {
		return nil, sh.err
	}
	return c.attachShared(ctx, sh, spec)
}

// joinShared returns a shared session with room for one more sender,
// counted on it.
func (c *Conn) joinShared(ctx context.Context) (*sharedSession, error) {
	per := c.opts.LinksPerSession
	if per <= 0 {
		per = DefaultLinksPerSession
	}
	st, _ := c.Status()
	c.pool.mu.Lock()
	sh := c.pool.open
	if sh != nil && sh.began() && (st.State != Operational || sh.gen != st.Generation) {
		sh.retired = true // of an earlier connection, or one going: dead
	}
	begin := sh == nil || sh.retired
	if begin {
		sh = &sharedSession{ready: make(chan struct{})}
		c.pool.open = sh
	}
	sh.links++
	// A session takes per senders in its life, not at once: RabbitMQ
	// 3.10 never answers a detach, so go-amqp keeps a closed sender's
	// link until the session ends. Retired once full, a session ends
	// when its last sender goes, and that reclaims them.
	if sh.joined++; sh.joined >= per {
		sh.retired = true
	}
	c.pool.mu.Unlock()
	if begin {
		sh.s, sh.gen, sh.err = c.NewSession(ctx)
		close(sh.ready)
	}
	select {
	case <-sh.ready:
	case <-ctx.Done():
		c.leaveShared(sh)
		return nil, &Error{Op: "begin shared session", Broker: c.cfg.Name, Scope: ScopeTimeout, Err: ctx.Err()}
	}
	if sh.err != nil {
		c.retireShared(sh)
		c.leaveShared(sh)
		return nil, sh.err
	}
	return sh, nil
}

// retireShared keeps new senders off sh.
func (c *Conn) retireShared(sh *sharedSession) {
	c.pool.mu.Lock()
	sh.retired = true
	c.pool.mu.Unlock()
}

// leaveShared uncounts one sender of sh and ends sh when it was the last
// on a retired session. A session with room stays for the next sender.
func (c *Conn) leaveShared(sh *sharedSession) {
	c.pool.mu.Lock()
	sh.links--
	end := sh.links == 0 && sh.retired
	if c.pool.open == sh && end {
		c.pool.open = nil
	}
	c.pool.mu.Unlock()
	if end && sh.s != nil {
		CloseSession(sh.s)
	}
}

// Send is Sender.Send with a session-wide failure said as such.
func (s *PooledSender) Send(ctx context.Context, msg Message) (*Receipt, error) {
	r, err := s.Sender.Send(ctx, msg)
	if err != nil {
		return nil, s.sessionError(err)
	}
	r.shared = s
	return r, nil
}

// sessionError marks err as the end of the shared session when it is
// one (and retires the session), so that the route does not take another
// sender's refusal for its own.
func (s *PooledSender) sessionError(err error) error {
	if sc := Classify(err); sc != ScopeSession && sc != ScopeConn {
		return err
	}
	s.c.retireShared(s.sh)
	return fmt.Errorf("%w: %w", ErrSharedSessionEnded, err)
}

// Close detaches the sender without waiting for the broker's answer
// (RabbitMQ 3.10 gives none) and leaves its session, ending the session
// if it was the last sender of a retired one. Idempotent.
func (s *PooledSender) Close() {
	s.once.Do(func() {
		ctx, cancel := context.WithCancel(s.sh.s.owner)
		cancel()
		// go-amqp sends the detach in the background and returns the
		// context's error at once: nothing to undo.
		_ = s.s.Close(ctx)
		s.c.leaveShared(s.sh)
	})
}
