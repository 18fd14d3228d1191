package links

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/fedrouter/fedrouter/amqp"
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
// and address (amqp.Node.Address form), origin broker, trace (brokers
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
	// CondInvalidField: one of the routers' annotations is not what a
	// router writes (crafted or corrupted): the message is refused, never
	// forwarded on what it claims.
	CondInvalidField = "amqp:invalid-field"
)

// Bounds on what the routers read from a message: nothing that arrives
// from a broker is trusted.
const (
	// MaxAnnotationLen bounds each of the routers' string annotations and
	// routing properties, in bytes.
	MaxAnnotationLen = 4096
	// MaxTraceLen bounds the brokers a trace may name.
	MaxTraceLen = 256
)

// FieldError says which of the routers' annotations (or routing
// properties) of a message is not what a router writes, and why.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// DefaultMaxHops bounds a message's transit hops: a message caught in a
// loop while tables converge is dead-lettered after this many.
const DefaultMaxHops = 16

// Message annotations the routers read and write on a message in transit
// and on a federated exchange's messages.
const (
	AnnotationOrigin      = "x-fedrouter-origin"       // the broker it entered at
	AnnotationHops        = "x-fedrouter-hops"         // transit hops made so far
	AnnotationDestBroker  = "x-fedrouter-dest-broker"  // the broker it goes to
	AnnotationDestAddress = "x-fedrouter-dest-address" // there, as amqp.Node.Address
	// AnnotationTrace lists, comma-separated, the brokers a message left,
	// in order: a message is never sent to a broker it has been at.
	AnnotationTrace = "x-fedrouter-trace"
	// AnnotationFanned lists, comma-separated, the fan-out groups that
	// have copied a message: a copy is not copied again by the same group.
	AnnotationFanned = "x-fedrouter-fanned"
)

// CondNoPath is the condition a route's no-path reject carries.
const CondNoPath = "fed:no-path"

// TransitNode is broker-side queue holding messages bound for dest.
func TransitNode(dest string) amqp.Node {
	return amqp.Node{Kind: amqp.Transit, Name: TransitPrefix + dest}
}

// TransitHeader is where a message in transit goes, and where it has been.
type TransitHeader struct {
	Dest    string    // the destination broker
	Address amqp.Node // the node there
	Hops    int64     // transit hops made so far
	Trace   []string  // brokers left, in order
}

// transitFields is where the transit rules read a message's routers'
// annotations and routing properties: a message on the engine, as bytes
// (engineMessage). Absent is nil.
type transitFields interface {
	annotation(key string) any
	property(key string) any
}

// str is a string annotation or property ("" when absent or not one).
func str(v any) string {
	s, _ := v.(string)
	return s
}

func readTransit(m transitFields) (TransitHeader, error) {
	var h TransitHeader
	if err := checkAnnotations(m); err != nil {
		return h, err
	}
	get := func(ann, prop string) string {
		if s := str(m.annotation(ann)); s != "" {
			return s
		}
		return str(m.property(prop))
	}
	h.Dest = get(AnnotationDestBroker, PropDestBroker)
	if h.Dest == "" {
		return h, fmt.Errorf("no destination broker: set application property %s (or annotation %s)", PropDestBroker, AnnotationDestBroker)
	}
	addr := get(AnnotationDestAddress, PropDestAddress)
	if addr == "" {
		return h, fmt.Errorf("no destination address: set application property %s (or annotation %s), e.g. exchange:amq.topic:orders.eu", PropDestAddress, AnnotationDestAddress)
	}
	var err error
	if h.Address, err = amqp.ParseAddress(addr); err != nil {
		return h, err
	}
	if h.Hops, err = hops(m.annotation(AnnotationHops)); err != nil {
		return h, err
	}
	if s := str(m.annotation(AnnotationTrace)); s != "" {
		h.Trace = strings.Split(s, ",")
	}
	return h, nil
}

func checkAnnotations(m transitFields) error {
	for _, k := range []string{AnnotationOrigin, AnnotationDestBroker, AnnotationDestAddress, AnnotationTrace, AnnotationFanned} {
		if err := checkString("annotation "+k, m.annotation(k)); err != nil {
			return err
		}
	}
	for _, k := range []string{PropDestBroker, PropDestAddress} {
		if err := checkString("application property "+k, m.property(k)); err != nil {
			return err
		}
	}
	if n := strings.Count(str(m.annotation(AnnotationTrace)), ",") + 1; n > MaxTraceLen {
		return &FieldError{Field: "annotation " + AnnotationTrace, Problem: fmt.Sprintf("names %d brokers, at most %d", n, MaxTraceLen)}
	}
	_, err := hops(m.annotation(AnnotationHops))
	return err
}

// checkString: v, when present, is a string within MaxAnnotationLen.
func checkString(field string, v any) error {
	if v == nil {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return &FieldError{Field: field, Problem: fmt.Sprintf("want a string, got %T", v)}
	}
	if len(s) > MaxAnnotationLen {
		return &FieldError{Field: field, Problem: fmt.Sprintf("%d bytes, at most %d", len(s), MaxAnnotationLen)}
	}
	return nil
}

// hops reads the hop count: absent is 0; anything but a non-negative
// integer is refused.
func hops(v any) (int64, error) {
	if v == nil {
		return 0, nil
	}
	field := "annotation " + AnnotationHops
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := rv.Int(); n >= 0 {
			return n, nil
		}
		return 0, &FieldError{Field: field, Problem: fmt.Sprintf("%d is negative", rv.Int())}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n := rv.Uint(); n <= math.MaxInt64 {
			return int64(n), nil
		}
		return 0, &FieldError{Field: field, Problem: fmt.Sprintf("%d is out of range", rv.Uint())}
	}
	return 0, &FieldError{Field: field, Problem: fmt.Sprintf("want a non-negative integer, got %T %v", v, v)}
}

// maxSenders bounds the destination addresses one dispatch sink holds a
// sender for; past it the run ends and starts afresh with none.
const maxSenders = 64
