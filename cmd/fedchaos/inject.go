package main

import (
	"context"
	"fmt"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// fault injects one fault, heals it and waits until the route's holder
// forwards again: the same holder past its counter at the heal, or a new
// run (another process or epoch) past zero.
func (s *suite) fault(ctx context.Context, res *faultResult) error {
	var before holding
	if err := s.waitFor(ctx, "the route's holder before the fault", s.opt.FaultTimeout, func() (bool, string) {
		h, err := s.fleet.locate(ctx)
		if err != nil {
			return false, err.Error()
		}
		before = h
		return true, ""
	}); err != nil {
		return err
	}
	tr := newFlowTracker(before.run(), before.st.Forwarded)
	res.Before, res.After = before.run(), before.run()
	res.Start = time.Now()
	if err := s.inject(ctx, res, tr, before); err != nil {
		return err
	}
	res.Healed = time.Now()
	if h, err := s.fleet.locate(ctx); err == nil {
		tr.observe(h.run(), h.st.Forwarded, res.Healed)
		tr.rebase(h.run(), h.st.Forwarded)
	}
	err := s.awaitFlow(ctx, tr)
	res.Resumed = tr.flow
	if err != nil {
		res.Resumed = time.Now()
	}
	if res.Kind == storeKill && err == nil {
		// For a lease after the store's return nobody may claim another's
		// expired lease: watch that long for a move.
		s.watch(ctx, tr, time.Now().Add(s.opt.Lease+s.opt.Heartbeat), nil)
	}
	res.After, res.Takeover = tr.last, tr.takeover
	if err == nil { // a route that never flowed again has failed already
		s.judgeHolder(res)
	}
	return err
}

// inject injects and heals the fault; before is the route's holder.
func (s *suite) inject(ctx context.Context, res *faultResult, tr *flowTracker, before holding) error {
	switch res.Kind {
	case dstKill:
		s.dstDown = true
		if err := harness(ctx, s.script, "kill", s.dst.Name); err != nil {
			return err
		}
		if err := harness(ctx, s.script, "restart", s.dst.Name); err != nil {
			return err
		}
		s.dstDown = false
		return nil
	case routerKill:
		// The holder: on a single router its only process. In a cluster
		// the killed member stays down for -hold, so that its lease can
		// expire and another member take the route over (a crash
		// takeover); a restart that comes first adopts the lease under
		// the same epoch (cluster/placement.go: adopt).
		if err := s.fleet.kill(before.m); err != nil {
			return err
		}
		if s.fleet.cluster {
			s.watch(ctx, tr, res.Start.Add(s.opt.Hold), nil)
		}
		return s.fleet.start(ctx, before.m)
	case srcCut, dstCut:
		return s.cut(ctx, res)
	case srcBlackhole, dstBlackhole:
		s.blackhole(ctx, res)
		return nil
	case routerStop:
		return s.stopHolder(ctx, res, tr, before)
	case storeKill:
		return s.killStore(ctx, res, tr)
	}
	return fmt.Errorf("fault %q not implemented", res.Kind)
}

// cut resets the router's connections to one broker and refuses new ones
// until the route has seen it, and at least -hold. Noted: when the route
// was seen out of Operational, and the slowest admin API answer
// meanwhile (a slow answer, not a slow route, could delay the
// observation).
func (s *suite) cut(ctx context.Context, res *faultResult) error {
	p := s.proxyOf(res.Kind)
	refused := p.Stats().Refused
	p.Cut()
	var seen time.Time
	var slowest time.Duration
	if err := s.waitFor(ctx, "the route to notice the cut", 30*time.Second, func() (bool, string) {
		t0 := time.Now()
		h, err := s.fleet.locate(ctx)
		slowest = max(slowest, time.Since(t0))
		if err != nil {
			return false, err.Error()
		}
		seen = time.Now()
		return h.st.State != routes.StateOperational, "state " + string(h.st.State)
	}); err != nil {
		p.Heal()
		return err
	}
	pause(ctx, time.Until(res.Start.Add(s.opt.Hold)))
	res.Note = fmt.Sprintf("route seen out of Operational after %v (slowest admin API answer %v), %d connections refused",
		seen.Sub(res.Start).Round(time.Millisecond), slowest.Round(time.Millisecond), p.Stats().Refused-refused)
	p.Heal()
	return nil
}

// blackhole stops every byte between the router and one broker for the
// hold time, then lets the held bytes through.
func (s *suite) blackhole(ctx context.Context, res *faultResult) {
	p := s.proxyOf(res.Kind)
	before, _ := s.fleet.locate(ctx)
	p.Blackhole()
	pause(ctx, s.opt.Hold)
	during, _ := s.fleet.locate(ctx)
	p.Heal()
	res.Note = fmt.Sprintf("route %s at the end of the blackhole, %d forwarded during it",
		during.st.State, int64(during.st.Forwarded)-int64(before.st.Forwarded))
}

func (s *suite) proxyOf(k faultKind) *brokertest.FaultProxy {
	if k == srcCut || k == srcBlackhole {
		return s.srcProxy
	}
	return s.dstProxy
}

// awaitFlow polls the route's holder until tr has seen it forward again.
// A route that recovered before the heal was seen can have forwarded the
// whole backlog already: with every accepted message received and the
// route Operational, there is nothing left to move, and that is flow.
func (s *suite) awaitFlow(ctx context.Context, tr *flowTracker) error {
	return s.waitFor(ctx, "the router to forward again", s.opt.FaultTimeout, func() (bool, string) {
		if !tr.flow.IsZero() {
			return true, ""
		}
		h, err := s.fleet.locate(ctx)
		if err != nil {
			return false, err.Error()
		}
		now := time.Now()
		tr.observe(h.run(), h.st.Forwarded, now)
		_, acked, _ := s.pub.progress()
		if h.st.State == routes.StateOperational && s.con.snapshot(false).Distinct >= acked {
			tr.caughtUp(now)
		}
		return !tr.flow.IsZero(), fmt.Sprintf("route on %s %s, forwarded %d (to beat: %d on %s), last error %q",
			h.run(), h.st.State, h.st.Forwarded, tr.baseFwd, tr.base, h.st.LastError)
	})
}

// watch observes the route every 20 ms until deadline, or until done
// (when given) says so, or ctx ends.
func (s *suite) watch(ctx context.Context, tr *flowTracker, deadline time.Time, done func() bool) {
	for time.Now().Before(deadline) && (done == nil || !done()) {
		if h, err := s.fleet.locate(ctx); err == nil {
			tr.observe(h.run(), h.st.Forwarded, time.Now())
		}
		if !pause(ctx, 20*time.Millisecond) {
			return
		}
	}
}
