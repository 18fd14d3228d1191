// Package group runs a set of goroutines under one owner: they share a
// context derived from the owner's, and the owner's Stop cancels it and
// waits for every one of them. It is the one place where fedrouter's
// long-lived goroutines are started (nats-server's startGoRoutine with a
// WaitGroup that refuses new work after shutdown).
//
//	g := group.New(ctx)  // ctx: the owner's context
//	g.Go(loop)           // loop returns when its ctx ends
//	...
//	g.Stop()             // cancel, then wait for loop
package group

import (
	"context"
	"sync"
)

// Group is a set of goroutines with one context and one stop. The zero
// value is not usable: call New. Safe for concurrent use.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	stopped bool // guarded by mu: Stop was called; Go refuses
}

// New returns a group whose context is derived from parent: the group's
// goroutines end when parent does or when Stop is called, whichever comes
// first. Either way the owner calls Stop to wait for them.
func New(parent context.Context) *Group {
	ctx, cancel := context.WithCancel(parent)
	return &Group{ctx: ctx, cancel: cancel}
}

// Context is the group's context: cancelled by Stop or with the parent.
// Use it for work the owner does alongside the group's goroutines.
func (g *Group) Context() context.Context { return g.ctx }

// Go runs fn(ctx) in a new goroutine of the group, ctx being the group's
// context; fn must return once ctx is done. It reports whether fn was
// started: after Stop it is not (false), so a late start cannot escape
// the wait.
func (g *Group) Go(fn func(ctx context.Context)) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	// Added under mu: Stop marks the group stopped under mu before it
	// waits, so no Add can race with the Wait.
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		fn(g.ctx)
	}()
	return true
}

// Stop cancels the group's context and waits for every goroutine started
// with Go. Idempotent; concurrent callers all wait. It must not be called
// from one of the group's own goroutines (it would wait for itself).
func (g *Group) Stop() {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
}
