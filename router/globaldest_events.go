package router

import (
	"context"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/internal/glob"
)

// Seen as it happens (issue 29): where the broker announces queues and
// consumers (amqp.QueueEvents: RabbitMQ's event exchange), each event
// starts a round at once instead of at the next tick, and a consumer's
// arrival or going counts from its event — the management API's
// statistics say it up to 5 s later. The listing stays the
// reconciliation: an event's consumer count is added to the listing's
// only for eventTrust, by when the statistics have caught up; a missed
// event is healed by the next listing.

// eventTrust is how long a consumer event adjusts the listing's count:
// RabbitMQ's statistics interval (5 s) and a listing, with a margin.
const eventTrust = 8 * time.Second

// Bounds on what events may make the router hold and do.
const (
	eventFetchMax   = 200  // events taken per wake-up
	eventOverlayMax = 4096 // instances whose consumers events adjust
	eventRetry      = 5 * time.Second
)

// consumerEvents is what consumer events said of one instance: the
// consumers they added (or removed) to base, the count the last listing
// gave before them, until when that holds. A listing whose count is no
// longer base has caught up with them: it is trusted from then on.
type consumerEvents struct {
	delta int
	base  int // -1: the instance was not in the last listing
	until time.Time
}

// eventsSubscription names the queues of the router's destination
// events: router-owned, so never a global destination.
func (g *globalDests) eventsSubscription() amqp.Subscription {
	return amqp.Subscription{Name: "fedrouter." + g.routerID + ".destination-events"}
}

// watchEvents receives broker b's wake-ups until ctx ends, signalling
// g.wake with b's name for each; it attaches again after a failure, and
// does nothing where the profile has no events (the listing serves).
func (g *globalDests) watchEvents(ctx context.Context, b string) {
	qe, ok := g.conns[b].Profile.(amqp.QueueEvents)
	if !ok {
		return
	}
	said := false
	for ctx.Err() == nil {
		err := g.receiveEvents(ctx, b, qe)
		if ctx.Err() != nil {
			return
		}
		if !said {
			g.log.Info().Err(err).Str("broker", b).Msg("no queue events from this broker: its listing every 2 s serves (tried again)")
			said = true
		}
		select {
		case <-time.After(eventRetry):
		case <-ctx.Done():
		}
	}
}

// receiveEvents attaches to b's events and signals each until the link
// fails.
func (g *globalDests) receiveEvents(ctx context.Context, b string, qe amqp.QueueEvents) error {
	setup, cancel := context.WithTimeout(ctx, globalDestCall)
	defer cancel()
	spec, err := qe.QueueEvents(setup, g.eventsSubscription())
	if err != nil {
		return err
	}
	sess, _, err := g.conns[b].Conn.NewSession(setup)
	if err != nil {
		return err
	}
	defer amqp.CloseSession(sess)
	rcv, err := amqp.NewReceiver(setup, sess, spec, amqp.ReceiverConfig{Window: 50})
	if err != nil {
		return err
	}
	for {
		msg, err := rcv.Receive(ctx)
		if err != nil {
			return err
		}
		_ = rcv.Accept(ctx, msg) // a wake-up lost is healed by the next
		select {
		case g.wake <- b:
		default: // a round is due already
		}
	}
}

// woken takes the events waiting at broker b (their details) into the
// consumer counts; the caller then runs a round.
func (g *globalDests) woken(ctx context.Context, b string) {
	qe, ok := g.conns[b].Profile.(amqp.QueueEvents)
	if !ok {
		return
	}
	call, cancel := context.WithTimeout(ctx, globalDestCall)
	evs, refused, err := qe.FetchQueueEvents(call, g.eventsSubscription(), eventFetchMax)
	cancel()
	if err != nil {
		g.log.Debug().Err(err).Str("broker", b).Msg("cannot fetch queue events: the listing serves")
		return
	}
	if refused > 0 {
		g.log.Warn().Int("refused", refused).Str("broker", b).Msg("queue events refused: malformed or of another vhost")
	}
	now := time.Now()
	for _, ev := range evs {
		d := 0
		switch ev.Kind {
		case amqp.EventConsumerCreated:
			d = 1
		case amqp.EventConsumerDeleted:
			d = -1
		}
		k := [2]string{b, ev.Queue}
		if d == 0 || !g.inSpan(b, ev.Queue) || g.ownFlowEvent(b, ev.Queue, now) {
			continue // a queue event: the round lists it; our own flows' receivers are no consumers
		}
		ce, ok := g.consumerEvents[k]
		if !ok && len(g.consumerEvents) >= eventOverlayMax {
			g.pruneConsumerEvents(now)
		}
		if !ok && len(g.consumerEvents) >= eventOverlayMax {
			continue // bounded: the listing says it a few seconds later
		}
		if !ok || now.After(ce.until) {
			ce = consumerEvents{base: g.listedConsumers(b, ev.Queue, now)}
		}
		ce.delta += d
		ce.until = now.Add(eventTrust)
		g.consumerEvents[k] = ce
	}
}

// ownFlowEvents is how long after this router's flow out of an instance
// stopped its receiver's consumer.deleted may still come.
const ownFlowEvents = 2 * time.Second

// ownFlowEvent says whether a consumer event of queue at broker may be
// this router's own flow receiver's: while the flow runs, and just after
// it stopped. (The listing's count is corrected longer, ownConsumerLag:
// the statistics lag, the events do not.)
func (g *globalDests) ownFlowEvent(broker, queue string, now time.Time) bool {
	stopped, ok := g.flowsOut[[2]string{broker, queue}]
	return ok && (stopped.IsZero() || now.Sub(stopped) < ownFlowEvents)
}

// pruneConsumerEvents forgets what events said past eventTrust (of
// queues no listing showed since: deleted ones).
func (g *globalDests) pruneConsumerEvents(now time.Time) {
	for k, ce := range g.consumerEvents {
		if now.After(ce.until) {
			delete(g.consumerEvents, k)
		}
	}
}

// inSpan says whether queue at broker is a global destination's instance.
func (g *globalDests) inSpan(broker, queue string) bool {
	for _, e := range g.entries {
		if glob.Match(e.Pattern, queue) {
			for _, b := range e.Brokers {
				if b == broker {
					return true
				}
			}
		}
	}
	return false
}

// eventConsumers adjusts count, the consumers of queue at broker as the
// listing gave them less this router's own, by what events said since —
// until the listing has caught up with them, or eventTrust.
func (g *globalDests) eventConsumers(broker, queue string, count int, now time.Time) int {
	k := [2]string{broker, queue}
	ce, ok := g.consumerEvents[k]
	if !ok {
		return count
	}
	if now.After(ce.until) || (ce.base >= 0 && count != ce.base) {
		delete(g.consumerEvents, k)
		return count
	}
	return max(0, count+ce.delta)
}

// listedConsumers is the consumers of queue at broker in its last
// listing less this router's own (as observed counts them), -1 if it was
// not there.
func (g *globalDests) listedConsumers(broker, queue string, now time.Time) int {
	qs, ok := g.listings.fresh(broker, time.Hour, now)
	if !ok {
		return -1
	}
	for _, q := range qs {
		if q.Name == queue && g.ownConsumer(broker, queue, now) {
			return max(0, q.Consumers-1)
		} else if q.Name == queue {
			return q.Consumers
		}
	}
	return -1
}
