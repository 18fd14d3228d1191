package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fedrouter/fedrouter/routes"
)

// member is one router of the run: the single router, or member chaos-i
// of the cluster. Its process changes at every restart.
type member struct {
	id      string      // router_id
	logName string      // its processes log to <logName>-<k>.log
	config  string      // its configuration file
	proc    *routerProc // the current process; nil after a kill until it starts again
	starts  int
	stopped bool // SIGSTOPped by the suite, not continued yet
}

// fleet is the run's routers and what the suite last saw of the route's
// holder. It is used by the suite's goroutine only (stopAll's helpers
// touch nothing of it).
type fleet struct {
	bin, dir   string
	env        []string      // the store URL, in cluster mode
	apiTimeout time.Duration // each admin API call
	cluster    bool
	members    []*member
	last       *member // the member last seen holding the route: asked first
	starts     int     // processes started, all members
}

// errNoHolder: no member runs the route right now (between a holder's
// death and the takeover, or before the first claim).
var errNoHolder = errors.New("fedchaos: no member runs the route")

// holding is the route as its holder runs it: the holder's own status.
type holding struct {
	m  *member
	st routes.Status
}

func (h holding) run() runRef {
	return runRef{Member: h.m.id, Epoch: h.st.Epoch, proc: h.m.proc}
}

// start starts m's next process.
func (f *fleet) start(ctx context.Context, m *member) error {
	m.starts++
	f.starts++
	p, err := startRouter(ctx, procSpec{bin: f.bin, config: m.config, dir: f.dir,
		logName: fmt.Sprintf("%s-%d", m.logName, m.starts), env: f.env, apiTimeout: f.apiTimeout})
	if err != nil {
		return fmt.Errorf("%s: %w", m.id, err)
	}
	m.proc = p
	return nil
}

// kill kills m's process with SIGKILL; m.proc is nil until start.
func (f *fleet) kill(m *member) error {
	p := m.proc
	m.proc, m.stopped = nil, false
	if p == nil {
		return nil
	}
	return p.kill()
}

// pause stops m's process (SIGSTOP); resume continues it.
func (f *fleet) pause(m *member) error {
	if err := m.proc.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	m.stopped = true
	return nil
}

func (f *fleet) resume(m *member) error {
	if !m.stopped || m.proc == nil {
		return nil
	}
	if err := m.proc.signal(syscall.SIGCONT); err != nil {
		return err
	}
	m.stopped = false
	return nil
}

// locate finds the route's holder and its live status. Any member's
// route list names the holder, but only the holder's own list has the
// route's live state and counters (the others show the store's row), so
// the holder is the member whose own list shows itself holding it. The
// member seen last is asked first: usually one call. A member that was
// paused past its lease lists the route as its own until its next
// heartbeat stops it, with a Detail that the store has it held by
// another ("stopping: ..."): it is not the holder. A paused member is
// never asked: its admin API would not answer.
func (f *fleet) locate(ctx context.Context) (holding, error) {
	var errs []error
	storeSays := ""
	for _, m := range f.askOrder() {
		st, err := m.proc.route(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.id, err))
			continue
		}
		if !f.cluster || (st.Holder == m.id && !strings.HasPrefix(st.Detail, "stopping")) {
			f.last = m
			return holding{m: m, st: st}, nil
		}
		if st.Holder != m.id {
			storeSays = fmt.Sprintf("%s says: held by %q, epoch %d", m.id, st.Holder, st.Epoch)
		}
	}
	if storeSays != "" {
		errs = append(errs, errors.New(storeSays))
	}
	return holding{}, errors.Join(append([]error{errNoHolder}, errs...)...)
}

// askOrder is the members to ask for the route: running, not paused, the
// last holder first.
func (f *fleet) askOrder() []*member {
	out := make([]*member, 0, len(f.members))
	if m := f.last; m != nil && m.proc != nil && !m.stopped {
		out = append(out, m)
	}
	for _, m := range f.members {
		if m != f.last && m.proc != nil && !m.stopped {
			out = append(out, m)
		}
	}
	return out
}

// exitedAlone reports every router process that exited without the
// suite killing or stopping it: a crash. In a cluster the others would
// take its routes over and the counts would not show it.
func (f *fleet) exitedAlone() error {
	var errs []error
	for _, m := range f.members {
		if m.proc == nil {
			continue
		}
		select {
		case <-m.proc.exited:
			errs = append(errs, fmt.Errorf("%s exited by itself (%v); log %s:\n%s", m.id, m.proc.err, m.proc.logP, tail(m.proc.logP, 10)))
		default:
		}
	}
	return errors.Join(errs...)
}

// stopAll continues any paused member, then stops every member at once
// (SIGTERM; SIGKILL after grace): one by one, each leaving member would
// hand the route to the next, which is about to leave too.
func (f *fleet) stopAll(grace time.Duration) error {
	var errs []error
	for _, m := range f.members {
		if err := f.resume(m); err != nil { // a stopped process ignores SIGTERM until continued
			errs = append(errs, err)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range f.members {
		if m.proc == nil {
			continue
		}
		wg.Add(1)
		go func(id string, p *routerProc) {
			defer wg.Done()
			if err := p.stop(grace); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
				mu.Unlock()
			}
		}(m.id, m.proc)
		m.proc = nil
	}
	wg.Wait()
	return errors.Join(errs...)
}
