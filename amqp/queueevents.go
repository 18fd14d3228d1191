package amqp

import (
	"context"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// QueueEvents is implemented by profiles that announce queues and
// consumers as they come and go (RabbitMQ with rabbitmq_event_exchange):
// global destinations then act on each event instead of waiting for the
// next listing and the management API's statistics (docs/destinations.md).
//
// Two queues: RabbitMQ 3.10's AMQP 1.0 plugin delivers an event without
// its headers (which queue: only the routing key, the event's kind,
// arrives), so the events come over AMQP 1.0 as wake-ups, and their
// details are fetched from a twin queue through the management API.
type QueueEvents interface {
	// QueueEvents declares sub's queues bound to the broker's queue and
	// consumer events and returns where to receive the wake-ups;
	// ErrUnsupported when the broker does not publish them (the plugin is
	// off).
	QueueEvents(ctx context.Context, sub Subscription) (LinkSpec, error)
	// FetchQueueEvents takes the events waiting in sub's twin queue, at
	// most max, oldest first; refused counts those not read (malformed,
	// another vhost's).
	FetchQueueEvents(ctx context.Context, sub Subscription, max int) (events []QueueEvent, refused int, err error)
}

// The events a QueueEvent carries (RabbitMQ's routing keys).
const (
	EventQueueCreated    = "queue.created"
	EventQueueDeleted    = "queue.deleted"
	EventConsumerCreated = "consumer.created"
	EventConsumerDeleted = "consumer.deleted"
)

// QueueEvent is one event: what happened to which queue.
type QueueEvent struct {
	Kind  string // EventQueueCreated, ...
	Queue string
}

// eventQueueMax bounds each events queue: older events are dropped first
// (the listing reconciles what they would have said).
const eventQueueMax = 1000

// detailQueue names the twin queue of sub's events.
func detailQueue(sub Subscription) string { return sub.Name + ".detail" }

// QueueEvents binds sub's queue and its twin (transient, bounded) to
// queue.* and consumer.*.
func (p *rabbitProfile) QueueEvents(ctx context.Context, sub Subscription) (LinkSpec, error) {
	ok, err := p.mgmt.ExchangeExists(ctx, rabbitEventExchange)
	if err != nil {
		return LinkSpec{}, err
	}
	if !ok {
		return LinkSpec{}, fmt.Errorf("no %s exchange (enable rabbitmq_event_exchange): %w", rabbitEventExchange, ErrUnsupported)
	}
	args := QueueArgs{Arguments: map[string]any{"x-expires": subscriptionExpires, "x-max-length": eventQueueMax, "x-overflow": "drop-head"}}
	for _, q := range []string{sub.Name, detailQueue(sub)} {
		if err := p.mgmt.DeclareQueue(ctx, q, args); err != nil {
			return LinkSpec{}, err
		}
		for _, key := range []string{"queue.*", "consumer.*"} {
			if err := p.mgmt.Bind(ctx, rabbitEventExchange, q, key); err != nil {
				return LinkSpec{}, err
			}
		}
	}
	return LinkSpec{Address: "/amq/queue/" + sub.Name}, nil
}

// rabbitEvent is one message of the management API's get, the part read.
type rabbitEvent struct {
	RoutingKey string `json:"routing_key"`
	Properties struct {
		Headers map[string]any `json:"headers"`
	} `json:"properties"`
}

// FetchQueueEvents gets (and acknowledges) up to max events from the twin
// queue. Nothing from the broker is trusted: an event of another kind, of
// another vhost, or naming no queue RabbitMQ could hold is refused.
func (p *rabbitProfile) FetchQueueEvents(ctx context.Context, sub Subscription, max int) ([]QueueEvent, int, error) {
	var got []rabbitEvent
	body := map[string]any{"count": max, "ackmode": "ack_requeue_false", "encoding": "auto", "truncate": 0}
	if err := p.mgmt.do(ctx, http.MethodPost, p.mgmt.object("queues", detailQueue(sub))+"/get", body, &got); err != nil {
		return nil, 0, err
	}
	out := make([]QueueEvent, 0, len(got))
	refused := 0
	for _, e := range got {
		ev, ok := p.queueEvent(e)
		if !ok {
			refused++
			continue
		}
		out = append(out, ev)
	}
	return out, refused, nil
}

// queueEvent reads one event; false if it is not one to trust.
func (p *rabbitProfile) queueEvent(e rabbitEvent) (QueueEvent, bool) {
	field := "name"
	switch e.RoutingKey {
	case EventQueueCreated, EventQueueDeleted:
	case EventConsumerCreated, EventConsumerDeleted:
		field = "queue"
	default:
		return QueueEvent{}, false
	}
	h := e.Properties.Headers
	name, _ := h[field].(string)
	vhost, _ := h["vhost"].(string)
	if vhost != p.mgmt.vhost || name == "" || len(name) > 255 || !utf8.ValidString(name) {
		return QueueEvent{}, false
	}
	return QueueEvent{Kind: e.RoutingKey, Queue: name}, true
}

var _ QueueEvents = (*rabbitProfile)(nil)
