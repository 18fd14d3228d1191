package routes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/topology"
)

// Multi-hop delivery. A message bound for a broker D that is not the next
// broker waits on each broker B it crosses in B's transit queue for D,
// "fedrouter.transit.D" (durable, created on first use). Whichever router
// is attached to both B and N, the next hop from B to D in the link-state
// table, takes it from there and writes it on N: into N's transit queue for
// D, or, when N is D, into the destination address. Every router computes
// the same table, so each transit queue has one next hop; when the table
// changes (a link went down) the router holding the new next hop takes the
// queue over — that is the reroute — and while no path exists nobody takes
// it: the messages wait, durable, on the broker they reached.
//
// Messages say where they go in message annotations: destination broker
// and address (famqp.Node.Address form), origin broker, trace (brokers
// left, in order) and hop count. An application asks for multi-hop
// delivery by sending to IngressQueue on its own broker with the
// application properties PropDestBroker and PropDestAddress.

// Router-owned queues on every broker.
const (
	TransitPrefix = "fedrouter.transit." // + destination broker
	// IngressQueue is where applications send messages for another broker.
	IngressQueue = "fedrouter.ingress"
	// RouterDeadLetterQueue holds transit and ingress messages that cannot
	// be delivered (bad request, missing destination address, too many
	// hops), annotated with the reason.
	RouterDeadLetterQueue = "fedrouter.dead-letter"
)

// Message annotations of a message in transit (TraceAnnotation, and the
// AnnotationDestBroker and AnnotationDestAddress of nopath.go, too).
const (
	AnnotationOrigin = "x-fedrouter-origin" // the broker it entered at
	AnnotationHops   = "x-fedrouter-hops"   // transit hops made so far
)

// Application properties an application sets on a message it sends to
// IngressQueue.
const (
	PropDestBroker  = "fedrouter-dest-broker"
	PropDestAddress = "fedrouter-dest-address"
)

// Rejection conditions of transit (dead-lettered with the reason).
const (
	CondMaxHops    = "fed:max-hops"
	CondBadRequest = "fed:bad-request"
	CondNoAddress  = "fed:no-such-address"
)

// DefaultMaxHops bounds a message's transit hops: a message caught in a
// loop while tables converge is dead-lettered after this many.
const DefaultMaxHops = 16

// TransitNode is broker-side queue holding messages bound for dest.
func TransitNode(dest string) famqp.Node {
	return famqp.Node{Kind: famqp.Transit, Name: TransitPrefix + dest}
}

// Table is the link-state table as the manager sees it.
type Table interface {
	// Paths returns the current shortest paths (nil before any is known)
	// and a channel closed when they next change.
	Paths() (*topology.Paths, <-chan struct{})
}

// transitHeader is where a message in transit goes.
type transitHeader struct {
	dest    string
	address famqp.Node
	hops    int64
	trace   []string
}

// readHeader reads a message's transit annotations; a message sent by an
// application to the ingress says where it goes in application
// properties instead.
func readHeader(msg *goamqp.Message) (transitHeader, error) {
	var h transitHeader
	get := func(ann, prop string) string {
		if s, ok := msg.Annotations[ann].(string); ok {
			return s
		}
		if s, ok := msg.ApplicationProperties[prop].(string); ok {
			return s
		}
		return ""
	}
	h.dest = get(AnnotationDestBroker, PropDestBroker)
	if h.dest == "" {
		return h, fmt.Errorf("no destination broker: set application property %s (or annotation %s)", PropDestBroker, AnnotationDestBroker)
	}
	addr := get(AnnotationDestAddress, PropDestAddress)
	if addr == "" {
		return h, fmt.Errorf("no destination address: set application property %s (or annotation %s), e.g. exchange:amq.topic:orders.eu", PropDestAddress, AnnotationDestAddress)
	}
	var err error
	if h.address, err = famqp.ParseAddress(addr); err != nil {
		return h, err
	}
	switch v := msg.Annotations[AnnotationHops].(type) {
	case int64:
		h.hops = v
	case int32:
		h.hops = int64(v)
	case uint32:
		h.hops = int64(v)
	case uint64:
		h.hops = int64(v)
	}
	if s, ok := msg.Annotations[TraceAnnotation].(string); ok && s != "" {
		h.trace = strings.Split(s, ",")
	}
	return h, nil
}

// setEntry marks out as entering transit at broker src, for dest's node:
// a new journey (hops and trace start afresh); the origin stays if set.
func setEntry(out *goamqp.Message, src, dest string, node famqp.Node) {
	if out.Annotations == nil {
		out.Annotations = goamqp.Annotations{}
	}
	out.Annotations[AnnotationDestBroker] = dest
	out.Annotations[AnnotationDestAddress] = node.Address()
	if _, ok := out.Annotations[AnnotationOrigin].(string); !ok {
		out.Annotations[AnnotationOrigin] = src
	}
	out.Annotations[AnnotationHops] = int64(0)
	delete(out.Annotations, TraceAnnotation)
}

// maxSenders bounds the destination addresses one dispatch sink holds a
// sender for; past it the run ends and starts afresh with none.
const maxSenders = 64

var errTooManyAddresses = errors.New("routes: more than 64 destination addresses on one transit hop; restarting it")

// dispatchSink writes messages in transit on one broker (at): into the
// destination address when the message is for that broker, else into the
// broker's transit queue for the message's destination. A hop (from set)
// counts the hop and adds the broker it leaves to the trace.
type dispatchSink struct {
	at      string
	from    string // the broker the message leaves; "" when it enters at `at`
	only    string // a hop's destination: messages for another are refused
	maxHops int64
	sess    *goamqp.Session
	prof    famqp.Profile
	senders map[famqp.Node]*goamqp.Sender // at most maxSenders
}

func (s *dispatchSink) Send(ctx context.Context, msg *goamqp.Message) (links.Receipt, error) {
	h, err := readHeader(msg)
	if err != nil {
		return refusal(CondBadRequest, err.Error()), nil
	}
	if s.only != "" && h.dest != s.only {
		return refusal(CondBadRequest, fmt.Sprintf("in the transit queue for %s but addressed to %s", s.only, h.dest)), nil
	}
	if msg.Annotations == nil {
		msg.Annotations = goamqp.Annotations{}
	}
	if _, ok := msg.Annotations[AnnotationDestBroker].(string); !ok { // from the ingress
		setEntry(msg, s.at, h.dest, h.address)
	}
	if s.from != "" {
		if h.hops >= s.maxHops {
			return refusal(CondMaxHops, fmt.Sprintf("made %d hops (trace %s) without reaching %s", h.hops, strings.Join(h.trace, ","), h.dest)), nil
		}
		msg.Annotations[AnnotationHops] = h.hops + 1
		msg.Annotations[TraceAnnotation] = strings.Join(append(h.trace, s.from), ",")
	}
	node := TransitNode(h.dest)
	if h.dest == s.at {
		// Delivered: from here the message is the destination's own (an
		// exchange route there treats it as published there); the trace
		// stays, to show its path and keep routes from sending it back.
		node = h.address
		delete(msg.Annotations, AnnotationOrigin)
		delete(msg.Annotations, AnnotationHops)
	}
	snd, refused, err := s.sender(ctx, node)
	if err != nil || refused != nil {
		return refused, err
	}
	return links.SenderSink{S: snd}.Send(ctx, msg)
}

// sender returns the cached sender for node, attaching one first; a
// destination address that does not exist refuses the message instead.
func (s *dispatchSink) sender(ctx context.Context, node famqp.Node) (*goamqp.Sender, links.Receipt, error) {
	if snd, ok := s.senders[node]; ok {
		return snd, nil, nil
	}
	spec, err := s.prof.Target(node)
	if err != nil {
		return nil, refusal(CondNoAddress, fmt.Sprintf("%s on %s: %v", node.Address(), s.at, err)), nil
	}
	if len(s.senders) >= maxSenders {
		return nil, nil, errTooManyAddresses
	}
	if err := s.prof.CheckTarget(ctx, node); err != nil {
		if errors.Is(err, famqp.ErrNotFound) {
			return nil, refusal(CondNoAddress, fmt.Sprintf("%s on %s: %v", node.Address(), s.at, err)), nil
		}
		return nil, nil, fmt.Errorf("check %s on %s: %w", node.Address(), s.at, err)
	}
	snd, err := s.sess.NewSender(ctx, spec.Address, spec.SenderOptions())
	if err != nil {
		return nil, nil, fmt.Errorf("attach sender to %s on %s: %w", spec.Address, s.at, err)
	}
	if s.senders == nil {
		s.senders = map[famqp.Node]*goamqp.Sender{}
	}
	s.senders[node] = snd
	return snd, nil, nil
}

// refusal is a receipt that refuses the message at once with a fed:
// condition; links.Forward dead-letters or rejects it at the source.
func refusal(cond, reason string) links.Receipt {
	return refused{&goamqp.StateRejected{Error: &goamqp.Error{Condition: goamqp.ErrCond(cond), Description: reason}}}
}

// nextHops is what the table says about transit from each of the
// router's brokers: for every (broker, destination) pair the router can
// carry, the next hop. A router carries B's transit for D when it is
// attached to B and to the next hop N, and both connections are up.
func nextHops(p *topology.Paths, up func(string) bool) map[[2]string]string {
	out := map[[2]string]string{}
	if p == nil {
		return out
	}
	brokers := p.Brokers()
	for _, b := range brokers {
		if !up(b) {
			continue
		}
		for _, d := range brokers {
			if d == b {
				continue
			}
			if rt, ok := p.Route(b, d); ok && up(rt.NextHop) {
				out[[2]string{b, d}] = rt.NextHop
			}
		}
	}
	return out
}
