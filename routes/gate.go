package routes

import (
	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/links"
)

// Gates hold back the routes feeding a global destination with limits
// (docs/destinations.md, "Limits"): its flows and the queue routes whose
// destination queue is one of its instances. An exchange route's
// destination exchange may route into an instance too: it is not gated
// (which queues an exchange reaches is the broker's to know); the
// instance's own share still bounds it.
type Gates interface {
	// Gate is the gate of queue at broker, nil when no limit holds there.
	Gate(broker, queue string) *links.Gate
}

// destGate is the gate of the route's destination queue, nil when it has
// none (no limit holds there, or the destination is no queue). On the
// engine it is links.EngineLinks.Gate.
func (r *route) destGate() *links.Gate {
	if r.m.opts.Gates == nil {
		return nil
	}
	_, _, dst := r.nodes()
	if dst.Kind != amqp.Queue {
		return nil
	}
	return r.m.opts.Gates.Gate(r.spec.Dest, dst.Name)
}
