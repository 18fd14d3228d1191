package links

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// Transit on the engine (docs/engine.md, "Routes on the engine"): the
// transit header (transit.go) read, checked and rewritten in a
// message's annotations as bytes, as engine.ForwardOptions.Dispatch
// functions. The rules are transit.go's (readTransit, checkAnnotations)
// and the conditions those name.

// engineMessage is a message on the engine as the transit rules read
// it: its payload and where its sections are.
type engineMessage struct {
	payload []byte
	s       *wire.Sections
}

// value decodes one encoded value (nil when absent): the same Go types
// the transit rules check (string, the integer types).
func value(v []byte, ok bool) any {
	if !ok {
		return nil
	}
	d := wire.NewDecoder(v)
	x := d.Value()
	if d.Err() != nil {
		return v // not what a router writes: refused as such
	}
	return x
}

func (m engineMessage) annotation(k string) any { return value(m.s.Annotation(m.payload, k)) }
func (m engineMessage) property(k string) any {
	return value(m.s.ApplicationProperty(m.payload, k))
}

// annotations is the set of annotations one copy gets; a key put twice
// keeps the last.
type annotations []wire.Annotated

func (a *annotations) put(key string, v []byte) {
	for i := range *a {
		if (*a)[i].Key == key {
			(*a)[i].Value = v
			return
		}
	}
	*a = append(*a, wire.Annotated{Key: key, Value: v})
}

func (a *annotations) del(key string) { a.put(key, nil) }

// enterTransit is the annotations that address a message to dest's
// node, entering transit at src.
func (a *annotations) enterTransit(m engineMessage, src, dest string, node amqp.Node) {
	a.put(AnnotationDestBroker, wire.AppendString(nil, dest))
	a.put(AnnotationDestAddress, wire.AppendString(nil, node.Address()))
	if _, ok := m.annotation(AnnotationOrigin).(string); !ok {
		a.put(AnnotationOrigin, wire.AppendString(nil, src))
	}
	a.put(AnnotationHops, wire.AppendLong(nil, 0))
	a.del(AnnotationTrace)
}

// engineRefusal is the forwarder's refusal of a message with a transit
// condition: rejected at the source with it ("fedrouter: " and the
// reason), or dead-lettered with the reason.
func engineRefusal(condition, reason string) *wire.Error {
	return &wire.Error{Condition: condition, Description: refusalPrefix + reason}
}

const refusalPrefix = "fedrouter: "

// TransitKey is the destination key of a copy for dest's transit queue
// (EngineDispatch, EngineEnterTransit); any other key is a node's
// address (amqp.Node.Address).
func TransitKey(dest string) string { return "transit:" + dest }

// KeyNode is the node a destination key names.
func KeyNode(key string) (amqp.Node, error) {
	if dest, ok := strings.CutPrefix(key, "transit:"); ok {
		return TransitNode(dest), nil
	}
	return amqp.ParseAddress(key)
}

// EngineEnterTransit is the Dispatch of a route's run through transit on
// the engine: each message addressed to dest's node (enterTransit), sent
// to the source broker's transit queue for dest — the forwarder's own
// destination (""); count, when set, counts it. A message whose routers'
// annotations are not what a router writes is refused
// (CondInvalidField).
func EngineEnterTransit(src, dest string, node amqp.Node, count *atomic.Uint64) func([]byte, *wire.Sections, *engine.Choice) {
	return func(payload []byte, s *wire.Sections, c *engine.Choice) {
		m := engineMessage{payload: payload, s: s}
		var set annotations
		set.enterTransit(m, src, dest, node)
		// Checked as a transit queue's forwarder will check it: what
		// enterTransit does not overwrite (an origin that is a string
		// stays).
		checks := []fieldValue{
			{"annotation " + AnnotationFanned, m.annotation(AnnotationFanned)},
			{"application property " + PropDestBroker, m.property(PropDestBroker)},
			{"application property " + PropDestAddress, m.property(PropDestAddress)},
		}
		if o, ok := m.annotation(AnnotationOrigin).(string); ok {
			checks = append(checks, fieldValue{"annotation " + AnnotationOrigin, o})
		}
		for _, ch := range checks {
			if err := checkString(ch.field, ch.v); err != nil {
				c.Refuse = engineRefusal(CondInvalidField, err.Error())
				return
			}
		}
		if count != nil {
			count.Add(1)
		}
		c.Copies = append(c.Copies, engine.Copy{Set: set})
	}
}

// fieldValue is one of the routers' annotations or properties, to check.
type fieldValue struct {
	field string
	v     any
}

// EngineDispatch is the Dispatch of a transit queue's forwarder or a
// broker's ingress: each message's copy goes to At's
// transit queue for its destination broker, or into its destination
// address when that is At, chosen per message (TransitKey, a node's
// address).
type EngineDispatch struct {
	At, From, Only string
	MaxHops        int64
	Control        string
	// Ingress, when set, makes this a broker's ingress: every message an
	// application's request, checked
	// against the policy (refused with CondUnauthorized, counted in
	// IngressRefused) and entering transit afresh at At.
	Ingress        *IngressPolicy
	IngressRefused *IngressCounters
}

// Dispatch reads and checks msg's transit header, counts the hop and
// names where it goes, or refuses it with the reason (a fed: condition).
func (s *EngineDispatch) Dispatch(payload []byte, sec *wire.Sections, c *engine.Choice) {
	m := engineMessage{payload: payload, s: sec}
	h, err := readTransit(m)
	var fe *FieldError
	switch {
	case errors.As(err, &fe):
		c.Refuse = engineRefusal(CondInvalidField, err.Error())
		return
	case err != nil:
		c.Refuse = engineRefusal(CondBadRequest, err.Error())
		return
	}
	if s.Only != "" && h.Dest != s.Only {
		c.Refuse = engineRefusal(CondBadRequest, fmt.Sprintf("in the transit queue for %s but addressed to %s", s.Only, h.Dest))
		return
	}
	var set annotations
	if s.Ingress != nil {
		if reason, why := s.Ingress.Check(h.Dest, h.Address); reason != "" {
			s.IngressRefused.add(reason)
			c.Refuse = engineRefusal(CondUnauthorized, why)
			return
		}
		// A new journey from here, at this broker: an application's claim
		// of an origin, a hop count, a trace or a fan-out is not kept.
		set.del(AnnotationFanned)
		set.enterTransit(m, s.At, h.Dest, h.Address)
		set.put(AnnotationOrigin, wire.AppendString(nil, s.At))
	} else if _, ok := m.annotation(AnnotationDestBroker).(string); !ok {
		set.enterTransit(m, s.At, h.Dest, h.Address)
	}
	if h.Dest == s.At && RouterOwned(h.Address, s.Control) {
		c.Refuse = engineRefusal(CondUnauthorized, fmt.Sprintf("%s on %s is one of the routers' own addresses: no message in transit is delivered there", h.Address.Address(), s.At))
		return
	}
	if s.From != "" {
		if h.Hops >= s.MaxHops {
			c.Refuse = engineRefusal(CondMaxHops, fmt.Sprintf("made %d hops (trace %s) without reaching %s", h.Hops, strings.Join(h.Trace, ","), h.Dest))
			return
		}
		set.put(AnnotationHops, wire.AppendLong(nil, h.Hops+1))
		set.put(AnnotationTrace, wire.AppendString(nil, strings.Join(append(h.Trace, s.From), ",")))
	}
	key := TransitKey(h.Dest)
	if h.Dest == s.At {
		// Delivered: from here the message is the destination's own.
		key = h.Address.Address()
		set.del(AnnotationOrigin)
		set.del(AnnotationHops)
	}
	c.Copies = append(c.Copies, engine.Copy{To: key, Set: set})
}

// EngineResolver attaches the sender of a destination key on the engine
// (EngineLinks.Resolve) at a broker: the transit queue (created when
// missing) or a node's address; a node that does not exist, or that the
// profile cannot name, refuses the messages for it (CondNoAddress).
func EngineResolver(at string, sess *engine.Session, prof amqp.Profile) func(ctx context.Context, key string) (*engine.Session, engine.SenderOptions, *wire.Error, error) {
	return func(ctx context.Context, key string) (*engine.Session, engine.SenderOptions, *wire.Error, error) {
		var so engine.SenderOptions
		node, err := KeyNode(key)
		if err != nil {
			return nil, so, engineRefusal(CondNoAddress, fmt.Sprintf("%s on %s: %v", key, at, err)), nil
		}
		spec, err := prof.Target(node)
		if err != nil {
			return nil, so, engineRefusal(CondNoAddress, fmt.Sprintf("%s on %s: %v", node.Address(), at, err)), nil
		}
		if err := prof.CheckTarget(ctx, node); err != nil {
			if errors.Is(err, amqp.ErrNotFound) {
				return nil, so, engineRefusal(CondNoAddress, fmt.Sprintf("%s on %s: %v", node.Address(), at, err)), nil
			}
			return nil, so, nil, fmt.Errorf("check %s on %s: %w", node.Address(), at, err)
		}
		if so, err = spec.EngineSender(); err != nil {
			return nil, so, nil, err
		}
		return sess, so, nil, nil
	}
}

// EngineString is the string message annotation key of payload ("" when
// absent or not a string), for a Dispatch outside this package.
func EngineString(payload []byte, s *wire.Sections, key string) string {
	return str(engineMessage{payload: payload, s: s}.annotation(key))
}

// EngineEnterTransitSet is what EngineEnterTransit sets on a message
// entering transit at src for dest's node (enterTransit, as bytes).
func EngineEnterTransitSet(payload []byte, s *wire.Sections, src, dest string, node amqp.Node) []wire.Annotated {
	var set annotations
	set.enterTransit(engineMessage{payload: payload, s: s}, src, dest, node)
	return set
}
