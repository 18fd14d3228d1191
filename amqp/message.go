package amqp

import (
	"reflect"

	goamqp "github.com/Azure/go-amqp"
)

// Message is a message as the router's layers handle it: received from a
// source, copied, annotated and sent on. It wraps go-amqp's message, which
// stays inside this package, in a value of two pointers: passing it costs
// what passing the pointer did, and nothing is copied until ForwardCopy.
// The zero Message holds nothing; its getters return zero values.
type Message struct {
	m *goamqp.Message
	// from is the received message a forward copy shares its sections
	// with (nil otherwise): the setters copy a shared section before the
	// first change, so the received message never changes.
	from *goamqp.Message
}

// NewMessage is a message whose body is one data section.
func NewMessage(data []byte) Message { return Message{m: goamqp.NewMessage(data)} }

// IsZero says whether m holds no message.
func (m Message) IsZero() bool { return m.m == nil }

// empty stands for the zero Message in the getters: an empty message
// has no annotation, property or body.
var empty goamqp.Message

func (m Message) get() *goamqp.Message {
	if m.m == nil {
		return &empty
	}
	return m.m
}

// Annotation returns the message annotation under key (nil when absent).
func (m Message) Annotation(key string) any { return m.get().Annotations[key] }

// AnnotationString returns the message annotation under key when it is a
// string, else "".
func (m Message) AnnotationString(key string) string {
	s, _ := m.Annotation(key).(string)
	return s
}

// SetAnnotation sets the message annotation key to v.
func (m Message) SetAnnotation(key string, v any) {
	m.ownAnnotations()
	if m.m.Annotations == nil {
		m.m.Annotations = goamqp.Annotations{}
	}
	m.m.Annotations[key] = v
}

// DeleteAnnotation removes the message annotation key.
func (m Message) DeleteAnnotation(key string) {
	if _, ok := m.get().Annotations[key]; !ok {
		return // nothing to change: a shared map stays shared
	}
	m.ownAnnotations()
	delete(m.m.Annotations, key)
}

// ownAnnotations gives a forward copy annotations of its own before its
// first change.
func (m Message) ownAnnotations() {
	if m.from != nil && len(m.m.Annotations) > 0 && sameMap(m.m.Annotations, m.from.Annotations) {
		m.m.Annotations = copyAnnotations(m.m.Annotations)
	}
}

// sameMap says whether a and b are the same map (not equal ones).
func sameMap(a, b goamqp.Annotations) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Property returns the application property under key (nil when absent).
func (m Message) Property(key string) any { return m.get().ApplicationProperties[key] }

// PropertyString returns the application property under key when it is a
// string, else "".
func (m Message) PropertyString(key string) string {
	s, _ := m.Property(key).(string)
	return s
}

// Data returns the first data section of the body (nil for another body).
func (m Message) Data() []byte { return m.get().GetData() }

// SetSubject sets the properties' subject.
func (m Message) SetSubject(s string) {
	switch {
	case m.m.Properties == nil:
		m.m.Properties = &goamqp.MessageProperties{}
	case m.from != nil && m.m.Properties == m.from.Properties:
		p := *m.m.Properties // shared with the received message: copy first
		m.m.Properties = &p
	}
	m.m.Properties.Subject = &s
}

// withSubject is m with subject s, m itself untouched: the caller may
// send m again elsewhere (another route's sender, the dead-letter queue).
func (m Message) withSubject(s string) Message {
	out := *m.get()
	p := goamqp.MessageProperties{}
	if out.Properties != nil {
		p = *out.Properties
	}
	p.Subject = &s
	out.Properties = &p
	return Message{m: &out}
}

// ForwardCopy returns the message to send onward for a received one.
//
// Kept: header, message annotations, properties, application properties,
// body (data, value or sequence sections) and footer. Dropped: delivery
// annotations — they are per hop by definition, and RabbitMQ 3.10 kills the
// connection on a message carrying them.
//
// The copy shares its sections with the received message; Message's
// setters copy a section before changing it (copy on write), so the
// received message is never changed. Copying every map on every message
// was over 40 % of the forwarder's own CPU (docs/performance.md); most
// messages are sent on unchanged. Changing a copy through GoAMQP() is
// not covered: that is go-amqp's message as is.
//
// Not kept either: the source's delivery tag (the destination link numbers
// its own deliveries) and go-amqp's settlement state.
//
// A copy of a copy (rare) gets maps of its own at once: its sections may
// be shared with the first copy's origin or be the first copy's own, and
// only the origin is known never to change.
func (m Message) ForwardCopy() Message {
	in := m.m
	if m.from != nil {
		out := Message{m: &goamqp.Message{Format: in.Format, Header: in.Header, Properties: in.Properties,
			Annotations: copyAnnotations(in.Annotations), ApplicationProperties: copyMap(in.ApplicationProperties),
			Data: in.Data, Value: in.Value, Sequence: in.Sequence, Footer: in.Footer}}
		if in.Properties != nil {
			p := *in.Properties
			out.m.Properties = &p
		}
		return out
	}
	return Message{m: &goamqp.Message{
		Format:                in.Format,
		Header:                in.Header, // no setter changes it
		Annotations:           in.Annotations,
		Properties:            in.Properties,
		ApplicationProperties: in.ApplicationProperties, // no setter changes it
		Data:                  in.Data,
		Value:                 in.Value,
		Sequence:              in.Sequence,
		Footer:                in.Footer,
	}, from: in}
}

func copyAnnotations(a goamqp.Annotations) goamqp.Annotations {
	if a == nil {
		return nil
	}
	out := make(goamqp.Annotations, len(a))
	for k, v := range a {
		out[k] = v
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// WrapMessage wraps a go-amqp message, for programs that use go-amqp
// directly as an AMQP application (tests, fedbench, fedchaos) and hand
// messages to the router's layers; those layers never do.
func WrapMessage(msg *goamqp.Message) Message { return Message{m: msg} }

// GoAMQP is the go-amqp message m wraps, for the same programs.
func (m Message) GoAMQP() *goamqp.Message { return m.m }
