package routes

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/internal/group"
	"github.com/fedrouter/fedrouter/links"
)

// This file runs multi-hop transit (transit.go): one forwarder per transit
// queue this router carries and one per broker's ingress, started and
// stopped by a reconciler that follows the link-state table and the
// broker connections. All goroutines here are owned by the Manager: the
// reconciler is started by NewManager and stopped by Stop, and it stops
// every forwarder it started.

// forwarder is one running transit queue or ingress: a goroutine that
// attaches, forwards until something fails, and retries with backoff.
type forwarder struct {
	m        *Manager
	from     string // broker it takes messages from
	dest     string // transit: the destination broker ("" for the ingress)
	via      string // transit: the next hop it writes to
	log      zerolog.Logger
	c        links.Counters
	refused  links.IngressCounters // the ingress's refusals
	cancel   context.CancelFunc
	drain    chan struct{} // closed to stop gracefully (stop)
	done     chan struct{}
	mu       sync.Mutex // guards state, since, lastErr, loggedErr, dataPath
	state    State
	dataPath string
	since    time.Time
	lastErr  string
	// loggedErr is the failure last logged at warn; "" once Operational.
	loggedErr string
}

func (f *forwarder) queue() string {
	if f.dest == "" {
		return links.IngressQueue
	}
	return links.TransitNode(f.dest).Name
}

func (f *forwarder) run(ctx context.Context) {
	defer close(f.done)
	attempt := 0
	for {
		f.set(StateConnecting, nil)
		began := time.Now()
		err := f.runOnce(ctx)
		if ctx.Err() != nil || f.draining() {
			return
		}
		if time.Since(began) >= stableRun {
			attempt = 0
		}
		delay := f.m.opts.Backoff.Delay(attempt)
		attempt++
		f.set(StateWaiting, err)
		select {
		case <-time.After(delay):
		case <-f.drain: // stopping: nothing in flight to wait for
			return
		case <-ctx.Done():
			return
		}
	}
}

func (f *forwarder) draining() bool {
	select {
	case <-f.drain:
		return true
	default:
		return false
	}
}

// drainTimeout bounds a graceful stop: past it the forwarder is cancelled
// and what it has in flight comes back from the source (duplicates at
// worst, never a loss).
const drainTimeout = 10 * time.Second

// stopAll stops forwarders gracefully, all at once: each takes no more
// messages and settles those in flight, so that a forwarder replaced
// after a table change does not leave duplicates behind. Those not done
// within drainTimeout are cancelled.
func stopAll(fs []*forwarder) {
	for _, f := range fs {
		close(f.drain)
	}
	deadline := time.NewTimer(drainTimeout)
	defer deadline.Stop()
	expired := false
	for _, f := range fs {
		if !expired {
			select {
			case <-f.done:
			case <-deadline.C:
				expired = true
			}
		}
		if expired {
			f.log.Warn().Msg("transit forwarder did not drain in time; cancelling it (its messages in flight come back from the source)")
		}
		f.cancel()
		<-f.done
	}
}

// operational marks a run attached, forwarding on dataPath.
func (f *forwarder) operational(dataPath string) {
	f.mu.Lock()
	f.dataPath = dataPath
	f.mu.Unlock()
	f.set(StateOperational, nil)
}

func (f *forwarder) set(s State, err error) {
	f.mu.Lock()
	changed := f.state != s
	if changed {
		f.state, f.since = s, time.Now()
	}
	// The same failure again (a retry failing as the last one did, with
	// no Operational run between) is logged at debug: no flood.
	repeat := err != nil && err.Error() == f.loggedErr
	if err != nil {
		f.lastErr, f.loggedErr = err.Error(), err.Error()
	}
	if s == StateOperational {
		f.loggedErr = ""
	}
	f.mu.Unlock()
	switch {
	case repeat:
		f.log.Debug().Err(err).Msg("transit forwarder failed again; retrying")
	case err != nil:
		f.log.Warn().Err(err).Msg("transit forwarder failed; retrying")
	case changed && s == StateOperational:
		f.log.Debug().Msg("transit forwarder operational")
	}
}

// runOnce attaches the forwarder's links on the engine and forwards
// until one fails: the
// transit queue's (or the ingress's) messages read, checked and sent on
// as bytes, each to the next hop's transit queue or, on the last hop,
// into the address it names, a sender attached per destination as messages name them
// (links.EngineDispatch, links.EngineResolver); refusals to the router
// dead-letter queue on the source broker.
func (f *forwarder) runOnce(ctx context.Context) error {
	from, at, atName := f.m.opts.Brokers[f.from], f.m.opts.Brokers[f.from], f.from // the ingress writes on its own broker
	if f.via != "" {
		at, atName = f.m.opts.Brokers[f.via], f.via
	}
	setup, cancel := context.WithTimeout(ctx, f.m.opts.SetupTimeout)
	defer cancel()
	node := amqp.Node{Kind: amqp.Transit, Name: f.queue()}
	spec, err := from.Profile.Source(setup, node, amqp.Subscription{})
	if err != nil {
		return fmt.Errorf("%s on %s: %w", node.Name, f.from, err)
	}
	l := links.EngineLinks{AttachTimeout: f.m.opts.SetupTimeout}
	if l.Source, err = spec.EngineReceiver(from.Profile); err != nil {
		return err
	}
	dl := amqp.Node{Kind: amqp.Transit, Name: links.RouterDeadLetterQueue}
	if err := from.Profile.CheckTarget(setup, dl); err != nil {
		return fmt.Errorf("dead-letter queue on %s: %w", f.from, err)
	}
	dlSpec, err := from.Profile.Target(dl)
	if err != nil {
		return err
	}
	dlo, err := dlSpec.EngineSender()
	if err != nil {
		return err
	}
	l.DeadLetter = &dlo
	if l.Src, err = engineSession(setup, from.Conn); err != nil {
		return err
	}
	dstSess, err := engineSession(setup, at.Conn)
	if err != nil {
		endSessions(l.Src)
		return err
	}
	defer endSessions(l.Src, dstSess)
	disp := &links.EngineDispatch{At: atName, Only: f.dest, MaxHops: int64(f.m.opts.MaxHops), Control: f.m.opts.ControlAddress}
	if f.via != "" {
		disp.From = f.from
	}
	if f.dest == "" { // the ingress: only what its rules allow
		disp.Ingress = &links.IngressPolicy{Rules: f.m.opts.Ingress[f.from], Control: f.m.opts.ControlAddress}
		disp.IngressRefused = &f.refused
	}
	l.Dispatch, l.Resolve = disp.Dispatch, links.EngineResolver(atName, dstSess, at.Profile)
	cfg := links.Config{Window: f.m.opts.TransitWindow, OutcomeTimeout: f.m.opts.TransitOutcomeTimeout, Drain: f.drain,
		DeadLetterAnnotations: map[string]string{links.AnnotationRoute: "transit " + f.from + " " + f.queue()}}
	fw, err := links.AttachEngine(setup, l, cfg, 0)
	if err != nil {
		return fmt.Errorf("transit %s on %s (engine): %w", f.queue(), f.from, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), engineClose) // ctx may be over: close anyway
		defer cancel()
		fw.Close(cctx)
	}()
	f.operational(DataPathEngine)
	return fw.Run(ctx, cfg, &f.c)
}

func (f *forwarder) status() TransitStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := TransitStatus{Broker: f.from, Dest: f.dest, Via: f.via, Queue: f.queue(), State: f.state, Since: f.since, LastError: f.lastErr, DataPath: f.dataPath,
		Counters: Counters{Sent: f.c.Sent.Load(), Forwarded: f.c.Forwarded.Load(), Redelivered: f.c.Redelivered.Load(), Lost: f.c.Lost.Load(),
			Rejected: f.c.Rejected.Load(), DeadLettered: f.c.DeadLettered.Load(), NoOutcome: f.c.NoOutcome.Load(), InFlight: f.c.InFlight.Load()}}
	if f.dest == "" {
		st.IngressRefused = &IngressRefusals{RouterOwned: f.refused.RouterOwned.Load(), NotAllowed: f.refused.NotAllowed.Load()}
	}
	return st
}

// transitKey names a forwarder: the broker it takes from and the
// destination ("" for the ingress).
type transitKey struct{ from, dest string }

// runTransit reconciles the transit forwarders with the table and the
// connections until ctx ends, then stops them all. It runs in the
// manager's group; the forwarders run in a group of its own.
func (m *Manager) runTransit(ctx context.Context) {
	fwd := group.New(ctx)
	running := map[transitKey]*forwarder{}
	defer func() {
		fwd.Stop() // cancels and waits for every forwarder
		m.setTransit(nil)
	}()
	for {
		want, changed := m.wantedTransit()
		var stopping []*forwarder
		for k, f := range running {
			if via, ok := want[k]; !ok || via != f.via {
				stopping = append(stopping, f)
				delete(running, k)
				m.log.Info().Str("broker", k.from).Str("dest", k.dest).Str("via", f.via).Msg("transit forwarder stopping")
			}
		}
		stopAll(stopping)
		for k, via := range want {
			if _, ok := running[k]; ok {
				continue
			}
			if f := m.startForwarder(fwd, k, via); f != nil {
				running[k] = f
			}
		}
		list := make([]*forwarder, 0, len(running))
		for _, f := range running {
			list = append(list, f)
		}
		m.setTransit(list)
		if !waitAny(ctx, nil, changed) {
			return
		}
	}
}

// wantedTransit is what this router should carry now: for each of its
// brokers that is up, the ingress (via "") when it serves that broker's
// (Options.Ingress), and the transit queue of every destination whose
// next hop it is attached to and is up; and the channels that signal a
// change of any of that.
func (m *Manager) wantedTransit() (map[transitKey]string, []<-chan struct{}) {
	paths, tableCh := m.opts.Table.Paths()
	up := map[string]bool{}
	changed := []<-chan struct{}{tableCh}
	for name, b := range m.opts.Brokers {
		st, ch := b.Conn.Status()
		up[name] = st.State == amqp.Operational
		changed = append(changed, ch)
	}
	want := map[transitKey]string{}
	for name, ok := range up {
		if _, served := m.opts.Ingress[name]; ok && served {
			want[transitKey{from: name}] = ""
		}
	}
	for k, via := range nextHops(paths, func(b string) bool { return up[b] }) {
		want[transitKey{from: k[0], dest: k[1]}] = via
	}
	return want, changed
}

// startForwarder starts the forwarder of k, writing via, in fwd under a
// context of its own (a changed next hop stops one forwarder); nil once
// fwd is stopping.
func (m *Manager) startForwarder(fwd *group.Group, k transitKey, via string) *forwarder {
	f := &forwarder{m: m, from: k.from, dest: k.dest, via: via, drain: make(chan struct{}), done: make(chan struct{}), state: StateConnecting, since: time.Now()}
	f.log = m.log.With().Str("transit", f.queue()).Str("broker", k.from).Str("via", via).Logger()
	fctx, cancel := context.WithCancel(fwd.Context())
	f.cancel = cancel
	if !fwd.Go(func(context.Context) { f.run(fctx) }) {
		cancel()
		return nil
	}
	if k.dest != "" {
		m.log.Info().Str("broker", k.from).Str("dest", k.dest).Str("via", via).Msg("transit forwarder started")
	}
	return f
}

func (m *Manager) setTransit(list []*forwarder) {
	m.mu.Lock()
	m.transit = list
	m.mu.Unlock()
}

// Transit lists the transit forwarders this router runs, by broker and
// destination.
func (m *Manager) Transit() []TransitStatus {
	m.mu.Lock()
	list := m.transit
	m.mu.Unlock()
	out := make([]TransitStatus, 0, len(list))
	for _, f := range list {
		out = append(out, f.status())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Broker != out[j].Broker {
			return out[i].Broker < out[j].Broker
		}
		return out[i].Dest < out[j].Dest
	})
	return out
}
