package amqp

import (
	"context"
	"fmt"
	"sort"
	"strings"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// NodeKind is the kind of logical endpoint a route names.
type NodeKind int

const (
	// Queue: a named queue; receiving consumes it (competing consumers).
	Queue NodeKind = iota
	// Exchange: an exchange (RabbitMQ, qpidd) or address (Artemis). With a
	// Key, a subscription binds with that key and a send routes with it;
	// without, a subscription takes everything and a send routes by the
	// message's subject.
	Exchange
	// Control: the address routers use to flood link-state advertisements.
	// On a multicast broker every router's subscription gets every message;
	// on a queue-only broker each router has an inbox (Name.<router id>) and
	// a send names the peer in Key.
	Control
	// Transit: a durable queue fedrouter owns on a broker (multi-hop
	// transit, the ingress, the router's dead-letter queue). Source and
	// CheckTarget create it when missing; elsewhere it is a Queue.
	Transit
)

func (k NodeKind) String() string {
	switch k {
	case Queue:
		return "queue"
	case Exchange:
		return "exchange"
	case Control:
		return "control"
	case Transit:
		return "transit queue"
	}
	return fmt.Sprintf("NodeKind(%d)", int(k))
}

// Node is a logical endpoint: what a route wants, independent of dialect.
type Node struct {
	Kind NodeKind
	Name string
	Key  string // binding / routing key for Exchange; peer router id for a Control target
}

func (n Node) String() string {
	if n.Key != "" {
		return fmt.Sprintf("%s %s key %q", n.Kind, n.Name, n.Key)
	}
	return fmt.Sprintf("%s %s", n.Kind, n.Name)
}

// Address is n in fedrouter's broker-neutral text form, carried by
// messages that travel several hops: "queue:NAME", "exchange:NAME" or
// "exchange:NAME:KEY". ParseAddress reads it back.
func (n Node) Address() string {
	kind := "exchange"
	if n.Kind == Queue || n.Kind == Transit {
		kind = "queue"
	}
	if n.Key != "" {
		return kind + ":" + n.Name + ":" + n.Key
	}
	return kind + ":" + n.Name
}

// ParseAddress reads a node written "queue:NAME", "exchange:NAME" or
// "exchange:NAME:KEY" (the key may hold ':'; the name may not).
func ParseAddress(s string) (Node, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Node{}, fmt.Errorf("address %q: want queue:NAME, exchange:NAME or exchange:NAME:KEY", s)
	}
	name, key, _ := strings.Cut(rest, ":")
	var n Node
	switch kind {
	case "queue":
		n = Node{Kind: Queue, Name: name}
	case "exchange":
		n = Node{Kind: Exchange, Name: name, Key: key}
	default:
		return Node{}, fmt.Errorf("address %q: kind %q: want queue or exchange", s, kind)
	}
	if err := checkNode(n); err != nil {
		return Node{}, fmt.Errorf("address %q: %w", s, err)
	}
	if n.Kind == Queue && key != "" {
		return Node{}, fmt.Errorf("address %q: a queue takes no key", s)
	}
	return n, nil
}

// Subscription names the private, per-route state a source needs on an
// exchange or control node: the broker-side queue (RabbitMQ) or the durable
// link (Artemis, qpidd). Durable subscriptions keep collecting messages
// while the router is away; transient ones vanish with the route.
type Subscription struct {
	Name    string // unique per route and broker, e.g. "fedrouter.route.r1"
	Durable bool
	// Single: one consumer at a time gets messages, the others wait to
	// take over (RabbitMQ's single active consumer): a subscription
	// several routers share keeps its order.
	Single bool
}

// LinkSpec is what a profile resolved a Node to: everything needed to attach.
type LinkSpec struct {
	Address      string
	Capabilities []string       // source capabilities (receiver) / target capabilities (sender)
	Filters      []SourceFilter // the source's filter set: both data paths encode it (ReceiverOptions, EngineReceiver)
	LinkName     string         // fixed link name: durable subscriptions re-attach by name
	Durable      bool           // source terminus durability unsettled-state + expiry never
	// Unsettled: the receiver asks the source to send unsettled (qpidd
	// sends exchange subscriptions pre-settled otherwise: at-most-once).
	// Not asked everywhere: the Proton brokers refuse the request.
	Unsettled bool
	// Subject, on a target: every message sent is given this subject,
	// the routing key where the broker routes by subject (qpidd).
	Subject string
}

// ReceiverOptions returns go-amqp receiver options for spec, with manual
// credit (see Receiver).
func (s LinkSpec) ReceiverOptions() *goamqp.ReceiverOptions {
	o := &goamqp.ReceiverOptions{
		Credit:             -1,
		Name:               s.LinkName,
		SourceCapabilities: s.Capabilities,
	}
	for _, f := range s.Filters {
		o.Filters = append(o.Filters, goamqp.NewLinkFilter(f.Name, f.Code, f.Value))
	}
	// The Source… options: go-amqp's Durability and ExpiryPolicy are the
	// receiver's own (target) terminus, which keeps nothing at the broker.
	if s.Durable {
		o.SourceDurability = goamqp.DurabilityUnsettledState
		o.SourceExpiryPolicy = goamqp.ExpiryPolicyNever
	}
	if s.Unsettled {
		mode := goamqp.SenderSettleModeUnsettled
		o.RequestedSenderSettleMode = &mode
	}
	return o
}

// SenderOptions returns go-amqp sender options for spec. The settlement
// mode stays at the default (mixed): the Proton brokers refuse a sender that
// asks for "unsettled", and fedrouter never pre-settles.
func (s LinkSpec) SenderOptions() *goamqp.SenderOptions {
	return &goamqp.SenderOptions{Name: s.LinkName, TargetCapabilities: s.Capabilities}
}

// Profile maps logical nodes to one broker family's dialect.
type Profile interface {
	// Name is the profile's name as written in configs.
	Name() string
	// Tested says whether the profile is exercised against a real broker in
	// this repository's tests; untested profiles follow the broker's docs.
	Tested() bool
	// Multicast says whether a Control node is a broadcast on this broker.
	Multicast() bool
	// Target resolves where to send to deliver into n.
	Target(n Node) (LinkSpec, error)
	// Source resolves where to receive n from. For Exchange and Control
	// nodes it creates the broker-side subscription objects the profile
	// needs (idempotently); Unsubscribe removes them.
	Source(ctx context.Context, n Node, sub Subscription) (LinkSpec, error)
	// Unsubscribe removes what Source created for sub. Removing what is not
	// there is not an error.
	Unsubscribe(ctx context.Context, n Node, sub Subscription) error
	// CheckTarget verifies that n exists where the broker can tell (a send
	// to a missing RabbitMQ queue is accepted and dropped). Profiles that
	// cannot tell return nil. A Transit node is created when missing.
	CheckTarget(ctx context.Context, n Node) error
	// Close releases what the profile holds (management API connections).
	Close()
}

type profileInfo struct {
	tested bool
	make   func(BrokerConfig) (Profile, error)
}

var profiles = map[string]profileInfo{
	"rabbitmq": {true, newRabbitProfile},
	"proton":   {true, func(BrokerConfig) (Profile, error) { return protonProfile{}, nil }},
	"generic":  {true, func(BrokerConfig) (Profile, error) { return genericProfile{}, nil }},
	"artemis":  {false, func(BrokerConfig) (Profile, error) { return artemisProfile{}, nil }},
	"qpid":     {true, newQpidProfile},
}

// ProfileNames lists the known profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupProfile checks that name is a known profile.
func LookupProfile(name string) (tested bool, err error) {
	p, ok := profiles[name]
	if !ok {
		return false, fmt.Errorf("unknown broker profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return p.tested, nil
}

// NewProfile returns the profile for a broker's configuration.
func NewProfile(cfg BrokerConfig) (Profile, error) {
	p, ok := profiles[cfg.Profile]
	if !ok {
		_, err := LookupProfile(cfg.Profile)
		return nil, err
	}
	return p.make(cfg)
}

// checkNode rejects nodes no profile can express.
func checkNode(n Node) error {
	if n.Name == "" {
		return fmt.Errorf("%s node has an empty name", n.Kind)
	}
	if (n.Kind == Queue || n.Kind == Transit) && n.Key != "" {
		return fmt.Errorf("queue %s: a queue takes no key", n.Name)
	}
	return nil
}

// asQueue maps a Transit node to a Queue for profiles whose queues need
// no creating (or cannot be created through AMQP).
func asQueue(n Node) Node {
	if n.Kind == Transit {
		n.Kind = Queue
	}
	return n
}

// controlInbox is the per-router inbox on queue-only brokers.
func controlInbox(base, router string) string { return base + "." + router }

// SourceFilter is one entry of a source's filter set (part 3.5.8): a
// described value under its name, as the AMQP filter registry defines
// them. Code is the filter's numeric descriptor; 0 describes it by its
// name instead. The filters the profiles ask for take a string.
type SourceFilter struct {
	Name  string
	Code  uint64
	Value string
}

// Filters the profiles ask for: the legacy AMQP 0-10 topic binding
// (understood by qpidd, echoed but ignored by RabbitMQ 3.10) and the
// JMS selector (Artemis, qpidd, the Proton brokers).
const (
	filterTopicName    = "apache.org:legacy-amqp-topic-binding:string"
	filterTopicCode    = 0x0000468C00000001
	filterSelectorName = "apache.org:selector-filter:string"
	filterSelectorCode = 0x0000468C00000004
)

// withTopicFilter is s filtered by the binding key key ("" for none).
func (s LinkSpec) withTopicFilter(key string) LinkSpec {
	if key != "" {
		s.Filters = []SourceFilter{{Name: filterTopicName, Code: filterTopicCode, Value: key}}
	}
	return s
}

// selectorFilter is the filter set of a JMS selector sel.
func selectorFilter(sel string) []SourceFilter {
	return []SourceFilter{{Name: filterSelectorName, Code: filterSelectorCode, Value: sel}}
}

// engineFilters is the filter set fs encoded for the engine's attach,
// as go-amqp encodes it for the same filters: a map of symbol names to
// described values (nil for none).
func engineFilters(fs []SourceFilter) []byte {
	if len(fs) == 0 {
		return nil
	}
	b, mark := wire.BeginMap(nil)
	for _, f := range fs {
		b = wire.AppendSymbol(b, f.Name)
		if f.Code != 0 {
			b = wire.AppendDescriptor(b, f.Code)
		} else {
			b = wire.AppendSymbol(append(b, 0x00), f.Name) // 0x00: a described value follows its descriptor
		}
		b = wire.AppendString(b, f.Value)
	}
	return wire.EndMap(b, mark, 2*len(fs))
}

// escapeSelector doubles single quotes for a JMS selector string literal.
func escapeSelector(s string) string { return strings.ReplaceAll(s, "'", "''") }
