// Package links moves messages across a federation link on the engine
// (amqp/engine): from a receiver on the source broker to a sender on the
// destination broker, settling the source only once the destination has
// decided (at-least-once). It says what a route's messages become on the
// way — transit headers, traces, moves, the ingress rules, dead-letter
// annotations — on the messages' bytes.
package links

import (
	"errors"
	"sync/atomic"
	"time"
)

// Config tunes one forwarder run.
type Config struct {
	// Window bounds the messages sent and not yet settled at the source:
	// the source link's credit and the forwarder's unsettled deliveries.
	Window int
	// OutcomeTimeout bounds the wait for the destination's outcome of one
	// message, counted from its send. Past it the message is unroutable.
	OutcomeTimeout time.Duration
	// Annotations added to dead-lettered messages besides the reason
	// (route id, destination); the dead-letter queue itself is
	// EngineLinks.DeadLetter.
	DeadLetterAnnotations map[string]string
	// Limit, when > 0, ends the run cleanly (nil) once this many messages
	// have been received and settled: a route probing past a suspected
	// poison message runs in such short steps.
	Limit int
	// Drain, when closed, ends the run gracefully: no more messages are
	// taken from the source, those in flight get their outcomes and are
	// settled, and Forward returns nil. A forwarder whose path changed
	// stops this way, so that nothing it sent comes back from the source
	// as a duplicate. Callers bound the wait by cancelling ctx.
	Drain <-chan struct{}
	// MaxAbandoned: after this many sends without outcome on one run, the
	// run ends so the destination link is rebuilt (a peer that answers
	// nothing keeps every such delivery unsettled on the link; this
	// bounds it). Default 1000.
	MaxAbandoned int
	// Fence, when set, is asked before each message is sent: false ends
	// the run with ErrFenced, that message unsent (it goes back to the
	// source with the session). In a router cluster it says whether this
	// router's lease on the route still covers it: a router paused past
	// its lease must not forward a single message on waking.
	Fence func() bool
}

// ErrFenced: the run ended because Config.Fence said no.
var ErrFenced = errors.New("links: this router no longer holds the route's lease")

// Counters are a route's message counts; safe for concurrent reads.
type Counters struct {
	Sent, Forwarded, Redelivered, Rejected, DeadLettered, NoOutcome, Looped atomic.Uint64
	// Lost: sent pre-settled by the source and not taken by the
	// destination — nothing redelivers them.
	Lost     atomic.Uint64
	InFlight atomic.Int64
}

// Settled is how many messages left the source one way or another.
func (c *Counters) Settled() uint64 {
	return c.Forwarded.Load() + c.Redelivered.Load() + c.Rejected.Load() + c.DeadLettered.Load() + c.Looped.Load() + c.Lost.Load()
}

// Annotation keys put on dead-lettered messages.
const (
	AnnotationReason = "x-fedrouter-reason"
	// AnnotationCondition is the AMQP condition the message would have
	// been rejected with (e.g. amqp:unauthorized-access, fed:no-path).
	AnnotationCondition = "x-fedrouter-condition"
	AnnotationRoute     = "x-fedrouter-route"
	AnnotationTime      = "x-fedrouter-time" // when it was dead-lettered
)

// ErrTooManyAbandoned ends a run whose destination stopped answering.
var ErrTooManyAbandoned = errors.New("links: too many sends without an outcome; rebuilding the destination link")
