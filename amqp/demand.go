package amqp

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Demand is what a dynamic route needs of a broker: which binding keys on
// an exchange want messages, and a subscription whose bindings it manages
// itself. Profiles that can tell (RabbitMQ, through its management API)
// implement it; the others cannot carry dynamic routes.
type Demand interface {
	// ExchangeDemand lists the demand on exchange: its bindings to queues
	// and, with divert, its bindings to exchanges that have demand
	// themselves (exchange-to-exchange bindings, Artemis' diverts).
	ExchangeDemand(ctx context.Context, exchange string, divert bool) ([]DemandBinding, error)
	// Subscribe declares sub's queue without any binding and returns where
	// to receive from.
	Subscribe(ctx context.Context, exchange string, sub Subscription) (LinkSpec, error)
	// SubscribedDemand lists the bindings of sub's queue to exchange.
	SubscribedDemand(ctx context.Context, exchange string, sub Subscription) ([]DemandBinding, error)
	// BindDemand binds sub's queue to exchange with b's key, recording b's
	// origins on the binding.
	BindDemand(ctx context.Context, exchange string, sub Subscription, b DemandBinding) error
	// UnbindDemand removes a binding SubscribedDemand returned.
	UnbindDemand(ctx context.Context, exchange string, sub Subscription, b DemandBinding) error
}

// DemandEvents is implemented by profiles that can announce binding
// changes (RabbitMQ with rabbitmq_event_exchange): a dynamic route then
// reconciles at once on each event instead of waiting for its next poll.
type DemandEvents interface {
	// BindingEvents declares sub's queue bound to the broker's binding
	// events and returns where to receive them; ErrUnsupported when the
	// broker does not publish them (the plugin is off).
	BindingEvents(ctx context.Context, sub Subscription) (LinkSpec, error)
}

// rabbitEventExchange is where rabbitmq_event_exchange publishes.
const rabbitEventExchange = "amq.rabbitmq.event"

// BindingEvents binds sub's queue to binding.created and binding.deleted.
func (p *rabbitProfile) BindingEvents(ctx context.Context, sub Subscription) (LinkSpec, error) {
	ok, err := p.mgmt.ExchangeExists(ctx, rabbitEventExchange)
	if err != nil {
		return LinkSpec{}, err
	}
	if !ok {
		return LinkSpec{}, fmt.Errorf("no %s exchange (enable rabbitmq_event_exchange): %w", rabbitEventExchange, ErrUnsupported)
	}
	if err := p.mgmt.DeclareQueue(ctx, sub.Name, subscriptionArgs(Subscription{Name: sub.Name})); err != nil {
		return LinkSpec{}, err
	}
	if err := p.mgmt.Bind(ctx, rabbitEventExchange, sub.Name, "binding.*"); err != nil {
		return LinkSpec{}, err
	}
	return LinkSpec{Address: "/amq/queue/" + sub.Name}, nil
}

// DemandBinding is one binding key with demand behind it. Origins are the
// brokers the demand was propagated through by dynamic routes, in order,
// the consumer's broker first (recorded on the binding as
// OriginArgument); a local consumer's binding has none.
// A route never forwards to demand that came through its own source:
// that is what keeps A<->B pairs, rings and meshes from looping.
type DemandBinding struct {
	Key     string
	Origins []string // the path of the demand, the consumer's broker first
	ref     string   // the broker's name for the binding (RabbitMQ properties key)
}

// OriginArgument is the binding argument naming a propagated binding's
// origins, comma-separated, the consumer's broker first.
const OriginArgument = "x-fedrouter-origin"

// ID identifies a binding by key and origins.
func (b DemandBinding) ID() string { return b.Key + "\x00" + strings.Join(b.Origins, ",") }

func (b DemandBinding) String() string {
	if len(b.Origins) == 0 {
		return fmt.Sprintf("%q", b.Key)
	}
	return fmt.Sprintf("%q (from %s)", b.Key, strings.Join(b.Origins, ","))
}

func originsOf(args map[string]any) []string {
	s, _ := args[OriginArgument].(string)
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// ExchangeDemand reads the exchange's bindings through the management API.
func (p *rabbitProfile) ExchangeDemand(ctx context.Context, exchange string, divert bool) ([]DemandBinding, error) {
	seen := map[string]bool{}
	var out []DemandBinding
	err := p.demandOf(ctx, exchange, divert, map[string]bool{exchange: true}, func(b DemandBinding) {
		if !seen[b.ID()] {
			seen[b.ID()] = true
			out = append(out, b)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out, err
}

// demandOf calls add for each binding of exchange with demand behind it.
// An exchange-to-exchange binding counts, under its own key, once per
// origin set of the demand downstream of it (visited guards cycles).
func (p *rabbitProfile) demandOf(ctx context.Context, exchange string, divert bool, visited map[string]bool, add func(DemandBinding)) error {
	bs, err := p.mgmt.SourceBindings(ctx, exchange)
	if err != nil {
		return fmt.Errorf("bindings of exchange %q: %w", exchange, err)
	}
	for _, b := range bs {
		switch {
		case b.DestinationType == "queue":
			add(DemandBinding{Key: b.RoutingKey, Origins: originsOf(b.Arguments)})
		case b.DestinationType == "exchange" && divert && !visited[b.Destination]:
			visited[b.Destination] = true
			err := p.demandOf(ctx, b.Destination, divert, visited, func(d DemandBinding) {
				add(DemandBinding{Key: b.RoutingKey, Origins: d.Origins})
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Subscribe declares the subscription queue, unbound: the dynamic route
// binds it as demand appears. Durable or transient as sub says (transient
// ones expire as in Source).
func (p *rabbitProfile) Subscribe(ctx context.Context, exchange string, sub Subscription) (LinkSpec, error) {
	if ok, err := p.mgmt.ExchangeExists(ctx, exchange); err != nil {
		return LinkSpec{}, err
	} else if !ok {
		return LinkSpec{}, fmt.Errorf("exchange %q: %w", exchange, ErrNotFound)
	}
	if err := p.mgmt.DeclareQueue(ctx, sub.Name, subscriptionArgs(sub)); err != nil {
		return LinkSpec{}, err
	}
	return LinkSpec{Address: "/amq/queue/" + sub.Name}, nil
}

// SubscribedDemand lists the subscription queue's bindings to exchange.
func (p *rabbitProfile) SubscribedDemand(ctx context.Context, exchange string, sub Subscription) ([]DemandBinding, error) {
	bs, err := p.mgmt.Bindings(ctx, exchange, sub.Name)
	if err != nil {
		return nil, err
	}
	out := make([]DemandBinding, 0, len(bs))
	for _, b := range bs {
		out = append(out, DemandBinding{Key: b.RoutingKey, Origins: originsOf(b.Arguments), ref: b.PropertiesKey})
	}
	return out, nil
}

// BindDemand binds the subscription with b's key and origins.
func (p *rabbitProfile) BindDemand(ctx context.Context, exchange string, sub Subscription, b DemandBinding) error {
	var args map[string]any
	if len(b.Origins) > 0 {
		args = map[string]any{OriginArgument: strings.Join(b.Origins, ",")}
	}
	return p.mgmt.BindArgs(ctx, exchange, sub.Name, b.Key, args)
}

// UnbindDemand removes one of the subscription's bindings.
func (p *rabbitProfile) UnbindDemand(ctx context.Context, exchange string, sub Subscription, b DemandBinding) error {
	if b.ref == "" {
		return fmt.Errorf("binding %s: not one SubscribedDemand returned", b)
	}
	return p.mgmt.Unbind(ctx, exchange, sub.Name, b.ref)
}

var (
	_ Demand       = (*rabbitProfile)(nil)
	_ DemandEvents = (*rabbitProfile)(nil)
)

// DestinationLister is implemented by profiles that can list a broker's
// destinations (queues), for advertising them across the federation.
type DestinationLister interface {
	Destinations(ctx context.Context) ([]DestinationInfo, error)
}

// DestinationInfo is one destination as the broker describes it.
type DestinationInfo struct {
	Name      string
	Temporary bool // exclusive or auto-delete: lives with its creator
	// Configured: declared to last (durable) — RabbitMQ cannot tell an
	// administrator's queue from an application's, so a durable queue
	// counts as configured and a non-durable one as auto-created.
	Configured bool
	Consumers  int
	Messages   int
}

// Destinations lists the vhost's queues, fedrouter's own excepted.
func (p *rabbitProfile) Destinations(ctx context.Context) ([]DestinationInfo, error) {
	qs, err := p.mgmt.Queues(ctx)
	if err != nil {
		return nil, err
	}
	return DestinationsOf(qs), nil
}

// DestinationsOf is a RabbitMQ queue listing as destinations, fedrouter's
// own queues excepted (a listing made for another purpose serves here
// too: router/listings.go).
func DestinationsOf(qs []QueueInfo) []DestinationInfo {
	out := make([]DestinationInfo, 0, len(qs))
	for _, q := range qs {
		if strings.HasPrefix(q.Name, "fedrouter.") {
			continue // route subscriptions and control queues
		}
		out = append(out, DestinationInfo{Name: q.Name, Temporary: q.Exclusive || q.AutoDelete,
			Configured: q.Durable, Consumers: q.Consumers, Messages: q.Messages})
	}
	return out
}

var _ DestinationLister = (*rabbitProfile)(nil)
