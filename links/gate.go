package links

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// Gate holds back what is sent into one instance of a global destination
// with limits (docs/destinations.md, "Limits"): closed while the sum of
// the instances' depths is at the limit or this instance is near its
// share, and for RefusalPause after the instance refused a message. A
// forwarder blocked in a gated Send takes no more from its source once
// its window is full: credit is withheld, nothing is settled.
type Gate struct {
	closed  atomic.Bool
	refused atomic.Int64  // unix nanoseconds until which a refusal holds it
	count   atomic.Uint64 // refusals

	mu   sync.Mutex
	open chan struct{} // closed when the gate opens; guarded by mu
}

// RefusalPause is how long a gate stays closed after its instance refused
// a message: about a listing period, so that the shares can move first.
const RefusalPause = time.Second

// NewGate returns an open gate.
func NewGate() *Gate { return &Gate{open: make(chan struct{})} }

// Refusals counts the messages the instance refused (and the runs it
// ended) through this gate.
func (g *Gate) Refusals() uint64 { return g.count.Load() }

// refuse closes the gate for RefusalPause.
func (g *Gate) refuse() {
	g.count.Add(1)
	g.refused.Store(time.Now().Add(RefusalPause).UnixNano())
}

// Set closes (true) or opens the gate.
func (g *Gate) Set(closed bool) {
	if g.closed.Swap(closed) == closed {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !closed {
		close(g.open)
		g.open = make(chan struct{})
	}
}

// Closed says whether the gate holds messages back now.
func (g *Gate) Closed() bool {
	return g.closed.Load() || time.Now().UnixNano() < g.refused.Load()
}

// opened is closed when the gate, closed by Set now, opens; nil while
// Set has it open (a refusal's pause has no channel: wait polls it).
func (g *Gate) opened() <-chan struct{} {
	if !g.closed.Load() {
		return nil
	}
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if !g.closed.Load() {
		return nil // opened between the load and the lock
	}
	return open
}

// wait blocks while the gate is closed, until ctx ends.
func (g *Gate) wait(ctx context.Context) error {
	for {
		if until := g.refused.Load(); time.Now().UnixNano() < until {
			t := time.NewTimer(time.Duration(until - time.Now().UnixNano()))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
			continue
		}
		if !g.closed.Load() {
			return nil
		}
		open := g.opened()
		if open == nil {
			continue // opened since
		}
		select {
		case <-open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// GatedSink sends through Sink once Gate is open. A message the instance
// refuses (Rejected by the destination, not by the router) is released at
// the source instead, never rejected there: the limit refused it, the
// message waits at its source (a flow never loses a message it took), and
// the gate closes for RefusalPause.
type GatedSink struct {
	Sink Sink
	Gate *Gate
}

// Send waits for the gate, then sends.
func (s GatedSink) Send(ctx context.Context, msg amqp.Message) (Receipt, error) {
	if err := s.Gate.wait(ctx); err != nil {
		return nil, err
	}
	r, err := s.Sink.Send(ctx, msg)
	if err != nil {
		return r, err
	}
	return gatedReceipt{r: r, g: s.Gate}, nil
}

type gatedReceipt struct {
	r Receipt
	g *Gate
}

func (r gatedReceipt) Wait(ctx context.Context) (amqp.Outcome, error) {
	o, err := r.r.Wait(ctx)
	if err != nil && ctx.Err() == nil {
		// RabbitMQ 3.10's AMQP 1.0 plugin answers a refusal by closing
		// the connection: the run ends (the message goes back to the
		// source), and the next waits.
		r.g.refuse()
	}
	if err == nil && o.Kind == amqp.Rejected && !o.Local {
		r.g.refuse()
		return amqp.Outcome{Kind: amqp.Released}, nil
	}
	return o, err
}
