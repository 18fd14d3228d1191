package amqp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/internal/group"
)

// State is a broker connection's state, named as qpid-route's link list
// names them.
type State int

const (
	Waiting     State = iota // not connected; the next attempt is scheduled
	Connecting               // an attempt is in progress
	Operational              // connected; sessions can be opened
	Failed                   // gave up for good (authentication failure)
	Closed                   // closed by its owner
)

func (s State) String() string {
	switch s {
	case Waiting:
		return "Waiting"
	case Connecting:
		return "Connecting"
	case Operational:
		return "Operational"
	case Failed:
		return "Failed"
	case Closed:
		return "Closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Status is a snapshot of a connection's state.
type Status struct {
	Broker      string
	State       State
	Since       time.Time // when State was entered
	URL         string    // the URL connected to or being tried, password redacted
	LastError   error     // the last failure, kept across later states
	LastErrorAt time.Time
	Attempt     int           // failed attempts since the last success
	RetryIn     time.Duration // in Waiting: the delay before the next attempt
	// RetryAt is when the next attempt starts (in Waiting; zero
	// otherwise): what a listing counts down to, where RetryIn is the
	// delay as it was chosen.
	RetryAt    time.Time
	Generation uint64 // increments on every successful connect
}

// ConnOptions tune a Conn; zero values take the defaults.
type ConnOptions struct {
	ContainerID    string        // AMQP container id; default "fedrouter-<broker>"
	Backoff        Backoff       // default DefaultBackoff()
	ConnectTimeout time.Duration // per dial attempt; default 10 s
	// IdleTimeout: a connection on which nothing arrives for this long is
	// dead (the broker is asked to send heartbeats at half of it). Default
	// DefaultIdleTimeout. It must be well under a route's outcome timeout:
	// a silent network must end the run (the source redelivers), not make
	// the route treat its in-flight messages as unroutable.
	IdleTimeout time.Duration
	// StableAfter: a connection that lived shorter than this does not reset
	// the backoff, so a broker that accepts and drops at once is not hammered.
	StableAfter time.Duration // default 5 s
	Clock       Clock         // default the real clock
	// WriteBuffer bounds the bytes written and not yet on the wire: frames
	// written while the last ones are still going out share one system
	// call (coalescingConn). Default DefaultWriteBuffer; < 0 writes every
	// frame with a system call of its own, as go-amqp does.
	WriteBuffer int
	// OnState is called from the connection's goroutine after every state
	// change, never under a lock. It must not block for long.
	OnState func(Status)

	dial func(ctx context.Context, t dialTarget) (transport, error) // tests
}

// transport is what the reconnect loop needs of a dialled connection; a
// *goamqp.Conn provides it, unit tests provide fakes.
type transport interface {
	Done() <-chan struct{}
	Err() error
	Close() error
}

// DefaultIdleTimeout is the connection idle timeout (go-amqp's own
// default is 60 s, longer than a route's default outcome timeout).
const DefaultIdleTimeout = 10 * time.Second

// Conn is a resilient connection to one broker: it dials the broker's URLs
// in turn, reconnects with backoff after any loss, and stops retrying after
// an authentication failure. Links are not carried over a reconnect: their
// owners see the error, classify it and ask for a new session.
//
// Goroutines: run, in a group owned by the Conn, started by Dial and
// stopped by Close, which cancels its context (aborting a dial in
// progress) and waits for it; and, while a connection is up, its write
// flusher (coalesce.go), started with the connection and joined when it
// closes. go-amqp's own goroutines end when the connection is closed.
type Conn struct {
	cfg  BrokerConfig // as dialled first: its Name never changes; Config has the settings in force
	opts ConnOptions

	g    *group.Group // run's; Close stops it
	kick chan uint64  // generation reported broken by a user
	// redial: the settings changed (Reconfigure): drop the connection, or
	// end a wait, and dial with the new ones at once.
	redial chan struct{}

	// sessions: those open on the current connection, ended before it
	// is closed (sessionend.go); its lock and mu are never held together
	sessions openSessions

	mu      sync.Mutex
	status  Status
	changed chan struct{} // closed and replaced on every state change
	conn    *goamqp.Conn  // non-nil only while Operational (nil with fakes)
	live    BrokerConfig  // the settings in force (Reconfigure replaces them); guarded by mu
	targets []dialTarget  // live's URLs, ready to dial; guarded by mu

	engine engineConn // routes on the engine data path (engineconn.go)
}

// Dial validates cfg and starts connecting in the background; it
// never blocks on the network. ctx is the owner's: when it ends the
// connection closes as if Close had been called (the owner still calls
// Close, which waits for the connection's goroutine). Use WaitOperational
// or Status to follow progress, and Close to stop.
func Dial(ctx context.Context, cfg BrokerConfig, opts ConnOptions) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, &Error{Op: "configure", Broker: cfg.Name, Err: err}
	}
	if opts.ContainerID == "" {
		opts.ContainerID = "fedrouter-" + cfg.Name
	}
	targets, err := cfg.dialTargets(opts.ContainerID)
	if err != nil {
		return nil, &Error{Op: "configure", Broker: cfg.Name, Err: err}
	}
	if opts.Backoff.Min == 0 {
		opts.Backoff = DefaultBackoff()
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	for i := range targets {
		targets[i].opts.IdleTimeout = opts.IdleTimeout
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.StableAfter == 0 {
		opts.StableAfter = 5 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.dial == nil {
		writeBuffer := opts.WriteBuffer
		opts.dial = func(ctx context.Context, t dialTarget) (transport, error) {
			conn, err := dialNet(ctx, t, writeBuffer)
			if err != nil {
				return nil, err
			}
			return conn, nil
		}
	}
	c := &Conn{
		cfg:     cfg,
		live:    cfg,
		opts:    opts,
		targets: targets,
		g:       group.New(ctx),
		kick:    make(chan uint64, 1),
		redial:  make(chan struct{}, 1),
		changed: make(chan struct{}),
		status:  Status{Broker: cfg.Name, State: Waiting, Since: opts.Clock.Now()},
	}
	c.g.Go(c.run)
	return c, nil
}

// Name returns the broker's configured name.
func (c *Conn) Name() string { return c.cfg.Name }

// Config returns the broker's configuration in force (Reconfigure may
// have replaced the first one).
func (c *Conn) Config() BrokerConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// Status returns the current state and a channel closed at the next change.
func (c *Conn) Status() (Status, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, c.changed
}

// WaitOperational blocks until the connection is Operational and returns the
// go-amqp connection and its generation. It fails at once if the connection
// is Failed or Closed, and when ctx ends.
func (c *Conn) WaitOperational(ctx context.Context) (*goamqp.Conn, uint64, error) {
	for {
		c.mu.Lock()
		st, ch, conn := c.status, c.changed, c.conn
		c.mu.Unlock()
		switch st.State {
		case Operational:
			if conn == nil {
				return nil, 0, &Error{Op: "wait", Broker: c.cfg.Name, Scope: ScopeConn, Err: errors.New("no AMQP connection (fake transport)")}
			}
			return conn, st.Generation, nil
		case Failed:
			return nil, 0, &Error{Op: "wait", Broker: c.cfg.Name, Scope: ScopeAuth, Err: st.LastError}
		case Closed:
			return nil, 0, &Error{Op: "wait", Broker: c.cfg.Name, Scope: ScopeConn, Err: ErrClosed}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, 0, &Error{Op: "wait", Broker: c.cfg.Name, Scope: ScopeTimeout,
				Err: fmt.Errorf("%w (state %s, last error: %v)", ctx.Err(), st.State, st.LastError)}
		}
	}
}

// NewSession waits for the connection and opens a session on it. A
// refused attach ends the session on RabbitMQ: links that must not be
// ended by another's refusal get a session of their own. A failure that
// kills the connection makes it reconnect.
func (c *Conn) NewSession(ctx context.Context) (*Session, uint64, error) {
	conn, gen, err := c.WaitOperational(ctx)
	if err != nil {
		return nil, 0, err
	}
	s, err := conn.NewSession(ctx, nil)
	if err != nil {
		err = wrap("begin session", c.cfg.Name, err)
		c.ReportBroken(gen, err)
		return nil, 0, err
	}
	c.sessions.add(s)
	return &Session{s: s, owner: c.g.Context(), open: &c.sessions}, gen, nil
}

// ReportBroken tells the connection that a user saw err on generation gen.
// If err killed the connection and gen is still current, the connection is
// dropped and re-dialled, so callers need not wait for go-amqp to notice.
func (c *Conn) ReportBroken(gen uint64, err error) {
	if Classify(err) != ScopeConn {
		return
	}
	c.mu.Lock()
	current := c.status.State == Operational && c.status.Generation == gen
	c.mu.Unlock()
	if !current {
		return // about an earlier connection, already replaced
	}
	select {
	case c.kick <- gen:
	default: // a report is already pending
	}
}

// Close stops the connection and waits for its goroutine. Idempotent; it
// always returns nil (it is an io.Closer).
func (c *Conn) Close() error {
	c.g.Stop()
	c.closeEngine()
	return nil
}

func (c *Conn) setState(mut func(*Status)) {
	c.mu.Lock()
	prev := c.status.State
	mut(&c.status)
	if c.status.State != prev {
		c.status.Since = c.opts.Clock.Now()
	}
	st := c.status
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	if c.opts.OnState != nil {
		c.opts.OnState(st)
	}
}

func (c *Conn) fail(err error, state State) {
	c.setState(func(s *Status) {
		s.State = state
		s.LastError = err
		s.LastErrorAt = c.opts.Clock.Now()
	})
}

// run is the Conn's own goroutine, the one Close waits for (a connection's
// write flusher, coalesce.go, is started and joined with each connection
// it holds): dial, hold, re-dial, until ctx (the Conn's group's) ends.
func (c *Conn) run(ctx context.Context) {
	defer c.setState(func(s *Status) { s.State = Closed; s.RetryIn, s.RetryAt = 0, time.Time{} })
	attempt := 0
	next := 0 // index of the URL to try first
	for {
		t, idx, err := c.dialAny(ctx, next)
		if err != nil {
			if Classify(err) == ScopeAuth {
				c.fail(&Error{Op: "connect", Broker: c.cfg.Name, Scope: ScopeAuth, Err: fmt.Errorf("%w: %w", ErrAuth, err)}, Failed)
				// No retry after an authentication failure, unless the
				// settings change (new credentials).
				select {
				case <-c.redial:
					attempt = 0
					continue
				case <-ctx.Done():
					return
				}
			}
			delay := c.opts.Backoff.Delay(attempt)
			attempt++
			c.setState(func(s *Status) {
				s.State = Waiting
				s.LastError = err
				s.LastErrorAt = c.opts.Clock.Now()
				s.Attempt = attempt
				s.RetryIn, s.RetryAt = delay, s.LastErrorAt.Add(delay)
			})
			select {
			case <-c.opts.Clock.After(delay):
				continue
			case <-c.redial:
				attempt, next = 0, 0
				continue
			case <-ctx.Done():
				return
			}
		}
		next = idx // stick to the URL that worked
		connectedAt := c.opts.Clock.Now()
		lost := c.hold(ctx, t)
		if lost == nil { // quit
			return
		}
		stable := c.opts.Clock.Now().Sub(connectedAt) >= c.opts.StableAfter
		c.setState(func(s *Status) {
			s.State = Waiting
			s.LastError = lost
			s.LastErrorAt = c.opts.Clock.Now()
			s.RetryIn, s.RetryAt = 0, time.Time{}
		})
		if errors.Is(lost, errReconfigured) {
			attempt, next = 0, 0 // the new settings, from their first URL
			continue
		}
		if stable {
			// A cut link to a healthy broker: re-dial at once.
			attempt = 0
			continue
		}
		// It died young: the broker accepts and drops; back off.
		delay := c.opts.Backoff.Delay(attempt)
		attempt++
		c.setState(func(s *Status) { s.RetryIn, s.RetryAt, s.Attempt = delay, c.opts.Clock.Now().Add(delay), attempt })
		select {
		case <-c.opts.Clock.After(delay):
		case <-c.redial:
			attempt, next = 0, 0
		case <-ctx.Done():
			return
		}
	}
}

// dialAny tries every URL once, starting at first; ctx's end aborts it.
func (c *Conn) dialAny(ctx context.Context, first int) (transport, int, error) {
	var errs []error
	c.mu.Lock()
	targets := c.targets // replaced whole by Reconfigure, never changed
	c.mu.Unlock()
	if first >= len(targets) {
		first = 0
	}
	for i := range targets {
		idx := (first + i) % len(targets)
		t := targets[idx]
		c.setState(func(s *Status) { s.State = Connecting; s.URL = t.redacted; s.RetryIn, s.RetryAt = 0, time.Time{} })
		dctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
		tr, err := c.opts.dial(dctx, t)
		cancel()
		if err == nil {
			return tr, idx, nil
		}
		if isSASLFailure(err) {
			return nil, idx, err
		}
		err = fmt.Errorf("%s: %w", t.redacted, err)
		errs = append(errs, err)
		c.setState(func(s *Status) { s.LastError = err; s.LastErrorAt = c.opts.Clock.Now() })
		if ctx.Err() != nil {
			return nil, idx, errors.Join(errs...)
		}
	}
	return nil, first, errors.Join(errs...)
}

// hold keeps t Operational until it is lost (returns the cause) or ctx
// ends: the Conn is closed (returns nil).
func (c *Conn) hold(ctx context.Context, t transport) error {
	conn, _ := t.(*goamqp.Conn)
	c.sessions.take() // the last connection's: gone with it
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	var gen uint64
	c.setState(func(s *Status) {
		s.State = Operational
		s.Attempt = 0
		s.RetryIn, s.RetryAt = 0, time.Time{}
		s.Generation++
		gen = s.Generation
	})
	defer func() {
		c.mu.Lock()
		c.conn = nil
		c.mu.Unlock()
	}()
	for {
		select {
		case <-t.Done():
			err := t.Err()
			if err == nil {
				err = errors.New("connection closed by peer")
			}
			return &Error{Op: "connection lost", Broker: c.cfg.Name, Scope: ScopeConn, Err: err}
		case g := <-c.kick:
			if g != gen {
				continue // stale report about an earlier connection
			}
			c.closeTransport(t) // dropping it anyway: the loss is what we report
			return &Error{Op: "connection dropped", Broker: c.cfg.Name, Scope: ScopeConn, Err: errors.New("a link reported a connection-level error")}
		case <-c.redial:
			c.closeTransport(t) // replaced by one with the new settings
			return &Error{Op: "connection dropped", Broker: c.cfg.Name, Scope: ScopeConn, Err: errReconfigured}
		case <-ctx.Done():
			c.closeTransport(t)
			return nil
		}
	}
}

// sessionCloseWait bounds the wait for the broker's end of a session.
const sessionCloseWait = 2 * time.Second

// CloseSessionContext ends a session without waiting long: RabbitMQ answers
// link detaches lazily (go-amqp would wait forever), and ending the session
// reclaims every link on it, handing their unsettled messages back.
//
// ctx is the owner's. Its values are kept but not its cancellation: this is
// the cleanup on the way out, usually after the owner's context has ended,
// and the session must still be ended (at most sessionCloseWait).
func CloseSessionContext(ctx context.Context, s *Session) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sessionCloseWait)
	defer cancel()
	// The session is ended either way: an error (timeout, connection
	// already gone) leaves nothing to undo, and the broker reclaims its
	// links when the connection goes.
	_ = s.Close(ctx)
}

// CloseSession is CloseSessionContext with the context of the session's
// connection, for deferred cleanups with no context at hand.
func CloseSession(s *Session) {
	CloseSessionContext(s.owner, s)
}
