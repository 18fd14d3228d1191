package amqp

import (
	"context"
	"fmt"
)

// qpidProfile: the Apache Qpid C++ broker (qpidd 1.40, AMQP 1.0 module),
// tested against the build in shared/peers/qpidd. What it learnt there:
//   - The broker parses no "X/K" address (client-library syntax): a send
//     to an exchange names the exchange, and the routing key is the
//     message's subject (LinkSpec.Subject).
//   - A subscription is a queue the broker creates for the receiver; it is
//     durable only with the source terminus durable (unsettled-state,
//     expiry never) and the source capability "shared" (the queue is named
//     after the link, not exclusive, kept on detach). Unsubscribe deletes
//     it through QMF.
//   - Exchange subscriptions deliver pre-settled unless the receiver asks
//     for sender settle mode unsettled: at-most-once otherwise.
//   - A strict broker (no --queue-patterns) refuses unknown addresses, and
//     a queue created on demand at attach is neither durable nor lasting.
//     fedrouter's own queues (transit, ingress, dead letter) and its control
//     exchange are created through QMF, durable, before use.
type qpidProfile struct {
	mgmt *QpidManagement
}

func newQpidProfile(cfg BrokerConfig) (Profile, error) {
	m, err := NewQpidManagement(cfg)
	if err != nil {
		return nil, fmt.Errorf("qpid profile: %w", err)
	}
	return &qpidProfile{mgmt: m}, nil
}

func (*qpidProfile) Name() string    { return "qpid" }
func (*qpidProfile) Tested() bool    { return true }
func (*qpidProfile) Multicast() bool { return true }
func (*qpidProfile) Close()          {}

func (p *qpidProfile) Target(n Node) (LinkSpec, error) {
	if err := checkNode(n); err != nil {
		return LinkSpec{}, err
	}
	if n.Kind == Exchange && n.Key != "" {
		return LinkSpec{Address: n.Name, Subject: n.Key}, nil
	}
	return LinkSpec{Address: n.Name}, nil
}

func (p *qpidProfile) Source(ctx context.Context, n Node, sub Subscription) (LinkSpec, error) {
	if err := checkNode(n); err != nil {
		return LinkSpec{}, err
	}
	switch n.Kind {
	case Queue:
		return LinkSpec{Address: n.Name}, nil
	case Transit:
		if err := p.declareQueue(ctx, n.Name); err != nil {
			return LinkSpec{}, err
		}
		return LinkSpec{Address: n.Name}, nil
	case Control:
		if err := p.declareFanout(ctx, n.Name); err != nil {
			return LinkSpec{}, err
		}
	}
	spec := LinkSpec{Address: n.Name, LinkName: sub.Name, Durable: sub.Durable, Unsettled: true}.withTopicFilter(n.Key)
	if sub.Durable {
		spec.Capabilities = []string{"shared"}
	}
	return spec, nil
}

// Unsubscribe deletes sub's queue. A transient one is usually gone already
// (exclusive, deleted with its link); a durable one stays until this.
func (p *qpidProfile) Unsubscribe(ctx context.Context, n Node, sub Subscription) error {
	if n.Kind == Queue || n.Kind == Transit || sub.Name == "" {
		return nil
	}
	return p.mgmt.Delete(ctx, "queue", sub.Name)
}

// CheckTarget creates fedrouter's own queues and control exchange, and
// looks an application's queue or exchange up: a missing one is
// ErrNotFound, which a message in transit is dead-lettered for, where a
// refused attach would be retried forever and hold up the transit queue.
func (p *qpidProfile) CheckTarget(ctx context.Context, n Node) error {
	var err error
	switch n.Kind {
	case Transit:
		return p.declareQueue(ctx, n.Name)
	case Control:
		return p.declareFanout(ctx, n.Name)
	case Queue:
		_, err = p.mgmt.Queue(ctx, n.Name)
	case Exchange:
		_, err = p.mgmt.Exchange(ctx, n.Name)
	}
	return err
}

// declareQueue creates a durable queue that outlives its consumers, as
// docs/multihop.md promises for transit queues.
func (p *qpidProfile) declareQueue(ctx context.Context, name string) error {
	return p.mgmt.Create(ctx, "queue", name, map[string]any{"durable": true})
}

// declareFanout creates the control exchange: a fanout of its own, so
// control traffic never meets an application's (amq.fanout is shared).
// One that exists with another type is refused: a receiver without a key
// on it might get nothing.
func (p *qpidProfile) declareFanout(ctx context.Context, name string) error {
	if err := p.mgmt.Create(ctx, "exchange", name, map[string]any{"exchange-type": "fanout", "durable": true}); err != nil {
		return err
	}
	ex, err := p.mgmt.Exchange(ctx, name)
	if err != nil {
		return err
	}
	if typ := ex.String("type"); typ != "fanout" {
		return fmt.Errorf("control exchange %s on %s is a %q exchange, not fanout: delete it or set topology.control_address: %w",
			name, p.mgmt.broker, typ, ErrUnsupported)
	}
	return nil
}
