package amqp

import (
	"context"
	"fmt"
	"net/http"
)

// DepthReader is a profile that can tell how many messages wait in a
// queue of its broker: what the route stall watcher asks of a route's
// source (routes/stallwatch.go). The rabbitmq profile is one (management
// API), the qpid profile too (QMF); the others cannot tell and are not:
// AMQP 1.0 has no way to ask.
type DepthReader interface {
	// SourceQueue names the queue a receiver of n with sub consumes;
	// false when there is none whose depth the profile can read (a
	// subscription queue the broker named itself).
	SourceQueue(n Node, sub Subscription) (string, bool)
	// QueueDepth returns the messages waiting in queue name for a
	// consumer, -1 when the broker does not know yet (RabbitMQ's
	// statistics of a queue just declared); ErrNotFound when there is no
	// such queue.
	QueueDepth(ctx context.Context, name string) (int64, error)
}

var (
	_ DepthReader = (*rabbitProfile)(nil)
	_ DepthReader = (*qpidProfile)(nil)
)

// SourceQueue: a queue route consumes its queue, an exchange route its
// named subscription queue.
func (p *rabbitProfile) SourceQueue(n Node, sub Subscription) (string, bool) {
	switch n.Kind {
	case Queue, Transit:
		return n.Name, true
	case Exchange:
		return sub.Name, sub.Name != ""
	}
	return "", false
}

// QueueDepth reads messages_ready: the messages no consumer has taken
// (those delivered and not yet settled are the consumers' own to tell).
// The statistics lag the queue by up to their interval (5 s by default).
func (p *rabbitProfile) QueueDepth(ctx context.Context, name string) (int64, error) {
	var q struct {
		Ready *int64 `json:"messages_ready"`
	}
	if err := p.mgmt.do(ctx, http.MethodGet, p.mgmt.object("queues", name)+"?columns=messages_ready", nil, &q); err != nil {
		if isNotFound(err) {
			return 0, fmt.Errorf("queue %q: %w", name, ErrNotFound)
		}
		return 0, err
	}
	if q.Ready == nil {
		return -1, nil
	}
	return *q.Ready, nil
}

// SourceQueue: only a queue route's queue; an exchange route's
// subscription queue is named by the broker.
func (p *qpidProfile) SourceQueue(n Node, _ Subscription) (string, bool) {
	if n.Kind == Queue || n.Kind == Transit {
		return n.Name, true
	}
	return "", false
}

// QueueDepth reads the queue's msgDepth through QMF: the messages it
// holds, those delivered and not yet accepted included.
func (p *qpidProfile) QueueDepth(ctx context.Context, name string) (int64, error) {
	q, err := p.mgmt.Queue(ctx, name)
	if err != nil {
		return 0, err
	}
	switch v := q["msgDepth"].(type) {
	case uint64:
		return int64(min(v, 1<<62)), nil
	case int64:
		return v, nil
	case uint32:
		return int64(v), nil
	case int32:
		return int64(v), nil
	}
	return -1, nil
}
