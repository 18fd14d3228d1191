package amqp

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// rabbitProfile: RabbitMQ 3.10 with rabbitmq_amqp1_0 and the management
// plugin. Its address dialect is /amq/queue/Q (existing queue), /queue/Q
// (declares), /exchange/X[/K]. It ignores source filters and has no
// durable subscriptions through the terminus (every exchange receiver gets a
// new server-named queue that is never deleted), so subscriptions are named
// queues bound through the management API and consumed as /amq/queue/Q.
type rabbitProfile struct {
	mgmt   *RabbitManagement
	exists targetCache // CheckTarget's recent answers
}

func newRabbitProfile(cfg BrokerConfig) (Profile, error) {
	m, err := NewRabbitManagement(cfg)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq profile: %w", err)
	}
	return &rabbitProfile{mgmt: m}, nil
}

// Control queues are bounded and expire: a router that vanished must not
// leave a queue filling up forever.
const (
	controlQueueMaxLen  = 10000
	controlQueueExpires = 10 * 60 * 1000 // ms unused before RabbitMQ deletes it
	subscriptionExpires = 10 * 60 * 1000 // ms a transient subscription outlives its consumer
)

func (p *rabbitProfile) Name() string    { return "rabbitmq" }
func (p *rabbitProfile) Tested() bool    { return true }
func (p *rabbitProfile) Multicast() bool { return true }

// SharedSubscriptions: a subscription is a named queue; consumers on any
// connection compete on it.
func (p *rabbitProfile) SharedSubscriptions() bool { return true }

func (p *rabbitProfile) Close() { p.mgmt.Close() }

func (p *rabbitProfile) Target(n Node) (LinkSpec, error) {
	if err := checkNode(n); err != nil {
		return LinkSpec{}, err
	}
	if strings.Contains(n.Name, "/") {
		return LinkSpec{}, fmt.Errorf("%s: RabbitMQ addresses cannot hold '/' in a name", n)
	}
	switch n.Kind {
	case Queue, Transit:
		return LinkSpec{Address: "/amq/queue/" + n.Name}, nil
	case Control:
		return LinkSpec{Address: "/exchange/" + n.Name}, nil
	}
	if n.Key != "" {
		return LinkSpec{Address: "/exchange/" + n.Name + "/" + n.Key}, nil
	}
	return LinkSpec{Address: "/exchange/" + n.Name}, nil
}

func (p *rabbitProfile) Source(ctx context.Context, n Node, sub Subscription) (LinkSpec, error) {
	if err := checkNode(n); err != nil {
		return LinkSpec{}, err
	}
	switch n.Kind {
	case Queue:
		return LinkSpec{Address: "/amq/queue/" + n.Name}, nil
	case Transit:
		if err := p.declareTransit(ctx, n.Name); err != nil {
			return LinkSpec{}, err
		}
		return LinkSpec{Address: "/amq/queue/" + n.Name}, nil
	case Control:
		if err := p.mgmt.DeclareExchange(ctx, n.Name, "fanout", true); err != nil {
			return LinkSpec{}, err
		}
		q := controlInbox(n.Name, sub.Name)
		args := QueueArgs{Arguments: map[string]any{
			"x-max-length": controlQueueMaxLen, "x-overflow": "drop-head", "x-expires": controlQueueExpires}}
		if err := p.declareAndBind(ctx, n.Name, q, "", args); err != nil {
			return LinkSpec{}, err
		}
		return LinkSpec{Address: "/amq/queue/" + q}, nil
	}
	if sub.Name == "" {
		return LinkSpec{}, fmt.Errorf("%s: a subscription needs a name", n)
	}
	args := subscriptionArgs(sub)
	if err := p.declareAndBind(ctx, n.Name, sub.Name, n.Key, args); err != nil {
		return LinkSpec{}, err
	}
	return LinkSpec{Address: "/amq/queue/" + sub.Name}, nil
}

// subscriptionArgs are a subscription queue's properties. Transient: not
// durable (gone with a broker restart), but not auto-delete either, so a
// link failure or a router restart loses nothing; it expires once unused
// for subscriptionExpires, so a router that never comes back does not
// leave it filling up, and it is deleted with its route (Unsubscribe) or
// when the router stops.
func subscriptionArgs(sub Subscription) QueueArgs {
	args := QueueArgs{Durable: sub.Durable, Arguments: map[string]any{}}
	if !sub.Durable {
		args.Arguments["x-expires"] = subscriptionExpires
	}
	if sub.Single {
		args.Arguments["x-single-active-consumer"] = true
	}
	if len(args.Arguments) == 0 {
		args.Arguments = nil
	}
	return args
}

func (p *rabbitProfile) declareAndBind(ctx context.Context, exchange, queue, key string, args QueueArgs) error {
	if ok, err := p.mgmt.ExchangeExists(ctx, exchange); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("exchange %q: %w", exchange, ErrNotFound)
	}
	if err := p.mgmt.DeclareQueue(ctx, queue, args); err != nil {
		return err
	}
	return p.mgmt.Bind(ctx, exchange, queue, key)
}

// declareTransit makes a transit queue exist: durable, so what waits in
// it survives a broker restart; declaring it again is a no-op.
func (p *rabbitProfile) declareTransit(ctx context.Context, name string) error {
	if strings.Contains(name, "/") {
		return fmt.Errorf("transit queue %q: RabbitMQ addresses cannot hold '/' in a name", name)
	}
	return p.mgmt.DeclareQueue(ctx, name, QueueArgs{Durable: true})
}

func (p *rabbitProfile) Unsubscribe(ctx context.Context, n Node, sub Subscription) error {
	switch n.Kind {
	case Queue, Transit:
		return nil
	case Control:
		return p.mgmt.DeleteQueue(ctx, controlInbox(n.Name, sub.Name))
	}
	return p.mgmt.DeleteQueue(ctx, sub.Name)
}

// CheckTarget: RabbitMQ accepts and drops sends to a missing queue, so
// look the destination up — once per targetTTL for a queue or exchange
// found there (targetcache.go).
func (p *rabbitProfile) CheckTarget(ctx context.Context, n Node) error {
	if n.Kind == Transit {
		return p.declareTransit(ctx, n.Name)
	}
	now := time.Now()
	if p.exists.fresh(n, now) {
		return nil
	}
	if err := p.lookTarget(ctx, n); err != nil {
		return err
	}
	p.exists.saw(n, now)
	return nil
}

// lookTarget asks the management API whether queue or exchange n exists.
func (p *rabbitProfile) lookTarget(ctx context.Context, n Node) error {
	switch n.Kind {
	case Queue:
		if _, err := p.mgmt.Queue(ctx, n.Name); err != nil {
			if isNotFound(err) {
				return fmt.Errorf("queue %q: %w", n.Name, ErrNotFound)
			}
			return err
		}
		return nil
	default:
		ok, err := p.mgmt.ExchangeExists(ctx, n.Name)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("exchange %q: %w", n.Name, ErrNotFound)
		}
		return nil
	}
}
