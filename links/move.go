package links

import (
	"sync"
	"sync/atomic"

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

// ParkKey is the destination key of a parked message on the engine
// (EngineMove): the source queue, back at its tail.
const ParkKey = "park"

// EngineMove is a global destination's flow's Dispatch
// (engine.ForwardOptions.Dispatch):
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
