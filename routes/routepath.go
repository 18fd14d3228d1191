package routes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// This file carries a route's path policy (policy.go) out: it observes
// the route's brokers and the link-state table, asks the policy, and
// waits, holds, corrects, or hands the path to a run (route.go).

// pathKind is how a route reaches its destination on one run.
type pathKind int

const (
	pathNone    pathKind = iota
	pathDirect           // the destination is one of the router's brokers and up
	pathTransit          // through other brokers (a remote destination, or a reroute)
	pathFanout           // copies through the source's transit queues, one per broker the group reaches
)

// observe reads what the route's path policy depends on (policy.go), and
// the channels that signal a change of any of it.
func (r *route) observe() (PathObs, []<-chan struct{}) {
	src, srcCh := r.src.Conn.Status()
	obs := PathObs{SrcUp: src.State == amqp.Operational, SrcState: src.State.String()}
	changed := []<-chan struct{}{srcCh}
	if r.policy.Mode == ModeDirect {
		dst, dstCh := r.dst.Conn.Status()
		obs.DestUp, obs.DestState = dst.State == amqp.Operational, dst.State.String()
		changed = append(changed, dstCh)
	}
	// The table matters to transit and fan-out runs (fan-out watches it
	// for route list's detail), and to a direct route that reroutes.
	if r.m.opts.Table != nil && (r.policy.Mode != ModeDirect || rerouting(r.policy.Steps)) {
		paths, tableCh := r.m.opts.Table.Paths()
		changed = append(changed, tableCh)
		if paths != nil && r.policy.Mode != ModeFanout {
			_, obs.TablePath = paths.Route(r.spec.Src, r.spec.Dest)
		}
	}
	return obs, changed
}

// waitPath waits until the path policy says forward (the source is up
// and the destination reachable, directly or through transit), and says
// how; false if ctx ended. Meanwhile it carries out the policy's other
// decisions: wait, hold, or correct (dead-letter or reject what the
// source has). The policy's state lives in st, owned by the route's run
// goroutine.
func (r *route) waitPath(ctx context.Context) (pathKind, bool) {
	var st PathState
	for {
		obs, changed := r.observe()
		var d Decision
		d, st = Decide(r.policy, obs, st, time.Now())
		if d.Report != "" {
			r.log.Warn().Str("action", d.Report).Str("why", d.Why).Msg("no path: corrective action " + d.Report)
		}
		switch d.Action {
		case ActForward:
			return d.Path, true
		case ActDeadLetter, ActReject:
			r.correct(ctx, d, st)
			if ctx.Err() != nil {
				return pathNone, false
			}
			continue
		}
		r.setWaiting(d.Detail)
		if !waitFor(ctx, d.Timer, changed) {
			return pathNone, false
		}
	}
}

// waitFor waits until ctx ends (false), d passes (if > 0) or one of the
// channels is closed (true).
func waitFor(ctx context.Context, d time.Duration, changed []<-chan struct{}) bool {
	if d <= 0 {
		return waitAny(ctx, nil, changed)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	return waitAny(ctx, t.C, changed)
}

// correct carries out a corrective decision (dead-letter or reject) until
// the policy decides otherwise: the destination is reachable again, the
// source goes, the chain's next step is due, or the route stops.
func (r *route) correct(ctx context.Context, d Decision, st PathState) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	go func() { // owned by correct, which waits for it; ends with actx
		defer close(watched)
		for {
			obs, changed := r.observe()
			current, _ := Decide(r.policy, obs, st, time.Now())
			if !current.Same(d) {
				cancel()
				return
			}
			if !waitFor(actx, current.Timer, changed) {
				return
			}
		}
	}()
	defer func() { cancel(); <-watched }()
	r.setWaiting(d.Detail)
	err := r.runNoPath(actx, d.Action)
	if err != nil && actx.Err() == nil {
		r.setState(StateWaiting, fmt.Errorf("no-path %s: %w", d.Action, err), time.Second)
		select { // a short pause before trying again
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
}

// errPathChanged ends a run whose path went away (a broker connection, or
// the table's path) or changed to another: the route waits for a path
// (and applies its no-path chain) at once, with no backoff of its own —
// a lost connection has one.
var errPathChanged = errors.New("path changed")

// watchPath returns why, once the path policy no longer decides to
// forward on the run's path; nil when ctx ends first. A run's policy
// state is the zero one: forwarding stops the no-path clock.
func (r *route) watchPath(ctx context.Context, path pathKind) error {
	for {
		obs, changed := r.observe()
		d, _ := Decide(r.policy, obs, PathState{}, time.Now())
		if d.Action != ActForward || d.Path != path {
			why := d.Why
			if why == "" {
				why = fmt.Sprintf("broker %s is reachable directly again", r.spec.Dest)
			}
			return fmt.Errorf("%w: %s", errPathChanged, why)
		}
		if detail := r.mode.detail(path); detail != "" {
			r.setDetail(detail) // the path, or the routes advertised, may have changed
		}
		if !waitFor(ctx, d.Timer, changed) {
			return nil
		}
	}
}
