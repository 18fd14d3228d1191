package routes

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// A router cluster (package cluster) runs each route on the one member
// that holds its lease. The member starts a route it won with Hold, stops
// it with Halt when the lease is lost or the route moves, and never
// writes the state file: the definitions live in the cluster's store.

// errHalted ends a route's run when it is halted gracefully.
var errHalted = errors.New("routes: route handed off")

// Hold runs spec as a route held under a cluster lease: fence is asked
// before each message is sent, and the route stops forwarding as soon as
// it says no. A route with spec's id already running is left as it is.
func (m *Manager) Hold(spec Spec, origin Origin, fence func() bool) error {
	if _, err := m.run(spec, origin, fence); err != nil && !errors.Is(err, ErrDuplicate) {
		return fmt.Errorf("routes: hold %s: %w", spec, err)
	}
	return nil
}

// HaltMode says how Halt stops a route.
type HaltMode struct {
	// Drain (a planned handoff, a global destination's flow that stops):
	// the route stops taking messages and settles those in flight first,
	// so the next holder gets neither a loss nor a duplicate; bounded by
	// Halt's ctx and drainTimeout. Without it the route stops at once.
	Drain bool
	// Deleted: the route was deleted from the store, so what it made at
	// its source goes too (as Delete does).
	Deleted bool
}

// Halt stops route id without deleting it anywhere, as how says. An
// unknown id is a no-op. It returns the route's last status (false:
// unknown id).
func (m *Manager) Halt(ctx context.Context, id string, how HaltMode) (Status, bool) {
	m.mu.Lock()
	r, ok := m.routes[id]
	delete(m.routes, id)
	m.edgesAfterLocked(r)
	m.mu.Unlock()
	if !ok {
		return Status{}, false
	}
	if st := r.status().State; how.Drain && (st == StateOperational || st == StateStalled) { // a route not attached has nothing in flight
		r.haltOnce.Do(func() { close(r.halt) })
		select {
		case <-r.done:
		case <-ctx.Done():
		case <-time.After(drainTimeout + time.Second):
		}
	}
	r.stop()
	if how.Deleted {
		r.unsubscribe(ctx)
	}
	m.log.Info().Str("route", id).Bool("graceful", how.Drain).Bool("deleted", how.Deleted).Msg("route halted")
	return r.status(), true
}

// watchPathOrHalt is watchPath, ended also by a graceful halt, and by
// lap closing (a global destination's flow that has nothing left to
// move: errLapped).
func (r *route) watchPathOrHalt(ctx context.Context, path pathpolicy.Path, lap <-chan struct{}) error {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	var kicked atomic.Bool
	go func() { // ends with wctx, cancelled and waited for on return
		defer close(done)
		for {
			select {
			case <-r.reattach:
				if r.reattachRun.Load() != r.runs.Load() {
					continue // meant for an earlier run
				}
				kicked.Store(true)
				cancel()
			case <-r.halt:
				cancel()
			case <-lap:
				cancel()
			case <-wctx.Done():
			}
			return
		}
	}()
	err := r.watchPath(wctx, path)
	if kicked.Load() {
		return errReattach
	}
	select {
	case <-r.halt:
		return errHalted
	case <-lap:
		return errLapped
	default:
		return err
	}
}
