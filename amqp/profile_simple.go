package amqp

import (
	"context"
	"fmt"
)

// This file holds the profiles that need no management API: proton and
// generic (tested), artemis (from its documentation, untested). The qpid
// profile is in profile_qpid.go.

// protonProfile: the Qpid Proton example brokers. Every address is an
// in-memory queue with competing consumers: no exchanges, no filters, no
// multicast, nothing durable. An exchange route on such a broker consumes
// the address named after the exchange; a key cannot be honoured and is
// refused rather than silently ignored.
type protonProfile struct{}

func (protonProfile) Name() string    { return "proton" }
func (protonProfile) Tested() bool    { return true }
func (protonProfile) Multicast() bool { return false }

func (protonProfile) Target(n Node) (LinkSpec, error) {
	n = asQueue(n)
	if err := checkNode(n); err != nil {
		return LinkSpec{}, err
	}
	switch n.Kind {
	case Control:
		if n.Key == "" {
			return LinkSpec{}, fmt.Errorf("control target on a queue-only broker needs the peer router id: %w", ErrUnsupported)
		}
		return LinkSpec{Address: controlInbox(n.Name, n.Key)}, nil
	case Exchange:
		if n.Key != "" {
			return LinkSpec{}, fmt.Errorf("%s: the proton broker has no exchanges to route a key: %w", n, ErrUnsupported)
		}
	}
	return LinkSpec{Address: n.Name}, nil
}

func (protonProfile) Source(_ context.Context, n Node, sub Subscription) (LinkSpec, error) {
	n = asQueue(n)
	if err := checkNode(n); err != nil {
		return LinkSpec{}, err
	}
	switch n.Kind {
	case Control:
		return LinkSpec{Address: controlInbox(n.Name, sub.Name)}, nil
	case Exchange:
		if n.Key != "" {
			return LinkSpec{}, fmt.Errorf("%s: the proton broker cannot filter by key: %w", n, ErrUnsupported)
		}
	}
	return LinkSpec{Address: n.Name}, nil
}

func (protonProfile) Unsubscribe(context.Context, Node, Subscription) error { return nil }
func (protonProfile) CheckTarget(context.Context, Node) error               { return nil }
func (protonProfile) Close()                                                {}

// genericProfile: plain AMQP 1.0 conventions for an unknown peer. Queues
// and exchanges are addresses; a keyed subscription asks for the legacy
// topic-binding filter and fails to attach on peers that do not echo it;
// durable subscriptions use terminus durability and a fixed link name;
// the control address asks for the "topic" capability (multicast).
type genericProfile struct{}

func (genericProfile) Name() string    { return "generic" }
func (genericProfile) Tested() bool    { return true }
func (genericProfile) Multicast() bool { return true }

func (genericProfile) Target(n Node) (LinkSpec, error) {
	n = asQueue(n)
	if err := checkNode(n); err != nil {
		return LinkSpec{}, err
	}
	if n.Kind == Control {
		return LinkSpec{Address: n.Name, Capabilities: []string{"topic"}}, nil
	}
	return LinkSpec{Address: n.Name}, nil
}

func (genericProfile) Source(_ context.Context, n Node, sub Subscription) (LinkSpec, error) {
	n = asQueue(n)
	if err := checkNode(n); err != nil {
		return LinkSpec{}, err
	}
	spec := LinkSpec{Address: n.Name}
	if n.Kind != Queue {
		spec = spec.withTopicFilter(n.Key)
		spec.LinkName = sub.Name
		spec.Durable = sub.Durable
		if n.Kind == Control {
			spec.Capabilities = []string{"topic"}
		}
	}
	return spec, nil
}

func (genericProfile) Unsubscribe(context.Context, Node, Subscription) error { return nil }
func (genericProfile) CheckTarget(context.Context, Node) error               { return nil }
func (genericProfile) Close()                                                {}

// artemisProfile (UNTESTED, from the ActiveMQ Artemis AMQP documentation):
// capabilities "queue"/"topic" choose anycast/multicast routing; a durable
// subscription is a durable receiver with a fixed link name on the
// connection's container id; a key becomes a selector on the subject
// (Artemis has no binding keys). Closing the receiver unsubscribes, so
// owners keep durable links by closing the connection instead.
type artemisProfile struct{}

func (artemisProfile) Name() string    { return "artemis" }
func (artemisProfile) Tested() bool    { return false }
func (artemisProfile) Multicast() bool { return true }

func (artemisProfile) Target(n Node) (LinkSpec, error) {
	n = asQueue(n)
	if err := checkNode(n); err != nil {
		return LinkSpec{}, err
	}
	if n.Kind == Queue {
		return LinkSpec{Address: n.Name, Capabilities: []string{"queue"}}, nil
	}
	return LinkSpec{Address: n.Name, Capabilities: []string{"topic"}}, nil
}

func (artemisProfile) Source(_ context.Context, n Node, sub Subscription) (LinkSpec, error) {
	n = asQueue(n)
	if err := checkNode(n); err != nil {
		return LinkSpec{}, err
	}
	if n.Kind == Queue {
		return LinkSpec{Address: n.Name, Capabilities: []string{"queue"}}, nil
	}
	spec := LinkSpec{Address: n.Name, Capabilities: []string{"topic"}, LinkName: sub.Name, Durable: sub.Durable}
	if n.Key != "" {
		spec.Filters = selectorFilter(fmt.Sprintf("AMQPROUTINGKEY = '%s'", escapeSelector(n.Key)))
	}
	return spec, nil
}

func (artemisProfile) Unsubscribe(context.Context, Node, Subscription) error { return nil }
func (artemisProfile) CheckTarget(context.Context, Node) error               { return nil }
func (artemisProfile) Close()                                                {}
