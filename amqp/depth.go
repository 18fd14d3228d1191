package amqp

import (
	"context"
	"errors"
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
	// QueueDepths is QueueDepth for several queues in as few calls as
	// the broker allows: a few queues one by one, more from one listing.
	// A queue that does not exist is left out of the map.
	QueueDepths(ctx context.Context, names []string) (map[string]int64, error)
}

// depthListAt: from this many queues on, their depths are read from a
// listing of the broker's queues rather than one call each.
const depthListAt = 16

// depthsOneByOne asks each queue's depth with one.
func depthsOneByOne(ctx context.Context, names []string, one func(context.Context, string) (int64, error)) (map[string]int64, error) {
	out := make(map[string]int64, len(names))
	for _, n := range names {
		d, err := one(ctx, n)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return out, err
		default:
			out[n] = d
		}
	}
	return out, nil
}

// wanted makes a set of names.
func wanted(names []string) map[string]bool {
	w := make(map[string]bool, len(names))
	for _, n := range names {
		w[n] = true
	}
	return w
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

// QueueDepths reads a few queues one by one, more from the vhost's
// queue listing, a page of rabbitListPage at a time (two columns each).
func (p *rabbitProfile) QueueDepths(ctx context.Context, names []string) (map[string]int64, error) {
	if len(names) < depthListAt {
		return depthsOneByOne(ctx, names, p.QueueDepth)
	}
	want, out := wanted(names), make(map[string]int64, len(names))
	for page, pages := 1, 1; page <= pages; page++ {
		var answer struct {
			Items []struct {
				Name  string `json:"name"`
				Ready *int64 `json:"messages_ready"`
			} `json:"items"`
			PageCount int `json:"page_count"`
		}
		path := fmt.Sprintf("/api/queues/%s?page=%d&page_size=%d&columns=name,messages_ready", p.mgmt.vh(), page, rabbitListPage)
		if err := p.mgmt.do(ctx, http.MethodGet, path, nil, &answer); err != nil {
			return out, err
		}
		pages = answer.PageCount
		for _, q := range answer.Items {
			switch {
			case !want[q.Name]:
			case q.Ready == nil:
				out[q.Name] = -1
			default:
				out[q.Name] = *q.Ready
			}
		}
	}
	return out, nil
}

// rabbitListPage is the page size of a queue listing: RabbitMQ's largest.
const rabbitListPage = 500

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
	return msgDepth(q), nil
}

// QueueDepths reads a few queues one by one, more from one QMF query of
// every queue (each QMF call is a connection of its own).
func (p *qpidProfile) QueueDepths(ctx context.Context, names []string) (map[string]int64, error) {
	if len(names) < depthListAt {
		return depthsOneByOne(ctx, names, p.QueueDepth)
	}
	qs, err := p.mgmt.Objects(ctx, "queue")
	if err != nil {
		return nil, err
	}
	want, out := wanted(names), make(map[string]int64, len(names))
	for _, q := range qs {
		if n := q.String("name"); want[n] {
			out[n] = msgDepth(q)
		}
	}
	return out, nil
}

// msgDepth is a QMF queue's msgDepth, -1 when it has none.
func msgDepth(q QMFObject) int64 {
	switch v := q["msgDepth"].(type) {
	case uint64:
		return int64(min(v, 1<<62))
	case int64:
		return v
	case uint32:
		return int64(v)
	case int32:
		return int64(v)
	}
	return -1
}
