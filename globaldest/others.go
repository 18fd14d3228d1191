package globaldest

import (
	"time"
)

// Routers sharing a broker. Every router attached to a broker runs flows
// out of its instances, and each flow's receiver is, to the broker, a
// consumer of the queue like any other: RabbitMQ's listing counts it, its
// event exchange announces it. A router subtracts its own flows before
// the core sees a listing (the router knows them); the flows other
// routers run there it learns from their advertisements (Others), and
// the core subtracts those — else a router would take another's flow out
// of an instance for a consumer, send its messages there, and they would
// be moved twice (once there, once on by the other router's flow).
//
// The advertisement comes after the flow's receiver: the other router
// advertises a flow once it runs, while the broker announces the
// receiver at once. So at a broker another router is attached to, a
// consumer seen arriving is no flow's target at once (arrive.txt): like
// any consumer found after a gap, it must have been there for Settle,
// by when the advertisement of a flow has arrived (the router
// originates it at once, at most once a second, and a changed
// advertisement starts a round of listings: router/globaldest_flows.go)
// and has been subtracted — the consumer is gone from the core's count, and the
// hysteresis starts again.

// Others is what the other routers advertise about this router's brokers.
type Others struct {
	// Flows: the flow receivers other routers run (or ran a moment ago,
	// their listings' lag) out of each instance: broker → queue → count.
	Flows map[string]map[string]int
	// Shared: this router's brokers another live router is attached to.
	Shared map[string]bool
}

// Others: what the other routers advertise about this router's brokers,
// at now. Their flows are subtracted from the instances' consumers at
// once, and from every listing from then on.
func (c *Core) Others(o Others, now time.Time) {
	c.others = o
	for _, d := range c.dests {
		for b, in := range d.inst {
			if in.present && c.brokers[b].up() {
				n := c.consumersOf(b, d.name, in.listed)
				in.consumersSeen(true, n, now)
				in.consumers = n
			}
		}
	}
}

// consumersOf is the consumers of queue at broker, listed (less this
// router's own flows) as listed, less other routers' flows.
func (c *Core) consumersOf(broker, queue string, listed int) int {
	return max(0, listed-c.others.Flows[broker][queue])
}

// shared says whether another router is attached to broker: a consumer
// arriving there may be its flow, not advertised yet.
func (c *Core) shared(broker string) bool { return c.others.Shared[broker] }
