package routes

import (
	"context"
	"errors"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// This file carries the stall decision (stall.go) out: one goroutine per
// Manager, in its group, looks at every attached route each stallEvery,
// asks the sources' depths it needs — one call per source queue per look,
// and only for routes quiet for half of stall_after — with no lock held,
// and sets the routes Stalled or Operational, logs the changes and asks
// for the one re-attach.

// errReattach ends a run the stall watcher asked to re-attach.
var errReattach = errors.New("routes: re-attaching a stalled route's links")

// stallEvery is how often the watcher looks: a sixth of stall_after,
// between 100 ms and 10 s.
func stallEvery(after time.Duration) time.Duration {
	return min(max(after/6, 100*time.Millisecond), 10*time.Second)
}

// depthKey is one source queue at one broker.
type depthKey struct{ broker, queue string }

// stallWatch is the watcher's state, owned by its goroutine.
type stallWatch struct {
	m      *Manager
	after  time.Duration
	tracks map[*route]stallTrack
	ask    map[*route]bool // routes whose source depth the next look reads
}

// watchStalls runs until ctx ends (the manager's group stops).
func (m *Manager) watchStalls(ctx context.Context) {
	w := &stallWatch{m: m, after: m.opts.StallAfter, tracks: map[*route]stallTrack{}, ask: map[*route]bool{}}
	t := time.NewTicker(stallEvery(w.after))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.look(ctx)
		}
	}
}

// look judges every route once.
func (w *stallWatch) look(ctx context.Context) {
	w.m.mu.Lock()
	rs := make([]*route, 0, len(w.m.routes))
	for _, r := range w.m.routes {
		rs = append(rs, r)
	}
	w.m.mu.Unlock()
	depths := w.depths(ctx, rs)
	seen := make(map[*route]bool, len(rs))
	for _, r := range rs {
		seen[r] = true
		o := r.stallObs()
		if k, ok := r.depthSource(); ok {
			o.HasDepth, o.Depth = true, -1
			if d, ok := depths[k]; ok {
				o.Depth = d
			}
		}
		v, t := stallDecide(w.after, w.tracks[r], o, time.Now())
		w.tracks[r], w.ask[r] = t, v.AskDepth
		if o.Attached {
			r.carryStall(v)
		}
	}
	for r := range w.tracks {
		if !seen[r] {
			delete(w.tracks, r)
			delete(w.ask, r)
		}
	}
}

// depths reads the depth of every source queue a route asked for: once
// per queue whatever the routes sharing it, in one batch per broker (a
// listing, past a few queues). A queue not there has 0 (the run fails on
// its own); a broker that does not answer within the look, none.
func (w *stallWatch) depths(ctx context.Context, rs []*route) map[depthKey]int64 {
	type batch struct {
		dr     amqp.DepthReader
		queues []string
	}
	want := map[string]*batch{} // by broker
	asked := map[depthKey]bool{}
	for _, r := range rs {
		k, ok := r.depthSource()
		if !w.ask[r] || !ok || asked[k] {
			continue
		}
		asked[k] = true
		if want[k.broker] == nil {
			want[k.broker] = &batch{dr: r.src.Profile.(amqp.DepthReader)}
		}
		want[k.broker].queues = append(want[k.broker].queues, k.queue)
	}
	if len(want) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, max(stallEvery(w.after), 5*time.Second))
	defer cancel()
	out := make(map[depthKey]int64, len(asked))
	for broker, b := range want {
		got, err := b.dr.QueueDepths(ctx, b.queues)
		if err != nil {
			w.m.log.Debug().Err(err).Str("broker", broker).Int("queues", len(b.queues)).Msg("stall watcher: source depths unknown")
			continue
		}
		for _, q := range b.queues {
			out[depthKey{broker, q}] = got[q] // absent: no such queue, 0
		}
	}
	return out
}

// depthSource names the route's source queue where its profile can read
// its depth. A fan-out route's subscription is shared by several routers
// of which one consumes at a time: its depth says nothing of this route.
func (r *route) depthSource() (depthKey, bool) {
	if _, fanout := r.mode.(*fanoutMode); fanout {
		return depthKey{}, false
	}
	dr, ok := r.src.Profile.(amqp.DepthReader)
	if !ok {
		return depthKey{}, false
	}
	src, sub, _ := r.nodes()
	q, ok := dr.SourceQueue(src, sub)
	return depthKey{r.spec.Src, q}, ok
}

// stallObs is what the watcher sees of the route now.
func (r *route) stallObs() stallObs {
	attached, _ := r.state.attached()
	o := stallObs{Attached: attached, Run: r.runs.Load(), Progress: r.c.Forwarded.Load() + r.c.Looped.Load(),
		InFlight: r.c.InFlight.Load(), Depth: -1}
	if h := r.holding.Load(); h != nil {
		o.Held, o.Credit = (*h)()
	}
	if gs := r.m.opts.Gates; gs != nil {
		if _, _, dst := r.nodes(); dst.Kind == amqp.Queue {
			g := gs.Gate(r.spec.Dest, dst.Name)
			o.HeldBack = g != nil && g.Closed()
		}
	}
	return o
}

// carryStall sets the route's state as v says, logs v's line and asks
// for the re-attach.
func (r *route) carryStall(v stallVerdict) {
	r.state.setStalled(v.Stalled, v.Why)
	if v.Log != "" {
		ev, st := r.log.Info(), StateOperational
		if v.Stalled {
			ev, st = r.log.Warn(), StateStalled
		}
		ev.Str("state", string(st)).Msg("route " + r.state.name + " " + v.Log)
	}
	if v.Reattach {
		r.reattachRun.Store(r.runs.Load())
		select {
		case r.reattach <- struct{}{}:
		default: // one is pending already
		}
	}
}
