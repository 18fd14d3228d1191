package router

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/internal/group"
	"github.com/fedrouter/fedrouter/internal/ratelog"
	"github.com/fedrouter/fedrouter/topology"
)

// The control plane's transport: routers talk to each other through the
// brokers they share, never over a port of their own. On every broker the
// router subscribes to the control address (a broadcast on multicast
// brokers; its own inbox "<address>.<router id>" on queue-only ones) and
// publishes there. The topology layer encodes, signs and decides; here
// every received message is checked (topology.Decode: size, signature,
// version, body) before it is queued, so junk published on the control
// address costs a check and a count, never a place in the queue, and the
// queue (topology.Inbox) keeps one slot per router, so nothing can push a
// router's newest advertisement out.

// DefaultControlAddress is the control node's name on every broker.
const DefaultControlAddress = config.DefaultControlAddress

// controlCredit is each control receiver's credit: with messages over
// topology.MaxLSASize refused unkept, the control input a broker can make
// the router hold is at most controlCredit + 1 messages of MaxLSASize
// (about 1 MiB) per broker, besides the inbox (docs/security.md).
const controlCredit = 16

// Inbound is one verified control message received from a broker.
type Inbound struct {
	Broker string
	Data   []byte
}

// ControlOptions configure a Control; zero values take the defaults.
type ControlOptions struct {
	RouterID string
	Address  string // default DefaultControlAddress
	// Inbox bounds the received advertisements waiting for the driver: one
	// slot per originating router, holding its newest; default 256 (so
	// at most 256 × topology.MaxLSASize = 16 MiB).
	Inbox   int
	Outbox  int          // bound of each broker's outbound queue; default 16
	Backoff amqp.Backoff // re-attach delays; default amqp.DefaultBackoff()
	// LogEvery is the interval of the drop reports: the first drop of a
	// reason is logged at once, the next ones counted and reported at
	// most once per interval. Default 10 s.
	LogEvery time.Duration
	Log      zerolog.Logger
}

// ControlStats count what the transport did. Dropped counts the control
// messages dropped, by reason (the Drop… constants): refused by the check
// before queueing (topology's reasons), or by policy (bounded queues:
// advertisements are refreshed anyway).
//
// PeakBuffered is the most bytes a control receiver held for one message
// in reassembly, over all brokers: at most topology.MaxLSASize, whatever
// size the messages published there had.
type ControlStats struct {
	Received, Sent, SendErrors uint64
	Dropped                    map[string]uint64
	PeakBuffered               uint64
}

// Reasons a control message is dropped by policy, besides topology's
// (topology.Reason: too_large, malformed, unsigned, bad_signature,
// version).
const (
	// DropInboxFull: its router had no slot and none was free.
	DropInboxFull = "inbox_full"
	// DropCoalesced: an advertisement of its router at least as new was
	// waiting already (the normal fate of a flood's copies on a mesh, and
	// of replays), or a newer one replaced it before the driver took it.
	DropCoalesced = "coalesced"
	// DropOutboxFull: not sent, the broker's outbound queue was full.
	DropOutboxFull = "outbox_full"
)

// dropReasons are the reasons reported even at zero, so that the metric's
// series exist before the first drop.
var dropReasons = []string{topology.ReasonTooLarge, topology.ReasonMalformed, topology.ReasonUnsigned,
	topology.ReasonBadSignature, topology.ReasonVersion, DropInboxFull, DropCoalesced, DropOutboxFull}

// Control runs one control link per broker: a goroutine each, in a group
// owned here, started by Start and stopped (and waited for) by Stop. Each
// link's run owns one more goroutine per attach (the receive loop), which
// it joins before re-attaching.
type Control struct {
	opts   ControlOptions
	links  map[string]*controlLink // by broker; fixed after NewControl
	secret []byte                  // set by SetSecret before Start, read-only after
	ready  chan struct{}           // holds a token while the inbox may hold advertisements
	limit  *ratelog.Limiter        // drop reports

	received, sent, sendErrors atomic.Uint64

	// inMu guards the inbox and the drop counts; held for map operations
	// only (no I/O, no logging, no decoding under it).
	inMu    sync.Mutex
	inbox   *topology.Inbox
	dropped map[string]uint64

	mu sync.Mutex
	g  *group.Group // guarded by mu: set by Start, nil before
}

// outbound is a message to publish on one broker: once on a multicast
// broker, once into each peer's inbox on a queue-only one.
type outbound struct {
	data  []byte
	peers []string
}

type controlLink struct {
	c      *Control
	broker string
	b      amqp.Broker
	out    chan outbound
	log    zerolog.Logger
	peak   atomic.Uint64 // the most its receivers held for one message
}

// NewControl prepares the control links; Start runs them.
func NewControl(brokers map[string]amqp.Broker, opts ControlOptions) *Control {
	if opts.Address == "" {
		opts.Address = DefaultControlAddress
	}
	if opts.Inbox <= 0 {
		opts.Inbox = 256
	}
	if opts.Outbox <= 0 {
		opts.Outbox = 16
	}
	if opts.Backoff.Min == 0 {
		opts.Backoff = amqp.DefaultBackoff()
	}
	if opts.LogEvery <= 0 {
		opts.LogEvery = 10 * time.Second
	}
	c := &Control{opts: opts, links: map[string]*controlLink{}, ready: make(chan struct{}, 1),
		limit: ratelog.New(opts.LogEvery), inbox: topology.NewInbox(opts.Inbox), dropped: map[string]uint64{}}
	for name, b := range brokers {
		c.links[name] = &controlLink{c: c, broker: name, b: b, out: make(chan outbound, opts.Outbox),
			log: opts.Log.With().Str("broker", name).Str("link", "control").Logger()}
	}
	return c
}

// SetSecret gives the network's secret, with which every received message
// is checked before it is queued. Call it before Start; without it every
// message is dropped (no_secret).
func (c *Control) SetSecret(secret []byte) { c.secret = secret }

// Start starts one goroutine per broker, under ctx (the owner's). Call it
// once.
func (c *Control) Start(ctx context.Context) {
	if len(c.secret) == 0 {
		c.opts.Log.Error().Msg("control: no network secret: every control message received will be dropped")
	}
	g := group.New(ctx)
	c.mu.Lock()
	c.g = g
	c.mu.Unlock()
	for _, l := range c.links {
		g.Go(l.run)
	}
}

// Stop stops every control link and waits for them; without Start it has
// nothing to stop.
func (c *Control) Stop() {
	c.mu.Lock()
	g := c.g
	c.mu.Unlock()
	if g != nil {
		g.Stop()
	}
}

// Ready receives when verified advertisements may be waiting: call Take
// until it reports none.
func (c *Control) Ready() <-chan struct{} { return c.ready }

// Take returns the verified advertisement that has waited longest (the
// newest of its router), if any.
func (c *Control) Take() (Inbound, bool) {
	c.inMu.Lock()
	r, ok := c.inbox.Take()
	more := c.inbox.Len() > 0
	c.inMu.Unlock()
	if more {
		c.signal()
	}
	return Inbound{Broker: r.From, Data: r.Data}, ok
}

func (c *Control) signal() {
	select {
	case c.ready <- struct{}{}:
	default: // a token is there already
	}
}

// Brokers lists the brokers with a control link, sorted.
func (c *Control) Brokers() []string {
	out := make([]string, 0, len(c.links))
	for n := range c.links {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Multicast says whether broker broadcasts control messages (else they go
// to each peer's inbox).
func (c *Control) Multicast(broker string) bool {
	l, ok := c.links[broker]
	return ok && l.b.Profile.Multicast()
}

// Send queues data for publication on broker; peers name the routers whose
// inboxes get it on a queue-only broker. It never blocks: when the
// broker's queue is full the message is dropped and counted (false).
func (c *Control) Send(broker string, data []byte, peers []string) bool {
	l, ok := c.links[broker]
	if !ok {
		return false
	}
	select {
	case l.out <- outbound{data: data, peers: peers}:
		return true
	default:
		c.count(DropOutboxFull)
		return false
	}
}

// Stats returns the transport's counters.
func (c *Control) Stats() ControlStats {
	st := ControlStats{Received: c.received.Load(), Sent: c.sent.Load(), SendErrors: c.sendErrors.Load(),
		Dropped: make(map[string]uint64, len(dropReasons))}
	for _, r := range dropReasons {
		st.Dropped[r] = 0
	}
	c.inMu.Lock()
	for r, n := range c.dropped {
		st.Dropped[r] = n
	}
	c.inMu.Unlock()
	for _, l := range c.links {
		st.PeakBuffered = max(st.PeakBuffered, l.peak.Load())
	}
	return st
}

func (l *controlLink) run(ctx context.Context) {
	attempt := 0
	for {
		if _, _, err := l.b.Conn.WaitOperational(ctx); err != nil {
			if ctx.Err() != nil || amqp.Classify(err) == amqp.ScopeAuth {
				return
			}
		}
		began := time.Now()
		err := l.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > time.Minute {
			attempt = 0
		}
		delay := l.c.opts.Backoff.Delay(attempt)
		attempt++
		ev := l.log.Warn()
		if attempt > 1 {
			ev = l.log.Debug()
		}
		ev.Err(err).Dur("retry_in", delay).Msg("control link down")
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
	}
}

// runOnce subscribes and publishes until something fails.
func (l *controlLink) runOnce(ctx context.Context) error {
	setup, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sess, _, err := l.b.Conn.NewSession(setup)
	if err != nil {
		return err
	}
	defer amqp.CloseSessionContext(ctx, sess)
	node := amqp.Node{Kind: amqp.Control, Name: l.c.opts.Address}
	spec, err := l.b.Profile.Source(setup, node, amqp.Subscription{Name: l.c.opts.RouterID})
	if err != nil {
		return fmt.Errorf("control source: %w", err)
	}
	rcv, err := l.b.NewBoundedReceiver(setup, spec, topology.MaxLSASize, controlCredit)
	if err != nil {
		return fmt.Errorf("control receiver %s: %w", spec.Address, err)
	}
	defer func() { // after the receive loop is joined (deferred later)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = rcv.Close(cctx)
	}()
	l.log.Debug().Str("address", spec.Address).Msg("control link up")
	// The receive loop is this attach's: stopped and joined on return,
	// before the session is ended.
	recv := group.New(ctx)
	defer recv.Stop()
	recvErr := make(chan error, 1)
	recv.Go(func(ctx context.Context) { recvErr <- l.receive(ctx, rcv) })
	senders := map[string]*amqp.Sender{}
	for {
		select {
		case o := <-l.out:
			if err := l.publish(recv.Context(), sess, senders, o); err != nil {
				l.c.sendErrors.Add(1)
				return err
			}
		case err := <-recvErr:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// receive checks every control message and queues the verified ones (see
// admit). Everything is accepted at the broker: what is refused is
// counted here, not returned for the broker to redeliver. A message over
// topology.MaxLSASize or whose body is not data is refused by the
// receiver itself (rejected at the broker, never held whole) and counted
// here as too_large or malformed (one sent settled beyond the credit, by
// a broker that ignored it, as inbox_full).
func (l *controlLink) receive(ctx context.Context, rcv *amqp.BoundedReceiver) error {
	for {
		data, err := rcv.Receive(ctx)
		if p := rcv.Stats().PeakBuffered; p > l.peak.Load() {
			l.peak.Store(p) // this goroutine is the only writer
		}
		var refused *amqp.RefusedError
		if errors.As(err, &refused) {
			reason := topology.ReasonMalformed
			switch {
			case errors.Is(err, amqp.ErrOversize):
				reason = topology.ReasonTooLarge
			case errors.Is(err, amqp.ErrBeyondWindow):
				reason = DropInboxFull
			}
			l.c.received.Add(refused.N)
			l.c.countN(reason, refused.N)
			l.c.report(reason, l.broker, err, time.Now())
			continue
		}
		if err != nil {
			return err
		}
		l.c.received.Add(1)
		l.c.admit(l.broker, data, time.Now())
	}
}

// publish sends o on the broker, to the broadcast target or to each peer's
// inbox, creating senders on first use, and waits for the outcomes.
func (l *controlLink) publish(ctx context.Context, sess *amqp.Session, senders map[string]*amqp.Sender, o outbound) error {
	keys := []string{""}
	if !l.b.Profile.Multicast() {
		keys = o.peers
	}
	for _, peer := range keys {
		snd, err := l.sender(ctx, sess, senders, peer)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		msg := amqp.NewMessage(o.data)
		msg.SetSubject("fedrouter.lsa")
		r, err := snd.Send(wctx, msg)
		if err == nil {
			_, err = r.Wait(wctx)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("control publish: %w", err)
		}
		l.c.sent.Add(1)
	}
	return nil
}

func (l *controlLink) sender(ctx context.Context, sess *amqp.Session, senders map[string]*amqp.Sender, peer string) (*amqp.Sender, error) {
	if s, ok := senders[peer]; ok {
		return s, nil
	}
	spec, err := l.b.Profile.Target(amqp.Node{Kind: amqp.Control, Name: l.c.opts.Address, Key: peer})
	if err != nil {
		return nil, err
	}
	s, err := sess.NewSender(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("control sender %s: %w", spec.Address, err)
	}
	senders[peer] = s
	return s, nil
}
