package routes

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// This file carries a route's path policy (package pathpolicy) out: it observes
// the route's brokers and the link-state table, asks the policy, and
// waits, holds, corrects, or hands the path to a run (route.go).

// observe reads what the route's path policy depends on, and
// the channels that signal a change of any of it.
func (r *route) observe() (pathpolicy.Obs, []<-chan struct{}) {
	src, srcCh := r.src.Conn.Status()
	obs := pathpolicy.Obs{SrcUp: src.State == amqp.Operational, SrcState: src.State.String()}
	changed := []<-chan struct{}{srcCh}
	if r.policy.Mode == pathpolicy.Direct {
		dst, dstCh := r.dst.Conn.Status()
		obs.DestUp, obs.DestState = dst.State == amqp.Operational, dst.State.String()
		changed = append(changed, dstCh)
	}
	// The table matters to transit and fan-out runs (fan-out watches it
	// for route list's detail), and to a direct route that reroutes.
	if r.m.opts.Table != nil && (r.policy.Mode != pathpolicy.Direct || pathpolicy.Rerouting(r.policy.Steps)) {
		paths, tableCh := r.m.opts.Table.Paths()
		changed = append(changed, tableCh)
		if paths != nil && r.policy.Mode != pathpolicy.Fanout {
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
func (r *route) waitPath(ctx context.Context) (pathpolicy.Path, bool) {
	var st pathpolicy.State
	for {
		d, ok := r.decideUntil(ctx, &st, func(d pathpolicy.Decision) bool {
			if d.Report != "" {
				r.log.Warn().Str("action", d.Report).Str("why", d.Why).Msg("no path: corrective action " + d.Report)
			}
			switch d.Action {
			case pathpolicy.ActForward, pathpolicy.ActDeadLetter, pathpolicy.ActReject:
				return true
			}
			r.state.setWaiting(d.Detail)
			return false
		})
		if !ok {
			return pathpolicy.None, false
		}
		if d.Action == pathpolicy.ActForward {
			return d.Path, true
		}
		r.correct(ctx, d, st)
		if ctx.Err() != nil {
			return pathpolicy.None, false
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
func (r *route) correct(ctx context.Context, d pathpolicy.Decision, st pathpolicy.State) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	go func() { // owned by correct, which waits for it; ends with actx
		defer close(watched)
		r.watchUntil(actx, st, func(current pathpolicy.Decision) bool { return !current.Same(d) })
		cancel() // the decision changed (or actx ended already)
	}()
	defer func() { cancel(); <-watched }()
	r.state.setWaiting(d.Detail)
	err := r.runNoPath(actx, d.Action)
	if err != nil && actx.Err() == nil {
		r.state.setState(StateWaiting, fmt.Errorf("no-path %s: %w", d.Action, err), time.Second)
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
func (r *route) watchPath(ctx context.Context, path pathpolicy.Path) error {
	d, ok := r.watchUntil(ctx, pathpolicy.State{}, func(d pathpolicy.Decision) bool {
		if d.Action != pathpolicy.ActForward || d.Path != path {
			return true
		}
		if detail := r.runDetail(path); detail != "" {
			r.state.setDetail(detail) // the path, or the routes advertised, may have changed
		}
		return false
	})
	if !ok {
		return nil
	}
	why := d.Why
	if why == "" {
		why = fmt.Sprintf("broker %s is reachable directly again", r.spec.Dest)
	}
	return fmt.Errorf("%w: %s", errPathChanged, why)
}

// watchUntil is decideUntil from the fixed state st: the two watchers
// of a decision in force (correct's and a run's) ask the policy as it
// stood when that decision was made.
func (r *route) watchUntil(ctx context.Context, st pathpolicy.State, done func(pathpolicy.Decision) bool) (pathpolicy.Decision, bool) {
	return r.decide(ctx, &st, false, done)
}

// decideUntil is the one loop that asks the path policy: at every change
// of what it observes and whenever a decision's timer is due, until done
// says the decision is one the caller acts on. It returns that decision,
// or false once ctx ended. *st, the policy's state, advances with every
// decision (waitPath owns it).
func (r *route) decideUntil(ctx context.Context, st *pathpolicy.State, done func(pathpolicy.Decision) bool) (pathpolicy.Decision, bool) {
	return r.decide(ctx, st, true, done)
}

// decide is decideUntil, keeping *st fixed unless advance.
func (r *route) decide(ctx context.Context, st *pathpolicy.State, advance bool, done func(pathpolicy.Decision) bool) (pathpolicy.Decision, bool) {
	for {
		obs, changed := r.observe()
		d, next := pathpolicy.Decide(r.policy, obs, *st, time.Now())
		if advance {
			*st = next
		}
		if done(d) {
			return d, true
		}
		if !waitFor(ctx, d.Timer, changed) {
			return pathpolicy.Decision{}, false
		}
	}
}

// waitAny waits until ctx ends (false), the timer fires or one of the
// channels is closed (true). nil channels never are.
func waitAny(ctx context.Context, timer <-chan time.Time, chans []<-chan struct{}) bool {
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	if timer != nil {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer)})
	}
	for _, ch := range chans {
		if ch != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
		}
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen != 0 || ctx.Err() == nil
}
