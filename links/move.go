package links

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// Annotations of a global destination's moves (docs/destinations.md):
// how often a message has moved from one instance of its destination to
// another, and the run that last left it where it was.
const (
	AnnotationMoves  = "x-fedrouter-moves"
	AnnotationParked = "x-fedrouter-parked"
)

// MoveSink is the sink of a global destination's flow: it moves messages
// from the destination's instance at one broker to another (Move, after
// Prepare), counting each move on the message; a message that has moved
// Max times already — or whose count is not a count a router wrote — is
// not moved but parked: written back to the tail of the instance it came
// from (Park), stamped with Run. Meeting a message stamped with its own
// Run, the sink has seen every message the source holds: it parks that
// one too and calls Lapped once, and the run should end and rest (there
// is nothing to move until something new arrives).
type MoveSink struct {
	Move    Sink
	Prepare func(amqp.Message) bool // the move's own prepare (transit), or nil
	Park    Sink
	Max     int64
	Run     string
	Lapped  func()
	// Moved and Parked count what the sink did (the flow's counters,
	// kept across its runs).
	Moved, Parked *atomic.Uint64
	lapOnce       sync.Once
}

// Send moves or parks msg.
func (s *MoveSink) Send(ctx context.Context, msg amqp.Message) (Receipt, error) {
	n, err := hops(msg.Annotation(AnnotationMoves))
	if err == nil && n < s.Max {
		msg.SetAnnotation(AnnotationMoves, n+1)
		msg.DeleteAnnotation(AnnotationParked)
		if s.Prepare == nil || s.Prepare(msg) {
			r, err := s.Move.Send(ctx, msg)
			if err != nil {
				return r, err
			}
			return movedReceipt{r: r, moved: s.Moved}, nil
		}
		msg.SetAnnotation(AnnotationMoves, n) // not moved after all
	}
	if msg.AnnotationString(AnnotationParked) == s.Run {
		s.lapOnce.Do(s.Lapped)
	}
	msg.SetAnnotation(AnnotationParked, s.Run)
	s.Parked.Add(1)
	return s.Park.Send(ctx, msg)
}

// movedReceipt counts a move once the target accepted it: one refused
// (and released at the source) did not move.
type movedReceipt struct {
	r     Receipt
	moved *atomic.Uint64
}

func (m movedReceipt) Wait(ctx context.Context) (amqp.Outcome, error) {
	o, err := m.r.Wait(ctx)
	if err == nil && o.Kind == amqp.Accepted {
		m.moved.Add(1)
	}
	return o, err
}

// ParkKey is the destination key of a parked message on the engine
// (EngineMove): the source queue, back at its tail.
const ParkKey = "park"

// EngineMove is MoveSink on the engine (engine.ForwardOptions.Dispatch):
// a message is moved (Inner's copy, or the forwarder's own destination
// "" without Inner, its move counted in x-fedrouter-moves and counted
// in Moved once accepted) while it has moved fewer than Max times, else
// parked: sent to ParkKey stamped with Run. Meeting a message stamped
// with its own Run, it calls Lapped once.
type EngineMove struct {
	Inner         func([]byte, *wire.Sections, *engine.Choice)
	Max           int64
	Run           string
	Lapped        func()
	Moved, Parked *atomic.Uint64
	lapOnce       sync.Once
}

// Dispatch moves or parks one message (the source's reader goroutine).
func (mv *EngineMove) Dispatch(payload []byte, s *wire.Sections, c *engine.Choice) {
	m := engineMessage{payload: payload, s: s}
	if n, err := hops(m.annotation(AnnotationMoves)); err == nil && n < mv.Max {
		if mv.Inner == nil {
			c.Copies = append(c.Copies, engine.Copy{})
		} else if mv.Inner(payload, s, c); c.Refuse != nil {
			return
		}
		for i := range c.Copies {
			set := annotations(c.Copies[i].Set)
			set.put(AnnotationMoves, wire.AppendLong(nil, n+1))
			set.del(AnnotationParked)
			c.Copies[i].Set, c.Copies[i].Count = set, mv.Moved
		}
		return
	}
	if str(m.annotation(AnnotationParked)) == mv.Run {
		mv.lapOnce.Do(mv.Lapped)
	}
	mv.Parked.Add(1)
	c.Copies = append(c.Copies, engine.Copy{To: ParkKey, Set: []wire.Annotated{{Key: AnnotationParked, Value: wire.AppendString(nil, mv.Run)}}})
}
